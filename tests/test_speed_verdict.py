"""§4 of issue 10: speed verdicts need statistical support.

GIVEN step-time samples (run.json's timed iterations, or the traces' ProfilerSteps), WHEN b is
compared with a, THEN the verdict rests on a bootstrap interval of the ratio of medians (fixed
seed), "no significant difference" inside the noise with the interval shown, the headline
reconciles profiled and timed step times, and a trace-only compare says it rests on one
profiled window.

Who gets a verdict (issue 24 §3): two traces without ops get none (their step spans time
nothing: an ``empty-trace`` finding per trace instead); the same model on two GPU vendors (an
H100 cuda trace, an MI300 rocm one with the same op signatures) is one workload and gets it,
only the per-kernel fusion figures need one vendor's kernels, and the finding names the checks
that failed. In the compare JSON every ``step`` is the ProfilerStep number, null outside every
step.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import traceviz
from tests.conftest import SAMPLES, kernel, launch, op
from tests.runinfo_builder import run_info
from traceviz.analysis.fusion.comparable import DEVICE_KIND, DEVICE_VENDOR, SIGNATURES
from traceviz.analysis.timing.speed import (
    FASTER,
    ONE_WINDOW,
    PROFILED_STEPS,
    SAME,
    SLOWER,
    TIMED,
    UNKNOWN,
    compare_samples,
    speed_verdict,
)
from traceviz.diagnose import Severity
from traceviz.diagnose.rules.profiling import EMPTY_ID
from traceviz.diagnose.rules.slower import NO_WORK, comparison_speed
from traceviz.pipeline import compare
from traceviz.report.headline import interval_text, speed_ratio_text
from traceviz.report.json_report import comparison_json
from traceviz.report.views import headline
from traceviz.rundir import read_run_dir
from traceviz.runs.runinfo import RunInfo

Make = Callable[..., Path]


def _steps(durations: list[float], *, compiled: bool) -> list[dict]:
    events = []
    for i, dur in enumerate(durations):
        t = i * 100_000.0
        events.append(op(f"ProfilerStep#{i}", t, dur, cat="user_annotation"))
        if compiled:
            events += [
                op("Torch-Compiled Region: 0/0", t + 1, 5),
                op("graph_0_cpp_fused_0", t + 2, 2),
            ]
        else:
            events.append(op("aten::relu", t + 2, 2))
    return events


def _pair(make: Make, eager: list[float], compiled: list[float]) -> tuple[Path, Path]:
    return make(_steps(eager, compiled=False)), make(_steps(compiled, compiled=True))


def _timing(eager: np.ndarray, compiled: np.ndarray) -> RunInfo:
    return run_info(
        timing={
            "eager": {"median_us": float(np.median(eager)), "samples_us": eager.tolist()},
            "compiled": {"median_us": float(np.median(compiled)), "samples_us": compiled.tolist()},
        }
    )


def _ids(findings: list) -> dict[str, Severity]:
    return {f.id: f.severity for f in findings}


# --- the statistics -------------------------------------------------------------------------


def test_bootstrap_is_deterministic_and_covers_the_ratio() -> None:
    rng = np.random.default_rng(7)
    a = rng.lognormal(np.log(1000), 0.3, 40)
    b = rng.lognormal(np.log(1000), 0.3, 40)
    one, two = compare_samples(a, b), compare_samples(a, b)
    assert one == two  # fixed seed
    assert one.low is not None and one.high is not None
    assert one.low <= one.ratio <= one.high
    assert one.ratio == pytest.approx(np.median(b) / np.median(a))


def test_clear_shifts_are_slower_or_faster_and_overlap_is_not() -> None:
    rng = np.random.default_rng(1)
    a = 1000 + rng.normal(0, 20, 30)
    slower = compare_samples(a, a * 1.4)
    assert slower.verdict == SLOWER and slower.low is not None and slower.low > 1
    faster = compare_samples(a, a * 0.6)
    assert faster.verdict == FASTER and faster.high is not None and faster.high < 1
    noisy = compare_samples(a, a * 1.02)  # sure, but under the 5% tolerance
    assert noisy.verdict == SAME


def test_demo_like_noise_is_no_significant_difference(tmp_trace: Make) -> None:
    """Eager steps ranging 0.3–49 ms (the same addmm, machine noise), compiled median ~2×:
    no ERROR, no compiled-slower, and the interval is shown."""
    rng = np.random.default_rng(3)
    eager = np.concatenate([rng.uniform(300, 2000, 15), rng.uniform(2000, 49_000, 15)])
    compiled = np.concatenate([rng.uniform(1500, 4000, 15), rng.uniform(4000, 45_000, 15)])
    run = _timing(eager, compiled)
    a, b = _pair(tmp_trace, [1000.0] * 3, [2040.0] * 3)
    comparison = compare(a, b, names=("eager", "compiled"), run_info=run)
    verdict = speed_verdict(comparison.a.trace, comparison.b.trace, run_info=run)
    assert verdict.basis == TIMED and verdict.verdict == SAME and verdict.ratio > 1.05
    ids = _ids(comparison.findings)
    assert "compiled-slower" not in ids and Severity.ERROR not in ids.values()
    assert ids["no-significant-difference"] is Severity.INFO
    (noise,) = [f for f in comparison.findings if f.id == "no-significant-difference"]
    assert "95% interval" in noise.title
    head = "\n".join(headline(comparison))
    interval = interval_text(verdict.low, verdict.high)
    assert "No significant difference" in head and interval in head
    # the profiled steps (2.04×) disagree with the timed verdict: the headline says why
    assert "the profiled steps say compiled is 2.04× slower" in head
    assert "the timed medians are the verdict" in head
    data = json.loads(json.dumps(comparison_json(comparison)))
    assert data["speed"]["verdict"] == SAME and data["speed"]["low"] < 1 < data["speed"]["high"]


def test_significantly_slower_is_an_error_only_when_the_interval_says_so(tmp_trace: Make) -> None:
    rng = np.random.default_rng(5)
    eager = 1000 + rng.normal(0, 10, 30)
    a, b = _pair(tmp_trace, [1000.0] * 3, [1000.0] * 3)
    much = compare(a, b, names=("eager", "compiled"), run_info=_timing(eager, eager * 1.6))
    assert _ids(much.findings)["compiled-slower"] is Severity.ERROR
    some = compare(a, b, names=("eager", "compiled"), run_info=_timing(eager, eager * 1.12))
    (finding,) = [f for f in some.findings if f.id == "compiled-slower"]
    assert finding.severity is Severity.WARNING and "95% interval" in finding.title


def test_trace_only_falls_back_honestly(tmp_trace: Make) -> None:
    """One profiled step per side: no test, the basis says so, never an error."""
    a, b = _pair(tmp_trace, [1000.0], [3000.0])
    comparison = compare(a, b, names=("eager", "compiled"))
    verdict = speed_verdict(comparison.a.trace, comparison.b.trace)
    assert verdict.basis == ONE_WINDOW and not verdict.tested and verdict.verdict == SLOWER
    (finding,) = [f for f in comparison.findings if f.id == "compiled-slower"]
    assert finding.severity is Severity.WARNING
    assert "one profiled window" in "\n".join(finding.evidence_lines())
    assert "no interval: one profiled window" in "\n".join(headline(comparison))


def test_profiled_steps_are_tested_without_run_json(tmp_trace: Make) -> None:
    a, b = _pair(tmp_trace, [1000.0, 1010.0, 990.0, 1005.0], [980.0, 1020.0, 1000.0, 995.0])
    comparison = compare(a, b, names=("eager", "compiled"))
    verdict = speed_verdict(comparison.a.trace, comparison.b.trace)
    assert verdict.basis == PROFILED_STEPS and verdict.tested and verdict.verdict == SAME
    assert "compiled-slower" not in _ids(comparison.findings)


def test_bad_samples_are_dropped_not_crashed() -> None:
    verdict = compare_samples([1.0, float("nan"), -5.0, 2.0], [1.0, 2.0, 3.0, 4.0])
    assert verdict.n_a == 2 and not verdict.tested  # too few left for an interval


# --- the sample runs ------------------------------------------------------------------------


def _runs() -> list[Path]:
    return sorted(p for p in SAMPLES.glob("*") if (p / "run.json").is_file())


@pytest.mark.parametrize("run", _runs(), ids=lambda p: p.name)
def test_sample_runs_verdicts_follow_their_intervals(run: Path) -> None:
    rundir = read_run_dir(run)
    comparison = compare(
        traceviz.load(rundir.eager), traceviz.load(rundir.compiled),
        names=("eager", "compiled"), run_info=rundir.info,
    )  # fmt: skip
    verdict = speed_verdict(comparison.a.trace, comparison.b.trace, run_info=rundir.info)
    assert verdict.basis == TIMED and verdict.tested
    assert verdict.low is not None and verdict.high is not None
    ids = _ids(comparison.findings)
    if verdict.verdict == SLOWER:
        assert verdict.low > 1 and "compiled-slower" in ids
    else:
        assert "compiled-slower" not in ids
    if verdict.verdict == SAME:
        assert verdict.low <= 1 <= verdict.high or abs(verdict.ratio - 1) < 0.05
    head = "\n".join(headline(comparison))
    assert interval_text(verdict.low, verdict.high) in head
    profiled = comparison.b.summary.step_mean_us / comparison.a.summary.step_mean_us
    if (profiled - 1) * (verdict.ratio - 1) < 0 and abs(profiled - 1) >= 0.05:
        assert f"the profiled steps say compiled is {speed_ratio_text(profiled)}" in head


# --- who gets a verdict: empty traces, two vendors ------------------------------------


def _empty_steps(step_us: float, *, work: bool = False) -> list[dict]:
    events = []
    for i in range(4):
        t = i * step_us
        events.append(op(f"ProfilerStep#{i + 1}", t, step_us, cat="user_annotation"))
        if work:
            events += [launch("cudaLaunchKernel", t + 1, 2, i + 1), kernel("k", t + 5, 10, i + 1)]
    return events


def _empty_pair(tmp_trace, a_work: bool = False, b_work: bool = False):  # type: ignore[no-untyped-def]
    a = traceviz.load(tmp_trace(_empty_steps(100, work=a_work)))
    b = traceviz.load(tmp_trace(_empty_steps(150, work=b_work)))
    return compare(a, b, names=("eager", "compiled"))


def test_no_speed_verdict_while_a_side_is_empty(tmp_trace) -> None:
    """Both sides empty, or only one: no verdict and an empty-trace finding per empty side;
    both with work: the verdict stands."""
    comparison = _empty_pair(tmp_trace)
    verdict = comparison_speed(comparison)
    assert verdict.verdict == UNKNOWN and verdict.basis == NO_WORK
    ids = [f.id for f in comparison.findings]
    assert "compiled-slower" not in ids and "no-significant-difference" not in ids
    assert ids.count(EMPTY_ID) == 2
    speed = headline(comparison)[0].lower()  # the verdict sentence leads
    assert "no speed verdict" in speed and "slower" not in speed
    assert comparison_json(comparison)["speed"]["verdict"] == UNKNOWN
    comparison = _empty_pair(tmp_trace, a_work=True)
    assert comparison_speed(comparison).verdict == UNKNOWN
    assert [f.trace for f in comparison.findings if f.id == EMPTY_ID] == ["compiled"]
    comparison = _empty_pair(tmp_trace, a_work=True, b_work=True)
    assert comparison_speed(comparison).verdict == "slower"
    assert EMPTY_ID not in {f.id for f in comparison.findings}


GEMM = {"Input Dims": [[32, 128], [128, 64]]}


def _vendor_steps(
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


def _vendor_pair(tmp_trace, b_api: str = "hipLaunchKernel", b_gemm: str = "Cijk_Ailk_Bljk_S"):  # type: ignore[no-untyped-def]
    a = _vendor_steps("cudaLaunchKernel", "sm90_xmma_gemm_f32", compiled=False, step_us=1000)
    b = _vendor_steps(b_api, b_gemm, compiled=True, step_us=2000)
    return compare(
        traceviz.load(tmp_trace(a)), traceviz.load(tmp_trace(b)), names=("eager", "compiled")
    )


def test_two_vendors_fail_only_the_vendor_check_and_keep_the_speed_verdict(tmp_trace) -> None:
    comparison = _vendor_pair(tmp_trace)
    kinds = (comparison.a.trace.device_kind.value, comparison.b.trace.device_kind.value)
    assert kinds == ("cuda", "rocm")
    verdict = comparison.fusion.comparability
    assert verdict.failed == (DEVICE_VENDOR,)
    assert verdict.withheld and not verdict.other_workload
    assert "compiled-slower" in {f.id for f in comparison.findings}
    speed = headline(comparison)[0]  # the verdict sentence leads
    assert "no speed verdict" not in speed.lower() and "slower than" in speed
    (finding,) = [f for f in comparison.findings if f.id == "traces-not-comparable"]
    assert finding.severity.value == "info"
    assert "failed checks: device vendor" in finding.evidence_lines()
    assert "speed verdict stands" in finding.title
    data = comparison_json(comparison)
    assert data["fusion"]["comparable"]["failed_checks"] == [DEVICE_VENDOR]


def test_gpu_against_cpu_is_still_another_workload(tmp_trace: object, tmp_path: Path) -> None:
    a = [op("ProfilerStep#1", 0, 100, cat="user_annotation"), op("aten::mm", 10, 50, **GEMM)]
    b = _vendor_steps("cudaLaunchKernel", "sm90_xmma_gemm_f32", compiled=True, step_us=1000, n=1)
    comparison = compare(traceviz.load(tmp_trace(a)), traceviz.load(tmp_trace(b)))  # type: ignore[operator]
    verdict = comparison.fusion.comparability
    assert DEVICE_KIND in verdict.failed and verdict.other_workload


def test_another_model_on_two_vendors_names_both_checks(tmp_trace) -> None:
    a = _vendor_steps("cudaLaunchKernel", "sm90_xmma_gemm_f32", compiled=False, step_us=1000)
    other = {"Input Dims": [[7, 9], [9, 11]]}
    b = _vendor_steps("hipLaunchKernel", "Cijk_S", compiled=True, step_us=2000, dims=other)
    comparison = compare(traceviz.load(tmp_trace(a)), traceviz.load(tmp_trace(b)))
    verdict = comparison.fusion.comparability
    assert verdict.failed == (DEVICE_VENDOR, SIGNATURES) and verdict.other_workload
    (finding,) = [f for f in comparison.findings if f.id == "traces-not-comparable"]
    assert "failed checks: device vendor, op signatures" in finding.evidence_lines()
    assert finding.severity.value == "warning"
    assert "compiled-slower" not in {f.id for f in comparison.findings}


def _numbered_steps(tmp_trace, first: int = 7):  # type: ignore[no-untyped-def]
    """Three steps numbered from ``first``; each: 300 µs of CPU work, a kernel, and a sync
    while the device idles; one more sync after the last step."""
    events: list[dict] = []
    for i in range(3):
        t, c = 1000.0 * i, 10 * i + 1
        events += [
            op(f"ProfilerStep#{first + i}", t, 1000, cat="user_annotation"),
            op("preprocess", t + 5, 300, cat="user_annotation"),
            launch("cudaLaunchKernel", t + 310, 5, c),
            kernel("gemm", t + 320, 100, c),
            launch("cudaStreamSynchronize", t + 500, 200, c + 1),
        ]
    events.append(launch("cudaStreamSynchronize", 3500, 100, 99))
    return traceviz.load(tmp_trace(events))


def test_every_step_in_the_json_is_a_profiler_step_number(tmp_trace) -> None:
    doc = comparison_json(compare(_numbered_steps(tmp_trace), _numbered_steps(tmp_trace, first=20)))
    for side, first in (("a", 7), ("b", 20)):
        launch = doc["launch"][side]
        numbers = {first, first + 1, first + 2}
        assert {r["step"] for r in launch["per_step"]} == numbers
        assert {r["step"] for r in launch["idle_per_step"]} == numbers
        work = {r["step"] for r in launch["idle_cpu_work"]}
        assert work and work <= numbers
        calls = [r["step"] for r in launch["blocking_calls"]]
        assert set(calls) - {None} == numbers
        assert calls.count(None) == 1  # the sync after the last step: outside every step
