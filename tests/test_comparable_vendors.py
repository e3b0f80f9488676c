"""The same model on two GPU vendors is one workload (issue 24 §3): an H100 (cuda) trace and
an MI300 (rocm) trace with the same op signatures get the speed verdict; only the per-kernel
fusion figures need one vendor's kernels. The finding names the checks that failed."""

from __future__ import annotations

from pathlib import Path

import traceviz
from tests.conftest import kernel, launch, op
from traceviz.analysis.fusion.comparable import DEVICE_KIND, DEVICE_VENDOR, SIGNATURES
from traceviz.pipeline import compare
from traceviz.report.json_report import comparison_json
from traceviz.report.views import headline

GEMM = {"Input Dims": [[32, 128], [128, 64]]}


def _steps(
    api: str, gemm: str, *, compiled: bool, step_us: float, n: int = 6, dims: dict = GEMM
) -> list[dict]:
    """``n`` profiler steps of ``step_us`` each: an mm (its GEMM kernel launched by ``api``)
    and a relu (eager: ``aten::relu``'s kernel; compiled: an Inductor kernel in a region)."""
    events: list[dict] = []
    for i in range(n):
        t, c = i * step_us, 10 * i + 1
        events.append(op(f"ProfilerStep#{i + 1}", t, step_us, cat="user_annotation"))
        if compiled:
            events.append(op("Torch-Compiled Region: 0/0", t + 1, step_us - 2))
        events += [
            op("aten::mm", t + 5, 20, **dims, **{"External id": c}),
            launch(api, t + 6, 4, c, **{"External id": c}),
            kernel(gemm, t + 30, step_us / 4, c, **{"External id": c}),
        ]
        relu = "triton_poi_fused_relu_0" if compiled else "aten::relu"
        events += [
            op(relu, t + 40, 10, **{"External id": c + 1}),
            launch(api, t + 41, 4, c + 1, **{"External id": c + 1}),
            kernel(
                f"{relu}_kernel" if not compiled else relu,
                t + 50 + step_us / 4,
                5,
                c + 1,
                **{"External id": c + 1},
            ),
        ]
    return events


def _pair(tmp_trace, b_api: str = "hipLaunchKernel", b_gemm: str = "Cijk_Ailk_Bljk_S"):  # type: ignore[no-untyped-def]
    a = _steps("cudaLaunchKernel", "sm90_xmma_gemm_f32", compiled=False, step_us=1000)
    b = _steps(b_api, b_gemm, compiled=True, step_us=2000)
    return compare(
        traceviz.load(tmp_trace(a)), traceviz.load(tmp_trace(b)), names=("eager", "compiled")
    )


def test_two_vendors_fail_only_the_vendor_check(tmp_trace) -> None:
    comparison = _pair(tmp_trace)
    assert (comparison.a.trace.device_kind.value, comparison.b.trace.device_kind.value) == (
        "cuda",
        "rocm",
    )
    verdict = comparison.fusion.comparability
    assert verdict.failed == (DEVICE_VENDOR,)
    assert verdict.withheld and not verdict.other_workload


def test_two_vendors_get_the_speed_verdict(tmp_trace) -> None:
    comparison = _pair(tmp_trace)
    ids = {f.id for f in comparison.findings}
    assert "compiled-slower" in ids
    speed = headline(comparison)[0]  # the verdict sentence leads
    assert "no speed verdict" not in speed.lower() and "slower than" in speed


def test_the_finding_names_the_failed_checks(tmp_trace) -> None:
    comparison = _pair(tmp_trace)
    (finding,) = [f for f in comparison.findings if f.id == "traces-not-comparable"]
    assert finding.severity.value == "info"
    assert "failed checks: device vendor" in finding.evidence_lines()
    assert "speed verdict stands" in finding.title
    data = comparison_json(comparison)
    assert data["fusion"]["comparable"]["failed_checks"] == [DEVICE_VENDOR]


def test_gpu_against_cpu_is_still_another_workload(tmp_trace: object, tmp_path: Path) -> None:
    a = [op("ProfilerStep#1", 0, 100, cat="user_annotation"), op("aten::mm", 10, 50, **GEMM)]
    b = _steps("cudaLaunchKernel", "sm90_xmma_gemm_f32", compiled=True, step_us=1000, n=1)
    comparison = compare(traceviz.load(tmp_trace(a)), traceviz.load(tmp_trace(b)))  # type: ignore[operator]
    verdict = comparison.fusion.comparability
    assert DEVICE_KIND in verdict.failed and verdict.other_workload


def test_another_model_on_two_vendors_names_both_checks(tmp_trace) -> None:
    a = _steps("cudaLaunchKernel", "sm90_xmma_gemm_f32", compiled=False, step_us=1000)
    other = {"Input Dims": [[7, 9], [9, 11]]}
    b = _steps("hipLaunchKernel", "Cijk_S", compiled=True, step_us=2000, dims=other)
    comparison = compare(traceviz.load(tmp_trace(a)), traceviz.load(tmp_trace(b)))
    verdict = comparison.fusion.comparability
    assert verdict.failed == (DEVICE_VENDOR, SIGNATURES) and verdict.other_workload
    (finding,) = [f for f in comparison.findings if f.id == "traces-not-comparable"]
    assert "failed checks: device vendor, op signatures" in finding.evidence_lines()
    assert finding.severity.value == "warning"
    assert "compiled-slower" not in {f.id for f in comparison.findings}
