"""Diagnosis: rules that explain why the compiled model is (not) faster.

``diagnose(comparison)`` runs every rule over a :class:`~traceviz.analysis.compare.Comparison`
(the single-trace rules on both sides, then the pair rules); ``diagnose_trace(trace)`` runs the
single-trace rules on one trace. Both return :class:`Finding` values sorted most severe first,
then by estimated gain (a finding's severity follows its gain where it has one: the share of
the step that would go, not the CPU time it blocks). ``diagnose_side(side, which,
run_info=)`` does one side's share ahead, before its comparison exists (the pipeline, on
each side's own thread); ``diagnose`` reuses it.
Rules are pure functions registered in :data:`traceviz.diagnose.rules.TRACE_RULES` and
:data:`~traceviz.diagnose.rules.COMPARISON_RULES`.

A finding's ``est_gain_us`` is per step and never more than its trace's step (run.json's timed
median, else the profiled mean; :func:`~traceviz.diagnose.facts.within_step`). Gains made of
CPU-side time, which the profiler lengthens, are scaled to the timed step when run.json has
one (:func:`~traceviz.diagnose.facts.cpu_side_gain`); otherwise their basis says "per
profiled step".

Rule ids (thresholds are named constants in each rule module):

==========================  ========================================================  ========
id                          trigger                                                   severity
==========================  ========================================================  ========
unfused-chain               ≥3 consecutive fusible kernels (≥2 ops) under one parent  info /
                            op, each reading the previous output (shapes), outside    warning
                            optimizer steps, ≥2% of the step (eager: opportunity,
                            reworded when the compiled side fused it; compiled:
                            eager leftovers warn)
graph-break                 several compiled frames per step, or Dynamo's count       warning
recompile                   Torch-Compiled Region X/Y with Y > 0, or Dynamo's count   warning
launch-bound                GPU waits for the CPU ≥25% of the step in short gaps,     warning
                            or ≥50% of kernels shorter than their launch with ≥25%
                            idle
cpu-bound                   GPU waits for the CPU ≥25% of the step, mostly in gaps    warning /
                            ≥1 ms (names the CPU work; replaces launch-bound); info   info
                            when recorded CPU work (ops, annotations, Python
                            frames) covers <20% of the wait
cuda-graphs-in-use          graph launches/replayed kernels, not launch-bound         info
framework-overhead          CPU trace: ≥50% of the step outside compute ops           info
compiled-slower             compiled step ≥5% slower, bootstrap 95% interval of the   warning /
                            median ratio above 1 (error: interval low end ≥1.25;      error
                            untested, one profiled window: warning at most)
no-significant-difference   medians differ ≥5% but the interval includes 1            info
device-not-analysed         a device traceviz does not model (metrics not-analysed)   info
extern-gemm                 library GEMMs ≥10% of a compiled step, no max-autotune    info
unfused-matmul-add          mm/bmm/matmul then an add on its output, ≥1% of step      info
host-device-copy            HtoD/DtoH copies in the step, ≥1% of it or any DtoH       info /
                            (≥5% of the step, CPU blocked in the calls included:      warning
                            warning)
sync-in-step                blocking calls inside the step: syncs, synchronous or     info /
                            pageable copies, stalled launches (warning when the       warning
                            gain, device idle while blocked, is ≥5% of the step)
peak-memory-up              compiled peak ≥10% and ≥1 MiB above eager                 warning
large-intermediates         eager chain intermediate ≥10% of peak (or ≥64 MiB)        info
no-compiled-region          labelled compiled, no compiled code in the trace          error
compile-in-window           compile spans in the trace (inside a step: error)         warning /
                                                                                      error
no-record-shapes            ops without Input Dims                                    info
inductor-kernels-not-       compiled CPU trace: Inductor graphs ran, no cpp_fused_*   warning
recorded                    kernel recorded, eager work left without a counterpart
compile-log-without-        the compile log given holds no Inductor provenance        warning
provenance                  (added by the pipeline, not a trace or pair rule)
empty-trace                 no ops and no kernels recorded (the pair then gets no     warning
                            speed verdict from profiled steps)
few-steps / noisy-steps     <3 steps / step std ≥20% of mean or timed IQR ≥50%        warning /
                                                                                      info
warm-up-step                ONNX Runtime: first model_run ≥3× the others' median,     info
                            the others steady (instead of noisy-steps)
==========================  ========================================================  ========

The rules of many ranks (``rank-straggler``, ``collective-wait``, ``step-time-spread``,
``kernel-spread``, ``rank-compile-differs``, ``rank-speedup-uneven``, ``ranks-missing``,
``ranks-failed``) judge the cross-rank tables: :mod:`traceviz.ranks.findings`.
The rules of a run's backends (``backend-outputs-differ``, ``backend-failed``,
``faster-backend``) judge its ONNX Runtime levels: :mod:`traceviz.diagnose.backends`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from traceviz.diagnose.already_fused import already_fused
from traceviz.diagnose.facts import (
    TraceFacts,
    facts_of_side,
    facts_of_trace,
    side_facts,
    within_step,
)
from traceviz.diagnose.finding import Evidence, Finding, Severity, Unit
from traceviz.diagnose.rules import COMPARISON_RULES, TRACE_RULES
from traceviz.runs.runinfo import RunInfo, run_info_of

if TYPE_CHECKING:
    from traceviz.analysis.compare import Comparison, Side
    from traceviz.trace import Trace

__all__ = [
    "Evidence",
    "Finding",
    "Severity",
    "TraceFacts",
    "Unit",
    "at_least",
    "diagnose",
    "diagnose_facts",
    "diagnose_side",
    "diagnose_trace",
    "sort_findings",
]


def diagnose(comparison: Comparison) -> list[Finding]:
    """Every finding for a comparison: single-trace rules on a and b, then pair rules."""
    findings: list[Finding] = []
    for which in ("a", "b"):
        findings += diagnose_facts(facts_of_side(comparison, which), sort=False)
    for rule in COMPARISON_RULES:
        findings += rule(comparison)
    return sort_findings(already_fused(comparison, findings))


def diagnose_side(side: Side, which: str, *, run_info: RunInfo | None = None) -> list[Finding]:
    """The single-trace findings of ``side`` as side ``which`` (``"a"``/``"b"``) of a
    comparison to be made with ``run_info``, unsorted: :func:`diagnose`'s share for that side,
    worked out now and kept with the side's facts
    (:func:`~traceviz.diagnose.facts.side_facts`), so that :func:`diagnose` of the comparison
    reuses them. The pipeline calls it on each side's own thread, as soon as the side is
    analysed: side b's share runs beside side a's analysis instead of after both."""
    return diagnose_facts(side_facts(side, which, run_info=run_info), sort=False)


def diagnose_trace(
    trace: Trace,
    *,
    name: str | None = None,
    run_info: RunInfo | dict[str, Any] | None = None,
    variant: str | None = None,
) -> list[Finding]:
    """The single-trace findings of ``trace``. ``run_info`` is a run.json and ``variant``
    (``"eager"``/``"compiled"``) says which of its traces this is, when known; a run.json
    dict is validated into a :class:`RunInfo` (TraceFormatError when it does not fit)."""
    info = run_info_of(run_info)
    return diagnose_facts(facts_of_trace(trace, name=name, run_info=info, variant=variant))


def diagnose_facts(facts: TraceFacts, *, sort: bool = True) -> list[Finding]:
    """Run every trace rule over already-built facts (once per facts object); no finding's
    gain exceeds the trace's step (:func:`~traceviz.diagnose.facts.within_step`)."""
    findings = facts.memo(
        "findings", lambda: [within_step(facts, f) for rule in TRACE_RULES for f in rule(facts)]
    )
    return sort_findings(findings) if sort else list(findings)


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Most severe first, then largest estimated gain (unknown last), then id."""
    return sorted(findings, key=Finding.sort_key)


def at_least(findings: Iterable[Finding], severity: Severity | str) -> list[Finding]:
    """The findings of ``severity`` or worse (``"warning"`` → warnings and errors)."""
    level = Severity(severity)
    return [f for f in findings if f.severity >= level]
