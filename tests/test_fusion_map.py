"""Fusion map: tiny hand-made eager/compiled pairs for each rule, then real pairs.

The map is a partition: each eager kernel instance is credited at most once, so per eager op
the credited count and time never exceed what the eager trace measured. It is withheld for
pairs that are not one workload: a compiled eager side, GEMMs of other shapes or call counts,
other devices, fused ops eager never runs. A GEMM, convolution or attention is never credited
to an Inductor kernel that only carries its epilogue (``triton_poi_fused_add_addmm_…`` holds
the bias add). The tables (``ops``, ``eager_only``, ``kernels``) partition the credits on
every sample run.

On the H200 runs (Triton kernels, cuBLAS split-K GEMMs, one fused kernel called at several
places of a graph): each call site matched; GEMM work credited to GEMM kernels; a post-grad
node made from an OpOverload (``mm_default_5``) reads as its op, so every kernel of a library
GEMM call holds the GEMM.

Name-match places a fused op by order and data flow, not by op name alone: two real CPU run
pairs with repeated blocks (``tests/data/name_match``, made by ``traceviz run`` from
``models.py`` there), compared as a user's pair (no compile log), are checked against the
compiler's record of the same run (its provenance, and its unambiguous credits).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import traceviz
from tests.conftest import (
    CORPUS,
    REPO,
    SAMPLES,
    corpus_or_skip,
    kernel,
    launch,
    launched,
    load_trace,
    op,
    tensors,
)
from tests.real_data import CORPUS_PAIRS as LINE_PAIRS
from tests.real_data import SAMPLE_RUNS, measured_kernel_us, sample_runs
from tests.test_fusion_by_line import run_evidence
from traceviz.analysis.fusion import fusion_map as fusion
from traceviz.analysis.fusion import ops as fusion_ops
from traceviz.analysis.fusion.by_line import kernel_table_rows
from traceviz.analysis.fusion.fusion_map import (
    EagerOnly,
    FusionKernels,
    FusionMap,
    NotFusions,
    fusion_map,
    name_keys,
    op_key,
)
from traceviz.analysis.fusion.lines import fusion_evidence, node_op
from traceviz.analysis.fusion.match import (
    HEAVY_KEYS,
    Credits,
    How,
    Outcome,
    anchor_coordinates,
    credit_eager_kernels,
    kernel_side,
)
from traceviz.analysis.inductor_names import TritonSubkind, fused_kernel_ops
from traceviz.analysis.kernels import classify
from traceviz.analysis.provenance import compiled_kernel_provenance
from traceviz.parse.compile_log import read_compile_log
from traceviz.pipeline import compare, compare_run
from traceviz.rundir import is_run_dir, read_run_dir
from traceviz.runner import load_run
from traceviz.schema import ActivityKind, Kernels
from traceviz.trace import Trace

MakeTrace = Callable[..., Path]


def step(n: int, ts: float, dur: float = 1000) -> dict:
    return op(f"ProfilerStep#{n}", ts, dur, cat="user_annotation")


def region(ts: float, dur: float) -> dict:
    return op("Torch-Compiled Region: 0/0", ts, dur)


def fmap(tmp_trace: MakeTrace, eager: list[dict], compiled: list[dict], **kw: Any) -> FusionMap:
    return fusion_map(traceviz.load(tmp_trace(eager)), traceviz.load(tmp_trace(compiled)), **kw)


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
    *launched("aten::cos", 0, 1.0, 1, **tensors([256])),
    *launched("aten::sin", 100, 1.0, 2, **tensors([256])),
    *launched("aten::add", 200, 1.0, 3, **tensors([256], [256])),
]


def compiled_gpu(**launch_args: Any) -> list[dict]:
    name = "triton_poi_fused_add_cos_sin_0"  # the device kernel has the launch op's name
    return launched(name, 0, 1.0, 9, kernel_name=name, **launch_args)


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
    mul = launched("aten::mul", 300, 1.0, 4, **tensors([8], [8]))
    result = fmap(tmp_trace, EAGER_GPU + mul, compiled_gpu() + mul)
    assert result.compiled_traffic.estimated_bytes == 3 * 8 * 4  # the mul only
    assert result.est_bytes_saved is None


# --- real traces -------------------------------------------------------------------------


def test_pointwise_sample_fused_kernel_replaced_the_eager_chain(
    samples: dict[str, tuple[traceviz.Trace, traceviz.Trace]],
) -> None:
    eager, compiled = samples["pointwise"]
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
    trace = corpus_or_skip("amd/mi300x_compiled_llama_block_tiny.json.gz")
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
    trace = corpus_or_skip("nvidia/a100_compiled_triton_tiny.json.gz")
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
    ("nvidia/v100_resnet50_eager_train_2021.json.gz",
     "nvidia/resnet50_eager_legacy_bare_array.json.gz"),
    ("amd/mi250_eager_train_rocm62.json.gz", "amd/mi300x_compiled_llama_block_tiny.json.gz"),
    ("amd/mi300x_compiled_flux_hipgraph.json.gz", "amd/mi300x_vllm_full_graph_replay.json.gz"),
    ("amd/mi300x_compiled_flux_hipgraph.json.gz", "nvidia/a100_compiled_triton_tiny.json.gz"),
    ("nvidia/resnet50_eager_legacy_bare_array.json.gz", "nvidia/a100_compiled_triton_tiny.json.gz"),
    ("nvidia/v100_eager_ns_timestamps.json.gz", "nvidia/a100_eager_nccl_rank.json.gz"),
    ("cpu/cpu_only_rank.json.gz", "nvidia/v100_small_plain.json"),
    ("other/mtia_inference_nongpu_device.json.gz", "nvidia/a100_cupti_profiler_range.json.gz"),
    ("other/large_integer_ids.json.gz", "other/backward_thread_plain.json"),
]  # fmt: skip


@pytest.mark.parametrize(("eager", "compiled"), CORPUS_PAIRS, ids=lambda p: p.split("/")[-1])
def test_corpus_pairs(eager: str, compiled: str) -> None:
    """The tables' structure, whatever the guard says; a partition, forced or not."""
    a, b = corpus_or_skip(eager), corpus_or_skip(compiled)
    result = fusion_map(a, b, force=True)
    assert_partition(a, result)
    assert_partition(a, fusion_map(a, b))
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


