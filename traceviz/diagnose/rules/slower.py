"""Speed verdicts with statistical support: compiled slower than eager, or within the noise.

The verdict is :func:`traceviz.analysis.timing.speed.speed_verdict`'s: run.json's timed samples
(many iterations outside the profiler) when there are some, else the traces' ``ProfilerStep`` times,
compared by a bootstrap interval of the ratio of medians; a trace-only compare with too few
steps rests on one profiled window and says so.

- ``compiled-slower``: b (compiled) is significantly slower (the whole interval above 1 and at
  least :data:`~traceviz.analysis.timing.speed.TOLERANCE` slower): a warning, an error when even the
  interval's low end is :data:`SLOWER_ERROR` slower. Untested (one profiled window): a
  warning at most. The difference is then attributed, per step, from the traces (measured):
  kernel device time by kind (GEMMs split out with their mean duration and source), device
  idle time by cause on GPU traces (waiting for the CPU to issue work, i.e. launch/CPU
  overhead; the CPU blocked in a sync; work already issued), CPU time in launch
  calls, and the recompiles, graph breaks and compile spans.
- ``no-significant-difference`` (info): the medians differ by the tolerance or more, but the
  interval includes 1: the difference is within the run-to-run noise; the interval is shown.

Neither fires when either trace records no ops and no kernels
(:func:`~traceviz.diagnose.recorded_work.has_recorded_work`) and run.json has no timed
steps: the step spans of an empty trace time nothing (:data:`NO_WORK`: the verdict is
``unknown``; ``empty-trace`` says why). Neither fires either when the comparability guard
finds a and b to be different workloads
(:attr:`~traceviz.analysis.fusion.comparable.Comparability.other_workload`, not forced): the step
times of two different models are no speed verdict.
"""

from __future__ import annotations

import math
import weakref
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from traceviz.analysis.kernel_kinds import KernelKind
from traceviz.analysis.timing.idle import IdleParts
from traceviz.analysis.timing.speed import (
    LEVEL,
    SAME,
    SLOWER,
    TIMED,
    TOLERANCE,
    UNKNOWN,
    SpeedVerdict,
    ratio_words,
    speed_verdict,
)
from traceviz.analysis.windows import full_steps
from traceviz.diagnose import docs
from traceviz.diagnose.facts import (
    TraceFacts,
    autotuned,
    facts_of_side,
    graphs_requested,
    kernel_times,
)
from traceviz.diagnose.facts import us as _us
from traceviz.diagnose.finding import Evidence, Finding, Severity, Unit
from traceviz.diagnose.recorded_work import compile_name_mask, has_recorded_work
from traceviz.schema import Kernels, Steps

if TYPE_CHECKING:
    from traceviz.analysis.compare import Comparison
    from traceviz.runs.runinfo import RunInfo
    from traceviz.trace import Trace

RULE_ID = "compiled-slower"
NOISE_ID = "no-significant-difference"
#: Differences under 5% are within run-to-run noise of a busy machine.
SLOWER_TOLERANCE = TOLERANCE
#: A quarter slower, even at the interval's low end, is a regression worth failing a CI job for.
SLOWER_ERROR = 0.25
#: Kinds named in the attribution.
TOP_KINDS = 4
#: From this many profiled steps on, the attribution compares the median step, not the mean.
MEDIAN_STEPS = 3
#: The basis of the verdict withheld because a trace records no ops and no kernels.
NO_WORK = "no ops or kernels recorded"


def compiled_slower(comparison: Comparison) -> list[Finding]:
    """b (compiled) takes longer per step than a (eager), with the statistics to say so; or
    an info finding when the medians differ but the interval says it is noise."""
    a, b = facts_of_side(comparison, "a"), facts_of_side(comparison, "b")
    if not (b.compiled or b.expect_compiled) or a.compiled:
        return []
    if comparison.fusion.comparability.other_workload:
        return []  # two workloads' step times say nothing about compiling (--force: they do)
    verdict = comparison_speed(comparison)
    if verdict.verdict == SAME and abs(verdict.ratio - 1) >= SLOWER_TOLERANCE:
        return [_within_noise(a, b, verdict)]
    if verdict.verdict != SLOWER:
        return []
    evidence = [*speed_evidence(a.name, b.name, verdict), *_attribution(comparison, a, b)]
    error = verdict.low is not None and verdict.low >= 1 + SLOWER_ERROR
    return [
        Finding(
            id=RULE_ID,
            severity=Severity.ERROR if error else Severity.WARNING,
            title=f"{b.name} is {verdict.ratio:.2f}× slower than {a.name} per step "
            f"({verdict.interval_text()})",
            evidence=tuple(evidence),
            est_gain_us=verdict.b_us - verdict.a_us,
            gain_basis=f"measured ({verdict.basis}): running {a.name} instead saves this per step",
            next_step=slower_next_step(comparison.run_info),
            docs_url=docs.TROUBLESHOOTING,
        )
    ]


