"""The regions table adds up (helper "lines"): its rows' kernels and the kernels outside every
compiled region are the trace's kernels, count and time. On the H200 attention-train run the
table showed frame 0/0 (85 kernels) and 20 outside: the 180 backward kernels, run by autograd
under ``CompiledFunctionBackward`` (with a ``## Call CompiledFxGraph ##`` inside) after the
frame returned, were in neither. They are a ``backward`` row now."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import traceviz
from tests.conftest import CORPUS, SAMPLES, corpus_params, kernel, launch, load_trace, op
from traceviz.analysis.regions import Frame, region_stats
from traceviz.pipeline import compare
from traceviz.report.views import regions_view
from traceviz.schema import ActivityKind, Kernels
from traceviz.trace import Trace

SAMPLE_FILES = sorted(SAMPLES.glob("**/*.pt.trace.json.gz"))


def _measured(trace: Trace) -> tuple[int, float]:
    kernels = trace.kernels
    rows = kernels[kernels[Kernels.activity] == ActivityKind.KERNEL.value]
    return len(rows), float(np.nan_to_num(rows[Kernels.excl_dur_us].to_numpy(dtype=float)).sum())


def check_adds_up(trace: Trace) -> None:
    stats = region_stats(trace)
    count, time = _measured(trace)
    frames = stats.frames
    rows_count = int(frames[Frame.kernel_count].sum()) if len(frames) else 0
    rows_time = float(frames[Frame.kernel_time_us].sum()) if len(frames) else 0.0
    assert rows_count + stats.outside_kernels == count
    assert rows_time + stats.outside_time_us == pytest.approx(time, rel=1e-9, abs=1e-6)
    assert rows_count == stats.inside_kernels
    if len(frames):
        assert set(frames[Frame.kind]) <= {"frame", "backward", "forward", "graph"}
        graphs = frames.loc[frames[Frame.kind] != "frame", Frame.kind]
        assert graphs.is_unique  # one row per part of the compiled graphs outside frames


@pytest.mark.parametrize(
    "path", [pytest.param(p, id=str(p.relative_to(SAMPLES))) for p in SAMPLE_FILES]
)
def test_regions_add_up_on_sample_traces(path: Path) -> None:
    check_adds_up(load_trace(path))


@pytest.mark.parametrize("path", corpus_params())
def test_regions_add_up_on_corpus_traces(path: Path) -> None:
    check_adds_up(load_trace(path))


def test_attention_train_backward_is_a_row() -> None:
    trace = load_trace(SAMPLES / "h200" / "attention-train" / "compiled.pt.trace.json.gz")
    frames = region_stats(trace).frames.set_index(Frame.kind)
    assert list(frames.index) == ["frame", "backward"]
    assert int(frames.loc["frame", Frame.kernel_count]) == 85
    assert int(frames.loc["backward", Frame.kernel_count]) == 180
    assert int(frames.loc["backward", Frame.calls]) == 5  # one backward per step


def test_backward_on_its_own_thread(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    """GIVEN a frame on thread 1 (one kernel), its backward on thread 2 under
    CompiledFunctionBackward with a graph call inside (two kernels) and one kernel outside;
    THEN the rows are frame 0/0 (1), backward (2), and 1 outside; the text says backward."""
    path = tmp_trace(
        [
            op("Torch-Compiled Region: 0/0", 0, 100),
            op("CompiledFunction", 5, 90),
            launch("cudaLaunchKernel", 10, 5, 1),
            kernel("triton_poi_fused_sin_0", 20, 5, 1),
            op("CompiledFunctionBackward", 200, 100, tid=2),
            op("## Call CompiledFxGraph fabc ##", 205, 90, tid=2, cat="user_annotation"),
            launch("cudaLaunchKernel", 210, 5, 2, tid=2),
            kernel("triton_poi_fused_cos_0", 220, 5, 2),
            launch("cudaLaunchKernel", 230, 5, 3, tid=2),
            kernel("triton_poi_fused_mul_0", 240, 5, 3),
            launch("cudaLaunchKernel", 400, 5, 4),
            kernel("triton_poi_fused_relu_0", 410, 5, 4),
        ]
    )
    trace = traceviz.load(path)
    stats = region_stats(trace)
    frames = stats.frames
    assert frames[Frame.kind].tolist() == ["frame", "backward"]
    assert frames[Frame.kernel_count].tolist() == [1, 2]
    assert frames[Frame.kernel_time_us].tolist() == [5.0, 10.0]
    assert frames[Frame.graph_keys].tolist()[1] == "fabc"
    assert stats.outside_kernels == 1
    check_adds_up(trace)
    view = regions_view(compare(trace, trace))
    assert [row[1] for row in view.rows] == ["0/0", "backward (outside frames)"] * 2


def test_compiled_function_alone_is_a_forward_row(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    """Traces older than the region marker (the corpus' 2023 cudagraph runs): CompiledFunction
    and CompiledFunctionBackward only; both are rows, and an FX-graph call alone is too."""
    path = tmp_trace(
        [
            op("CompiledFunction", 0, 100),
            launch("cudaLaunchKernel", 10, 5, 1),
            kernel("triton_poi_fused_sin_0", 20, 5, 1),
            op("CompiledFunctionBackward", 200, 100),
            launch("cudaLaunchKernel", 210, 5, 2),
            kernel("triton_poi_fused_cos_0", 220, 5, 2),
            op("## Call CompiledFxGraph fx1 ##", 500, 100, cat="user_annotation"),
            launch("cudaLaunchKernel", 510, 5, 3),
            kernel("triton_poi_fused_mul_0", 520, 5, 3),
        ]
    )
    trace = traceviz.load(path)
    stats = region_stats(trace)
    assert stats.frames[Frame.kind].tolist() == ["backward", "forward", "graph"]
    assert stats.frames[Frame.kernel_count].tolist() == [1, 1, 1]
    assert stats.outside_kernels == 0
    check_adds_up(trace)


@pytest.mark.parametrize(
    "name", ["a100_compiled_cudagraph_train_2023", "v100_train_compiledfunction_cudagraph"]
)
def test_corpus_compiled_function_traces_have_rows(name: str) -> None:
    path = CORPUS / "nvidia" / f"{name}.json.gz"
    if not path.is_file():
        pytest.skip(f"corpus not found at {CORPUS}")
    stats = region_stats(load_trace(path))
    assert set(stats.frames[Frame.kind]) == {"forward", "backward"}
    assert int(stats.frames[Frame.kernel_count].sum()) > 0
