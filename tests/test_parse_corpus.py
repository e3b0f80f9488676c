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
tables for the edge cases, and the dashboard's kernel tables worked out once per report.

The parsed tables say what the trace file says, on every corpus trace and the traces of one
sample run per code path (CUDA, CUDA graphs, CPU), per trace:

- kernels: the device events (``cat`` kernel/gpu_memcpy/gpu_memset and the legacy Kernel,
  Memcpy, Memset) are the kernels table's rows, name, start and duration, each once (GPU
  traces; a CPU-only trace's kernels are ops, checked below);
- launches: a kernel's launch columns are the runtime/driver call of its correlation id;
- ops: the cpu_op/user_annotation/python_function (legacy Operator) events are the ops
  table's rows, each once, on their "pid/tid" thread;
- nesting: an op's parent is the innermost op of its thread that encloses it (a stack pass
  over the thread's ops by start, longest first) and its depth is its parent's plus one;
- the launching op: a kernel linked by External id names the raw op of that id; one linked
  by time names an op of the launch's thread whose span holds the launch;
- the kernel explorer (top_kernels) counts each kernel name's calls as the raw events do;
- the timeline's window events hold each device event starting in the window once;
- unfused chains are runs of real kernel events, in time order on one lane, each kernel in
  at most one chain, their time at most the kernels' measured time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter, defaultdict
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
from tests.real_data import every_trace_file, raw_events, same
from traceviz import cli
from traceviz.analysis.kernel_diff import GROUPS, kernel_diff
from traceviz.analysis.kernels import classify
from traceviz.analysis.summary import summarize
from traceviz.analysis.timing.blocking import BlockingColumns, blocking_calls
from traceviz.analysis.timing.launch import launch_overhead
from traceviz.analysis.top_kernels import NO_OP_LABEL, top_kernels
from traceviz.pipeline import compare, compare_run
from traceviz.report.roofline_report import roofline_of
from traceviz.schema import DeviceKind, Kernels, Ops
from traceviz.trace import Trace

DEVICE_CATS = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}
MEMSET_CATS = {"gpu_memset", "Memset"}
RUNTIME_CATS = {"cuda_runtime", "cuda_driver", "Runtime", "Driver"}
OP_CATS = {"cpu_op", "Operator", "user_annotation", "python_function"}
DIGITS = 3  # µs rounded to the ns when matching a row to its raw event


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


# --- the parsed tables against the raw events ----------------------------------------------


def _spans(events: list[dict[str, Any]], cats: set[str]) -> list[dict[str, Any]]:
    """The complete events (``ph`` X) of ``cats`` that have a start."""
    return [e for e in events if e.get("ph") == "X" and e.get("cat") in cats and "ts" in e]


def _us(value: Any) -> float:
    return round(float(value), DIGITS)


def _thread(event: dict[str, Any]) -> str:
    return f"{event.get('pid')}/{event.get('tid')}"


def _arg(event: dict[str, Any], key: str) -> Any:
    args = event.get("args")
    return args.get(key) if isinstance(args, dict) else None


def _op_key(name: Any, thread: Any, ts: float, dur: float) -> tuple[str, str, float, float]:
    return (str(name), str(thread), _us(ts), _us(dur))


def _table_ops(trace: Trace) -> list[tuple[str, str, float, float]]:
    ops = trace.ops
    return [
        _op_key(*row)
        for row in zip(
            ops[Ops.name].astype(object), ops[Ops.thread].astype(object),
            ops[Ops.ts_us].to_numpy(dtype=float), ops[Ops.dur_us].to_numpy(dtype=float),
            strict=True,
        )
    ]  # fmt: skip


def _raw_ops(events: list[dict[str, Any]]) -> list[tuple[str, str, float, float]]:
    return [
        _op_key(e.get("name"), _thread(e), e["ts"], e.get("dur", 0.0))
        for e in _spans(events, OP_CATS)
    ]


@pytest.fixture(scope="module", params=every_trace_file())
def pair(request: pytest.FixtureRequest) -> tuple[Trace, list[dict[str, Any]]]:
    """A real trace as traceviz parsed it, and its raw events."""
    path = request.param
    return load_trace(path), raw_events(path)


