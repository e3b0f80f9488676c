"""One step numbering in the compare JSON (issue 24 §3): every ``step`` is the ProfilerStep
number, null outside every step (it used to be the step window's index, −1 outside, in
``blocking_calls`` and ``idle_cpu_work`` beside ProfilerStep numbers in ``per_step``)."""

from __future__ import annotations

import traceviz
from tests.conftest import kernel, launch, op
from traceviz.pipeline import compare
from traceviz.report.json_report import comparison_json


def _trace(tmp_trace, first: int = 7):  # type: ignore[no-untyped-def]
    """Three steps numbered from ``first``; each: 300 µs of CPU work, a kernel, and a sync
    while the device idles; one more sync after the last step."""
    events: list[dict] = []
    for i in range(3):
        t, c = 1000.0 * i, 10 * i + 1
        events += [
            op(f"ProfilerStep#{first + i}", t, 1000, cat="user_annotation"),
            op("preprocess", t + 5, 300, cat="user_annotation"),
            launch("cudaLaunchKernel", t + 310, 5, c),
            kernel("gemm", t + 320, 100, c),
            launch("cudaStreamSynchronize", t + 500, 200, c + 1),
        ]
    events.append(launch("cudaStreamSynchronize", 3500, 100, 99))
    return traceviz.load(tmp_trace(events))


def test_every_step_in_the_json_is_a_profiler_step_number(tmp_trace) -> None:
    doc = comparison_json(compare(_trace(tmp_trace), _trace(tmp_trace, first=20)))
    for side, first in (("a", 7), ("b", 20)):
        launch = doc["launch"][side]
        numbers = {first, first + 1, first + 2}
        assert {r["step"] for r in launch["per_step"]} == numbers
        assert {r["step"] for r in launch["idle_per_step"]} == numbers
        work = {r["step"] for r in launch["idle_cpu_work"]}
        assert work and work <= numbers
        calls = [r["step"] for r in launch["blocking_calls"]]
        assert set(calls) - {None} == numbers
        assert calls.count(None) == 1  # the sync after the last step: outside every step
