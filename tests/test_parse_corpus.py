"""Single-trace figures a user reads in ``traceviz summary`` and ``compare`` against a plain pass
over each corpus trace's JSON, computed here with no traceviz code: every real trace loads and
conserves its events; its device kind; the span, kernels, memcpys and memsets and their bytes,
the launch calls and the CPU time inside them, the top-kernels table adding up to the kernel
time (that the tables survive the cache is test_table_store's; each trace is parsed once per
session, ``load_trace``); per full step the device idle time (step wall time minus the union
of the device activity that starts in it, clipped to its end), the kernels and the launch
calls that start in it; the blocking syncs; the kernel-diff tables' calls and times, in every
grouping.

``traceviz summary``'s roofline: the peaks used, device time per bound and the top kernels
against the roof, in text and JSON; ``--peaks FILE`` as compare reads it (a bad file is a
one-line error, exit status 2). The kernel explorer's table (analysis.top_kernels) on tiny made
tables for the edge cases, and the dashboard's kernel tables worked out once per report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tests.conftest import (
    CORPUS,
    KERNEL_CATS,
    LAUNCH_NAMES,
    MEMCPY_CATS,
    REPO,
    SAMPLES,
    corpus_params,
    load_trace,
    read_json,
)
from tests.real_data import same
from traceviz import cli
from traceviz.analysis.kernel_diff import GROUPS, kernel_diff
from traceviz.analysis.kernels import classify
from traceviz.analysis.summary import summarize
from traceviz.analysis.timing.blocking import BlockingColumns, blocking_calls
from traceviz.analysis.timing.launch import launch_overhead
from traceviz.analysis.top_kernels import NO_OP_LABEL, top_kernels
from traceviz.pipeline import compare, compare_run
from traceviz.report.roofline_report import roofline_of
from traceviz.schema import DeviceKind, Kernels

DEVICE_CATS = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}
MEMSET_CATS = {"gpu_memset", "Memset"}
RUNTIME_CATS = {"cuda_runtime", "cuda_driver", "Runtime", "Driver"}


@cache
def all_events(path: Path) -> list[dict[str, Any]]:
    doc = read_json(path)
    return doc if isinstance(doc, list) else doc["traceEvents"]


@cache
def complete_events(path: Path) -> list[dict[str, Any]]:
    return [
        e
        for e in all_events(path)
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
def test_loads_and_conserves_events_and_summary_equals_plain_count(path: Path) -> None:
    trace = load_trace(path)
    assert trace.stats.events_in == len(all_events(path))
    assert trace.stats.accounted == trace.stats.events_in, (trace.stats.rows, trace.stats.ignored)
    summary = summarize(trace).to_json()
    assert summary["events_in"] == len(all_events(path))
    if summary["device"] == DeviceKind.OTHER.value:  # not analysed: device figures are null
        assert summary["basis"] == "not-analysed"
        device = ("kernel_count", "kernel_time_us", "memcpy_count", "memcpy_bytes", "launch_count")
        assert all(summary[name] is None for name in device), summary
        return
    events = complete_events(path)
    starts = [float(e["ts"]) for e in events]
    ends = [float(e["ts"]) + float(e["dur"]) for e in events]
    assert summary["span_us"] == pytest.approx(max(ends) - min(starts), abs=1e-3)
    if summary["device"] != DeviceKind.CPU.value:
        kernels = [e for e in events if e.get("cat") in KERNEL_CATS]
        assert summary["kernel_count"] == len(kernels)
        assert summary["kernel_time_us"] == pytest.approx(sum(float(e["dur"]) for e in kernels))
    memcpys = [e for e in events if e.get("cat") in MEMCPY_CATS]
    assert summary["memcpy_count"] == len(memcpys)
    assert summary["memcpy_bytes"] == sum(int(e.get("args", {}).get("bytes", 0)) for e in memcpys)
    memsets = [e for e in events if e.get("cat") in MEMSET_CATS]
    assert summary["memset_count"] == len(memsets)
    activity = {a["activity"]: a for a in summary["activities"]}
    if memsets:
        raw_bytes = sum(int(e.get("args", {}).get("bytes", 0)) for e in memsets)
        assert activity["memset"]["bytes"] == raw_bytes
    launches = [float(e["dur"]) for e in events if e.get("name") in LAUNCH_NAMES]
    assert summary["launch_count"] == len(launches)
    assert summary["launch_api_time_us"] == pytest.approx(sum(launches), abs=1e-3)
    top = summary["top_kernels"]
    if summary["kernel_count"] and len(top) == len({k["name"] for k in top}):
        shown = sum(k["time_us"] for k in top)
        assert shown <= summary["kernel_time_us"] * (1 + 1e-9)
        assert sum(k["share_pct"] for k in top) <= 100 + 1e-6


EXPECTED_DEVICE = {
    "amd/mi250_eager_train_rocm62.json.gz": DeviceKind.ROCM,
    "amd/mi300x_vllm_full_graph_replay.json.gz": DeviceKind.ROCM,
    "nvidia/a100_compiled_triton_tiny.json.gz": DeviceKind.CUDA,
    "nvidia/resnet50_eager_legacy_bare_array.json.gz": DeviceKind.CUDA,
    "cpu/cpu_only_rank.json.gz": DeviceKind.CPU,
    "other/mtia_inference_nongpu_device.json.gz": DeviceKind.OTHER,
}


@pytest.mark.parametrize("name,kind", EXPECTED_DEVICE.items())
def test_device_kind(name: str, kind: DeviceKind) -> None:
    if not (CORPUS / name).exists():
        pytest.skip(f"corpus not found at {CORPUS}")
    assert load_trace(CORPUS / name).device_kind is kind


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


RUN = SAMPLES / "h200" / "gpt2"
EAGER = RUN / "eager.pt.trace.json.gz"
H200_TBPS = 4.8


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    assert cli.main(["summary", *args, "--format", "json", "--no-cache"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_roofline_is_the_compare_reports_for_the_same_trace(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The eager trace alone gets the roofline its side of the run's comparison gets."""
    doc = _json(capsys, str(EAGER), "--top", "5")
    roofline = doc["roofline"]
    assert roofline["basis"] == "table" and roofline["peaks"]["hbm_tbps"] == H200_TBPS
    report = compare_run(RUN)
    eager = roofline_of(report, "a")
    assert eager is not None
    assert roofline == json.loads(json.dumps(eager.to_json(top=5)))
    assert len(roofline["kernels"]) == 5
    assert all(k["achieved_tbps"] <= H200_TBPS for k in roofline["kernels"] if k["achieved_tbps"])
    # every kernel, memcpy and memset has one bound: the bounds hold all the device time
    device_us = sum(a["time_us"] for a in doc["activities"])
    assert sum(b["time_us"] for b in roofline["time_by_bound"]) == pytest.approx(device_us)


