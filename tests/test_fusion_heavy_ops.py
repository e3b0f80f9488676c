"""A GEMM, convolution or attention is never credited to an Inductor kernel that only carries
its epilogue.

GIVEN an eager trace whose GEMMs/attention ran as library kernels and a compiled trace whose
library kernels the name rules cannot tie to an aten op (a CUDA-graph replay, ``mode=
"reduce-overhead"``: the replayed kernels hang off the compiled region, not off ``aten::mm``)
WHEN the fusion map credits the eager kernels THEN the eager GEMM/attention instance is not
credited to a pointwise/reduction Triton kernel that merely names the op (the bias add of
``addmm`` is ``triton_poi_fused_add_addmm_…``; the attention mask is
``triton_poi_fused__scaled_dot_product_efficient_attention_…``): such a kernel does not run
the heavy op, and crediting it made the map and the per-line view say that 233 µs of GEMMs
became 28 µs of layer norms on the H200 ``gpt2-reduce-overhead`` run.

The same rule the compiler stage already keeps (:func:`traceviz.analysis.fusion.lines.
compiler_credits`), now kept by the name-match stage too.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import traceviz
from tests.conftest import SAMPLES, kernel, launch, op
from traceviz.analysis.fusion.fusion_map import fusion_map
from traceviz.analysis.fusion.match import HEAVY_KEYS, Credits, Outcome
from traceviz.analysis.fusion.op_keys import name_keys
from traceviz.analysis.inductor_names import TritonSubkind, fused_kernel_ops
from traceviz.rundir import is_run_dir

MakeTrace = Callable[..., Path]


def run_dirs() -> list[Path]:
    if not SAMPLES.is_dir():
        return []
    found = [p for p in SAMPLES.iterdir() if is_run_dir(p)]
    h200 = SAMPLES / "h200"
    found += [p for p in h200.iterdir() if is_run_dir(p)] if h200.is_dir() else []
    return sorted(found)


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


@pytest.mark.parametrize("path", run_dirs(), ids=lambda p: str(p.relative_to(SAMPLES)))
def test_no_sample_run_credits_a_heavy_op_to_an_epilogue_kernel(path: Path) -> None:
    comparison = traceviz.compare(path)  # the run directory: its run.json, log, lines
    bad = heavy_on_epilogues(comparison)
    assert not bad, sorted(set(bad))


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


def _eager() -> list[dict]:
    return [
        op("ProfilerStep#1", 0, 100, cat="user_annotation"),
        op("aten::addmm", 10, 20),
        launch("cudaLaunchKernel", 12, 5, 1),
        op("aten::add", 40, 10),
        launch("cudaLaunchKernel", 42, 5, 2),
        kernel("sm80_xmma_gemm_f32f32_nn", 20, 30, 1),
        kernel("vectorized_elementwise_kernel<add>", 55, 3, 2),
    ]


def _compiled() -> list[dict]:
    # the library GEMM is launched straight from the compiled region (as a graph replay's
    # kernels are): no aten op to tie it to addmm by name
    return [
        op("ProfilerStep#1", 0, 100, cat="user_annotation"),
        op("Torch-Compiled Region: 0/0", 5, 60),
        launch("cudaLaunchKernel", 12, 5, 1),
        launch("cuLaunchKernel", 20, 5, 2),
        kernel("sm80_xmma_gemm_f32f32_nn", 20, 30, 1),
        kernel("triton_poi_fused_add_addmm_0", 55, 2, 2),
    ]


def test_a_made_gemm_is_not_credited_to_its_bias_add_kernel(tmp_trace: MakeTrace) -> None:
    result = fusion_map(traceviz.load(tmp_trace(_eager())), traceviz.load(tmp_trace(_compiled())))
    credits = result.credits
    gemm = credits[credits[Credits.op].astype(str) == "aten::addmm"]
    assert len(gemm) == 1
    assert gemm[Credits.kernel].iloc[0] != "triton_poi_fused_add_addmm_0"
    # the add is still the fused kernel's own work
    add = credits[credits[Credits.op].astype(str) == "aten::add"]
    assert list(add[Credits.kernel]) == ["triton_poi_fused_add_addmm_0"]
    # what the map credits never exceeds what the eager trace measured
    assert credits[Credits.time_us].sum() <= 33.0 + 1e-9