# --- the conservation check, computed independently of the credits -----------------------


def eager_per_op(trace: traceviz.Trace) -> pd.DataFrame:
    """Per eager op (its CPU op, else the kernel name): kernels and exclusive time, read
    straight from the kernels table."""
    k = trace.kernels[trace.kernels[Kernels.activity] == ActivityKind.KERNEL.value]
    label = k[Kernels.op_name].astype(object).fillna(k[Kernels.name].astype(object)).astype(str)
    time = k[Kernels.excl_dur_us].fillna(k[Kernels.dur_us]).fillna(0.0)
    return pd.DataFrame({"n": label.value_counts(), "t": time.groupby(label).sum()}).fillna(0)


def credited_per_op(result: FusionMap) -> pd.DataFrame:
    """Per eager op: kernels and time summed over the map's rows (parsed from eager_ops for the
    counts, so the rendered text is checked too) and over eager_only."""
    counts: dict[str, int] = {}
    for text in result.kernels[FusionKernels.eager_ops]:
        for part in filter(None, str(text).split("), ")):
            op_name, _, n = part.rstrip(")").rpartition(" (")
            counts[op_name] = counts.get(op_name, 0) + int(n)
    for op_name, n in zip(result.eager_only[EagerOnly.op], result.eager_only[EagerOnly.kernels],
                          strict=True):  # fmt: skip
        counts[op_name] = counts.get(op_name, 0) + int(n)
    credits = result.credits
    times = credits.groupby(credits[Credits.op].astype(str))[Credits.time_us].sum()
    return pd.DataFrame({"n": pd.Series(counts, dtype=float), "t": times}).fillna(0)


def assert_partition(eager: traceviz.Trace, result: FusionMap) -> None:
    """Per eager op: credited count ≤ eager count, credited time ≤ eager time; rows ≤ totals;
    every eager kernel instance appears once in the credits."""
    measured = eager_per_op(eager)
    credited = credited_per_op(result).reindex(measured.index.union(credited_per_op(result).index))
    both = credited.join(measured.add_suffix("_eager")).fillna(0)
    over_n = both[both["n"] > both["n_eager"]]
    assert over_n.empty, f"ops credited more kernels than the eager trace has:\n{over_n}"
    over_t = both[both["t"] > both["t_eager"] + 1e-6 * (1 + both["t_eager"])]
    assert over_t.empty, f"ops credited more time than the eager trace has:\n{over_t}"
    credits = result.credits
    if credits.empty:
        return
    assert credits[Credits.eager_row].is_unique
    assert len(credits) == int(measured["n"].sum())  # each instance once: matched or not
    rows_n = int(result.kernels[FusionKernels.eager_kernels].sum())
    rows_t = float(result.kernels[FusionKernels.eager_time_us].sum())
    assert rows_n + int(result.eager_only[EagerOnly.kernels].sum()) == len(credits)
    assert rows_n <= result.eager_kernel_count
    assert rows_t <= float(measured["t"].sum()) * (1 + 1e-9) + 1e-6
    conf = credits[Credits.confidence].dropna()
    assert ((conf > 0) & (conf <= 1)).all()
    matched = credits[Credits.outcome] == Outcome.MATCHED.value
    assert credits.loc[matched, Credits.kernel].notna().all()
    assert credits.loc[~matched, Credits.kernel].isna().all()


# --- hand-made rules -----------------------------------------------------------------------


@pytest.mark.parametrize(("in_eager", "in_compiled"), [(2, 2), (3, 1)])
def test_layout_kernel_is_not_credited_with_the_convolution(
    tmp_trace: MakeTrace, in_eager: int, in_compiled: int
) -> None:
    """The weight reorder (µs, not the conv) never takes the convolution it prepares, even
    when eager convolutions are left over."""
    conv = tensors([8, 16, 32, 32], [32, 16, 3, 3])
    eager = [step(1, 0)] + [op("aten::mkldnn_convolution", 10 + 200 * i, 100, **conv)
                            for i in range(in_eager)]  # fmt: skip
    compiled = [step(1, 0), region(5, 990), op("graph_0_cpp_fused_convolution_0", 10, 20)]
    compiled += [op("aten::mkldnn_convolution", 40 + 350 * i, 300, **conv)
                 for i in range(in_compiled)]  # fmt: skip
    result = fmap(tmp_trace, eager, compiled)
    layout = kernel_row(result, "graph_0_cpp_fused_convolution_0")
    assert layout[FusionKernels.is_layout]
    assert layout[FusionKernels.eager_kernels] == 0 and layout[FusionKernels.eager_time_us] == 0
    extern = kernel_row(result, "aten::mkldnn_convolution")
    assert extern[FusionKernels.eager_ops] == f"aten::mkldnn_convolution ({in_compiled})"
    assert not extern[FusionKernels.is_layout]
    left = in_eager > in_compiled
    hows = {How.IDENTICAL.value} | ({How.NONE.value} if left else set())
    assert set(result.credits[Credits.how]) == hows
    only = result.eager_only.set_index(EagerOnly.op)
    if left:
        assert only.loc["aten::mkldnn_convolution", EagerOnly.kernels] == in_eager - in_compiled
        assert only.loc["aten::mkldnn_convolution", EagerOnly.outcome] == "no counterpart"
    assert_partition(traceviz.load(tmp_trace(eager)), result)


