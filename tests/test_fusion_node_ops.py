"""The op keys of a compiled kernel's post-grad nodes, as the compiler stage of the fusion map
scores them.

GIVEN Inductor's provenance of a compiled kernel WHEN its post-grad node names are read as ops
THEN a node made from an OpOverload (``mm_default_5``: ``aten.mm.default``; ``add_tensor``:
``aten.add.Tensor``) is the op itself (``mm``, ``add``), and every kernel a library call
launches for the call's own op (cuBLAS's split-K reduction beside its GEMM) holds the call's
op. Read as ``mm_default``, the H200 gpt2 run's cutlass GEMM and split-K kernels (10 calls
each of ``extern_kernels.mm`` at ``pytorch_utils.py:119``) held no GEMM, so the one cuBLAS
kernel named ``mm`` took all 50 eager GEMMs of that line with confidence 1.00 while three
compiled kernels run them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import traceviz
from tests.conftest import SAMPLES
from traceviz.analysis.fusion.fusion_map import FusionKernels
from traceviz.analysis.fusion.lines import fusion_evidence, node_op
from traceviz.analysis.provenance import compiled_kernel_provenance
from traceviz.parse.compile_log import read_compile_log
from traceviz.rundir import is_run_dir, read_run_dir
from traceviz.schema import Kernels

GPT2 = SAMPLES / "h200" / "gpt2"


@pytest.mark.parametrize(
    ("node", "op"),
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
def test_node_names_read_as_ops(node: str, op: str) -> None:
    assert node_op(node) == op


def _run(path: Path) -> tuple[traceviz.Trace, traceviz.Trace, Path, traceviz.Trace | None]:
    if not is_run_dir(path):
        pytest.skip(f"{path} not found")
    run = read_run_dir(path)
    eager_lines = traceviz.load(run.eager_lines) if run.eager_lines else None
    return traceviz.load(run.eager), traceviz.load(run.compiled), run.compile_log, eager_lines


def test_every_kernel_of_a_gemm_call_holds_the_gemm() -> None:
    eager, compiled, log_path, eager_lines = _run(GPT2)
    _, record = fusion_evidence(eager, compiled, log_path, eager_lines=eager_lines)
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


def test_the_gpt2_gemm_line_is_not_given_to_one_kernel_with_full_confidence() -> None:
    path = GPT2
    if not is_run_dir(path):
        pytest.skip(f"{path} not found")
    comparison = traceviz.compare(path)  # the run directory: its run.json, log, lines
    kernels = comparison.fusion.kernels
    gemm = kernels[kernels[FusionKernels.eager_ops].astype(str).str.contains("aten::addmm")]
    # the Conv1D line's GEMMs run in three compiled library kernels: the nearest in the step
    # takes each eager GEMM, none with certainty (was one kernel, all 50, confidence 1.00)
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
