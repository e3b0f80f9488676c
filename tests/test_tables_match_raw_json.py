"""The parsed tables say what the trace file says: each check is a plain, independent pass over
the raw JSON events (``json`` and dicts, no traceviz code), on every corpus trace (skipped where
the corpus is absent) and the traces of one sample run per code path (CUDA, CUDA graphs, CPU).

What is checked, per trace:

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

from collections import Counter, defaultdict
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tests.conftest import load_trace
from tests.real_data import every_trace_file, raw_events
from traceviz.schema import DeviceKind, Kernels, Ops
from traceviz.trace import Trace

DEVICE_CATS = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}
OP_CATS = {"cpu_op", "Operator", "user_annotation", "python_function"}
LAUNCH_CATS = {"cuda_runtime", "cuda_driver", "Runtime", "Driver"}
DIGITS = 3  # µs rounded to the ns when matching a row to its raw event


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
    for e in _spans(events, LAUNCH_CATS):
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
    from traceviz.analysis.kernels import classify
    from traceviz.analysis.top_kernels import top_kernels

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
