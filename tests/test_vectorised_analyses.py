"""The vectorised analysis hot spots (issue 14, PERF4) against plain per-row loops: blocking
issuers and reasons, the timeline's lane codes, the idle split's main thread (chain links are
checked against the raw JSON in test_tables_match_raw_json.py). Real traces (corpus, sample
runs) and tiny hand-made ones for the edge cases (empty names, ties, CPU-only lanes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import CORPUS, SAMPLES, corpus_params, kernel, launch, load_trace, op
from traceviz.analysis.blocking import BlockReason, blocking_reasons, is_step_span, issuers
from traceviz.analysis.idle import _main_thread
from traceviz.analysis.timeline import _is_gpu, _lanes
from traceviz.diagnose.facts import facts_of_trace
from traceviz.schema import Kernels, Launches, OpCategory, Ops
from traceviz.trace import Trace

SAMPLE_TRACES = sorted(SAMPLES.glob("*/*.pt.trace.json.gz")) + sorted(
    SAMPLES.glob("h200/*/*.pt.trace.json.gz")
)


def _traces() -> list[object]:
    return [
        *corpus_params(),
        *(pytest.param(p, id=str(p.relative_to(SAMPLES))) for p in SAMPLE_TRACES),
    ]


# --- references: the loops as they were -----------------------------------------------------


def _issuers_loop(trace: Trace, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ops, n = trace.ops, len(rows)
    op_out = np.full(n, None, dtype=object)
    frame_out = np.full(n, None, dtype=object)
    if n == 0 or ops.empty:
        return op_out, frame_out
    launches = trace.launches
    call_ts = launches[Launches.ts_us].to_numpy(dtype=float)[rows]
    call_thread = launches[Launches.thread].iloc[rows].astype(object).to_numpy()
    o_ts = ops[Ops.ts_us].to_numpy(dtype=float)
    o_end = o_ts + np.nan_to_num(ops[Ops.dur_us].to_numpy(dtype=float))
    parent = ops[Ops.parent_row].to_numpy(dtype=float, na_value=-1).astype(np.int64)
    is_frame = (ops[Ops.category] == OpCategory.PYTHON_FUNCTION.value).to_numpy(dtype=bool)
    is_step = is_step_span(ops[Ops.name])
    names = ops[Ops.name]
    for thread in pd.unique(call_thread):
        mine = np.flatnonzero((ops[Ops.thread] == thread).to_numpy(dtype=bool))
        if mine.size == 0:
            continue
        mine = mine[np.argsort(o_ts[mine], kind="stable")]
        for i in np.flatnonzero(call_thread == thread):
            pos = int(np.searchsorted(o_ts[mine], call_ts[i], side="right")) - 1
            row = int(mine[pos]) if pos >= 0 else -1
            while row >= 0 and (op_out[i] is None or frame_out[i] is None):
                if o_end[row] > call_ts[i]:
                    if is_frame[row]:
                        frame_out[i] = frame_out[i] or str(names.iat[row])
                    elif not is_step[row]:
                        op_out[i] = op_out[i] or str(names.iat[row])
                row = int(parent[row])
    return op_out, frame_out


def _lanes_by_text(trace: Trace, kernels: pd.DataFrame) -> np.ndarray:
    thread = kernels[Kernels.thread].astype(object).astype(str)
    if _is_gpu(trace):
        stream = kernels[Kernels.stream].astype(object).astype(str)
        device = kernels[Kernels.device].astype(object).astype(str)
        key = device + "/" + stream.where(kernels[Kernels.stream].notna(), "t" + thread)
    else:
        key = thread
    return np.asarray(pd.factorize(key)[0], dtype=np.int64)


# --- real traces ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", _traces())
def test_vectorised_analyses_match_their_loops_on_real_traces(path: Path) -> None:
    trace = load_trace(path)
    rows = np.arange(len(trace.launches), dtype=np.int64)[:4000]
    for got, want in zip(issuers(trace, rows), _issuers_loop(trace, rows), strict=True):
        assert got.tolist() == want.tolist()

    facts = facts_of_trace(trace)
    assert _lanes(trace, facts.kernels).tolist() == _lanes_by_text(trace, facts.kernels).tolist()

    threads = trace.launches[Launches.thread].astype(str)
    expected = None if threads.empty else str(threads.value_counts().index[0])
    assert _main_thread(trace) == expected

    reasons = blocking_reasons(trace)
    assert set(reasons.tolist()) <= {"", *(r.value for r in BlockReason)}
    assert reasons.dtype == np.asarray(reasons.astype(object)).astype(str).dtype


def test_real_traces_include_issuers() -> None:
    """The comparison above is not vacuous: a corpus trace has issuers."""
    if not CORPUS.is_dir():
        pytest.skip(f"corpus not found at {CORPUS}")
    trace = load_trace(CORPUS / "nvidia" / "a100_eager_train_control.json.gz")
    found, _ = issuers(trace, np.arange(len(trace.launches), dtype=np.int64))
    assert sum(x is not None for x in found) > 1000


# --- edge cases -----------------------------------------------------------------------------


def test_issuers_skip_an_empty_name_for_the_enclosing_one(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    events = [
        op("ProfilerStep#1", 0, 1000),
        op("frame.py(1): f", 5, 700, cat="python_function"),
        op("outer", 10, 500),
        op("", 20, 100),  # empty name: taken, then replaced by the enclosing "outer"
        launch("cudaLaunchKernel", 30, 5, 1),
        kernel("k", 40, 5, 1),
        launch("cudaLaunchKernel", 600, 5, 2),  # only the step encloses it
        kernel("k", 610, 5, 2),
    ]
    trace = load_trace(tmp_trace(events))
    rows = np.arange(len(trace.launches), dtype=np.int64)
    got = issuers(trace, rows)
    assert [x.tolist() for x in got] == [x.tolist() for x in _issuers_loop(trace, rows)]
    assert got[0].tolist() == ["outer", None]
    assert got[1].tolist() == ["frame.py(1): f", "frame.py(1): f"]


def test_main_thread_tie_goes_to_the_first_thread(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    events = [
        launch("cudaLaunchKernel", 10, 5, 1, tid=9),
        launch("cudaLaunchKernel", 20, 5, 2, tid=3),
        launch("cudaLaunchKernel", 30, 5, 3, tid=3),
        launch("cudaLaunchKernel", 40, 5, 4, tid=9),
        *(kernel("k", 100 + 10 * i, 5, i) for i in range(1, 5)),
    ]
    trace = load_trace(tmp_trace(events))
    threads = trace.launches[Launches.thread].astype(str)
    assert _main_thread(trace) == str(threads.value_counts().index[0]) == threads.iloc[0]


def test_lanes_number_streams_in_order_of_first_kernel(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    def on(stream: int, ts: float, corr: int) -> dict:
        k = kernel("k", ts, 5, corr)
        k["args"]["stream"] = stream
        return k

    events = [
        *(launch("cudaLaunchKernel", 10 * i, 2, i) for i in range(1, 5)),
        on(20, 100, 1), on(7, 110, 2), on(20, 120, 3), on(13, 130, 4),
    ]  # fmt: skip
    trace = load_trace(tmp_trace(events))
    kernels = facts_of_trace(trace).kernels
    got = _lanes(trace, kernels)
    assert got.tolist() == _lanes_by_text(trace, kernels).tolist()
    streams = kernels[Kernels.stream].tolist()
    assert [int(got[streams.index(s)]) for s in (20, 7, 13)] == [0, 1, 2]
