"""Speed verdicts need statistical support. GIVEN step-time samples (run.json's timed
iterations, or the traces' ProfilerSteps), WHEN b is compared with a, THEN the verdict rests on
a bootstrap interval of the ratio of medians (fixed seed), "no significant difference" inside
the noise with the interval shown, the headline reconciles profiled and timed step times, and a
trace-only compare says it rests on one profiled window.

Who gets a verdict: two traces without ops get none (their step spans time nothing: an
``empty-trace`` finding per trace instead); the same model on two GPU vendors (an H100 cuda
trace, an MI300 rocm one with the same op signatures) is one workload and gets it, only the
per-kernel fusion figures need one vendor's kernels, and the finding names the checks that
failed. In the compare JSON every ``step`` is the ProfilerStep number, null outside every step.
The compiled-slower attribution's median step per kind (``slower._median_step_times``): computed
once per side's facts, by a groupby of the kinds' categorical codes; equal to a plain Python
pass over the kernels on real CUDA, ROCm and CPU traces and on made edge cases. The extra
device idle time by cause.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import traceviz
from tests.conftest import CORPUS, SAMPLES, kernel, launch, op
from tests.real_data import CORPUS_PAIRS
from tests.runinfo_builder import run_info
from traceviz.analysis.fusion.comparable import DEVICE_KIND, DEVICE_VENDOR, SIGNATURES
from traceviz.analysis.timing.idle import IdleParts
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
from traceviz.analysis.windows import full_steps
from traceviz.diagnose import Finding, Severity
from traceviz.diagnose.facts import TraceFacts, facts_of_trace, kernel_times
from traceviz.diagnose.rules import slower
from traceviz.diagnose.rules.profiling import EMPTY_ID
from traceviz.diagnose.rules.slower import NO_WORK, comparison_speed
from traceviz.pipeline import compare
from traceviz.report.headline import interval_text, speed_ratio_text
from traceviz.report.json_report import comparison_json
from traceviz.report.views import headline
from traceviz.rundir import read_run_dir
from traceviz.runs.runinfo import RunInfo
from traceviz.schema import Kernels, Steps

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


# --- the compiled-slower attribution ---------------------------------------------------------


def plain_medians(facts: TraceFacts) -> dict[str, float] | None:
    """Per kind, the median over the full steps of each step's summed kernel time: a plain
    Python pass over the kernels (a kernel belongs to the step whose [start, end) holds its
    start; a step without a kernel of a kind counts 0 for it)."""
    steps = full_steps(facts.trace)
    if len(steps) < slower.MEDIAN_STEPS:
        return None
    ends = (steps[Steps.ts_us] + steps[Steps.dur_us]).tolist()
    windows = sorted(zip(steps[Steps.ts_us].tolist(), ends, strict=True))
    kernels = facts.kernels
    sums: dict[str, list[float]] = {}
    for kind, ts, time in zip(
        kernels["kind"].tolist(), kernels[Kernels.ts_us].tolist(), kernel_times(kernels).tolist(),
        strict=True,
    ):  # fmt: skip
        at = [i for i, (lo, hi) in enumerate(windows) if lo <= ts < hi]
        if at and isinstance(kind, str):
            sums.setdefault(kind, [0.0] * len(windows))[at[0]] += time
    return {kind: statistics.median(per_step) for kind, per_step in sorted(sums.items())}


def _agree(facts: TraceFacts) -> Any:
    got, want = slower._median_steps(facts), plain_medians(facts)
    if want is None:
        assert got is None
        return None
    assert got is not None and got.index.name == "kind"
    assert list(got.index) == list(want)
    assert got.to_numpy() == pytest.approx(list(want.values()), rel=1e-12, abs=1e-9)
    return got


@pytest.mark.parametrize(
    "path",
    [
        "nvidia/a100_compiled_cudagraph_train_2023.json.gz",
        "amd/mi250_eager_train_rocm62.json.gz",
        "amd/mi300x_compiled_flux_hipgraph.json.gz",  # under three steps: none
    ],
)
def test_median_steps_equal_a_plain_pass(path: str) -> None:
    if not (CORPUS / path).is_file():
        pytest.skip(f"corpus not found at {CORPUS}")
    _agree(facts_of_trace(traceviz.load(CORPUS / path)))


@pytest.mark.parametrize("run", ["h200/gpt2", "pointwise"])  # CUDA, CPU
def test_median_steps_of_a_sample_run(run: str) -> None:
    trace = traceviz.load(SAMPLES / run / "compiled.pt.trace.json.gz")
    medians = _agree(facts_of_trace(trace))
    assert medians is not None and len(medians)


def _steps_trace(
    tmp_trace: Callable[..., Path], kernels_in: list[int], n_steps: int = 4
) -> traceviz.Trace:
    """``n_steps`` steps; step i holds ``kernels_in[i]`` kernels (add, mul, add, …) of
    growing durations; one kernel outside every step."""
    events: list[dict[str, Any]] = []
    corr = 0
    for i in range(n_steps):
        t0 = i * 1000.0
        events.append(op(f"ProfilerStep#{i}", t0, 900.0))
        for k in range(kernels_in[i] if i < len(kernels_in) else 0):
            corr += 1
            name = ("aten::add", "aten::mm")[k % 2]
            start = t0 + 10 + k * 100
            events.append(op(name, start, 50.0))
            events.append(launch("cudaLaunchKernel", start + 5, 10.0, corr))
            events.append(kernel(f"{name[6:]}_kernel_{k}", start + 30, 7.0 + k + i, corr))
    corr += 1
    events.append(launch("cudaLaunchKernel", n_steps * 1000.0 + 5, 10.0, corr))
    events.append(kernel("outside_kernel", n_steps * 1000.0 + 30, 3.0, corr))
    return traceviz.load(tmp_trace(events), cache=False)


@pytest.mark.parametrize(
    "kernels_in",
    [[3, 2, 4, 1], [0, 0, 5, 0], [2], [0, 0, 0, 0], [1, 1, 1, 1]],
    ids=["uneven", "one-step", "first-only", "none-inside", "one-each"],
)
def test_median_steps_made_traces(tmp_trace: Callable[..., Path], kernels_in: list[int]) -> None:
    _agree(facts_of_trace(_steps_trace(tmp_trace, kernels_in)))


def test_under_three_steps_none(tmp_trace: Callable[..., Path]) -> None:
    facts = facts_of_trace(_steps_trace(tmp_trace, [2, 2], n_steps=2))
    assert slower._median_step_times(facts) is None is plain_medians(facts)


def test_computed_once_per_facts(tmp_trace: Callable[..., Path]) -> None:
    facts = facts_of_trace(_steps_trace(tmp_trace, [3, 2, 4, 1]))
    first = slower._median_step_times(facts)
    assert first is not None and not first.empty
    assert slower._median_step_times(facts) is first


# --- the extra device idle time, by cause -------------------------------------------------

IDLE_LABEL = "more device idle time ("


def _idle_lines(report: Any) -> dict[str, float]:
    found = [f for f in report.findings if f.id == slower.RULE_ID]
    assert len(found) == 1
    return {
        e.label: e.value
        for e in found[0].evidence
        if not isinstance(e, str) and e.label.startswith(IDLE_LABEL)
    }


def _part_per_step(side: Any, parts: tuple[str, ...]) -> float:
    """A side's idle parts per step, from its idle split's per-step table (independently of
    the rule's helpers: the table's columns summed, over the launch table's step count)."""
    per_step = side.launch.idle.per_step
    total = float(sum(per_step[p].sum() for p in parts)) if len(per_step) else 0.0
    return total / max(len(side.launch.per_step), 1)


def _forced_pair(a_name: str, b_name: str) -> Any:
    """The forced comparison of two corpus traces (skipped without the corpus)."""
    a, b = CORPUS / a_name, CORPUS / b_name
    if not (a.is_file() and b.is_file()):
        pytest.skip(f"corpus not found at {CORPUS}")
    return compare(a, b, force=True, load=traceviz.load)


def test_idle_by_cause_on_the_a100_pair() -> None:
    """The A100 pair's compiled side waits less for the CPU than the eager one, yet idles far
    more, queued behind work already issued and blocked in syncs: the attribution says so
    and calls none of it launch/CPU overhead."""
    report = _forced_pair(
        "nvidia/a100_eager_train_control.json.gz",
        "nvidia/a100_compiled_cudagraph_train_2023.json.gz",
    )
    lines = _idle_lines(report)
    want = {}
    for parts, cause in slower.IDLE_CAUSES:
        more = _part_per_step(report.b, parts) - _part_per_step(report.a, parts)
        if more >= slower.IDLE_CAUSE_MIN_SHARE * report.b.summary.step_mean_us:
            want[f"{IDLE_LABEL}{cause})"] = more
    assert lines.keys() == want.keys() and lines
    for label, value in lines.items():
        assert value == pytest.approx(want[label], rel=1e-12)
    overhead = (IdleParts.cpu_wait_us, IdleParts.launch_latency_us)
    assert _part_per_step(report.b, overhead) < _part_per_step(report.a, overhead)
    assert f"{IDLE_LABEL}launch/CPU overhead)" not in lines
    # each line is a part b has more of: together at most b's measured idle time per step
    b_idle = _part_per_step(report.b, (IdleParts.idle_us,))
    assert 0 < sum(lines.values()) <= b_idle
    # with the causes b has less of, the lines net to b's extra idle per step (but for the
    # causes under the 1%-of-b's-step threshold, left out of both)
    (found,) = [f for f in report.findings if f.id == slower.RULE_ID]
    less = [e.value for e in found.evidence
            if not isinstance(e, str) and e.label.startswith("less device idle time")]  # fmt: skip
    assert less  # b waits less for the CPU
    extra = b_idle - _part_per_step(report.a, (IdleParts.idle_us,))
    slack = slower.IDLE_CAUSE_MIN_SHARE * report.b.summary.step_mean_us * len(slower.IDLE_CAUSES)
    assert sum(lines.values()) - sum(less) <= extra + slack


GPU_PAIRS = [
    *CORPUS_PAIRS,
    ("amd/mi250_eager_train_rocm62.json.gz", "amd/mi300x_compiled_llama_block_tiny.json.gz"),
]


@pytest.mark.parametrize("pair", GPU_PAIRS, ids=[b for _, b in GPU_PAIRS])
def test_idle_causes_named_only_from_one_percent(pair: tuple[str, str]) -> None:
    """Every idle line of a forced GPU pair's compiled-slower finding is a part b has at
    least 1% of its step more of (the mi250/mi300x pair's +0.01 µs is not a cause), and
    together they stay within b's idle time per step."""
    report = _forced_pair(*pair)
    found = next((f for f in report.findings if f.id == slower.RULE_ID), None)
    if found is None:
        pytest.skip("no compiled-slower finding on this pair")
    lines = [e for e in found.evidence if not isinstance(e, str) and e.label.startswith(IDLE_LABEL)]
    for line in lines:
        assert line.share is not None and line.share >= slower.IDLE_CAUSE_MIN_SHARE, line
    b_idle = _part_per_step(report.b, (IdleParts.idle_us,))
    assert sum(line.value for line in lines) <= b_idle


# The compiled-slower attribution does not blame one outlier kernel: with 3+ steps it compares
# the median step (and the GEMMs' median duration), so one 5 ms GEMM among 0.1 ms ones is no
# "more gemm kernel time".


def _slower(findings: list[Finding]) -> Finding:
    (finding,) = [f for f in findings if f.id == "compiled-slower"]
    return finding


def _trace(make: Make, step_us: float, mm_us: list[float]) -> Path:
    events = []
    for i, mm in enumerate(mm_us):
        start = i * 20_000
        events.append(op(f"ProfilerStep#{i}", start, step_us, cat="user_annotation"))
        events.append(op("aten::mm", start + 10, mm, **{"Input Dims": [[64, 64], [64, 64]]}))
    return make(events)


def test_synthetic_outlier_gemm_step_versus_a_real_one(tmp_trace: Make) -> None:
    eager = _trace(tmp_trace, 1000, [100] * 5)
    outlier = _trace(tmp_trace, 1500, [100, 100, 5000, 100, 100])
    comparison = compare(eager, outlier, names=("eager", "compiled"))
    lines = _slower(comparison.findings).evidence_lines()
    assert not any(line.startswith("more gemm") for line in lines)
    slower_gemm = _trace(tmp_trace, 1500, [400] * 5)  # every step's GEMM is slower
    lines = _slower(compare(eager, slower_gemm, names=("eager", "compiled")).findings)
    gemm = [line for line in lines.evidence_lines() if line.startswith("more gemm")]
    assert gemm and "300 µs" in gemm[0]