def test_kernels_are_the_device_events(pair: tuple[Trace, list[dict]]) -> None:
    trace, events = pair
    if trace.meta.device_kind == DeviceKind.CPU:
        pytest.skip("a CPU-only trace's kernels are its ops (test_ops_are_the_op_events)")
    k = trace.kernels
    got = Counter(
        zip(
            k[Kernels.name].astype(str),
            (_us(t) for t in k[Kernels.ts_us]),
            (_us(d) for d in k[Kernels.dur_us].fillna(0.0)),
            strict=True,
        )
    )
    raw = _spans(events, DEVICE_CATS)
    want = Counter((str(e.get("name")), _us(e["ts"]), _us(e.get("dur", 0.0))) for e in raw)
    assert got == want


def test_launch_columns_are_the_call_of_the_correlation_id(pair: tuple[Trace, list]) -> None:
    trace, events = pair
    if trace.meta.device_kind == DeviceKind.CPU:
        pytest.skip("no launches on a CPU-only trace")
    calls: dict[int, dict[str, Any]] = {}
    for e in _spans(events, RUNTIME_CATS):
        corr = _arg(e, "correlation")
        if isinstance(corr, int):
            calls.setdefault(corr, e)
    k = trace.kernels
    linked = 0
    for corr, name, ts, row in zip(
        k[Kernels.correlation], k[Kernels.launch_name].astype(object),
        k[Kernels.launch_ts_us], k[Kernels.launch_row], strict=True,
    ):  # fmt: skip
        call = None if pd.isna(corr) else calls.get(int(corr))
        if call is None:
            assert pd.isna(row), "a kernel whose correlation id has no call is not linked"
            continue
        assert (name, _us(ts)) == (call.get("name"), _us(call["ts"]))
        linked += 1
    assert linked <= len(k)


def test_ops_are_the_op_events(pair: tuple[Trace, list[dict]]) -> None:
    trace, events = pair
    assert Counter(_table_ops(trace)) == Counter(_raw_ops(events))


def _parents(ops: list[tuple[str, str, float, float]]) -> tuple[list[int | None], set[str]]:
    """Per op, the index of the innermost op of its thread that encloses it: a stack pass
    over each thread's ops by start, the longer first where two start together. Also the
    threads where two ops cross (one starts inside the other and ends after it): there an
    op's parent is the op open at its start (traceviz.parse.nesting), which may not enclose
    it."""
    parent: list[int | None] = [None] * len(ops)
    crossed: set[str] = set()
    by_thread: dict[str, list[int]] = defaultdict(list)
    for i, (_, thread, _, _) in enumerate(ops):
        by_thread[thread].append(i)
    for thread, rows in by_thread.items():
        rows.sort(key=lambda i: (ops[i][2], -ops[i][3]))
        open_: list[int] = []
        for i in rows:
            start, end = ops[i][2], ops[i][2] + ops[i][3]
            while open_ and (ops[open_[-1]][2] + ops[open_[-1]][3] < end
                             or ops[open_[-1]][2] + ops[open_[-1]][3] <= start):  # fmt: skip
                if start < ops[open_[-1]][2] + ops[open_[-1]][3] < end:
                    crossed.add(thread)
                open_.pop()  # it ended before this op ends, or where it starts: no encloser
            parent[i] = open_[-1] if open_ else None
            open_.append(i)
    return parent, crossed


def test_op_parents_are_the_innermost_enclosing_ops(pair: tuple[Trace, list[dict]]) -> None:
    trace, _ = pair
    keys = _table_ops(trace)
    unique = [n == 1 for n in map(Counter(keys).__getitem__, keys)]
    want, crossed = _parents(keys)
    got = trace.ops[Ops.parent_row].astype("Int64").tolist()
    depth = trace.ops[Ops.depth].astype("Int64").tolist()
    checked = 0
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        # an op with an identical twin (same name, thread, start, length) may nest either way
        if keys[i][1] in crossed or not unique[i] or (w is not None and not unique[w]):
            continue
        assert (None if pd.isna(g) else int(g)) == w, keys[i]
        assert depth[i] == (0 if w is None else depth[w] + 1)
        checked += 1
    assert checked or not keys or crossed


