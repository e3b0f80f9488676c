"""Where compiled code runs (analysis.regions): each code span lies in the innermost
Torch-Compiled Region of its thread in the raw JSON; the shortcuts taken where there is
nothing to find (every eager trace has no compiled-code spans, a compiled one without graph
breaks no two spans in one step) return the tables, column for column and dtype for dtype,
that the general path gives; issue times are the launch's start, else the kernel's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import CORPUS, SAMPLES, load_trace
from tests.real_data import raw_events
from traceviz.analysis import kernels as kernel_analysis
from traceviz.analysis import regions
from traceviz.analysis.regions import CodeSpan

FRAME = "Torch-Compiled Region: "
# H200 runs with and without a graph break, CUDA graphs; a CPU run; corpus compiled traces
# (CUDA graphs, ROCm HIP graphs) and an eager one
TRACES = [
    *(SAMPLES / run / f"{side}.pt.trace.json.gz"
      for run in ("h200/graph-break", "h200/gpt2-reduce-overhead", "pointwise")
      for side in ("eager", "compiled")),
    *(CORPUS / name for name in ("nvidia/a100_compiled_cudagraph_train_2023.json.gz",
                                 "nvidia/v100_train_compiledfunction_cudagraph.json.gz",
                                 "amd/mi300x_compiled_flux_hipgraph.json.gz",
                                 "amd/mi250_eager_train_rocm62.json.gz")),
]  # fmt: skip


def _load(path: Path):  # type: ignore[no-untyped-def]
    if not path.is_file():
        pytest.skip(f"{path} not found")
    return load_trace(path)


def _ids(path: Path) -> str:
    return "/".join(path.parts[-2:])


@pytest.mark.parametrize("path", TRACES, ids=_ids)
def test_each_code_span_lies_in_its_raw_frame(path: Path) -> None:
    spans = regions.code_spans(_load(path))
    frames = [
        (f"{e.get('pid')}/{e.get('tid')}", float(e["ts"]), float(e["ts"]) + float(e["dur"]),
         str(e["name"]).removeprefix(FRAME))
        for e in raw_events(path)
        if e.get("ph") == "X" and str(e.get("name", "")).startswith(FRAME)
    ]  # fmt: skip
    for thread, start, end, frame in spans[
        [CodeSpan.thread, CodeSpan.start_us, CodeSpan.end_us, CodeSpan.frame]
    ].itertuples(index=False):
        holding = [f for f in frames if f[0] == thread and f[1] <= start + 1e-3
                   and f[2] >= end - 1e-3]  # fmt: skip
        assert holding, (thread, start, frame)
        assert frame == max(holding, key=lambda f: f[1])[3]  # the innermost: latest start


@pytest.mark.parametrize("path", TRACES, ids=_ids)
def test_shortcuts_equal_the_general_path(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = _load(path)
    fast_gaps, fast_of = regions._gap_table(trace)
    monkeypatch.setattr(regions, "_share_a_step", lambda threads, steps: True)
    slow_gaps, slow_of = regions._gap_table(trace)
    pd.testing.assert_frame_equal(fast_gaps, slow_gaps, check_exact=True)
    assert list(fast_gaps.dtypes.astype(str)) == list(slow_gaps.dtypes.astype(str))
    np.testing.assert_array_equal(fast_of, slow_of)


@pytest.mark.parametrize("path", TRACES, ids=_ids)
def test_issue_times_and_inside(path: Path) -> None:
    trace = _load(path)
    kernels = trace.kernels
    launch = kernels["launch_ts_us"].fillna(kernels["ts_us"])
    want = launch.to_numpy(dtype=float, na_value=np.nan)
    np.testing.assert_array_equal(kernel_analysis.issue_us(kernels), want)
    inside = kernel_analysis.issued_inside(trace, trace.regions)
    assert inside.dtype == bool and len(inside) == len(kernels)
    if trace.regions.empty:
        assert not inside.any()


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