def test_mean_pieces_go_to_the_kernel_named_after_mean(tmp_trace: MakeTrace) -> None:
    # CPU eager aten::mean = aten::sum (fill_ inside) then aten::div_: the pieces are kernels
    eager = [
        step(1, 0),
        op("aten::mean", 10, 100, **tensors([64, 128])),
        op("aten::sum", 11, 60, **tensors([64, 128])),
        op("aten::fill_", 12, 5),
        op("aten::div_", 80, 20, **tensors([64])),
        op("aten::relu", 200, 30, **tensors([64])),
    ]
    compiled = [step(1, 0), region(5, 500), op("graph_0_cpp_fused_mean_relu_0", 10, 40)]
    result = fmap(tmp_trace, eager, compiled)
    fused = kernel_row(result, "graph_0_cpp_fused_mean_relu_0")
    credited = {p.split(" (")[0] for p in fused[FusionKernels.eager_ops].split(", ")}
    assert credited == {"aten::sum", "aten::div_", "aten::fill_", "aten::relu"}
    assert fused[FusionKernels.eager_kernels] == result.eager_kernel_count
    assert result.eager_only.empty
    assert_partition(traceviz.load(tmp_trace(eager)), result)


def test_two_kernels_naming_one_op_split_it_by_position(tmp_trace: MakeTrace) -> None:
    eager = [step(1, 0), op("aten::mul", 10, 10), op("aten::exp", 30, 10),
             op("aten::mul", 600, 10), op("aten::sin", 620, 10)]  # fmt: skip
    compiled = [step(1, 0), region(5, 990), op("graph_0_cpp_fused_exp_mul_0", 10, 5),
                op("graph_0_cpp_fused_mul_sin_1", 600, 5)]  # fmt: skip
    result = fmap(tmp_trace, eager, compiled)
    first, second = (
        kernel_row(result, "graph_0_cpp_fused_exp_mul_0"),
        kernel_row(result, "graph_0_cpp_fused_mul_sin_1"),
    )
    assert first[FusionKernels.eager_ops] == "aten::exp (1), aten::mul (1)"
    assert second[FusionKernels.eager_ops] == "aten::mul (1), aten::sin (1)"
    # each mul could have gone to either kernel: said, not hidden
    muls = result.credits[result.credits[Credits.op] == "aten::mul"]
    assert list(muls[Credits.confidence]) == [0.5, 0.5]
    assert first[FusionKernels.confidence] < 1 and second[FusionKernels.confidence] < 1
    assert_partition(traceviz.load(tmp_trace(eager)), result)


def test_identical_extern_calls_match_one_to_one_before_fused_kernels_claim(
    tmp_trace: MakeTrace,
) -> None:
    gemm = tensors([64], [32, 128], [128, 64])
    eager = [step(1, 0), op("aten::addmm", 10, 50, **gemm), op("aten::add", 70, 5)]
    compiled = [step(1, 0), region(5, 500), op("aten::addmm", 10, 40, **gemm),
                op("graph_0_cpp_fused_add_addmm_0", 60, 3)]  # fmt: skip
    result = fmap(tmp_trace, eager, compiled)
    assert kernel_row(result, "aten::addmm")[FusionKernels.eager_ops] == "aten::addmm (1)"
    assert (
        kernel_row(result, "graph_0_cpp_fused_add_addmm_0")[FusionKernels.eager_ops]
        == "aten::add (1)"
    )
    how = result.credits.set_index(Credits.op)[Credits.how]
    assert how["aten::addmm"] == How.IDENTICAL.value and how["aten::add"] == How.FUSED.value


def test_a_call_once_per_step_takes_one_instance_per_step(tmp_trace: MakeTrace) -> None:
    gemm = tensors([32, 128], [128, 64])
    eager = [
        step(1, 0),
        op("aten::mm", 10, 50, **gemm),
        op("aten::mm", 100, 50, **gemm),
        step(2, 1000),
        op("aten::mm", 1010, 50, **gemm),
        op("aten::mm", 1100, 50, **gemm),
    ]
    compiled = [step(1, 0), region(5, 500), op("aten::mm", 10, 40, **gemm)]  # fmt: skip
    result = fmap(tmp_trace, eager, compiled)
    assert kernel_row(result, "aten::mm")[FusionKernels.eager_kernels] == 2  # one per eager step
    assert result.eager_only.set_index(EagerOnly.op).loc["aten::mm", EagerOnly.kernels] == 2


def test_copies_the_compiled_trace_has_none_of_are_removed(tmp_trace: MakeTrace) -> None:
    eager = [step(1, 0), op("aten::copy_", 10, 5), op("aten::sin", 30, 10), op("aten::tanh", 50, 5)]
    compiled = [step(1, 0), region(5, 500), op("graph_0_cpp_fused_sin_0", 10, 5)]
    result = fmap(tmp_trace, eager, compiled)
    only = result.eager_only.set_index(EagerOnly.op)[EagerOnly.outcome]
    assert only["aten::copy_"] == Outcome.REMOVED.value
    assert only["aten::tanh"] == Outcome.NO_COUNTERPART.value


# --- the guard -----------------------------------------------------------------------------


def test_guard_withholds_a_compiled_eager_side(tmp_trace: MakeTrace) -> None:
    compiled = [step(1, 0), region(5, 500), op("graph_0_cpp_fused_sin_0", 10, 5)]
    result = fmap(tmp_trace, compiled, compiled)
    verdict = result.comparability
    assert not verdict.comparable and verdict.withheld
    assert any("itself compiled" in r for r in verdict.reasons)
    assert result.kernels.empty and result.eager_only.empty and result.credits.empty
    assert result.eager_kernels_per_compiled_kernel is None and result.est_bytes_saved is None
    forced = fmap(tmp_trace, compiled, compiled, force=True)
    assert forced.comparability.forced and not forced.comparability.withheld
    assert kernel_row(forced, "graph_0_cpp_fused_sin_0")[FusionKernels.eager_kernels] == 1


