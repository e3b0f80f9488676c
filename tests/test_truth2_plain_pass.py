"""Single-trace figures a user reads in ``traceviz summary`` and ``compare`` against a plain pass
over each corpus trace's JSON (second truth audit): the span, memsets and their bytes, the CPU
time inside launch calls, the top-kernels table adding up to the kernel time, and the device
idle time per full step (step wall time minus the union of the device activity that starts in
it, clipped to its end), computed here with no traceviz code."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LAUNCH_NAMES, corpus_params, load_trace, read_json
from traceviz.analysis.launch import launch_overhead
from traceviz.analysis.summary import summarize
from traceviz.schema import DeviceKind

DEVICE_CATS = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}
MEMSET_CATS = {"gpu_memset", "Memset"}


@cache
def complete_events(path: Path) -> list[dict[str, Any]]:
    doc = read_json(path)
    events = doc if isinstance(doc, list) else doc["traceEvents"]
    return [
        e
        for e in events
        if e.get("ph") == "X" and isinstance(e.get("dur"), int | float) and e["dur"] >= 0
    ]


def _busy(intervals: list[tuple[float, float]]) -> float:
    """Length of the union of ``intervals``."""
    total, reach_start, reach_end = 0.0, None, None
    for start, end in sorted(intervals):
        if reach_end is None or start > reach_end:
            if reach_end is not None:
                total += reach_end - reach_start
            reach_start, reach_end = start, end
        else:
            reach_end = max(reach_end, end)
    return total + (reach_end - reach_start if reach_end is not None else 0.0)


@pytest.mark.parametrize("path", corpus_params())
def test_summary_span_memsets_and_launch_time_equal_a_plain_pass(path: Path) -> None:
    summary = summarize(load_trace(path)).to_json()
    if summary["device"] == DeviceKind.OTHER.value:
        return  # not analysed: its device figures are null (tests/test_parse_corpus.py)
    events = complete_events(path)
    starts = [float(e["ts"]) for e in events]
    ends = [float(e["ts"]) + float(e["dur"]) for e in events]
    assert summary["span_us"] == pytest.approx(max(ends) - min(starts), abs=1e-3)
    memsets = [e for e in events if e.get("cat") in MEMSET_CATS]
    assert summary["memset_count"] == len(memsets)
    activity = {a["activity"]: a for a in summary["activities"]}
    if memsets:
        raw_bytes = sum(int(e.get("args", {}).get("bytes", 0)) for e in memsets)
        assert activity["memset"]["bytes"] == raw_bytes
    launch_us = sum(float(e["dur"]) for e in events if e.get("name") in LAUNCH_NAMES)
    assert summary["launch_api_time_us"] == pytest.approx(launch_us, abs=1e-3)
    top = summary["top_kernels"]
    if summary["kernel_count"] and len(top) == len({k["name"] for k in top}):
        shown = sum(k["time_us"] for k in top)
        assert shown <= summary["kernel_time_us"] * (1 + 1e-9)
        assert sum(k["share_pct"] for k in top) <= 100 + 1e-6


@pytest.mark.parametrize("path", corpus_params())
def test_device_idle_per_step_equals_a_plain_union(path: Path) -> None:
    trace = load_trace(path)
    if trace.device_kind not in (DeviceKind.CUDA, DeviceKind.ROCM):
        return
    found = launch_overhead(trace)
    events = complete_events(path)
    steps = sorted(
        (float(e["ts"]), float(e["ts"]) + float(e["dur"]))
        for e in events
        if str(e.get("name", "")).startswith("ProfilerStep#")
        and e.get("cat") != "gpu_user_annotation"
    )
    if not steps:  # no steps: the whole trace is one window
        steps = [
            (
                min(float(e["ts"]) for e in events),
                max(float(e["ts"]) + float(e["dur"]) for e in events),
            )
        ]
    full = steps[: len(found.per_step)]  # a partial last step is left out (windows.full_steps)
    assert len(steps) - len(full) <= 1
    device = [
        (float(e["ts"]), float(e["ts"]) + float(e["dur"]))
        for e in events
        if e.get("cat") in DEVICE_CATS
    ]
    idle = 0.0
    for lo, hi in full:
        busy = _busy([(s, min(e, hi)) for s, e in device if lo <= s < hi])
        idle += max(hi - lo - busy, 0.0)
    assert found.wall_us == pytest.approx(sum(hi - lo for lo, hi in full), abs=1e-3)
    assert found.idle_us == pytest.approx(idle, abs=1e-3)
    assert 0 <= found.cpu_wait_us <= found.idle_us + 1e-6