def slower_next_step(info: RunInfo | None) -> str:
    """What to try when the compiled step is slower, for the mode run.json records: no
    ``max-autotune`` advice on a run that used it, no ``reduce-overhead`` advice on a run
    whose compile already asked for CUDA graphs."""
    gemm = (
        "a slower GEMM → max-autotune already chose it: compare its templates with the library "
        'call (`TORCH_LOGS=autotuning`) or keep the library GEMM (`mode="default"`)'
        if autotuned(info)
        else 'a slower GEMM → try mode="max-autotune"'
    )
    idle = (
        "idle time → the compile asked for CUDA graphs already: check that they replay "
        '(`TORCH_LOGS="perf_hints"` says why a graph was skipped), or make fewer, larger calls'
        if graphs_requested(info)
        else 'idle time → mode="reduce-overhead" (GPU) or fewer, larger calls'
    )
    return (
        f"Follow the attribution above and the other findings: {gemm}; recompiles or graph "
        f"breaks → remove them; {idle}. Compile only the parts that gain "
        "(`torch.compiler.disable` on the rest)."
    )


def comparison_speed(comparison: Comparison) -> SpeedVerdict:
    """The speed verdict of b against a (:func:`traceviz.analysis.timing.speed.speed_verdict`).

    The rule and the report's headline both ask for it: the last pair's verdict (a bootstrap,
    a few ms) is kept, with weak references to its traces, and given again for the same
    traces and run.json."""
    global _last
    a, b, info = comparison.a.trace, comparison.b.trace, comparison.run_info
    last = _last
    if last is not None and last[0]() is a and last[1]() is b and last[2] is info:
        return last[3]
    verdict = speed_verdict(a, b, run_info=info)
    if verdict.basis != TIMED and not (has_recorded_work(a) and has_recorded_work(b)):
        verdict = SpeedVerdict(
            verdict.a_us, verdict.b_us, math.nan, None, None, LEVEL, UNKNOWN, NO_WORK, 0, 0
        )
    _last = (weakref.ref(a), weakref.ref(b), info, verdict)
    return verdict


#: the last (a, b, run.json) of :func:`comparison_speed` and its (immutable) verdict
_last: tuple[weakref.ref[Trace], weakref.ref[Trace], RunInfo | None, SpeedVerdict] | None = None


def speed_evidence(a: str, b: str, verdict: SpeedVerdict) -> list[Evidence | str]:
    """The step times, their ratio and interval, and what they were measured on."""
    what = "median" if verdict.tested or verdict.basis == TIMED else "mean"
    out: list[Evidence | str] = [
        Evidence(f"{a} step time ({what})", verdict.a_us, Unit.US),
        Evidence(f"{b} step time ({what})", verdict.b_us, Unit.US),
        Evidence(f"{b} / {a}", verdict.ratio, Unit.FACTOR),
    ]
    if verdict.tested:
        out.append(
            f"{verdict.interval_text()} (bootstrap of the ratio of medians, "
            f"{verdict.n_a} and {verdict.n_b} samples, fixed seed)"
        )
    out.append(f"measured: {basis_text(verdict)}")
    return out


def basis_text(verdict: SpeedVerdict) -> str:
    """Where the step times come from, for people."""
    if verdict.basis == TIMED:
        return "run.json, steps timed one by one outside the profiler"
    if verdict.basis == NO_WORK:
        return "a trace records no ops and no kernels: its step spans time nothing"
    if verdict.tested:
        return (
            "the traces' step wall times (ProfilerStep spans; model_run calls in an ONNX Runtime "
            "profile; no run.json timing)"
        )
    return (
        "one profiled window (mean step time, or the trace span): too few samples for "
        "a test, so this is a point estimate"
    )


def _within_noise(a: TraceFacts, b: TraceFacts, verdict: SpeedVerdict) -> Finding:
    side = "slower" if verdict.ratio > 1 else "faster"
    return Finding(
        id=NOISE_ID,
        severity=Severity.INFO,
        title=f"{b.name} vs {a.name}: no significant difference in step time (median "
        f"{ratio_words(verdict.ratio)}, {verdict.interval_text()})",
        evidence=(
            *speed_evidence(a.name, b.name, verdict),
            f"the interval includes 1: the {side} median is within the run-to-run noise",
        ),
        next_step="Time more iterations on a quiet machine (`traceviz run --steps/--warmup`, "
        "fixed CPU threads) before acting on this difference.",
        docs_url=docs.PROFILER,
    )