GEMM = tensors([32, 128], [128, 64])
ONE_MM = [step(1, 0), op("aten::mm", 10, 50, **GEMM)]
GUARDS = {  # check: (eager, compiled, its reason says)
    "op signatures": (
        [step(1, 0), op("aten::addmm", 10, 50, **tensors([64], [32, 128], [128, 64]))],
        [step(1, 0), region(5, 500), op("aten::mm", 10, 40, **tensors([7, 9], [9, 11]))],
        "library calls",
    ),
    "step structure": (
        ONE_MM,
        [step(1, 0), region(5, 900), *(op("aten::mm", 10 + 100 * i, 40, **GEMM) for i in range(5))],
        "per step",
    ),
    "device kind": (
        [step(1, 0), op("aten::sin", 10, 5)],
        launched("aten::sin", 0, 1.0, 1, **tensors([16])),
        "device kinds differ: cpu vs cuda",
    ),
    "fused ops": (
        [step(1, 0), op("aten::relu", 10, 50), op("aten::add", 70, 50)],
        [step(1, 0), region(5, 500), op("graph_0_cpp_fused_cos_sin_tanh_0", 10, 5)],
        "b's Inductor kernels are named after",
    ),
}


@pytest.mark.parametrize("check", GUARDS)
def test_guard_fires(tmp_trace: MakeTrace, check: str) -> None:
    eager, compiled, reason = GUARDS[check]
    verdict = fmap(tmp_trace, eager, compiled).comparability
    assert not verdict.comparable and verdict.failed == (check,)
    assert reason in verdict.reasons[0]
    if check == "step structure":  # the same calls, many more of them
        assert verdict.signature_overlap == 1.0
    if check == "fused ops":
        assert verdict.fused_op_overlap == 0.0


def test_guard_passes_the_same_gemms_once_per_step(tmp_trace: MakeTrace) -> None:
    for eager in (ONE_MM, GUARDS["op signatures"][0]):
        same = [step(1, 0), region(5, 900), op("aten::mm", 10, 40, **GEMM)]
        verdict = fmap(tmp_trace, eager, same).comparability
        assert verdict.comparable and verdict.signature_overlap == 1.0


def test_a_negative_saving_is_never_reported(tmp_trace: MakeTrace) -> None:
    eager = launched("aten::sin", 0, 1.0, 1, **tensors([16]))
    name = "triton_poi_fused_sin_0"
    compiled = launched(name, 0, 1.0, 9, kernel_name=name, **tensors([4096], [4096]))
    result = fmap(tmp_trace, eager, compiled)
    eager_bytes = result.eager_traffic.estimated_bytes
    compiled_bytes = result.compiled_traffic.estimated_bytes
    assert eager_bytes is not None and compiled_bytes is not None
    assert compiled_bytes > eager_bytes  # the "saving" would be negative
    assert result.est_bytes_saved is None


# --- real traces ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def samples() -> dict[str, tuple[traceviz.Trace, traceviz.Trace]]:
    runs = [p.name for p in sample_runs()]
    if not runs:
        pytest.skip("no sample runs (make them with sample_traces/make.sh)")
    return {
        r: (load_trace(SAMPLES / r / "eager.pt.trace.json.gz"),
            load_trace(SAMPLES / r / "compiled.pt.trace.json.gz"))
        for r in runs
    }  # fmt: skip


def test_every_sample_run_is_comparable_and_a_partition_and_itself_not(
    samples: dict[str, tuple[traceviz.Trace, traceviz.Trace]],
) -> None:
    for name, (eager, compiled) in samples.items():
        result = fusion_map(eager, compiled)
        assert result.comparability.comparable, (name, result.comparability.reasons)
        assert not result.kernels.empty, name
        assert_partition(eager, result)
        assert not fusion_map(compiled, compiled).comparability.comparable, name


def test_every_pair_of_sample_traces_is_a_partition_when_forced(
    samples: dict[str, tuple[traceviz.Trace, traceviz.Trace]],
) -> None:
    traces = [t for pair in samples.values() for t in pair]
    for a, b in combinations(traces, 2):
        assert_partition(a, fusion_map(a, b, force=True))


def test_conv_bn_relu_sample_layout_kernels_take_no_eager_kernel(
    samples: dict[str, tuple[traceviz.Trace, traceviz.Trace]],
) -> None:
    eager, compiled = samples["conv-bn-relu"]
    result = fusion_map(eager, compiled)
    layout = result.kernels[result.kernels[FusionKernels.is_layout]]
    assert len(layout) >= 1 and (layout[FusionKernels.eager_kernels] == 0).all()


@pytest.mark.parametrize(
    ("a", "b"),
    [("amd/mi300x_compiled_flux_hipgraph.json.gz", "nvidia/a100_compiled_triton_tiny.json.gz"),
     ("amd/mi300x_compiled_flux_hipgraph.json.gz", "amd/mi300x_vllm_full_graph_replay.json.gz"),
     ("nvidia/resnet50_eager_legacy_bare_array.json.gz",
      "nvidia/a100_compiled_triton_tiny.json.gz")],
    ids=lambda p: p.split("/")[-1],
)  # fmt: skip
def test_unrelated_corpus_pairs_get_no_fusion_figures(a: str, b: str) -> None:
    comparison = traceviz.compare(corpus_or_skip(a), corpus_or_skip(b), names=("a", "b"))
    assert comparison.fusion.kernels.empty
    assert comparison.fusion.est_bytes_saved is None
    assert comparison.fusion.eager_kernels_per_compiled_kernel is None
    saved = comparison.metric("est_bytes_saved")["b"]
    assert np.isnan(saved)
    assert "traces-not-comparable" in {f.id for f in comparison.findings}
    forced = traceviz.compare(corpus_or_skip(a), corpus_or_skip(b), names=("a", "b"), force=True)
    finding = next(f for f in forced.findings if f.id == "traces-not-comparable")
    assert "forced" in finding.title
    assert forced.fusion.eager_kernels_per_compiled_kernel is not None


