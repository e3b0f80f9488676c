"""Profiling mistakes: traces whose numbers cannot be trusted, or that hide what matters.

- **No compiled region** in a trace labelled compiled (by its name, file name or run.json):
  no ``Torch-Compiled Region``/``CompiledFxGraph``/``CompiledFunction`` marker, no Inductor
  kernel, no graph replay. The "compiled" numbers are eager numbers.
- **Compile events in the profiled window**: Dynamo/Inductor compilation spans
  (``… (dynamo_timed)``, ``entire_frame_compile``, ``backend_compile``, …) inside the trace, so
  the profiled steps include compile time (no warm-up before profiling).
- **record_shapes off**: ops carry no ``Input Dims``, so memory traffic and fusion savings
  cannot be estimated.
- **Nothing recorded**: no CPU op, annotation or Python frame besides the ``ProfilerStep``
  spans, and no kernel (``empty-trace``): the profiler ran without its activities, or outside
  the code it was meant to see. Every figure of such a trace is zero, and a pair with one gets
  no speed verdict from its profiled steps
  (:func:`~traceviz.diagnose.recorded_work.has_recorded_work`).
- **Too few steps** (fewer than :data:`MIN_STEPS` ``ProfilerStep`` spans), or **noisy steps**
  (step times, or run.json's timed iterations, spread widely).
- ONNX Runtime profiles (``model_run`` steps): a first run
  :data:`~traceviz.diagnose.ort_advice.WARMUP_FACTOR` × or more the median of the others is the
  session's warm-up: the spread is judged on the other runs, and when they are steady the
  finding is ``warm-up-step`` (info), not ``noisy-steps``. The compile, compiled-region and
  record_shapes checks do not apply.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pandas as pd

from traceviz.analysis.windows import full_steps
from traceviz.diagnose import docs, ort_advice
from traceviz.diagnose.facts import TraceFacts, points_in_windows, short_name
from traceviz.diagnose.finding import Evidence, Finding, Severity, Unit
from traceviz.diagnose.recorded_work import compile_name_mask, has_recorded_work
from traceviz.schema import Ops, Steps

EMPTY_ID = "empty-trace"
NO_REGION_ID = "no-compiled-region"
COMPILE_IN_WINDOW_ID = "compile-in-window"
NO_SHAPES_ID = "no-record-shapes"
FEW_STEPS_ID = "few-steps"
NOISY_STEPS_ID = "noisy-steps"
WARMUP_STEP_ID = "warm-up-step"  # ORT profiles: a slow first model_run, steady others
#: Fewer than three steps cannot show whether the first one was special (warm-up, allocation).
MIN_STEPS = 3
#: Step times whose standard deviation is a fifth of their mean do not support small deltas.
STEP_CV_MAX = 0.20
#: run.json timing: an interquartile range half the median means the machine was busy.
TIMING_IQR_MAX = 0.50


def empty_trace(facts: TraceFacts) -> list[Finding]:
    """A trace that records no ops and no kernels: nothing in it can be analysed."""
    if has_recorded_work(facts.trace):
        return []
    steps = facts.summary.step_count
    return [
        Finding(
            id=EMPTY_ID,
            severity=Severity.WARNING,
            title=f"{facts.name}: the trace records no ops and no kernels: nothing to analyse",
            evidence=(
                Evidence("steps", steps, Unit.COUNT),
                Evidence("ops and kernels", 0, Unit.COUNT),
                "no speed verdict rests on its profiled steps",
            ),
            next_step="Profile with the CPU and device activities on and the model's calls "
            "inside the profiler's context: `torch.profiler.profile(activities=["
            "ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True)`, and "
            "`prof.step()` after each iteration.",
            docs_url=docs.PROFILER,
            trace=facts.name,
        )
    ]


def no_compiled_region(facts: TraceFacts) -> list[Finding]:
    """A trace labelled compiled that shows no sign of compiled code."""
    if facts.is_onnxruntime:  # an ORT profile is never torch.compile's
        return []
    if not facts.expect_compiled or facts.compiled or facts.uses_graphs:
        return []
    if not has_recorded_work(facts.trace):
        return []  # nothing recorded at all: empty-trace says so
    why = (
        "run.json names it the compiled trace"
        if facts.variant == "compiled"
        else ("its label or file name says compiled")
    )
    return [
        Finding(
            id=NO_REGION_ID,
            severity=Severity.ERROR,
            title=f"{facts.name}: labelled compiled, but the trace shows no compiled code",
            evidence=(
                why,
                Evidence("compiled-region markers", len(facts.trace.regions), Unit.COUNT),
                "no Inductor-generated kernels (triton_… / cpp_fused_…) and no graph replays",
                Evidence("kernels", facts.summary.kernel_count, Unit.COUNT),
            ),
            next_step="Profile the object `torch.compile` returned (or call `model.compile()` "
            "first), after warm-up calls; check that compilation did not fail and fall back "
            'to eager (run.json `compile.ok`, `TORCH_LOGS="graph_breaks"`).',
            docs_url=docs.TROUBLESHOOTING,
            trace=facts.name,
        )
    ]


def compile_in_window(facts: TraceFacts) -> list[Finding]:
    """Compilation spans recorded inside the trace."""
    if facts.is_onnxruntime:
        return []
    ops = facts.trace.ops
    mask = compile_name_mask(ops[Ops.name])
    if not mask.any():
        return []
    names = ops[Ops.name][mask].astype(object).astype(str)  # the compile spans' names only
    rows = ops[mask]
    outer = _outermost(rows)
    starts = rows[Ops.ts_us].to_numpy(dtype=float)[outer]
    wall = float(np.nansum(rows[Ops.dur_us].to_numpy(dtype=float)[outer]))
    steps = points_in_windows(facts, starts) if len(facts.trace.steps) else np.full(len(starts), -1)
    in_steps = sorted({int(facts.trace.steps[Steps.step].iloc[s]) for s in steps if s >= 0})
    evidence: list[Evidence | str] = [
        Evidence("compile spans (outermost)", int(outer.sum()), Unit.COUNT),
        Evidence("compile wall time in the trace", wall, Unit.US),
        "e.g. " + ", ".join(short_name(n, 50) for n in names.unique()[:3]),
    ]
    if in_steps:
        evidence.append("inside ProfilerStep " + ", ".join(f"#{s}" for s in in_steps))
    if facts.trace.meta.span_us > 0:
        evidence.append(
            Evidence("share of the trace's span", wall / facts.trace.meta.span_us, Unit.RATIO)
        )
    return [
        Finding(
            id=COMPILE_IN_WINDOW_ID,
            severity=Severity.ERROR if in_steps else Severity.WARNING,
            title=f"{facts.name}: torch.compile compiled inside the profiled window "
            "(no warm-up before profiling)",
            evidence=tuple(evidence),
            next_step="Call the compiled model a few times before profiling, or use "
            "`torch.profiler.schedule(wait=1, warmup=1, active=3)` with `prof.step()` each "
            "iteration, so compilation and recompiles happen before the recorded steps.",
            docs_url=docs.PROFILER,
            trace=facts.name,
        )
    ]


def no_record_shapes(facts: TraceFacts) -> list[Finding]:
    """Ops recorded without their input shapes."""
    if facts.summary.kernel_count == 0 or facts.is_onnxruntime:  # ORT records sizes always
        return []
    flag = facts.trace.meta.profiler_flags.get("record_shapes")
    has_dims = bool(facts.trace.ops[Ops.input_dims].notna().any())
    if flag is not False and (flag is not None or has_dims):
        return []
    reason = (
        "the trace's header says record_shapes = false"
        if flag is False
        else ("no op carries Input Dims")
    )
    return [
        Finding(
            id=NO_SHAPES_ID,
            severity=Severity.INFO,
            title=f"{facts.name}: recorded without shapes: memory traffic and fusion savings "
            "cannot be estimated",
            evidence=(reason,),
            next_step="Profile with `torch.profiler.profile(record_shapes=True, "
            "profile_memory=True, ...)`.",
            docs_url=docs.PROFILER,
            trace=facts.name,
        )
    ]


def few_steps(facts: TraceFacts) -> list[Finding]:
    """Too few full ProfilerStep spans (a partial last step the profiler's stop cut short is
    not counted, and said), or steps (and run.json timings) that vary too much."""
    count, partial = facts.summary.step_count, facts.summary.partial_steps
    if count < MIN_STEPS:
        span = "model_run" if facts.is_onnxruntime else "ProfilerStep"
        what = (
            f"no {span} spans: per-step figures cover the whole trace"
            if count == 0
            else f"only {count} full {span} span(s); {partial} partial step left out "
            "(cut short by the profiler's stop)"
            if partial
            else f"only {count} {span} span(s)"
        )
        return [
            Finding(
                id=FEW_STEPS_ID,
                severity=Severity.WARNING,
                title=f"{facts.name}: too few profiled steps to trust ({count})",
                evidence=(what, Evidence("steps", count, Unit.COUNT)),
                next_step=ort_advice.STEPS_STEP
                if facts.is_onnxruntime
                else "Profile at least 3 steps after warm-up: `torch.profiler.profile("
                "schedule=torch.profiler.schedule(wait=1, warmup=1, active=3))` and call "
                "`prof.step()` at the end of each iteration.",
                docs_url=ort_advice.PROFILING if facts.is_onnxruntime else docs.PROFILER,
                trace=facts.name,
            )
        ]
    return _noisy(facts)


def _noisy(facts: TraceFacts) -> list[Finding]:
    # full steps: a fragment the profiler's stop cut off is not a slow or fast step
    all_durs = full_steps(facts.trace)[Steps.dur_us].to_numpy(dtype=float)
    # ORT: a slow first model_run is the session's warm-up, not noise: judge the others
    warmup = ort_advice.warmup_factor(all_durs) if facts.is_onnxruntime else None
    durs = all_durs[1:] if warmup is not None else all_durs
    mean = float(np.mean(durs))
    cv = float(np.std(durs)) / mean if mean > 0 else 0.0
    timing = facts.timing()
    median = timing.median_us if timing is not None else 0.0
    spread = timing.iqr_us / median if timing is not None and median else 0.0
    if cv <= STEP_CV_MAX and spread <= TIMING_IQR_MAX:
        return [] if warmup is None else [_warmup(facts, all_durs, warmup)]
    others = " (runs after the first)" if warmup is not None else ""
    evidence: list[Evidence | str] = [
        Evidence(f"step time, mean{others}", mean, Unit.US),
        Evidence(f"step time, std / mean{others}", cv, Unit.RATIO),
        Evidence(
            f"slowest / fastest step{others}",
            float(durs.max() / durs.min()) if durs.min() > 0 else float("nan"),
            Unit.FACTOR,
        ),
    ]
    if warmup is not None:
        evidence.append(
            f"first run {warmup:.1f}× the median of the others: session warm-up (ORT allocates "
            "and pre-packs on it); kept in the measured figures"
        )
    if median:
        evidence += [
            Evidence("timed median (run.json)", float(median), Unit.US),
            Evidence("timed IQR / median (run.json)", spread, Unit.RATIO),
        ]
    return [
        Finding(
            id=NOISY_STEPS_ID,
            severity=Severity.WARNING if spread > TIMING_IQR_MAX else Severity.INFO,
            title=f"{facts.name}: step times vary widely: small differences are noise",
            evidence=tuple(evidence),
            next_step=ort_advice.NOISY_STEP
            if facts.is_onnxruntime
            else "Measure on an idle machine with more warm-up and more steps; pin CPU "
            "threads (`torch.set_num_threads`) and compare medians, not single steps.",
            docs_url=ort_advice.THREADING if facts.is_onnxruntime else docs.PROFILER,
            trace=facts.name,
        )
    ]


def _warmup(facts: TraceFacts, durs: npt.NDArray[np.float64], factor: float) -> Finding:
    """ORT: the first model_run is the slow one and the others agree: a warm-up, not noise."""
    rest = durs[1:]
    return Finding(
        id=WARMUP_STEP_ID,
        severity=Severity.INFO,
        title=f"{facts.name}: first run {factor:.1f}× the median of the others: session "
        "warm-up, the other runs are steady",
        evidence=(
            Evidence("first run", float(durs[0]), Unit.US),
            Evidence("median of the other runs", float(np.median(rest)), Unit.US),
            Evidence("other runs, std / mean", float(np.std(rest) / np.mean(rest)), Unit.RATIO),
            "the first run stays in the measured figures (step mean, kernel time); step-time "
            "comparisons use medians",
        ),
        next_step="Nothing to fix: ORT profiles every run from session creation, so the first "
        "run's allocations are in the profile. Read per-run figures from the later runs and "
        "compare medians (the step-time comparison does); run more times for steadier ones.",
        docs_url=ort_advice.PROFILING,
        trace=facts.name,
    )


def _outermost(frame: pd.DataFrame) -> npt.NDArray[np.bool_]:
    """Rows (compile spans) not inside another of them on the same thread."""
    ts = frame[Ops.ts_us].to_numpy(dtype=float)
    end = ts + np.nan_to_num(frame[Ops.dur_us].to_numpy(dtype=float))
    thread = frame[Ops.thread].astype(object).astype(str).to_numpy()
    order = np.lexsort((-end, ts, thread))
    out = np.zeros(len(frame), dtype=bool)
    reach: dict[str, float] = {}
    for i in order:
        if ts[i] >= reach.get(thread[i], -np.inf):
            out[i] = True
        reach[thread[i]] = max(reach.get(thread[i], -np.inf), end[i])
    return out