def test_text_shows_peaks_bounds_and_kernels_within_80_columns() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "traceviz.cli", "summary", str(EAGER), "--no-cache"],
        capture_output=True, text=True, encoding="utf-8", cwd=REPO, check=False,
        env={**{k: v for k, v in os.environ.items() if k != "LINES"}, "COLUMNS": "80"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "Roofline: time by bound" in text and "Roofline: kernels by device time" in text
    assert "NVIDIA H200 SXM (table:" in text.replace("\n", " ")
    assert "% of roof" in text and "TFLOP/s" in text
    assert [line for line in text.splitlines() if len(line) > 80] == []


def test_peaks_file_replaces_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    peaks = tmp_path / "peaks.toml"
    peaks.write_text('name = "my GPU"\nhbm_tbps = 0.5\nfp32_tflops = 5\n')
    roofline = _json(capsys, str(EAGER), "--peaks", str(peaks))["roofline"]
    assert roofline["basis"] == "file" and roofline["peaks"]["name"] == "my GPU"
    assert roofline["peaks"]["source"] == str(peaks)
    # a lower roof: the same kernels reach a larger share of it
    table = _json(capsys, str(EAGER))["roofline"]["kernels"]
    mine = {k["name"]: k["pct_of_roof"] for k in roofline["kernels"]}
    bigger = [mine[k["name"]] > k["pct_of_roof"] for k in table if k["pct_of_roof"]]
    assert bigger and all(bigger)
    assert cli.main(["summary", str(EAGER), "--peaks", str(peaks)]) == 0
    assert "my GPU (file" in capsys.readouterr().out.replace("\n", " ")


@pytest.mark.parametrize(
    ("content", "message"),
    [('{"hbm_tbps": 0}', "positive"), ('{"hbm_tbps": 1, "fp64": 2}', "fp64"), ("{", "")],
)
def test_a_bad_peaks_file_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    peaks = tmp_path / "peaks.json"
    peaks.write_text(content)
    assert cli.main(["summary", str(EAGER), "--peaks", str(peaks)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("traceviz summary: error:") and err.count("\n") == 1
    assert str(peaks) in err and message in err


def test_a_cpu_trace_has_no_roof_but_its_achieved_figures() -> None:
    """A CPU trace without measured peaks: basis no-peak, every bound no-peak, TB/s still
    shown."""
    doc = json.loads(
        subprocess.run(
            [sys.executable, "-m", "traceviz.cli", "summary", "--format", "json", "--no-cache",
             str(SAMPLES / "graph-break" / "compiled.pt.trace.json.gz")],
            capture_output=True, text=True, cwd=REPO, check=True,
        ).stdout
    )  # fmt: skip
    roofline = doc["roofline"]
    assert roofline["basis"] == "no-peak" and roofline["peaks"] is None
    assert [b["bound"] for b in roofline["time_by_bound"]] == ["no-peak"]
    assert any(k["achieved_tbps"] for k in roofline["kernels"])


def _check_top_kernels(sides: list[tuple[str, pd.DataFrame]]) -> pd.DataFrame:
    """top_kernels of ``sides``: its calls and times add up to each side's measured."""
    got = top_kernels(sides)
    for name, k in sides:
        mine = got[got["trace"] == name]
        named = k[Kernels.name].notna()
        assert int(mine["calls"].sum()) == int(named.sum())
        measured = float(np.nansum(k.loc[named, Kernels.excl_dur_us].to_numpy(dtype=float)))
        assert float(mine["time_us"].sum()) == pytest.approx(measured, rel=1e-9, abs=1e-6)
    return got


def _made(cats: bool) -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            Kernels.name: ["tie", "tie", "none", "tie", "one", None, "one", "one", "tie", "late"],
            Kernels.op_name: ["x", "y", None, "y", "z", "z", None, "x", "x", "w"],
            Kernels.excl_dur_us: [1.0, 2.0, 5.0, 3.0, 6.0, 7.0, np.nan, 8.0, 4.0, 0.5],
            "kind": [None, "gemm", "memset", "gemm", "pointwise", "gemm", "gemm", None, "x", "y"],
            "source": ["aten", "aten", None, "aten", "triton", "aten", "aten", "x", "x", "y"],
        }
    )
    if cats:  # unused categories too: a categorical's value counts list them
        return frame.astype(
            {c: pd.CategoricalDtype([*sorted(set(frame[c].dropna())), "unused"])
             for c in (Kernels.name, Kernels.op_name, "kind", "source")}
        )  # fmt: skip
    return frame


@pytest.mark.parametrize("cats", [True, False], ids=["categorical", "text"])
def test_top_kernels_edge_cases(cats: bool) -> None:
    """Ties, a name with no launching op, a first call without a kind, a missing name."""
    frame = _made(cats)
    got = _check_top_kernels([("a", frame), ("b", frame.iloc[4:])])
    mine = got[got["trace"] == "a"].set_index("kernel")
    assert mine.loc["none", "launched_by"] == NO_OP_LABEL  # no op: not an unused category
    assert mine.loc["one", "launched_by"] in {"x", "z"}  # a tie (its third call: no op)
    assert mine.loc["late", "launched_by"] == "w"
    assert mine.loc["tie", "launched_by"] in {"x", "y"}
    assert mine.loc["tie", "kind"] == "gemm"  # its first call has no kind: the first with one
    assert mine.loc["one", "kind"] == "pointwise"
    if cats:  # no value at all: missing, as the categorical's first was
        assert pd.isna(mine.loc["none", "source"])
    assert sorted(mine.index) == ["late", "none", "one", "tie"]


def test_top_kernels_empty() -> None:
    empty = _made(True).iloc[:0]
    assert top_kernels([("a", empty)]).empty and top_kernels([]).empty


# --- the tables kept per report ----------------------------------------------------------------


def test_a_second_session_reuses_the_kernel_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two sessions' Kernels tabs of one report: the tables are worked out once, each session
    gets equal values in a frame of its own, and the entry goes with the report."""
    import gc

    pytest.importorskip("panel", reason="panel not installed (dashboard extra)")
    from traceviz.dashboard.tabs import kernel_diff as diff_tab
    from traceviz.dashboard.tabs import kernels as kernels_tab
    from traceviz.dashboard.tabs import memo

    run = SAMPLES / "graph-break"
    report = compare(
        load_trace(run / "eager.pt.trace.json.gz"), load_trace(run / "compiled.pt.trace.json.gz")
    )
    calls: list[str] = []
    real_table, real_diff = kernels_tab.kernel_table, diff_tab.kernel_diff
    monkeypatch.setattr(
        kernels_tab, "kernel_table", lambda c: calls.append("table") or real_table(c)
    )
    monkeypatch.setattr(
        diff_tab, "kernel_diff", lambda a, b, by: calls.append(by) or real_diff(a, b, by=by)
    )
    first, second = (kernels_tab.KernelsView(comparison=report) for _ in range(2))
    diffs = [diff_tab.KernelDiffView(comparison=report) for _ in range(2)]
    assert calls == ["table", "kernel"]
    same(first._data, second._data)
    same(first._data, real_table(report))
    assert first._data is not second._data
    second._data["calls"] = 0  # one session's change stays its own
    assert int(first._data["calls"].min()) > 0
    diffs[0].group = "op"
    diffs[1].group = "op"
    assert calls == ["table", "kernel", "op"]
    same(diffs[1]._table.value, real_diff(report.a.kernels, report.b.kernels, by="op"))
    rid = id(report)
    assert rid in memo._MEMO
    del first, second, diffs, report
    gc.collect()
    assert rid not in memo._MEMO
