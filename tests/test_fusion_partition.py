"""The fusion map is a partition (#9 §3) and is withheld for pairs that are not one workload
(§4): tiny hand-made traces for each rule, then every sample run and corpus pair.

GIVEN an eager and a compiled trace WHEN the fusion map credits eager kernels THEN each eager
kernel instance is credited at most once, so per eager op the credited count and time never
exceed what the eager trace measured, and the map's rows never exceed the eager totals.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import traceviz
from tests.conftest import CORPUS, SAMPLES, kernel, launch, load_trace, op
from traceviz.analysis.fusion.fusion_map import EagerOnly, FusionKernels, FusionMap, fusion_map
from traceviz.analysis.fusion.match import Credits, How, Outcome, credit_eager_kernels
from traceviz.analysis.kernels import classify
from traceviz.schema import ActivityKind, Kernels

MakeTrace = Callable[..., Path]


def step(n: int, ts: float, dur: float = 1000) -> dict:
    return op(f"ProfilerStep#{n}", ts, dur, cat="user_annotation")


def region(ts: float, dur: float) -> dict:
    return op("Torch-Compiled Region: 0/0", ts, dur)


def dims(*shapes: list[int]) -> dict[str, Any]:
    return {"Input Dims": list(shapes), "Input type": ["float"] * len(shapes)}


def fmap(tmp_trace: MakeTrace, eager: list[dict], compiled: list[dict], **kw: Any) -> FusionMap:
    return fusion_map(traceviz.load(tmp_trace(eager)), traceviz.load(tmp_trace(compiled)), **kw)


def row(result: FusionMap, name: str) -> pd.Series:
    rows = result.kernels[result.kernels[FusionKernels.kernel] == name]
    assert len(rows) == 1, f"{name} not in {list(result.kernels[FusionKernels.kernel])}"
    return rows.iloc[0]


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


def test_layout_kernel_is_not_credited_with_the_convolution(tmp_trace: MakeTrace) -> None:
    conv = dims([8, 16, 32, 32], [32, 16, 3, 3])
    eager = [step(1, 0), op("aten::mkldnn_convolution", 10, 500, **conv),
             op("aten::mkldnn_convolution", 600, 500, **conv)]  # fmt: skip
    compiled = [
        step(1, 0),
        region(5, 990),
        op("graph_0_cpp_fused_convolution_0", 10, 20),  # the weight reorder: µs, not the conv
        op("aten::mkldnn_convolution", 40, 300, **conv),
        op("aten::mkldnn_convolution", 400, 300, **conv),
    ]
    result = fmap(tmp_trace, eager, compiled)
    layout = row(result, "graph_0_cpp_fused_convolution_0")
    assert layout[FusionKernels.is_layout]
    assert layout[FusionKernels.eager_kernels] == 0 and layout[FusionKernels.eager_time_us] == 0
    extern = row(result, "aten::mkldnn_convolution")
    assert extern[FusionKernels.eager_ops] == "aten::mkldnn_convolution (2)"
    assert not extern[FusionKernels.is_layout]
    assert set(result.credits[Credits.how]) == {How.IDENTICAL.value}
    assert_partition(traceviz.load(tmp_trace(eager)), result)


def test_layout_kernel_never_takes_the_op_it_prepares_even_when_left_over(
    tmp_trace: MakeTrace,
) -> None:
    conv = dims([8, 16, 32, 32], [32, 16, 3, 3])
    eager = [step(1, 0)] + [op("aten::mkldnn_convolution", 10 + 200 * i, 100, **conv)
                            for i in range(3)]  # fmt: skip
    compiled = [step(1, 0), region(5, 990), op("graph_0_cpp_fused_convolution_0", 10, 20),
                op("aten::mkldnn_convolution", 40, 300, **conv)]  # fmt: skip
    result = fmap(tmp_trace, eager, compiled)
    assert row(result, "graph_0_cpp_fused_convolution_0")[FusionKernels.eager_kernels] == 0
    assert row(result, "aten::mkldnn_convolution")[FusionKernels.eager_kernels] == 1
    only = result.eager_only.set_index(EagerOnly.op)
    assert only.loc["aten::mkldnn_convolution", EagerOnly.kernels] == 2
    assert only.loc["aten::mkldnn_convolution", EagerOnly.outcome] == "no counterpart"


def test_mean_pieces_go_to_the_kernel_named_after_mean(tmp_trace: MakeTrace) -> None:
    # CPU eager aten::mean = aten::sum (fill_ inside) then aten::div_: the pieces are kernels
    eager = [
        step(1, 0),
        op("aten::mean", 10, 100, **dims([64, 128])),
        op("aten::sum", 11, 60, **dims([64, 128])),
        op("aten::fill_", 12, 5),
        op("aten::div_", 80, 20, **dims([64])),
        op("aten::relu", 200, 30, **dims([64])),
    ]
    compiled = [step(1, 0), region(5, 500), op("graph_0_cpp_fused_mean_relu_0", 10, 40)]
    result = fmap(tmp_trace, eager, compiled)
    fused = row(result, "graph_0_cpp_fused_mean_relu_0")
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
        row(result, "graph_0_cpp_fused_exp_mul_0"),
        row(result, "graph_0_cpp_fused_mul_sin_1"),
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
    gemm = dims([64], [32, 128], [128, 64])
    eager = [step(1, 0), op("aten::addmm", 10, 50, **gemm), op("aten::add", 70, 5)]
    compiled = [step(1, 0), region(5, 500), op("aten::addmm", 10, 40, **gemm),
                op("graph_0_cpp_fused_add_addmm_0", 60, 3)]  # fmt: skip
    result = fmap(tmp_trace, eager, compiled)
    assert row(result, "aten::addmm")[FusionKernels.eager_ops] == "aten::addmm (1)"
    assert row(result, "graph_0_cpp_fused_add_addmm_0")[FusionKernels.eager_ops] == "aten::add (1)"
    how = result.credits.set_index(Credits.op)[Credits.how]
    assert how["aten::addmm"] == How.IDENTICAL.value and how["aten::add"] == How.FUSED.value


def test_a_call_once_per_step_takes_one_instance_per_step(tmp_trace: MakeTrace) -> None:
    gemm = dims([32, 128], [128, 64])
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
    assert row(result, "aten::mm")[FusionKernels.eager_kernels] == 2  # one per eager step
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
    assert row(forced, "graph_0_cpp_fused_sin_0")[FusionKernels.eager_kernels] == 1


def test_guard_fires_on_gemms_of_other_shapes(tmp_trace: MakeTrace) -> None:
    eager = [step(1, 0), op("aten::addmm", 10, 50, **dims([64], [32, 128], [128, 64]))]
    other = [step(1, 0), region(5, 500), op("aten::mm", 10, 40, **dims([7, 9], [9, 11]))]
    same = [step(1, 0), region(5, 500), op("aten::mm", 10, 40, **dims([32, 128], [128, 64]))]
    assert not fmap(tmp_trace, eager, other).comparability.comparable
    verdict = fmap(tmp_trace, eager, same).comparability
    assert verdict.comparable and verdict.signature_overlap == 1.0


def test_guard_fires_when_b_makes_many_more_library_calls_per_step(tmp_trace: MakeTrace) -> None:
    gemm = dims([32, 128], [128, 64])
    eager = [step(1, 0), op("aten::mm", 10, 50, **gemm)]
    compiled = [step(1, 0), region(5, 900)] + [op("aten::mm", 10 + 100 * i, 40, **gemm)
                                              for i in range(5)]  # fmt: skip
    verdict = fmap(tmp_trace, eager, compiled).comparability
    assert not verdict.comparable and verdict.signature_overlap == 1.0
    assert any("per step" in r for r in verdict.reasons)
    same = [step(1, 0), region(5, 900), op("aten::mm", 10, 40, **gemm)]
    assert fmap(tmp_trace, eager, same).comparability.comparable


def test_guard_fires_on_different_devices(tmp_trace: MakeTrace) -> None:
    cpu = [step(1, 0), op("aten::sin", 10, 5)]
    gpu = [*gpu_op("aten::sin", 0, 1, **dims([16]))]
    verdict = fmap(tmp_trace, cpu, gpu).comparability
    assert any("device kinds differ: cpu vs cuda" in r for r in verdict.reasons)


def test_guard_fires_when_fused_ops_are_ops_eager_never_runs(tmp_trace: MakeTrace) -> None:
    eager = [step(1, 0), op("aten::relu", 10, 50), op("aten::add", 70, 50)]
    compiled = [step(1, 0), region(5, 500), op("graph_0_cpp_fused_cos_sin_tanh_0", 10, 5)]
    verdict = fmap(tmp_trace, eager, compiled).comparability
    assert not verdict.comparable and verdict.fused_op_overlap == 0.0


def gpu_op(name: str, ts: float, ext: int, **args: Any) -> list[dict]:
    return [op(name, ts, 10, **{"External id": ext}, **args),
            launch("cudaLaunchKernel", ts + 1, 2, ext, **{"External id": ext}),
            kernel(f"k{ext}", ts + 20, 1.0, ext, **{"External id": ext})]  # fmt: skip


def test_a_negative_saving_is_never_reported(tmp_trace: MakeTrace) -> None:
    eager = gpu_op("aten::sin", 0, 1, **dims([16]))
    name = "triton_poi_fused_sin_0"
    compiled = gpu_op(name, 0, 9, **dims([4096], [4096]))
    compiled[-1]["name"] = name
    result = fmap(tmp_trace, eager, compiled)
    eager_bytes = result.eager_traffic.estimated_bytes
    compiled_bytes = result.compiled_traffic.estimated_bytes
    assert eager_bytes is not None and compiled_bytes is not None
    assert compiled_bytes > eager_bytes  # the "saving" would be negative
    assert result.est_bytes_saved is None


# --- real traces ---------------------------------------------------------------------------


def sample_runs() -> list[str]:
    both = ("eager.pt.trace.json.gz", "compiled.pt.trace.json.gz")
    return sorted(p.name for p in SAMPLES.iterdir() if all((p / f).is_file() for f in both))


@pytest.fixture(scope="module")
def samples() -> dict[str, tuple[traceviz.Trace, traceviz.Trace]]:
    runs = sample_runs()
    if not runs:
        pytest.skip("no sample runs (make them with sample_traces/make.sh)")
    return {
        r: (load_trace(SAMPLES / r / "eager.pt.trace.json.gz"),
            load_trace(SAMPLES / r / "compiled.pt.trace.json.gz"))
        for r in runs
    }  # fmt: skip


def test_every_sample_run_is_comparable_and_a_partition(
    samples: dict[str, tuple[traceviz.Trace, traceviz.Trace]],
) -> None:
    for name, (eager, compiled) in samples.items():
        result = fusion_map(eager, compiled)
        assert result.comparability.comparable, (name, result.comparability.reasons)
        assert not result.kernels.empty, name
        assert_partition(eager, result)


def test_every_pair_of_sample_traces_is_a_partition_when_forced(
    samples: dict[str, tuple[traceviz.Trace, traceviz.Trace]],
) -> None:
    traces = [t for pair in samples.values() for t in pair]
    for a, b in combinations(traces, 2):
        assert_partition(a, fusion_map(a, b, force=True))


def test_sample_compiled_vs_compiled_is_not_comparable(
    samples: dict[str, tuple[traceviz.Trace, traceviz.Trace]],
) -> None:
    for name, (_, compiled) in samples.items():
        verdict = fusion_map(compiled, compiled).comparability
        assert not verdict.comparable, name


def test_conv_bn_relu_sample_credits_no_more_than_the_eager_trace_has(
    samples: dict[str, tuple[traceviz.Trace, traceviz.Trace]],
) -> None:
    if "conv-bn-relu" not in samples:
        pytest.skip("conv-bn-relu sample missing")
    eager, compiled = samples["conv-bn-relu"]
    result = fusion_map(eager, compiled)
    layout = result.kernels[result.kernels[FusionKernels.is_layout]]
    assert len(layout) >= 1 and (layout[FusionKernels.eager_kernels] == 0).all()
    assert int(result.kernels[FusionKernels.eager_kernels].sum()) <= result.eager_kernel_count


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
]  # fmt: skip


def corpus(relative: str) -> traceviz.Trace:
    path = CORPUS / relative
    if not path.is_file():
        pytest.skip(f"corpus trace {relative} not found under {CORPUS}")
    return load_trace(path)


@pytest.mark.parametrize(("a", "b"), CORPUS_PAIRS, ids=lambda p: p.split("/")[-1])
def test_corpus_pairs_are_partitions(a: str, b: str) -> None:
    eager, compiled = corpus(a), corpus(b)
    assert_partition(eager, fusion_map(eager, compiled, force=True))
    assert_partition(eager, fusion_map(eager, compiled))


@pytest.mark.parametrize(
    ("a", "b"),
    [("amd/mi300x_compiled_flux_hipgraph.json.gz", "nvidia/a100_compiled_triton_tiny.json.gz"),
     ("amd/mi300x_compiled_flux_hipgraph.json.gz", "amd/mi300x_vllm_full_graph_replay.json.gz"),
     ("nvidia/resnet50_eager_legacy_bare_array.json.gz",
      "nvidia/a100_compiled_triton_tiny.json.gz")],
    ids=lambda p: p.split("/")[-1],
)  # fmt: skip
def test_unrelated_corpus_pairs_get_no_fusion_figures(a: str, b: str) -> None:
    comparison = traceviz.compare(corpus(a), corpus(b), names=("a", "b"))
    assert comparison.fusion.kernels.empty
    assert comparison.fusion.est_bytes_saved is None
    assert comparison.fusion.eager_kernels_per_compiled_kernel is None
    saved = comparison.metric("est_bytes_saved")["b"]
    assert np.isnan(saved)
    assert "traces-not-comparable" in {f.id for f in comparison.findings}
    forced = traceviz.compare(corpus(a), corpus(b), names=("a", "b"), force=True)
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
    assert_one_to_one(corpus(a), corpus(b))