def test_launching_ops_are_the_raw_ones(pair: tuple[Trace, list[dict]]) -> None:
    trace, events = pair
    if trace.meta.device_kind == DeviceKind.CPU:
        pytest.skip("a CPU-only trace's kernels are their own ops")
    by_id: dict[int, set[str]] = defaultdict(set)
    for e in _spans(events, OP_CATS):
        ext = _arg(e, "External id")
        if isinstance(ext, int):
            by_id[ext].add(str(e.get("name")))
    k, ops = trace.kernels, trace.ops
    op_ts = ops[Ops.ts_us].to_numpy(dtype=float)
    op_end = op_ts + ops[Ops.dur_us].to_numpy(dtype=float)
    op_thread = ops[Ops.thread].astype(str).to_numpy()
    for link, row, name, ext, thread, lts in zip(
        k[Kernels.op_link].astype(object), k[Kernels.op_row], k[Kernels.op_name].astype(object),
        k[Kernels.external_id], k[Kernels.thread].astype(object), k[Kernels.launch_ts_us],
        strict=True,
    ):  # fmt: skip
        if pd.isna(row):
            continue
        if link == "external_id" and not pd.isna(ext):
            assert name in by_id[int(ext)]
        elif link == "time":
            assert op_thread[row] == str(thread)
            assert op_ts[row] <= lts <= op_end[row]


def test_top_kernels_count_the_raw_calls(pair: tuple[Trace, list[dict]]) -> None:
    trace, events = pair
    if trace.meta.device_kind == DeviceKind.CPU:
        pytest.skip("CPU kernels are chosen ops: no raw category to count")
    table = top_kernels([("t", classify(trace))])
    got = dict(zip(table["kernel"].astype(str), table["calls"].astype(int), strict=True))
    assert got == dict(Counter(str(e.get("name")) for e in _spans(events, DEVICE_CATS)))
    raw_us = sum(float(e.get("dur", 0.0)) for e in _spans(events, DEVICE_CATS))
    assert float(table["time_us"].sum()) <= raw_us * (1 + 1e-9) + 1e-6


def test_window_events_hold_each_device_event_of_the_window(pair: tuple[Trace, list]) -> None:
    pytest.importorskip("plotly", reason="plotly not installed (dashboard extra)")
    from traceviz.analysis.compare import analyze
    from traceviz.analysis.timeline_events import WindowEvent, window_events
    from traceviz.report.figures.timeline import TIMELINE_LAUNCH_CLASSES

    trace, events = pair
    if trace.meta.device_kind == DeviceKind.CPU:
        pytest.skip("CPU kernels are chosen ops: no raw category to count")
    starts = sorted(float(e["ts"]) for e in _spans(events, DEVICE_CATS))
    if not starts:
        pytest.skip("no device events")
    side = analyze(trace, name="t")
    lo, hi = starts[0], starts[-1]
    for start, end in ((lo, hi + 1.0), (lo, lo + (hi - lo) / 3), (hi + 10.0, hi + 20.0)):
        got = window_events(side, start, end, TIMELINE_LAUNCH_CLASSES)
        device = got[got[WindowEvent.lane].str.startswith("device ")]
        assert Counter(map(_us, device[WindowEvent.ts])) == Counter(
            _us(t) for t in starts if start <= t < end
        )


def test_chains_are_runs_of_real_kernels(pair: tuple[Trace, list[dict]]) -> None:
    from traceviz.analysis.fusion import chains
    from traceviz.diagnose.facts import facts_of_trace, kernel_steps

    trace, events = pair
    facts = facts_of_trace(trace)
    members = chains.chain_members(trace, facts.kernels, kernel_steps(facts))
    if members.empty:
        return
    M = chains.ChainMember
    raw = Counter((str(e.get("name")), _us(e["ts"])) for e in _spans(events, DEVICE_CATS | OP_CATS))
    assert not members[M.row].duplicated().any()  # each kernel in at most one chain
    kernels = facts.kernels.iloc[members[M.row].to_numpy(dtype=np.int64)]
    names = kernels[Kernels.name].astype(str)
    keys = Counter(zip(names, map(_us, kernels[Kernels.ts_us]), strict=True))
    assert all(raw[key] >= n for key, n in keys.items())  # every member is a raw event
    for _, chain in members.groupby(M.chain, sort=False):
        assert len(chain) >= chains.MIN_CHAIN_KERNELS
        assert chain[M.lane].nunique() == 1 and chain[M.step].nunique() == 1
        rows = chain[M.row].to_numpy(dtype=np.int64)
        assert np.all(np.diff(facts.kernels[Kernels.ts_us].to_numpy(dtype=float)[rows]) >= 0)
    measured = float(np.nansum(facts.kernels[Kernels.dur_us].to_numpy(dtype=float)))
    assert float(members[M.dur_us].sum()) <= measured + 1e-6
