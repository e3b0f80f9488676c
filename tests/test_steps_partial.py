"""Partial profiler steps, finished (helper "steps").

A last step is partial (cut off by the profiler's stop) only when it ends where the trace's CPU
events end and lasts under a quarter of the *shortest* other step: with few steps one slow step
pulled the median up and an ordinary last step read as cut off (the committed ONNX Runtime
profile: runs of 196, 16191 and 106 µs). ONNX Runtime profiles never have one: a ``model_run``
is written when the run ends. The few-steps rule says a partial step was left out; noisy-steps
and the per-kind median step judge full steps only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import traceviz
from tests.conftest import CORPUS, SAMPLES, kernel, launch, load_trace, op
from traceviz.analysis.windows import PARTIAL_STEP_SHARE, full_steps, partial_steps
from traceviz.diagnose import diagnose_trace
from traceviz.diagnose.facts import facts_of_trace
from traceviz.diagnose.rules.slower import _median_steps
from traceviz.schema import Steps

MI250 = CORPUS / "amd" / "mi250_eager_train_rocm62.json.gz"
ORT_COMMITTED = Path(__file__).parent / "data" / "ort_all.profile.json"
ORT_SAMPLES = sorted((SAMPLES / "gpt2-ort" / "onnx").glob("*.profile.json"))


def _steps_trace(
    tmp_trace, durs: list[float], kernel_us: list[float] | None = None
) -> traceviz.Trace:  # type: ignore[no-untyped-def]
    """ProfilerStep spans of ``durs`` (µs) one after another, step i with one launched kernel
    of ``kernel_us[i]`` µs (10 by default; none for 0); the last step ends the CPU events."""
    events, start = [], 0.0
    for i, dur in enumerate(durs):
        events.append(op(f"ProfilerStep#{i + 1}", start, dur, cat="user_annotation"))
        k_us = kernel_us[i] if kernel_us is not None else 10.0
        if k_us:
            events += [launch("cudaLaunchKernel", start + 1, 1, i + 1),
                       kernel("k", start + 3, k_us, i + 1)]  # fmt: skip
        start += dur + 10.0
    return traceviz.load(tmp_trace(events))


def _ids(findings: list) -> set[str]:  # type: ignore[type-arg]
    return {f.id for f in findings}


# --- the rule ------------------------------------------------------------------------------


def test_one_slow_step_does_not_make_an_ordinary_last_step_partial(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    """The committed ORT profile's shape in a Kineto trace: 196, 16191, 106 µs. The median of
    the others (8194) would call 106 µs partial; the shortest other (196) does not."""
    durs = [196.0, 16191.0, 106.0]
    assert durs[-1] < PARTIAL_STEP_SHARE * float(np.median(durs[:-1]))  # the old rule's trap
    trace = _steps_trace(tmp_trace, durs)
    assert partial_steps(trace) == 0 and len(full_steps(trace)) == 3


def test_a_fragment_shorter_than_a_quarter_of_the_shortest_step_is_partial(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    durs = [900.0, 5000.0, 880.0, 0.2 * 880.0]
    trace = _steps_trace(tmp_trace, durs, [10.0, 10.0, 10.0, 0.0])
    assert partial_steps(trace) == 1
    assert full_steps(trace)[Steps.dur_us].tolist() == pytest.approx(durs[:-1])


def test_a_short_last_step_that_issued_every_kernel_is_whole(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    """A busy machine: the first of two steps of a tiny model took 5× the second. The second
    issued as many kernels as the first, so it did all its work (CI once dropped it from one of
    two traces of the same run, and the source lines moved to only half the kernels)."""
    trace = _steps_trace(tmp_trace, [1000.0, 200.0])
    assert trace.steps[Steps.dur_us].iloc[-1] < PARTIAL_STEP_SHARE * 1000.0
    assert partial_steps(trace) == 0 and len(full_steps(trace)) == 2
    assert partial_steps(_steps_trace(tmp_trace, [1000.0, 200.0], [10.0, 0.0])) == 1


@pytest.mark.parametrize(
    "path",
    [pytest.param(ORT_COMMITTED, id="tests/data/ort_all")]
    + [pytest.param(p, id=f"gpt2-ort/{p.name}") for p in ORT_SAMPLES],
)
def test_onnx_runtime_profiles_keep_every_run(path: Path) -> None:
    trace = traceviz.load(path, cache=False)
    assert trace.meta.is_onnxruntime and len(trace.steps) >= 2
    assert partial_steps(trace) == 0 and len(full_steps(trace)) == len(trace.steps)


def test_a_tiny_last_onnx_runtime_run_is_still_a_run(tmp_path: Path) -> None:
    """A session run is never cut off by a profiler schedule: even a last run far shorter than
    the others counts."""
    from tests.test_ort_analysis import _profile

    path = _profile(tmp_path / "p.json", [1000.0, 1000.0, 1000.0, 20.0], [("a", "MatMul", 10)])
    trace = traceviz.load(path, cache=False)
    durs = trace.steps[Steps.dur_us].to_numpy(dtype=float)
    assert durs[-1] < PARTIAL_STEP_SHARE * durs[:-1].min()
    assert partial_steps(trace) == 0


# --- the rules that read steps ---------------------------------------------------------------


@pytest.mark.skipif(not MI250.is_file(), reason=f"corpus not found at {CORPUS}")
def test_few_steps_on_mi250_says_the_partial_step_was_left_out() -> None:
    trace = load_trace(MI250)
    (few,) = [f for f in diagnose_trace(trace) if f.id == "few-steps"]
    full, partial = len(full_steps(trace)), partial_steps(trace)
    assert (full, partial) == (1, 1)
    text = " ".join(str(e) for e in few.evidence)
    assert f"only {full} full ProfilerStep span(s); {partial} partial step left out" in text
    assert f"only {len(trace.steps)} " not in text


def test_few_steps_without_a_partial_step_reads_as_before(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    trace = _steps_trace(tmp_trace, [900.0, 880.0])
    (few,) = [f for f in diagnose_trace(trace) if f.id == "few-steps"]
    text = " ".join(str(e) for e in few.evidence)
    assert "only 2 ProfilerStep span(s)" in text and "partial" not in text


def test_noisy_steps_judges_full_steps_only(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    """Four even steps and a 40 µs fragment: the fragment is no evidence of noise."""
    even = [900.0, 905.0, 898.0, 902.0]
    with_fragment = _steps_trace(tmp_trace, [*even, 40.0], [10.0] * 4 + [0.0])
    assert partial_steps(with_fragment) == 1
    durs = with_fragment.steps[Steps.dur_us].to_numpy(dtype=float)
    assert np.std(durs) / np.mean(durs) > 0.2  # all spans together would read as noisy
    assert "noisy-steps" not in _ids(diagnose_trace(with_fragment))


def test_median_step_by_kind_leaves_the_partial_step_out(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    """Three full steps with kernels of 10, 20, 30 µs and a fragment with none: the median
    step's kernel time is 20 µs (over all four spans, the fragment's 0 would make it 15)."""
    kernel_us = [10.0, 20.0, 30.0, 0.0]
    trace = _steps_trace(tmp_trace, [900.0, 905.0, 898.0, 50.0], kernel_us)
    assert partial_steps(trace) == 1
    medians = _median_steps(facts_of_trace(trace, name="t"))
    assert medians is not None
    assert float(medians.sum()) == pytest.approx(float(np.median(kernel_us[:-1])))
    assert float(np.median(kernel_us)) != pytest.approx(float(np.median(kernel_us[:-1])))
