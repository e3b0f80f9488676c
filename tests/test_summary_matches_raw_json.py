"""Single-trace figures a user reads in ``traceviz summary`` and ``compare`` against a plain pass
over each corpus trace's JSON, computed here with no traceviz code: the span, memsets and their
bytes, the CPU time inside launch calls, the top-kernels table adding up to the kernel time;
per full step the device idle time (step wall time minus the union of the device activity that
starts in it, clipped to its end), the kernels and the launch calls that start in it; the
blocking syncs; the kernel-diff tables' calls and times, in every grouping."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LAUNCH_NAMES, corpus_params, load_trace, read_json
from traceviz.analysis.kernel_diff import GROUPS, kernel_diff
from traceviz.analysis.kernels import classify
from traceviz.analysis.summary import summarize
from traceviz.analysis.timing.blocking import BlockingColumns, blocking_calls
from traceviz.analysis.timing.launch import launch_overhead
from traceviz.schema import DeviceKind, Kernels

DEVICE_CATS = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}
MEMSET_CATS = {"gpu_memset", "Memset"}
KERNEL_CATS = {"kernel", "Kernel"}
RUNTIME_CATS = {"cuda_runtime", "cuda_driver", "Runtime", "Driver"}


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


def full_steps(events: list[dict[str, Any]], count: int) -> list[tuple[float, float]]:
    """The first ``count`` ProfilerStep windows (start, end µs) by start; the whole trace as
    one window where there is no step."""
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
    full = steps[:count]  # a partial last step is left out (windows.full_steps)
    assert len(steps) - len(full) <= 1
    return full


def _starting_in(events: list[dict[str, Any]], lo: float, hi: float) -> list[dict[str, Any]]:
    return [e for e in events if lo <= float(e["ts"]) < hi]


def gpu_trace(path: Path) -> Any:
    trace = load_trace(path)
    if trace.device_kind not in (DeviceKind.CUDA, DeviceKind.ROCM):
        pytest.skip("no device activity to check")
    return trace


@pytest.mark.parametrize("path", corpus_params())
def test_device_idle_per_step_equals_a_plain_union(path: Path) -> None:
    found = launch_overhead(gpu_trace(path))
    events = complete_events(path)
    full = full_steps(events, len(found.per_step))
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


@pytest.mark.parametrize("path", corpus_params())
def test_kernels_and_launch_calls_per_step_equal_a_plain_count(path: Path) -> None:
    per_step = launch_overhead(gpu_trace(path)).per_step
    events = complete_events(path)
    kernels = [e for e in events if e.get("cat") in KERNEL_CATS]
    launches = [e for e in events if e.get("name") in LAUNCH_NAMES]
    full = full_steps(events, len(per_step))
    assert per_step["kernel_count"].tolist() == [
        len(_starting_in(kernels, lo, hi)) for lo, hi in full
    ]
    assert per_step["launch_calls"].tolist() == [
        len(_starting_in(launches, lo, hi)) for lo, hi in full
    ]


@pytest.mark.parametrize("path", corpus_params())
def test_every_raw_sync_call_is_a_blocking_call(path: Path) -> None:
    """The corpus traces hold no runner step-sync mark: every runtime ``…Synchronize`` call of
    the file is a blocking call with the reason "sync", and none other has that reason."""
    found = blocking_calls(gpu_trace(path))
    raw = sorted(
        round(float(e["ts"]), 3)
        for e in complete_events(path)
        if e.get("cat") in RUNTIME_CATS and "Synchronize" in str(e.get("name"))
    )
    calls = found.calls
    syncs = calls[calls[BlockingColumns.reason] == "sync"]
    assert sorted(round(t, 3) for t in syncs[BlockingColumns.ts_us].tolist()) == raw
    assert int(found.per_step["calls"].sum()) <= len(calls)


@pytest.mark.parametrize("path", corpus_params())
def test_kernel_diff_counts_every_device_event_once(path: Path) -> None:
    """In every grouping, each side's calls are its raw device events and its times add up to
    its measured exclusive time (side b: every other kernel of the same trace)."""
    classified = classify(gpu_trace(path))
    sides = {"a": classified, "b": classified.iloc[::2]}
    raw = sum(1 for e in complete_events(path) if e.get("cat") in DEVICE_CATS)
    assert len(classified) == raw
    for by in GROUPS:
        diff = kernel_diff(sides["a"], sides["b"], by=by)
        for side, kernels in sides.items():
            assert int(diff[f"{side}_calls"].sum()) == len(kernels), by
            measured = kernels[Kernels.excl_dur_us].fillna(0.0).sum()
            assert diff[f"{side}_time_us"].sum() == pytest.approx(measured, rel=1e-9, abs=1e-6)
