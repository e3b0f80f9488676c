"""The regions analysis skips its table work where there is nothing to find (issue 14: every
eager trace has no compiled-code spans, and a compiled one without graph breaks no two spans
in one step): the tables it then returns equal, column for column and dtype for dtype, what
the general path gives, on every sample and corpus trace."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.conftest import SAMPLES, corpus_files, load_trace
from traceviz.analysis import regions
from traceviz.analysis.regions import CodeSpan
from traceviz.schema import Regions

TRACES = [
    *sorted(SAMPLES.glob("**/*.pt.trace.json.gz")),
    *corpus_files(),
]


def _span_frame_reference(spans: pd.DataFrame, frames: pd.DataFrame) -> pd.DataFrame:
    """``regions._span_frame`` as it was, without the empty-input shortcut."""
    start = spans[Regions.ts_us].to_numpy(dtype=float)
    end = start + np.nan_to_num(spans[Regions.dur_us].to_numpy(dtype=float))
    thread = spans[Regions.thread].astype(object).astype(str).to_numpy()
    f_start = frames[Regions.ts_us].to_numpy(dtype=float)
    f_end = f_start + np.nan_to_num(frames[Regions.dur_us].to_numpy(dtype=float))
    f_thread = frames[Regions.thread].astype(object).astype(str).to_numpy()
    f_name = (
        frames[Regions.name]
        .astype(object)
        .astype(str)
        .str.removeprefix("Torch-Compiled Region: ")
        .to_numpy()
    )
    labels = []
    for s, e, t in zip(start, end, thread, strict=True):
        holds = np.flatnonzero((f_thread == t) & (f_start <= s) & (f_end >= e))
        labels.append(str(f_name[holds[np.argmax(f_start[holds])]]) if len(holds) else "")
    return pd.DataFrame(
        {CodeSpan.thread: thread, CodeSpan.start_us: start, CodeSpan.end_us: end,
         CodeSpan.frame: labels}
    )  # fmt: skip


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name if hasattr(p, "name") else str(p))
def test_fast_paths_equal_the_general_path(path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    trace = load_trace(path)
    fast_spans = regions.code_spans(trace)
    fast_gaps, fast_of = regions._gap_table(trace)
    monkeypatch.setattr(regions, "_span_frame", _span_frame_reference)
    monkeypatch.setattr(regions, "_share_a_step", lambda threads, steps: True)
    pd.testing.assert_frame_equal(fast_spans, regions.code_spans(trace), check_exact=True)
    slow_gaps, slow_of = regions._gap_table(trace)
    pd.testing.assert_frame_equal(fast_gaps, slow_gaps, check_exact=True)
    assert list(fast_gaps.dtypes.astype(str)) == list(slow_gaps.dtypes.astype(str))
    np.testing.assert_array_equal(fast_of, slow_of)


def test_sample_runs_take_the_fast_paths() -> None:
    """The shortcuts are taken where they should be (else the test above proves nothing)."""
    eager = load_trace(SAMPLES / "pointwise" / "eager.pt.trace.json.gz")
    compiled = load_trace(SAMPLES / "pointwise" / "compiled.pt.trace.json.gz")
    assert regions.code_spans(eager).empty
    spans = regions.code_spans(compiled)
    assert len(spans) == 3  # one compiled call per step, no graph break
    assert regions._gap_table(compiled)[0].empty


def test_share_a_step() -> None:
    threads = np.array(["1/1", "1/1", "1/2"], dtype=object)
    assert not regions._share_a_step(threads, np.array([0, 1, 0]))
    assert regions._share_a_step(threads, np.array([0, 0, 1]))
    assert not regions._share_a_step(threads, np.array([-1, -1, 0]))  # outside every step
    assert not regions._share_a_step(threads[:0], np.zeros(0, dtype=np.int64))


def test_graph_break_sample_still_finds_its_gaps() -> None:
    trace = load_trace(SAMPLES / "graph-break" / "compiled.pt.trace.json.gz")
    gaps, gap_of = regions._gap_table(trace)
    assert len(gaps) > 0
    assert int((gap_of >= 0).sum()) == int(gaps["kernel_count"].sum())


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name if hasattr(p, "name") else str(p))
def test_issue_times_and_inside_equal_the_pandas_form(path) -> None:  # type: ignore[no-untyped-def]
    from traceviz.analysis import kernels as kernel_analysis

    trace = load_trace(path)
    kernels = trace.kernels
    reference = (
        kernels["launch_ts_us"].fillna(kernels["ts_us"]).to_numpy(dtype=float, na_value=np.nan)
    )
    np.testing.assert_array_equal(kernel_analysis.issue_us(kernels), reference)
    inside = kernel_analysis.issued_inside(trace, trace.regions)
    assert inside.dtype == bool and len(inside) == len(kernels)
    if trace.regions.empty:
        assert not inside.any()
