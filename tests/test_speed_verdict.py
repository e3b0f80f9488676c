"""§4 of issue 10: speed verdicts need statistical support.

GIVEN step-time samples (run.json's timed iterations, or the traces' ProfilerSteps), WHEN b is
compared with a, THEN the verdict rests on a bootstrap interval of the ratio of medians (fixed
seed), "no significant difference" inside the noise with the interval shown, the headline
reconciles profiled and timed step times, and a trace-only compare says it rests on one
profiled window.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import traceviz
from tests.conftest import SAMPLES, op
from tests.runinfo_builder import run_info
from traceviz.analysis.timing.speed import (
    FASTER,
    ONE_WINDOW,
    PROFILED_STEPS,
    SAME,
    SLOWER,
    TIMED,
    compare_samples,
    speed_verdict,
)
from traceviz.diagnose import Severity
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
