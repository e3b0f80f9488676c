"""Traces that are not the same workload: the fusion figures are withheld (or forced).

Reads :attr:`FusionMap.comparability <traceviz.analysis.fusion.fusion_map.FusionMap.comparability>`
(:func:`traceviz.analysis.fusion.comparable.comparability`): when a and b are not an eager and a
compiled run of one model (different devices, a compiled "eager" side, GEMM shapes or fused
ops that do not meet), the fusion map, eager kernels per compiled kernel and the bytes saved
mean nothing, so they are left out and this warning says why, naming the failed checks. The
same model on two GPU vendors (an H100 against an MI300) fails only the vendor check: the
per-kernel fusion figures are left out, the speed and peak-memory verdicts stand, and the
finding is information.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from traceviz.analysis.fusion.comparable import DEVICE_VENDOR
from traceviz.diagnose import docs, ort_advice
from traceviz.diagnose.finding import Evidence, Finding, Severity, Unit

if TYPE_CHECKING:
    from traceviz.analysis.compare import Comparison

RULE_ID = "traces-not-comparable"


def not_comparable(comparison: Comparison) -> list[Finding]:
    """a and b are not the same workload (one finding, for the pair)."""
    verdict = comparison.fusion.comparability
    if verdict.comparable:
        return []
    a, b = comparison.names
    evidence: list[Evidence | str] = list(verdict.reasons)
    if verdict.failed:
        evidence.insert(0, "failed checks: " + ", ".join(verdict.failed))
    if verdict.signature_overlap is not None:
        evidence.append(
            Evidence(f"{b} library calls also in {a}", verdict.signature_overlap, Unit.RATIO)
        )
    if verdict.fused_op_overlap is not None:
        evidence.append(
            Evidence(f"ops {b}'s fused kernels name that {a} runs", verdict.fused_op_overlap,
                     Unit.RATIO)
        )  # fmt: skip
    if verdict.forced:
        evidence.append("compared anyway (--force): the fusion figures below are doubtful")
        title = f"{a} and {b} do not look like one workload; fusion figures forced"
    else:
        evidence.append(
            "fusion map, eager kernels per compiled kernel, bytes saved and the speed and "
            "peak-memory verdicts left out"
            if verdict.other_workload
            else "fusion map, eager kernels per compiled kernel and bytes saved left out"
        )
        title = (
            f"{a} and {b} are not an eager and a compiled run of one workload: no fusion figures"
        )
    ort = comparison.a.trace.meta.is_onnxruntime or comparison.b.trace.meta.is_onnxruntime
    if ort and not verdict.forced:
        title = f"{a} and {b} are not profiles of one workload: no fusion figures"
    vendor_only = verdict.failed == (DEVICE_VENDOR,)
    if vendor_only and not verdict.forced:
        kinds = f"{comparison.a.trace.device_kind.value} vs {comparison.b.trace.device_kind.value}"
        title = (
            f"{a} and {b} ran on different GPU vendors ({kinds}): no per-kernel fusion "
            "figures; the speed verdict stands"
        )
    return [
        Finding(
            id=RULE_ID,
            severity=Severity.INFO if vendor_only else Severity.WARNING,
            title=title,
            evidence=tuple(evidence),
            next_step=(
                "Compare two ONNX Runtime profiles of the same model and inputs (two "
                "graph optimization levels: `traceviz run MODEL --backends "
                "eager,compile,onnxruntime` writes one per level); `traceviz compare --force` "
                "computes the fusion figures anyway."
            )
            if ort
            else "Compare an eager and a compiled trace of the same model, inputs and "
            "device (`traceviz run` makes such a pair); `traceviz compare --force` computes "
            "the fusion figures anyway.",
            docs_url=ort_advice.GRAPH_OPTIMIZATIONS if ort else docs.TORCH_COMPILE,
        )
    ]
