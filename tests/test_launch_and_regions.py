"""Launch overhead and compiled-region facts on tiny hand-made traces and real ones."""

from __future__ import annotations

import pytest

import traceviz
from tests.conftest import CORPUS, kernel, launch, op
from traceviz.analysis.regions import region_stats
from traceviz.analysis.timing.launch import launch_overhead


def test_idle_time_waiting_for_the_cpu(tmp_trace) -> None:
    # Kernel 1 runs 10-20; kernel 2's launch ends at 35, so the device idles 20-35 waiting
    # for the CPU; then kernel 2 runs 40-45 (5 more µs idle that is not the CPU's fault).
    path = tmp_trace(
        [
            op("ProfilerStep#1", 0, 50, cat="user_annotation"),
            launch("cudaLaunchKernel", 1, 4, 1),
            kernel("k1", 10, 10, 1),
            launch("cudaLaunchKernel", 30, 5, 2),
            kernel("k2", 40, 5, 2),
        ]
    )
    lo = launch_overhead(traceviz.load(path))
    step = lo.per_step.iloc[0]
    assert step.wall_us == 50 and step.busy_us == 15 and step.idle_us == 35
    # 20 → 35, plus the step's edges: 0 → 5 (k1's launch returns at 5) and 45 → 50
    assert step.cpu_wait_us == pytest.approx(15 + 5 + 5)
    assert lo.launch_calls == 2 and lo.launch_api_us == 9
    assert lo.short_kernels == 0
    assert lo.delay_p50_us == pytest.approx((5 + 5) / 2)


def test_overlapping_streams_count_once_and_short_kernels(tmp_trace) -> None:
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


def test_cpu_trace_idle_is_framework_overhead(tmp_trace) -> None:
    path = tmp_trace([op("ProfilerStep#0", 0, 100, cat="user_annotation"), op("aten::mm", 10, 30)])
    step = launch_overhead(traceviz.load(path)).per_step.iloc[0]
    assert step.kernel_time_us == 30 and step.idle_us == 70


def test_graph_break_shows_as_two_frames_and_eager_kernels_between(tmp_trace) -> None:
    path = tmp_trace(
        [
            op("ProfilerStep#0", 0, 1000, cat="user_annotation"),
            op("Torch-Compiled Region: 0/0", 10, 100),
            launch("cudaLaunchKernel", 20, 5, 1),
            kernel("triton_poi_fused_cos_0", 30, 5, 1),
            op("aten::nonzero", 150, 50),
            launch("cudaLaunchKernel", 160, 5, 2),
            kernel("nonzero_kernel", 170, 5, 2),
            op("Torch-Compiled Region: 1/0", 300, 100),
            launch("cudaLaunchKernel", 310, 5, 3),
            kernel("triton_poi_fused_relu_0", 320, 5, 3),
            op("Torch-Compiled Region: 1/1", 500, 100),
        ]
    )
    stats = region_stats(traceviz.load(path))
    assert stats.region_calls == 3 and stats.distinct_frames == 2
    assert stats.graph_breaks == 1 and stats.recompiles == 1
    assert stats.inside_kernels == 2 and stats.outside_kernels == 1
    assert stats.between_kernels == 1 and stats.between_time_us == 5
    assert set(stats.frames.recompile_id) == {0, 1}


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
