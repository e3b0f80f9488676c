"""Fusion map: tiny hand-made eager/compiled pairs for each rule, then real pairs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import traceviz
from tests.conftest import CORPUS, SAMPLES, kernel, launch, load_trace, op
from traceviz.analysis.fusion.fusion_map import (
    EagerOnly,
    FusionKernels,
    FusionMap,
    NotFusions,
    fusion_map,
    name_keys,
    op_key,
)

MakeTrace = Callable[..., Path]


def step(n: int, ts: float, dur: float = 1000) -> dict:
    return op(f"ProfilerStep#{n}", ts, dur, cat="user_annotation")


def region(ts: float, dur: float) -> dict:
    return op("Torch-Compiled Region: 0/0", ts, dur)


def tensors(*shapes: list[int]) -> dict[str, Any]:
    return {"Input Dims": list(shapes), "Input type": ["float"] * len(shapes)}


def gpu_op(name: str, ts: float, ext: int, dur: float = 1.0, **args: Any) -> list[dict]:
    """A CPU op launching one GPU kernel ``k<ext>`` (correlation = External id = ``ext``)."""
    return [
        op(name, ts, 10, **{"External id": ext}, **args),
        launch("cudaLaunchKernel", ts + 1, 2, ext, **{"External id": ext}),
        kernel(f"k{ext}", ts + 20, dur, ext, **{"External id": ext}),
    ]


def fmap(tmp_trace: MakeTrace, eager: list[dict], compiled: list[dict]) -> FusionMap:
    return fusion_map(traceviz.load(tmp_trace(eager)), traceviz.load(tmp_trace(compiled)))


def kernel_row(result: FusionMap, name: str) -> pd.Series:
    rows = result.kernels[result.kernels[FusionKernels.kernel] == name]
    assert len(rows) == 1, f"{name} not in {list(result.kernels[FusionKernels.kernel])}"
    return rows.iloc[0]


# --- keys --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("aten::clamp_min", "relu"),
        ("aten::_softmax", "softmax"),
        ("aten::native_layer_norm", "layer_norm"),
        ("aten::addmm", "linear"),
        ("aten::mm", "addmm"),
        ("aten::add_", "add"),
        ("aten::copy_", "clone"),
        ("aten::_native_batch_norm_legit_no_training", "native_batch_norm"),
        ("aten::fill_", "full"),
    ],
)
def test_aliases_meet(a: str, b: str) -> None:
    assert op_key(a) is not None and op_key(a) == op_key(b)


@pytest.mark.parametrize("name", ["_unsafe_view", "aten::view", "transpose", "split", "t", ""])
def test_views_match_nothing(name: str) -> None:
    assert op_key(name) is None


def test_different_ops_do_not_meet() -> None:
    assert op_key("aten::add") != op_key("aten::mul")
    assert op_key("aten::bmm") != op_key("aten::mm")


def test_inductor_names_stand_for_their_ops() -> None:
    assert name_keys("triton_poi_fused__unsafe_view_add_relu_3") == ["add", "relu"]
    assert name_keys("graph_0_cpp_fused_native_layer_norm_0") == ["layer_norm"]
    assert name_keys("aten::clamp_min") == ["relu"]
    assert name_keys("triton__0d1d2d") == []  # old mangled name: ops unknown


# --- hand-made CPU pair ------------------------------------------------------------------

EAGER_CPU = [
    step(1, 0),
    op("aten::cos", 10, 20),
    op("aten::relu", 40, 20),
    op("aten::clamp_min", 41, 15),  # relu's work
    op("aten::add", 70, 20),
    op("aten::addmm", 100, 50),
    op("aten::sum", 200, 10),
    op("aten::sigmoid", 220, 5),
    op("aten::view", 230, 1),  # moves no data: not a kernel
]
COMPILED_CPU = [
    step(1, 0),
    region(5, 400),
    op("graph_0_cpp_fused_add_cos_relu_view_0", 10, 12),
    op("aten::mm", 40, 45),  # extern GEMM inside the region
    op("graph_0_cpp_fused_addmm_sigmoid_1", 100, 3),
    op("aten::sum", 600, 9),  # outside every region: still eager
]


@pytest.fixture
def cpu_pair(tmp_trace: MakeTrace) -> FusionMap:
    return fmap(tmp_trace, EAGER_CPU, COMPILED_CPU)


def test_fused_kernel_names_the_eager_ops_it_replaced(cpu_pair: FusionMap) -> None:
    fused = kernel_row(cpu_pair, "graph_0_cpp_fused_add_cos_relu_view_0")
    assert fused[FusionKernels.is_fusion]
    assert fused[FusionKernels.source] == "inductor_cpp"
    assert fused[FusionKernels.fused_ops] == "add, cos, relu, view"
    # by eager time, largest first, then by name
    assert fused[FusionKernels.eager_ops] == "aten::add (1), aten::cos (1), aten::clamp_min (1)"
    assert fused[FusionKernels.eager_kernels] == 3
    assert fused[FusionKernels.eager_time_us] == pytest.approx(20 + 20 + 15)
    assert fused[FusionKernels.calls] == 1 and fused[FusionKernels.time_us] == 12


def test_extern_and_eager_kernels_are_not_fusions(cpu_pair: FusionMap) -> None:
    not_fusions = cpu_pair.not_fusions.set_index(NotFusions.kernel)
    assert set(not_fusions.index) == {"aten::mm", "aten::sum"}
    assert not_fusions.loc["aten::mm", NotFusions.source] == "extern"
    assert not_fusions.loc["aten::sum", NotFusions.source] == "eager_aten"
    assert not_fusions.loc["aten::mm", NotFusions.op_names] == "aten::mm"
    assert kernel_row(cpu_pair, "aten::sum")[FusionKernels.eager_ops] == "aten::sum (1)"


def test_an_eager_kernel_is_credited_once(cpu_pair: FusionMap) -> None:
    # eager addmm: one kernel, so one credit: the extern mm (alias) takes it, and the kernel
    # that fused the bias add with the sigmoid gets only the sigmoid
    assert kernel_row(cpu_pair, "aten::mm")[FusionKernels.eager_ops] == "aten::addmm (1)"
    fused = kernel_row(cpu_pair, "graph_0_cpp_fused_addmm_sigmoid_1")
    assert fused[FusionKernels.eager_ops] == "aten::sigmoid (1)"
    assert int(cpu_pair.kernels[FusionKernels.eager_kernels].sum()) == 6  # every eager kernel


def test_eager_only_and_headline(tmp_trace: MakeTrace) -> None:
    result = fmap(tmp_trace, EAGER_CPU, COMPILED_CPU[:4])  # no sigmoid/addmm fusion, no sum
    only = result.eager_only.set_index(EagerOnly.op)
    assert list(only.index) == ["aten::sum", "aten::sigmoid"]  # by time, largest first
    assert only.loc["aten::sum", EagerOnly.kernels] == 1
    assert only.loc["aten::sigmoid", EagerOnly.time_us] == 5
    assert (result.eager_kernel_count, result.compiled_kernel_count) == (6, 2)
    assert result.eager_kernels_per_compiled_kernel == 3.0
    assert result.est_bytes_saved is None  # no shapes recorded


def test_tables_are_sorted_by_time_and_typed(cpu_pair: FusionMap) -> None:
    times = list(cpu_pair.kernels[FusionKernels.time_us])
    assert times == sorted(times, reverse=True)
    kernels = cpu_pair.kernels
    assert list(kernels.columns) == [
        FusionKernels.kernel, FusionKernels.source, FusionKernels.is_fusion,
        FusionKernels.fused_ops, FusionKernels.op_names, FusionKernels.calls,
        FusionKernels.time_us, FusionKernels.eager_ops, FusionKernels.eager_kernels,
        FusionKernels.eager_time_us, FusionKernels.is_layout, FusionKernels.confidence,
        FusionKernels.basis,
    ]  # fmt: skip
    assert str(kernels[FusionKernels.calls].dtype) == "Int64"
    assert kernels[FusionKernels.is_fusion].dtype == bool


def test_steps_in_different_numbers_are_scaled(tmp_trace: MakeTrace) -> None:
    eager = [step(1, 0), op("aten::cos", 10, 5), step(2, 1000), op("aten::cos", 1010, 5)]
    compiled = [step(1, 0), region(5, 50), op("graph_0_cpp_fused_cos_0", 10, 3)]
    result = fmap(tmp_trace, eager, compiled)
    assert result.step_scale == 2.0
    assert result.eager_kernels_per_compiled_kernel == 1.0  # one kernel per step each


def test_rejects_non_traces(tmp_trace: MakeTrace) -> None:
    trace = traceviz.load(tmp_trace(EAGER_CPU))
    with pytest.raises(TypeError, match="compiled"):
        fusion_map(trace, "compiled.json")  # type: ignore[arg-type]


# --- hand-made GPU pair: bytes saved -----------------------------------------------------

EAGER_GPU = [
    *gpu_op("aten::cos", 0, 1, **tensors([256])),
    *gpu_op("aten::sin", 100, 2, **tensors([256])),
    *gpu_op("aten::add", 200, 3, **tensors([256], [256])),
]


def compiled_gpu(**launch_args: Any) -> list[dict]:
    name = "triton_poi_fused_add_cos_sin_0"
    events = gpu_op(name, 0, 9, **launch_args)
    events[-1]["name"] = name  # the device kernel has the launch op's name
    return events


def test_bytes_saved_is_eager_minus_compiled_estimate(tmp_trace: MakeTrace) -> None:
    result = fmap(tmp_trace, EAGER_GPU, compiled_gpu(**tensors([256], [256])))
    eager_bytes = 2 * (256 * 4 * 2) + 256 * 4 * 3  # cos, sin: read + write; add: 2 reads + write
    assert result.eager_traffic.estimated_bytes == eager_bytes
    assert result.compiled_traffic.estimated_bytes == 2 * 256 * 4  # input and output args
    assert result.est_bytes_saved == eager_bytes - 2 * 256 * 4
    fused = kernel_row(result, "triton_poi_fused_add_cos_sin_0")
    assert fused[FusionKernels.source] == "inductor_triton"
    assert fused[FusionKernels.eager_ops] == "aten::add (1), aten::cos (1), aten::sin (1)"
    assert result.eager_only.empty


def test_no_bytes_saved_when_a_fused_kernel_has_no_estimate(tmp_trace: MakeTrace) -> None:
    result = fmap(tmp_trace, EAGER_GPU + gpu_op("aten::mul", 300, 4, **tensors([8], [8])),
                  compiled_gpu() + gpu_op("aten::mul", 300, 4, **tensors([8], [8])))  # fmt: skip
    assert result.compiled_traffic.estimated_bytes == 3 * 8 * 4  # the mul only
    assert result.est_bytes_saved is None


# --- real traces -------------------------------------------------------------------------


def sample_pair(model: str) -> tuple[traceviz.Trace, traceviz.Trace]:
    paths = [SAMPLES / model / f"{v}.pt.trace.json.gz" for v in ("eager", "compiled")]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        pytest.skip(f"sample traces {missing} not found (make them with sample_traces/make.sh)")
    return load_trace(paths[0]), load_trace(paths[1])


def corpus_trace(relative: str) -> traceviz.Trace:
    path = CORPUS / relative
    if not path.is_file():
        pytest.skip(f"corpus trace {relative} not found under {CORPUS}")
    return load_trace(path)


def test_pointwise_sample_fused_kernel_replaced_the_eager_chain() -> None:
    eager, compiled = sample_pair("pointwise")
    result = fusion_map(eager, compiled)
    fused = result.kernels[result.kernels[FusionKernels.is_fusion]]
    assert len(fused) == 1
    row = fused.iloc[0]
    assert row[FusionKernels.source] == "inductor_cpp"
    replaced = {text.split(" (")[0] for text in row[FusionKernels.eager_ops].split(", ")}
    chain = {"aten::cos", "aten::clamp_min", "aten::mul", "aten::add", "aten::sin", "aten::sigmoid"}
    # the chain, plus the copies that wrap Python scalars inside aten::mul/add (ops around them)
    assert chain <= replaced <= chain | {"aten::copy_", "aten::fill_"}
    assert set(row[FusionKernels.fused_ops].split(", ")) == {
        "add", "cos", "mul", "relu", "sigmoid", "sin",
    }  # fmt: skip
    # what is left over are the copies that wrap Python scalars
    assert set(result.eager_only[EagerOnly.op]) <= {"aten::copy_", "aten::fill_"}
    assert result.not_fusions.empty
    assert result.eager_kernels_per_compiled_kernel is not None
    assert result.eager_kernels_per_compiled_kernel >= 6
    assert result.est_bytes_saved is None  # the C++ kernel records no shapes


def test_mi300x_llama_block_triton_fusions_and_hipblaslt_gemms() -> None:
    trace = corpus_trace("amd/mi300x_compiled_llama_block_tiny.json.gz")
    assert fusion_map(trace, trace).kernels.empty  # compiled vs compiled: the guard withholds
    result = fusion_map(trace, trace, force=True)
    fused = result.kernels[result.kernels[FusionKernels.is_fusion]]
    assert set(fused[FusionKernels.kernel]) == {
        "triton_red_fused_add_mean_mul_pow_rsqrt_0",
        "triton_red_fused__unsafe_view_add_mean_mul_pow_rsqrt_1",
        "triton_poi_fused__unsafe_view_mul_silu_2",
        "triton_poi_fused__unsafe_view_add_3",
    }
    assert set(fused[FusionKernels.source]) == {"inductor_triton"}
    rms = kernel_row(result, "triton_red_fused_add_mean_mul_pow_rsqrt_0")
    assert rms[FusionKernels.fused_ops] == "add, mean, mul, pow, rsqrt"
    gemms = result.not_fusions[result.not_fusions[NotFusions.kernel].str.startswith("Cijk_")]
    assert len(gemms) == 3 and gemms[NotFusions.calls].sum() == 7
    assert set(gemms[NotFusions.source]) == {"extern"}
    assert set(gemms[NotFusions.op_names]) == {"aten::mm"}
    assert "attn_fwd" in set(result.not_fusions[NotFusions.kernel])
    assert result.eager_only.empty  # a trace against itself: everything has a counterpart
    assert result.eager_kernels_per_compiled_kernel == 1.0 and result.est_bytes_saved == 0


def test_a100_tiny_triton_kernel() -> None:
    trace = corpus_trace("nvidia/a100_compiled_triton_tiny.json.gz")
    result = fusion_map(trace, trace, force=True)
    row = kernel_row(result, "triton_poi_fused_add_cos_sin_0")
    assert row[FusionKernels.is_fusion] and row[FusionKernels.fused_ops] == "add, cos, sin"
    assert row[FusionKernels.op_names] == "triton_poi_fused_add_cos_sin_0"
    assert result.compiled_traffic.estimated_bytes == 1200
    assert result.not_fusions.empty


CORPUS_PAIRS = [
    ("nvidia/a100_eager_train_control.json.gz",
     "nvidia/a100_compiled_cudagraph_train_2023.json.gz"),
    ("nvidia/v100_resnet50_eager_train_2021.json.gz",
     "nvidia/v100_train_compiledfunction_cudagraph.json.gz"),
    ("amd/mi250_eager_train_rocm62.json.gz", "amd/mi300x_compiled_llama_block_tiny.json.gz"),
    ("amd/mi300x_compiled_flux_hipgraph.json.gz", "amd/mi300x_vllm_full_graph_replay.json.gz"),
    ("nvidia/resnet50_eager_legacy_bare_array.json.gz", "nvidia/a100_compiled_triton_tiny.json.gz"),
    ("cpu/cpu_only_rank.json.gz", "nvidia/v100_small_plain.json"),
    ("other/mtia_inference_nongpu_device.json.gz", "nvidia/a100_cupti_profiler_range.json.gz"),
    ("other/large_integer_ids.json.gz", "other/backward_thread_plain.json"),
]  # fmt: skip


@pytest.mark.parametrize(("eager", "compiled"), CORPUS_PAIRS, ids=lambda p: p.split("/")[-1])
def test_corpus_pairs(eager: str, compiled: str) -> None:
    a, b = corpus_trace(eager), corpus_trace(compiled)
    result = fusion_map(a, b, force=True)  # the tables' structure, whatever the guard says
    kernels = result.kernels
    assert kernels[FusionKernels.kernel].is_unique
    assert int(kernels[FusionKernels.calls].sum()) == result.compiled_kernel_count
    assert set(result.not_fusions[NotFusions.kernel]) == set(
        kernels.loc[~kernels[FusionKernels.is_fusion], FusionKernels.kernel]
    )
    unmatched = int(result.eager_only[EagerOnly.kernels].sum())
    assert unmatched <= result.eager_kernel_count
    assert (kernels[FusionKernels.eager_kernels] >= 0).all()
    if result.compiled_kernel_count:
        assert result.eager_kernels_per_compiled_kernel is not None
    else:
        assert result.eager_kernels_per_compiled_kernel is None