def assert_one_to_one(eager: traceviz.Trace, compiled: traceviz.Trace) -> None:
    """Credits "identical" or "alias" (the one-to-one stages: the k-th instance of a signature
    in an eager step takes the k-th in a compiled step) name a kernel the compiled trace ran,
    with full confidence; against itself every kernel is identical to its own name (every
    one-to-one stage pairs)."""
    credits = credit_eager_kernels(eager, compiled, compiled_classified=classify(compiled))
    paired = credits[credits[Credits.how].isin([How.IDENTICAL.value, How.ALIAS.value])]
    ran = set(compiled.kernels[Kernels.name].astype(str))
    assert set(paired[Credits.kernel].astype(str)) <= ran
    assert (paired[Credits.confidence] == 1.0).all()
    itself = credit_eager_kernels(eager, eager, compiled_classified=classify(eager))
    assert (itself[Credits.how] == How.IDENTICAL.value).all()
    names = eager.kernels[Kernels.name].astype(str).to_numpy()
    rows = itself[Credits.eager_row].to_numpy(dtype=np.int64)
    assert itself[Credits.kernel].astype(str).tolist() == names[rows].tolist()


@pytest.mark.parametrize("run", ["h200/gpt2", "h200/gpt2-reduce-overhead", "mlp"])
def test_one_to_one_stages_take_each_compiled_instance_once(run: str) -> None:
    eager = load_trace(SAMPLES / run / "eager.pt.trace.json.gz")
    compiled = load_trace(SAMPLES / run / "compiled.pt.trace.json.gz")
    assert_one_to_one(eager, compiled)
    assert_one_to_one(compiled, eager)


@pytest.mark.parametrize(("a", "b"), CORPUS_PAIRS[:1] + CORPUS_PAIRS[3:4], ids=["a100", "rocm"])
def test_one_to_one_stages_on_corpus_pairs(a: str, b: str) -> None:
    assert_one_to_one(corpus_or_skip(a), corpus_or_skip(b))


def carries_heavy_work(kernel_name: str) -> bool:
    """A library kernel or an Inductor template: where a GEMM/conv/attention can run."""
    decoded = fused_kernel_ops(kernel_name)
    return decoded is None or decoded.subkind is TritonSubkind.TEMPLATE


def heavy_on_epilogues(credits: traceviz.Comparison | object) -> list[tuple[str, str]]:
    """(eager op, compiled kernel) of each matched credit of a heavy eager op to a kernel that
    cannot run it."""
    table = credits.fusion.credits  # type: ignore[attr-defined]
    matched = table[table[Credits.outcome] == Outcome.MATCHED.value]
    bad = []
    for op_name, name in zip(matched[Credits.op], matched[Credits.kernel], strict=True):
        keys = name_keys(str(op_name))
        heavy = len(keys) == 1 and keys[0] in HEAVY_KEYS
        if heavy and not carries_heavy_work(str(name)):
            bad.append((str(op_name), str(name)))
    return bad


RUN_DIRS = sorted(p.parent for p in SAMPLES.glob("**/run.json"))


