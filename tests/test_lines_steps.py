"""A step the profiler's stop cut short is left out of per-step figures (helper "lines").

``torch.profiler`` opens ``ProfilerStep#N+1`` at ``prof.step()`` and closes the open step when it
stops: the corpus MI250 trace ends with step 2 lasting 49 µs after a 9.3 ms step 1, with no
kernel in it. Averaged in, the mean step was 4.67 ms and every per-step figure halved."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import traceviz
from tests.conftest import CORPUS, SAMPLES, corpus_params, kernel, launch, load_trace, op
from traceviz.analysis.summary import summarize
from traceviz.analysis.timing.launch import launch_overhead
from traceviz.analysis.windows import PARTIAL_STEP_SHARE, full_steps, partial_steps, step_windows
from traceviz.pipeline import compare
from traceviz.report.json_report import comparison_json
from traceviz.report.views import metrics_view
from traceviz.schema import Ops, Steps

MI250 = CORPUS / "amd" / "mi250_eager_train_rocm62.json.gz"


def _cpu_end(trace: traceviz.Trace) -> float:
    ops = trace.ops
    return float((ops[Ops.ts_us] + ops[Ops.dur_us].fillna(0.0)).max())


@pytest.mark.skipif(not MI250.is_file(), reason=f"corpus not found at {CORPUS}")
def test_mi250_cut_off_step_is_left_out() -> None:
    trace = load_trace(MI250)
    steps = trace.steps
    durs = steps[Steps.dur_us].to_numpy(dtype=float)
    assert len(steps) == 2 and durs[1] < PARTIAL_STEP_SHARE * durs[0]
    # the fragment ends where the trace's CPU events end
    assert float(steps[Steps.ts_us].iloc[-1]) + durs[1] == pytest.approx(_cpu_end(trace))
    assert partial_steps(trace) == 1 and len(full_steps(trace)) == 1
    summary = summarize(trace)
    assert summary.step_count == 1 and summary.partial_steps == 1
    assert summary.step_mean_us == pytest.approx(durs[0])  # not the mean of 9.3 ms and 49 µs
    assert summary.to_json()["partial_steps"] == 1
    launch = launch_overhead(trace)
    assert len(launch.per_step) == 1  # per-step figures over the full step only
    assert step_windows(trace).steps == [int(steps[Steps.step].iloc[0])]


@pytest.mark.skipif(not MI250.is_file(), reason=f"corpus not found at {CORPUS}")
def test_mi250_text_and_json_say_what_the_step_count_counts() -> None:
    trace = load_trace(MI250)
    report = compare(trace, trace)
    comparison = report.comparison
    assert comparison.metric("step_count").a == 1
    note = metrics_view(comparison).note
    assert "1 partial step left out" in note
    doc = comparison_json(report)
    assert doc["traces"]["a"]["steps"] == 1 and doc["traces"]["a"]["partial_steps"] == 1


def _every_trace() -> list[object]:
    return [
        *corpus_params(),
        *(
            pytest.param(p, id=str(p.relative_to(SAMPLES)))
            for p in sorted(SAMPLES.glob("**/*.pt.trace.json.gz"))
        ),
    ]


@pytest.mark.parametrize("path", _every_trace())
def test_partial_only_where_the_last_step_is_a_fragment_at_the_end(path: Path) -> None:
    """On every real trace: a step is left out only when it is the last, far shorter than the
    others and ends with the trace's CPU events; the full and partial steps are all steps."""
    trace = load_trace(path)
    steps = trace.steps
    left_out = partial_steps(trace)
    assert len(full_steps(trace)) + left_out == len(steps)
    summary = summarize(trace)
    assert summary.step_count + summary.partial_steps == len(steps)
    if left_out:
        durs = steps[Steps.dur_us].to_numpy(dtype=float)
        assert durs[-1] < PARTIAL_STEP_SHARE * float(np.min(durs[:-1]))
        assert float(steps[Steps.ts_us].iloc[-1]) + durs[-1] >= _cpu_end(trace) - 1e-3
    # only the MI250 trace has one among the corpus and sample traces
    assert bool(left_out) == (Path(path).resolve() == MI250.resolve())


def _trace(tmp_trace, last_dur: float, tail: float = 0.0) -> traceviz.Trace:  # type: ignore[no-untyped-def]
    events = []
    for i in range(3):
        start = i * 1000.0
        events += [
            op(f"ProfilerStep#{i + 1}", start, 900.0, cat="user_annotation"),
            launch("cudaLaunchKernel", start + 10, 5, i + 1),
            kernel("k", start + 20, 100, i + 1),
        ]
    events.append(op("ProfilerStep#4", 3000.0, last_dur, cat="user_annotation"))
    if tail:
        events.append(op("aten::empty", 3000.0 + last_dur, tail))
    return traceviz.load(tmp_trace(events))


def test_a_short_last_step_at_the_end_is_partial(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    trace = _trace(tmp_trace, 30.0)
    assert partial_steps(trace) == 1
    assert summarize(trace).step_mean_us == pytest.approx(900.0)
    assert len(launch_overhead(trace).per_step) == 3


def test_a_short_last_step_before_more_events_is_kept(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    """The trace goes on after it: the step ended by itself (a short step, not a cut one)."""
    trace = _trace(tmp_trace, 30.0, tail=50.0)
    assert partial_steps(trace) == 0
    assert summarize(trace).step_count == 4


def test_a_last_step_of_ordinary_length_is_kept(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    trace = _trace(tmp_trace, 800.0)
    assert partial_steps(trace) == 0 and summarize(trace).step_count == 4
