"""Time is counted once: a CPU kernel nested inside another kernel (``aten::addmm``'s
``aten::copy_``) is a kernel of its own, and its time is not counted again inside the outer
kernel's. ``dur_us`` keeps what the trace says; ``excl_dur_us`` is what sums.

The invariants are checked on every sample trace and every corpus trace: per step, kernel time
≤ busy time ≤ wall (CPU traces); over the trace, summed kernel time ≤ the union of the kernel
intervals on each thread; every table that sums kernel time agrees with the summary. Launch
overhead and compiled-region facts on tiny hand-made traces and real ones."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import traceviz
from tests.conftest import CORPUS, SAMPLES, corpus_params, kernel, launch, load_trace, op
from traceviz.analysis import kernels as kernel_analysis
from traceviz.analysis.regions import region_stats
from traceviz.analysis.summary import summarize
from traceviz.analysis.timing.launch import launch_overhead
from traceviz.parse.cpu_kernels import exclusive_durations
from traceviz.schema import ActivityKind, DeviceKind, Kernels
from traceviz.trace import Trace

#: Rounding allowance: trace clocks are µs with ns fractions on a ~1e12 µs origin.
EPS_US = 1e-3

SAMPLE_TRACES = sorted(SAMPLES.glob("*/*.pt.trace.json.gz"))
SAMPLE_PARAMS = [
    pytest.param(p, id=f"{p.parent.name}/{p.name.split('.')[0]}") for p in SAMPLE_TRACES
]


def _union_us(starts: np.ndarray, ends: np.ndarray) -> float:
    """Length of the union of [start, end) intervals, the plain way."""
    total, cur_start, cur_end = 0.0, None, None
    for s, e in sorted(zip(starts.tolist(), ends.tolist(), strict=True)):
        if cur_end is None or s > cur_end:
            if cur_end is not None:
                total += cur_end - cur_start
            cur_start, cur_end = s, e
        else:
            cur_end = max(cur_end, e)
    if cur_end is not None:
        total += cur_end - cur_start
    return total


def _kernel_rows(trace: Trace) -> pd.DataFrame:
    k = trace.kernels
    return k[(k[Kernels.activity] == ActivityKind.KERNEL.value).to_numpy()]


def _per_thread_union_us(rows: pd.DataFrame) -> float:
    total = 0.0
    for _, group in rows.groupby(Kernels.thread, observed=True):
        starts = group[Kernels.ts_us].to_numpy(dtype=float)
        ends = starts + np.nan_to_num(group[Kernels.dur_us].to_numpy(dtype=float))
        total += _union_us(starts, ends)
    return total


def check_time_is_counted_once(trace: Trace) -> None:
    """Every invariant of the module docstring, on one trace (the regions': tests/
    test_nested_regions.py's check_regions_partition)."""
    summary = summarize(trace)
    rows = _kernel_rows(trace)
    excl = rows[Kernels.excl_dur_us].to_numpy(dtype=float)
    durs = rows[Kernels.dur_us].to_numpy(dtype=float)
    assert np.all(np.isnan(excl) == np.isnan(durs))
    assert np.all(np.nan_to_num(excl) <= np.nan_to_num(durs) + EPS_US)
    assert np.all(np.nan_to_num(excl) >= 0)
    assert summary.kernel_time_us == pytest.approx(float(np.nansum(excl)), abs=EPS_US)
    # every other sum of kernel time agrees with the summary's
    kinds = kernel_analysis.kind_table(kernel_analysis.classify(trace))
    all_activities = float(summary.activities["time_us"].sum())  # kinds hold memcpy/memset too
    assert float(kinds["time_us"].sum()) == pytest.approx(all_activities, abs=0.01)
    top = summarize(trace, top=10**6).top_kernels
    assert float(top["time_us"].sum()) == pytest.approx(summary.kernel_time_us, abs=0.01)
    if trace.device_kind is not DeviceKind.CPU:
        assert np.array_equal(np.nan_to_num(excl), np.nan_to_num(durs))  # device: no nesting
        return
    n = len(rows)
    assert summary.kernel_time_us <= _per_thread_union_us(rows) + EPS_US * max(n, 1)
    per_step = launch_overhead(trace).per_step
    for step in per_step.itertuples():
        assert step.kernel_time_us <= step.busy_us + EPS_US * max(n, 1), step
        assert step.busy_us <= step.wall_us + EPS_US, step


@pytest.mark.parametrize("path", SAMPLE_PARAMS)
def test_time_is_counted_once_on_samples(path: Path) -> None:
    check_time_is_counted_once(load_trace(path))


@pytest.mark.parametrize("path", corpus_params())
def test_time_is_counted_once_on_corpus(path: Path) -> None:
    check_time_is_counted_once(load_trace(path))


def test_samples_have_nested_cpu_kernels_whose_time_was_double_counted() -> None:
    """The samples hold the case the issue names; without the fix the sum exceeds the union."""
    trace = load_trace(SAMPLES / "linear-add" / "compiled.pt.trace.json.gz")
    rows = _kernel_rows(trace)
    raw_sum = float(rows[Kernels.dur_us].sum())
    union = _per_thread_union_us(rows)
    assert raw_sum > union + 1.0  # aten::copy_ inside aten::addmm, counted twice by dur_us
    assert summarize(trace).kernel_time_us == pytest.approx(union, abs=EPS_US * len(rows))


def _addmm_trace(tmp_trace) -> Trace:  # type: ignore[no-untyped-def]
    """One step: aten::linear → aten::addmm (100 µs) → aten::copy_ (30 µs) → aten::fill_ (5 µs),
    then aten::relu (20 µs)."""
    path = tmp_trace(
        [
            op("ProfilerStep#0", 0, 200, cat="user_annotation"),
            op("aten::linear", 10, 110),
            op("aten::addmm", 15, 100),
            op("aten::copy_", 20, 30),
            op("aten::fill_", 25, 5),
            op("aten::relu", 150, 20),
        ]
    )
    return traceviz.load(path)


def test_nested_cpu_kernels_keep_their_count_and_lose_the_double_time(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    trace = _addmm_trace(tmp_trace)
    k = trace.kernels.set_index(Kernels.name)
    assert list(k.index) == ["aten::addmm", "aten::copy_", "aten::fill_", "aten::relu"]
    assert list(k[Kernels.dur_us]) == [100, 30, 5, 20]  # what the trace says
    assert list(k[Kernels.excl_dur_us]) == [70, 25, 5, 20]  # each µs once
    summary = summarize(trace)
    assert summary.kernel_count == 4 and summary.kernel_time_us == 120  # union: 100 + 20
    step = launch_overhead(trace).per_step.iloc[0]
    assert step.kernel_time_us == 120 and step.busy_us == 120 and step.idle_us == 80
    check_time_is_counted_once(trace)


def test_exclusive_durations_clip_overhang_and_keep_threads_apart() -> None:
    # thread 0: a [0, 10) holds b [2, 14) which overhangs by 4; thread 1: c [3, 8) alone,
    # given out of order; d has no duration.
    threads = np.array([1, 0, 0, 0])
    starts = np.array([3.0, 2.0, 0.0, 5.0])
    durs = np.array([5.0, 12.0, 10.0, np.nan])
    out = exclusive_durations(threads, starts, durs)
    assert out[0] == 5.0  # c: nothing nested, other thread ignored
    assert out[2] == 2.0  # a: 10 − the 8 µs of b inside it
    assert out[1] == 12.0  # b: d has no duration to take away
    assert np.isnan(out[3])
    assert out[0] + out[1] + out[2] == 5.0 + _union_us(np.array([0.0, 2.0]), np.array([10.0, 14.0]))
    # on a large clock (a real trace's, µs) they are exact
    origin = 5.158224e12  # a real trace's clock, µs
    out = exclusive_durations(
        np.zeros(2, dtype=np.int64), np.array([origin, origin + 3.25]), np.array([316.544, 32.501])
    )
    assert out[0] == pytest.approx(284.043, abs=1e-6)


def test_gpu_kernels_keep_their_duration(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    path = tmp_trace(
        [
            op("aten::mm", 0, 50),
            launch("cudaLaunchKernel", 5, 5, 1),
            kernel("gemm", 20, 30, 1),
            launch("cudaLaunchKernel", 12, 5, 2),
            kernel("other_stream", 25, 10, 2, stream=9),
        ]
    )
    trace = traceviz.load(path)
    assert trace.device_kind is DeviceKind.CUDA
    k = trace.kernels
    assert list(k[Kernels.excl_dur_us]) == list(k[Kernels.dur_us])  # concurrency is real time


def test_overlapping_streams_count_once_short_kernels_and_cpu_overhead(tmp_trace) -> None:
    path = tmp_trace(
        [
            launch("cudaLaunchKernel", 0, 8, 1),
            kernel("k1", 10, 10, 1),
            launch("cudaLaunchKernel", 1, 8, 2),
            kernel("k2", 12, 2, 2, stream=9),
        ]
    )
    lo = launch_overhead(traceviz.load(path))
    assert lo.per_step.iloc[0].busy_us == pytest.approx(10)
    assert lo.short_kernels == 1  # k2 ran 2 µs, its launch took 8
    # on a CPU trace the idle time is framework overhead
    path = tmp_trace([op("ProfilerStep#0", 0, 100, cat="user_annotation"), op("aten::mm", 10, 30)])
    step = launch_overhead(traceviz.load(path)).per_step.iloc[0]
    assert step.kernel_time_us == 30 and step.idle_us == 70


def test_corpus_compiled_regions() -> None:
    path = CORPUS / "amd" / "mi300x_compiled_llama_block_tiny.json.gz"
    if not path.exists():
        pytest.skip(f"corpus not found at {CORPUS}")
    stats = region_stats(traceviz.load(path))
    assert stats.region_calls == 1 and stats.fx_graph_calls == 1
    assert stats.inside_kernels == 12 and stats.outside_kernels == 0


def test_break_inside_nested_regions_is_seen_between_graph_calls(tmp_trace) -> None:
    # torch nests the resumed frame's region (1/0) inside the region of the frame that broke.
    path = tmp_trace(
        [
            op("ProfilerStep#0", 0, 1000, cat="user_annotation"),
            op("Torch-Compiled Region: 0/0", 10, 900),
            op("## Call CompiledFxGraph abc ##", 20, 100, cat="user_annotation"),
            launch("cudaLaunchKernel", 30, 5, 1),
            kernel("triton_poi_fused_cos_0", 40, 5, 1),
            op("aten::item", 150, 50),
            launch("cudaMemcpyAsync", 160, 5, 2),
            {
                "ph": "X",
                "cat": "kernel",
                "name": "copy_kernel",
                "pid": 0,
                "tid": 7,
                "ts": 170,
                "dur": 5,
                "args": {"correlation": 2, "device": 0, "stream": 7},
            },
            op("Torch-Compiled Region: 1/0", 300, 500),
            op("## Call CompiledFxGraph def ##", 310, 100, cat="user_annotation"),
            launch("cudaLaunchKernel", 320, 5, 3),
            kernel("triton_poi_fused_relu_0", 330, 5, 3),
        ]
    )
    stats = region_stats(traceviz.load(path))
    assert stats.graph_breaks == 1
    assert stats.between_kernels == 1 and stats.between_time_us == 5
