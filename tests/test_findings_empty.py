"""Two traces without ops get no speed verdict (issue 24 §3): their step spans time nothing,
so the pair gets an ``empty-trace`` finding per trace instead of "compiled is 1.5× slower"."""

from __future__ import annotations

import traceviz
from tests.conftest import kernel, launch, op
from traceviz.analysis.timing.speed import UNKNOWN
from traceviz.diagnose.rules.profiling import EMPTY_ID
from traceviz.diagnose.rules.slower import NO_WORK, comparison_speed
from traceviz.pipeline import compare
from traceviz.report.json_report import comparison_json
from traceviz.report.views import headline


def _steps(step_us: float, *, work: bool = False) -> list[dict]:
    events = []
    for i in range(4):
        t = i * step_us
        events.append(op(f"ProfilerStep#{i + 1}", t, step_us, cat="user_annotation"))
        if work:
            events += [launch("cudaLaunchKernel", t + 1, 2, i + 1), kernel("k", t + 5, 10, i + 1)]
    return events


def _pair(tmp_trace, a_work: bool = False, b_work: bool = False):  # type: ignore[no-untyped-def]
    a = traceviz.load(tmp_trace(_steps(100, work=a_work)))
    b = traceviz.load(tmp_trace(_steps(150, work=b_work)))
    return compare(a, b, names=("eager", "compiled"))


def test_two_empty_traces_get_no_speed_verdict(tmp_trace) -> None:
    comparison = _pair(tmp_trace)
    verdict = comparison_speed(comparison)
    assert verdict.verdict == UNKNOWN and verdict.basis == NO_WORK
    ids = [f.id for f in comparison.findings]
    assert "compiled-slower" not in ids and "no-significant-difference" not in ids
    assert ids.count(EMPTY_ID) == 2
    speed = headline(comparison)[0].lower()  # the verdict sentence leads
    assert "no speed verdict" in speed and "slower" not in speed
    assert comparison_json(comparison)["speed"]["verdict"] == UNKNOWN


def test_one_empty_side_is_enough_to_withhold_it(tmp_trace) -> None:
    comparison = _pair(tmp_trace, a_work=True)
    assert comparison_speed(comparison).verdict == UNKNOWN
    assert [f.trace for f in comparison.findings if f.id == EMPTY_ID] == ["compiled"]


def test_traces_with_work_keep_their_verdict(tmp_trace) -> None:
    comparison = _pair(tmp_trace, a_work=True, b_work=True)
    assert comparison_speed(comparison).verdict == "slower"
    assert EMPTY_ID not in {f.id for f in comparison.findings}