def _attribution(comparison: Comparison, a: TraceFacts, b: TraceFacts) -> list[Evidence | str]:
    """Where b's extra time per step goes, measured from the traces."""
    out: list[Evidence | str] = []
    if a.summary.step_mean_us and b.summary.step_mean_us:
        delta = b.summary.step_mean_us - a.summary.step_mean_us
        out.append(Evidence(f"profiled step time difference ({b.name} − {a.name})", delta, Unit.US))
        if delta <= 0:
            out.append(
                f"the profiled steps do not show {b.name} slower: the difference lies outside "
                "the profiled work (e.g. Python around the call) or is noise; the breakdown "
                "below compares the profiled steps"
            )
    out += _by_kind(comparison, a, b)
    out += _gemms(comparison, a, b)
    if b.is_gpu:
        out += _more_idle(a, b)
    else:
        idle = b.per_step(b.launch.idle_us) - a.per_step(a.launch.idle_us)
        if idle > 0:
            label = "more device idle time (framework overhead)"
            out.append(Evidence(label, idle, Unit.US, b.share(idle)))
    api = b.per_step(b.launch.launch_api_us) - a.per_step(a.launch.launch_api_us)
    if b.is_gpu and api > 0:
        out.append(Evidence("more CPU time in launch calls", api, Unit.US))
    out += _compile_side_effects(b)
    return out


#: The GPU idle split's parts (:class:`~traceviz.analysis.timing.idle.IdleParts`) named apart in the
#: attribution: only the device's wait for the CPU to issue work is launch/CPU overhead.
IDLE_CAUSES = (
    ((IdleParts.cpu_wait_us, IdleParts.launch_latency_us), "launch/CPU overhead"),
    ((IdleParts.blocked_us,), "the CPU blocked in a sync"),
    ((IdleParts.event_wait_us,), "a stream waiting on another stream's event"),
    ((IdleParts.between_us,), "work already issued: queued behind a dependency or another stream"),
)
#: A cause of idle time is named when b has at least this share of its step more of it.
IDLE_CAUSE_MIN_SHARE = 0.01


def _more_idle(a: TraceFacts, b: TraceFacts) -> list[Evidence | str]:
    """Per cause of device idle time (:data:`IDLE_CAUSES`, the idle split of each step), how
    much more of it b has per step than a, where b has :data:`IDLE_CAUSE_MIN_SHARE` of its
    step or more more (measured; each line its own part's difference, the parts of one
    step's idle time never overlap); then, when some cause is named, each cause b has that
    much less of ("less device idle time (...)"), so that more less less is b's extra idle
    time but for the causes under the threshold."""
    out: list[Evidence | str] = []
    less: list[Evidence | str] = []
    for parts, cause in IDLE_CAUSES:
        more = b.per_step(_idle_total(b, parts)) - a.per_step(_idle_total(a, parts))
        share = b.share(abs(more))
        if share is not None and share < IDLE_CAUSE_MIN_SHARE:
            continue
        if more > 0:
            out.append(Evidence(f"more device idle time ({cause})", more, Unit.US, share))
        elif more < 0:
            less.append(Evidence(f"less device idle time ({cause})", -more, Unit.US, share))
    # a cause b has less of is shown beside those it has more of, so that the lines net to
    # b's extra idle time (the A100 pair: +117 and +16.5 ms, -7.8 ms waiting for the CPU)
    return out + less if out else []


def _idle_total(facts: TraceFacts, parts: tuple[str, ...]) -> float:
    """The idle split's ``parts`` summed over the steps, µs."""
    return sum(facts.launch.idle.total(part) for part in parts)


def _per_kind(comparison: Comparison, side: str, facts: TraceFacts) -> pd.DataFrame:
    """Kernels (mean) and kernel time per step, by kind: the median step's time when the
    trace has :data:`MEDIAN_STEPS` steps or more, so that one outlier kernel in one profiled
    step (an 8 ms ``addmm`` among 0.25 ms ones) is not attributed as the kind being slower."""
    kinds = comparison.kinds[comparison.kinds["side"] == side]
    grouped = kinds.groupby(kinds["kind"].astype(object))[["count", "time_us"]].sum()
    grouped = grouped / facts.n_steps
    medians = _median_step_times(facts)
    if medians is not None:
        grouped["time_us"] = medians.reindex(grouped.index).fillna(0.0)
    return grouped


def _median_step_times(facts: TraceFacts) -> pd.Series | None:
    """Per kind, the median over the profiled steps of that step's kernel time (µs, exclusive;
    kernels by start time in ``[ts_us, ts_us + dur_us)`` of a step); None under
    :data:`MEDIAN_STEPS` steps. Worked out once per facts (the by-kind lines and the GEMM line
    of each side ask; read-only)."""
    return facts.memo("median_step_times", lambda: _median_steps(facts))