@pytest.mark.parametrize("path", RUN_DIRS, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_no_sample_run_credits_a_heavy_op_to_an_epilogue_kernel(path: Path) -> None:
    comparison = traceviz.compare(path)  # the run directory: its run.json, log, lines
    bad = heavy_on_epilogues(comparison)
    assert not bad, sorted(set(bad))
    # each eager kernel credited once at most, within what the eager trace measured
    credits, eager = comparison.fusion.credits, comparison.a.trace.kernels
    assert credits[Credits.eager_row].is_unique and len(credits) <= len(eager)
    measured = float(eager[Kernels.excl_dur_us].sum())
    assert float(credits[Credits.time_us].sum()) <= measured * (1 + 1e-9)


def test_the_reduce_overhead_gemms_are_not_credited_to_layer_norms() -> None:
    path = SAMPLES / "h200" / "gpt2-reduce-overhead"
    if not is_run_dir(path):
        pytest.skip(f"{path} not found")
    comparison = traceviz.compare(path)  # the run directory: its run.json, log, lines
    credits = comparison.fusion.credits
    gemm = credits[credits[Credits.op].astype(str).isin(["aten::addmm", "aten::mm"])]
    assert len(gemm) == 55  # 50 addmm (cuBLAS + cutlass + split-K) and the lm_head's mm
    assert not gemm[Credits.kernel].dropna().astype(str).str.startswith("triton_").any()
    # the per-line view: the Conv1D line's GEMMs are not 'replaced' by Triton kernels
    by_line = comparison.fusion.by_line
    line = by_line[by_line["file"].astype(str).str.endswith("pytorch_utils.py")]
    names = ",".join(line["compiled_kernels"].astype(str))
    assert "triton_per_fused_add_addmm_native_layer_norm" not in names


def test_a_made_gemm_is_not_credited_to_its_bias_add_kernel(tmp_trace: MakeTrace) -> None:
    eager = [
        step(1, 0, 100),
        op("aten::addmm", 10, 20),
        launch("cudaLaunchKernel", 12, 5, 1),
        op("aten::add", 40, 10),
        launch("cudaLaunchKernel", 42, 5, 2),
        kernel("sm80_xmma_gemm_f32f32_nn", 20, 30, 1),
        kernel("vectorized_elementwise_kernel<add>", 55, 3, 2),
    ]
    # the library GEMM is launched straight from the compiled region (as a graph replay's
    # kernels are): no aten op to tie it to addmm by name
    compiled = [
        step(1, 0, 100),
        region(5, 60),
        launch("cudaLaunchKernel", 12, 5, 1),
        launch("cuLaunchKernel", 20, 5, 2),
        kernel("sm80_xmma_gemm_f32f32_nn", 20, 30, 1),
        kernel("triton_poi_fused_add_addmm_0", 55, 2, 2),
    ]
    result = fmap(tmp_trace, eager, compiled)
    credits = result.credits
    gemm = credits[credits[Credits.op].astype(str) == "aten::addmm"]
    assert len(gemm) == 1
    assert gemm[Credits.kernel].iloc[0] != "triton_poi_fused_add_addmm_0"
    # the add is still the fused kernel's own work
    add = credits[credits[Credits.op].astype(str) == "aten::add"]
    assert list(add[Credits.kernel]) == ["triton_poi_fused_add_addmm_0"]
    # what the map credits never exceeds what the eager trace measured
    assert credits[Credits.time_us].sum() <= 33.0 + 1e-9


def _check(
    eager: Trace, compiled: Trace, compiler: pd.DataFrame | None, recorded: set[str]
) -> None:
    classified = classify(compiled)
    credits = credit_eager_kernels(
        eager, compiled, compiled_classified=classified, compiler=compiler
    )
    ops = fusion_ops.kernel_ops(credits)
    only = fusion._eager_only(credits)
    matched = credits[credits[Credits.outcome] == Outcome.MATCHED.value]
    left = credits[credits[Credits.outcome] != Outcome.MATCHED.value]
    assert ops["kernels"].sum() == len(matched) and only["kernels"].sum() == len(left)
    assert ops["time_us"].sum() == pytest.approx(matched[Credits.time_us].sum(), rel=1e-12)
    assert only["time_us"].sum() == pytest.approx(left[Credits.time_us].sum(), rel=1e-12)
    assert not ops.duplicated(["kernel", "op"]).any()
    assert not only.duplicated(["op", "outcome"]).any()
    assert ops["time_us"].is_monotonic_decreasing and only["time_us"].is_monotonic_decreasing
    table = kernel_table_rows(classified, credits, ops, recorded, fusion.FUSION_KERNELS_DTYPES)
    _check_kernels(table, classified, matched, recorded)
    # what the tables credit adds up to at most what was measured
    measured = measured_kernel_us(eager.kernels)
    assert ops["time_us"].sum() + only["time_us"].sum() <= measured * (1 + 1e-12) + 1e-9
    assert table["eager_time_us"].sum() <= measured * (1 + 1e-12) + 1e-9
    assert table["time_us"].sum() <= measured_kernel_us(classified) * (1 + 1e-12) + 1e-9


def _check_kernels(
    table: pd.DataFrame, classified: pd.DataFrame, matched: pd.DataFrame, recorded: set[str]
) -> None:
    """One row per compiled kernel name: its kernel rows' count and time (``dur_us`` where
    the exclusive time is missing), the matched credits it got, largest time first."""
    rows = classified[classified[Kernels.activity] == ActivityKind.KERNEL.value]
    names = rows[Kernels.name].astype(str)
    time = rows[Kernels.excl_dur_us].fillna(rows[Kernels.dur_us]).astype(float)
    assert table["kernel"].is_unique and set(table["kernel"]) == set(names)
    by_name = table.set_index("kernel")
    counts = names.value_counts()
    assert (by_name["calls"] == counts.reindex(by_name.index)).all()
    times = time.groupby(names.to_numpy()).sum().reindex(by_name.index)
    np.testing.assert_allclose(by_name["time_us"], times, rtol=1e-12)
    got = matched.groupby(matched[Credits.kernel].astype(str))[Credits.time_us].agg(["size", "sum"])
    credited = by_name[by_name["eager_kernels"] > 0]
    assert set(credited.index) == set(got.index)
    assert (credited["eager_kernels"] == got["size"].reindex(credited.index)).all()
    np.testing.assert_allclose(credited["eager_time_us"], got["sum"].reindex(credited.index))
    assert credited["confidence"].between(0, 1).all()
    assert by_name.loc[by_name["eager_kernels"] == 0, "eager_ops"].eq("").all()
    assert table["time_us"].is_monotonic_decreasing
    assert (table["basis"].astype(str) == "compiler").tolist() == [
        k in recorded for k in table["kernel"]
    ]


@pytest.mark.parametrize("run", SAMPLE_RUNS)
def test_tables_on_sample_runs(run: str) -> None:
    eager, compiled, compiler, lines = run_evidence(run)
    _check(eager, compiled, compiler, set(lines.recorded) if lines is not None else set())
    _check(eager, compiled, None, set())  # by name alone, as for traces made elsewhere


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus not found at {CORPUS}")
@pytest.mark.parametrize("pair", LINE_PAIRS, ids=[a for a, _ in LINE_PAIRS])
def test_tables_on_corpus_pairs(pair: tuple[str, str]) -> None:
    _check(load_trace(CORPUS / pair[0]), load_trace(CORPUS / pair[1]), None, set())
    _check(load_trace(CORPUS / pair[1]), load_trace(CORPUS / pair[0]), None, set())


DATA = REPO / "tests" / "data" / "name_match"
CONV = DATA / "two-conv-bn-relu"
RMS = DATA / "two-rmsnorm-silu-mlp"

RMSNORM_1 = "graph_0_cpp_fused_add_mean_mul_pow_rsqrt_0"  # block 1's RMSNorm
SILU = "graph_0_cpp_fused__unsafe_view_mul_silu_1"  # silu(gate) * up, called once per block
RMSNORM_2 = "graph_0_cpp_fused__unsafe_view_add_mean_mul_pow_rsqrt_2"  # residual 1 + RMSNorm 2
RESIDUAL_2 = "graph_0_cpp_fused__unsafe_view_add_3"  # block 2's residual add


def _load(path: Path) -> traceviz.Trace:
    return traceviz.load(path, cache=False)


def name_match(run: Path) -> traceviz.Report:
    """The run's two traces as a user's pair: no run.json, no compile log, no lines."""
    return compare(run / "eager.pt.trace.json.gz", run / "compiled.pt.trace.json.gz",
                   names=("eager", "compiled"), load=_load)  # fmt: skip


def _per_step(report: traceviz.Report, op: str) -> Counter[str]:
    """Eager instances of ``op`` credited per compiled kernel, per profiled step."""
    credits = report.fusion.credits
    rows = credits[(credits[Credits.op] == op) & (credits[Credits.outcome] == "matched")]
    steps = report.a.summary.step_count
    assert steps == 2  # the run's --steps
    counts = Counter(rows[Credits.kernel].astype(str))
    return Counter({kernel: n // steps for kernel, n in counts.items()})


def test_the_provenance_says_which_kernel_holds_which_multiply() -> None:
    """The truth the next test checks against, read from the run's compile log: block 1's
    RMSNorm multiplies (pre-grad nodes ``mul``, ``h``) are in its own kernel, block 2's
    (``mul_3``, ``h_2``) in the kernel after block 1's down projection, and the SiLU kernel
    holds one product per call (``mul_2``, then ``mul_5``)."""
    log = read_compile_log(RMS / "compile_log.jsonl.gz")
    nodes = {
        (row.kernel, row.handle): set(str(row.pre_grad_nodes).split(","))
        for row in log.kernels.itertuples()
    }
    by_kernel: dict[str, set[str]] = {}
    for (name, _), found in nodes.items():
        by_kernel.setdefault(str(name), set()).update(found)
    assert {"mul", "h"} <= by_kernel["cpp_fused_add_mean_mul_pow_rsqrt_0"]
    assert {"mul_3", "h_2", "add_1"} <= by_kernel["cpp_fused__unsafe_view_add_mean_mul_pow_rsqrt_2"]
    assert by_kernel["cpp_fused__unsafe_view_mul_silu_1"] >= {"mul_2", "mul_5"}
    assert not {"mul", "h", "mul_3", "h_2"} & by_kernel["cpp_fused__unsafe_view_mul_silu_1"]
    calls = Counter(str(k) for k, _ in nodes)
    assert calls["cpp_fused__unsafe_view_mul_silu_1"] == 2  # one kernel, called per block


def test_rmsnorm_multiplies_go_to_their_own_blocks_kernels() -> None:
    """Per step: two multiplies in each RMSNorm kernel, one per block in the SiLU kernel
    (two calls); the adds: RMSNorm 1's epsilon, block 1's residual with RMSNorm 2's epsilon,
    block 2's residual. By name alone all six multiplies went to the SiLU kernel."""
    report = name_match(RMS)
    assert _per_step(report, "aten::mul") == {RMSNORM_1: 2, SILU: 2, RMSNORM_2: 2}
    assert _per_step(report, "aten::add") == {RMSNORM_1: 1, RMSNORM_2: 2, RESIDUAL_2: 1}
    assert _per_step(report, "aten::silu") == {SILU: 2}
    # the mean's own copy (a [4, 32, 1] result) is no part of a matmul of [128, 64]
    assert set(_per_step(report, "aten::copy_")) <= {RMSNORM_1, RMSNORM_2}


def test_conv_blocks_batch_norms_go_to_their_own_blocks_kernels() -> None:
    report = name_match(CONV)
    credits = report.fusion.credits
    bn = credits[credits[Credits.op] == "aten::native_batch_norm"]
    kernels = bn[Credits.kernel].astype(str).tolist()
    # in eager order: block 1, block 2, block 1, block 2 (two steps)
    first, second = kernels[0], kernels[1]
    assert first != second and kernels == [first, second] * 2
    assert "convolution" in first  # block 1's kernel also prepares block 2's convolution
    truth = compare_run(CONV, load=_load).fusion.credits
    assert truth[Credits.kernel].tolist() == credits[Credits.kernel].tolist()


CPU_RUNS = [CONV, RMS] + [
    SAMPLES / name
    for name in ("block", "pointwise", "linear-add", "mlp", "layernorm-gelu", "attention",
                 "conv-bn-relu", "graph-break")
]  # fmt: skip


@pytest.mark.parametrize("run", CPU_RUNS, ids=lambda p: p.name)
def test_name_match_agrees_with_unambiguous_compiler_credits(run: Path) -> None:
    """Wherever the compiler's record credits an eager kernel unambiguously (confidence 1),
    the name-match credits it to the same compiled kernel (graph-break: op names alone gave
    the scalar ``copy_`` of ``if x.sum() > 0`` to the matmul)."""
    truth = compare_run(run, load=_load).fusion.credits.set_index(Credits.eager_row)
    guess = name_match(run).fusion.credits.set_index(Credits.eager_row)
    sure = truth[(truth[Credits.how] == "compiler") & (truth[Credits.confidence] >= 1.0)]
    assert len(sure)
    guessed = guess[[Credits.kernel]].rename(columns={Credits.kernel: f"{Credits.kernel}_guess"})
    joined = sure[[Credits.op, Credits.kernel]].join(guessed)
    wrong = joined[joined[Credits.kernel] != joined[f"{Credits.kernel}_guess"]]
    assert wrong.empty, wrong


@pytest.mark.parametrize("run", [CONV, RMS], ids=lambda p: p.name)
def test_name_match_is_still_a_partition(run: Path) -> None:
    report = name_match(run)
    credits = report.fusion.credits
    eager = _load(run / "eager.pt.trace.json.gz")
    assert_partition(eager, report.fusion)
    matched = credits[credits[Credits.outcome] == Outcome.MATCHED.value]
    kernels = report.fusion.kernels
    assert kernels["eager_time_us"].sum() == pytest.approx(matched[Credits.time_us].sum())
    assert matched[Credits.time_us].sum() <= eager.kernels["excl_dur_us"].sum() + 1e-6


def test_anchor_coordinates_count_anchors_and_rank_between_them() -> None:
    """A compiled step of five kernels (layout kernel, conv, BN 1, conv, BN 2) with the two
    convolutions as anchors: the k-th anchor at k, the others at k + their rank between."""
    trace = _load(CONV / "compiled.pt.trace.json.gz")
    side = kernel_side(trace, trace.kernels)
    one_step = side.step == side.step[0]
    anchors = np.zeros(len(side.rows), dtype=bool)
    names = side.names
    anchors[one_step & (names == "aten::mkldnn_convolution")] = True
    place = anchor_coordinates(side, anchors)[one_step]
    order = np.argsort(side.pos[one_step])
    got = place[order].tolist()
    is_anchor = anchors[one_step][order].tolist()
    assert is_anchor == [False, True, False, True, False]
    assert got == pytest.approx([0.5, 1.0, 1.5, 2.0, 2.5])
    assert pd.Series(anchor_coordinates(side, np.zeros_like(anchors))).between(0, 1).all()


H200 = SAMPLES / "h200"
GELU = "triton_poi_fused_add_addmm_mul_pow_tanh_view_4"


@pytest.fixture(scope="module")
def gpt2() -> Any:
    """The comparison of the H200 gpt2 run (its run.json, compile log and lines)."""
    if not is_run_dir(H200 / "gpt2"):
        pytest.skip("the H200 gpt2 run not found")
    return compare_run(H200 / "gpt2")


def test_a_kernel_called_at_two_places_of_a_graph_matches_each_call_site() -> None:
    run = load_run(H200 / "gpt2")
    compiled = run.load_compiled()
    log = read_compile_log(run.compile_log)
    prov = compiled_kernel_provenance(compiled, log)
    launches = compiled.kernels.index[compiled.kernels["name"] == GELU]
    assert len(launches) == 10  # 2 layers x 5 steps
    mine = prov[prov["kernel_row"].isin(launches)].sort_values("kernel_row")
    assert len(mine) == len(launches)  # every launch explained, none left out as ambiguous
    sites = log.kernels[log.kernels["kernel"] == GELU].sort_values("handle")["prov_kernel"]
    assert len(sites) == 2
    # per step, the first launch is the first layer's call site, the second the second's
    assert mine["prov_kernel"].tolist() == sites.tolist() * 5


def test_gpt2_gemms_go_to_gemm_kernels_and_gelu_pieces_to_the_gelu_kernel(gpt2: Any) -> None:
    """GEMM work is credited to GEMM kernels, not their fused epilogue; the GELU's pow and
    tanh to the fused GELU kernel; no library kernel gets ops it cannot run."""
    credits = gpt2.fusion.credits
    matched = credits[credits[Credits.outcome] == Outcome.MATCHED.value]
    gemms = matched[matched[Credits.op].isin(["aten::addmm", "aten::mm"])]
    assert len(gemms) >= 50
    for name in gemms[Credits.kernel].unique():
        assert carries_heavy_work(name), name
    for name in ("aten::pow", "aten::tanh"):
        rows = credits[credits[Credits.op] == name]
        assert len(rows) == 10
        assert set(rows[Credits.kernel]) == {GELU}, name
    for name in ("aten::all", "aten::gather", "aten::pow", "aten::tanh"):
        kernels = credits.loc[credits[Credits.op] == name, Credits.kernel].dropna()
        assert all(fused_kernel_ops(k) is not None for k in kernels), (name, set(kernels))


@pytest.mark.parametrize(
    ("node", "name"),
    [
        ("mm_default_5", "mm"),
        ("mm_default", "mm"),
        ("addmm_default", "addmm"),
        ("add_tensor", "add"),
        ("sub_tensor_2", "sub"),
        ("full_default", "full"),
        ("var_mean_2", "var_mean"),
        ("mm", "mm"),
        ("scalar_tensor", "scalar_tensor"),  # an op whose own name ends like an overload
        ("_scaled_dot_product_efficient_attention_1", "_scaled_dot_product_efficient_attention"),
    ],
)
def test_node_names_read_as_ops(node: str, name: str) -> None:
    assert node_op(node) == name


def test_every_kernel_of_a_gemm_call_holds_the_gemm(gpt2: Any) -> None:
    run = read_run_dir(H200 / "gpt2")
    eager, compiled, log_path = gpt2.a.trace, gpt2.b.trace, run.compile_log
    marked = traceviz.load(run.eager_lines) if run.eager_lines else None
    _, record = fusion_evidence(eager, compiled, log_path, eager_lines=marked)
    assert record is not None
    prov = compiled_kernel_provenance(compiled, read_compile_log(log_path))
    gemm_calls = prov[
        prov["kernel"].astype(str).isin(["extern_kernels.mm", "extern_kernels.addmm"])
    ]
    names = (
        compiled.kernels[Kernels.name]
        .astype(str)
        .to_numpy()[gemm_calls["kernel_row"].to_numpy(dtype="int64")]
    )
    assert len(set(names)) == 4  # 2 cuBLAS GEMMs, a cutlass GEMM and cuBLAS's split-K reduce
    for name in set(names):
        assert "mm" in record.compiled_ops[name], (name, record.compiled_ops[name])


def test_the_gpt2_gemm_line_is_not_given_to_one_kernel_with_full_confidence(gpt2: Any) -> None:
    comparison = gpt2
    kernels = comparison.fusion.kernels
    gemm = kernels[kernels[FusionKernels.eager_ops].astype(str).str.contains("aten::addmm")]
    # the Conv1D line's GEMMs run in three compiled library kernels: the nearest in the step
    # takes each eager GEMM, none with certainty
    assert len(gemm) >= 2, gemm[FusionKernels.kernel].tolist()
    assert (gemm[FusionKernels.confidence] < 1).all()
    assert int(gemm[FusionKernels.eager_kernels].sum()) == 50
    # the GEMM credits never exceed what the eager trace measured for its GEMMs
    eager = comparison.a.trace.kernels
    addmm = eager[eager[Kernels.op_name].astype(str) == "aten::addmm"]
    measured = float(addmm[Kernels.excl_dur_us].fillna(addmm[Kernels.dur_us]).sum())
    credited = gemm[FusionKernels.eager_time_us].sum()
    assert credited <= measured * (1 + 1e-9)
    # every eager kernel is credited at most once over the whole map
    assert int(kernels[FusionKernels.eager_kernels].sum()) <= comparison.fusion.eager_kernel_count