def _median_steps(facts: TraceFacts) -> pd.Series | None:
    """:func:`_median_step_times`, computed: the kernels' exclusive times summed per (kind,
    step) by a groupby of the kind's categorical codes (the sums of a pivot table of the
    kinds' texts, without an object copy of every kernel's kind), steps without a kind's
    kernel as 0, then the median over the steps; indexed by kind text, in text order."""
    steps = full_steps(facts.trace)  # a cut-off last step's few kernels are no step's median
    if len(steps) < MEDIAN_STEPS:
        return None
    starts = steps[Steps.ts_us].to_numpy(dtype=float)
    ends = starts + steps[Steps.dur_us].to_numpy(dtype=float)
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    kernels = facts.kernels
    ts = kernels[Kernels.ts_us].to_numpy(dtype=float, na_value=np.nan)
    step = np.searchsorted(starts, ts, side="right") - 1
    inside = (step >= 0) & (ts < ends[np.clip(step, 0, None)])
    kinds = pd.Categorical(kernels["kind"])
    codes = kinds.codes[inside]
    known = codes >= 0  # a missing kind (code -1): a pivot table drops its rows too
    sums = (
        pd.Series(kernel_times(kernels)[inside][known])
        .groupby([codes[known], step[inside][known]], sort=True)
        .sum()
    )
    table = sums.unstack().reindex(columns=range(len(starts))).fillna(0.0)
    # from an object array, as the pivot table's: pandas' own choice of dtype (str from 3.0)
    table.index = pd.Index(kinds.categories.to_numpy(dtype=object)[table.index], name="kind")
    table.columns.name = "step"
    return table.sort_index().median(axis=1)


def _by_kind(comparison: Comparison, a: TraceFacts, b: TraceFacts) -> list[Evidence | str]:
    per_a, per_b = _per_kind(comparison, "a", a), _per_kind(comparison, "b", b)
    both = per_a.add_suffix("_a").join(per_b.add_suffix("_b"), how="outer").fillna(0.0)
    both["delta"] = both["time_us_b"] - both["time_us_a"]
    more = both[both["delta"] > 0].sort_values("delta", ascending=False).head(TOP_KINDS)
    median = ", median step" if _median_step_times(b) is not None else ""
    return [
        Evidence(
            f"more {kind} kernel time{median} ({row['count_a']:.3g} → {row['count_b']:.3g} "
            "kernels per step)",
            float(row["delta"]),
            Unit.US,
            b.share(float(row["delta"])),
        )
        for kind, row in more.iterrows()
    ]


def _gemms(comparison: Comparison, a: TraceFacts, b: TraceFacts) -> list[Evidence | str]:
    """GEMM calls and mean duration per side, when b's GEMMs take longer."""
    stats = []
    for facts in (a, b):
        kernels = facts.kernels
        # on the categorical column itself (by code), and the sources of the GEMMs alone
        gemm = (kernels["kind"] == KernelKind.GEMM.value).to_numpy(dtype=bool)
        durs = kernel_times(kernels)[gemm]
        sources = kernels["source"][gemm].astype(object).value_counts()
        per_step = facts.per_step(float(np.nansum(durs)))
        medians = _median_step_times(facts)
        if medians is not None:  # the median step, as in the by-kind lines
            per_step = float(medians.get(KernelKind.GEMM.value, 0.0))
        median = float(np.median(durs)) if len(durs) else 0.0
        stats.append((int(gemm.sum()), per_step, median, sources))
    (count_a, time_a, median_a, _), (count_b, time_b, median_b, sources_b) = stats
    if count_a == 0 or count_b == 0 or time_b <= time_a:
        return []
    source = ", ".join(f"{s} {c}" for s, c in sources_b.items() if c)
    return [
        f"GEMMs: {a.name} {a.per_step(count_a):.3g} per step, median {_us(median_a)}; "
        f"{b.name} {b.per_step(count_b):.3g} per step, median {_us(median_b)} ({source})"
    ]


def _compile_side_effects(b: TraceFacts) -> list[Evidence | str]:
    out: list[Evidence | str] = []
    if b.regions.recompiles:
        out.append(Evidence(f"{b.name}: frames recompiled", b.regions.recompiles, Unit.COUNT))
    if b.regions.graph_breaks:
        out.append(Evidence(f"{b.name}: graph breaks per step", b.regions.graph_breaks, Unit.COUNT))
    compiling = int(compile_name_mask(b.trace.ops["name"]).sum())
    if compiling:
        out.append(f"{b.name}: {compiling} compile spans inside the profiled window")
    return out
