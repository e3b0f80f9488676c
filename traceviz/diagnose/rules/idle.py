"""CPU-bound steps: the device idles because the CPU has not issued its next work.

GPU traces (measured, :mod:`traceviz.analysis.timing.idle`): each step's device idle time is split
into waiting for the CPU, blocked by a sync, waiting on another stream / event, launch latency
and between kernels. When waiting
for the CPU takes a large share of the step *and* most of that wait is in long gaps
(≥ :data:`~traceviz.analysis.timing.idle.LONG_GAP_US`: CPU work such as preprocessing, data loading
or Python between the model's kernels, not launch overhead), the finding is ``cpu-bound`` and
names the CPU ops and annotations that ran meanwhile (e.g. ``video_classification.preprocess
218 ms per step before the first kernel``). When the wait is spread over short gaps it is
``launch-bound`` instead (:mod:`traceviz.diagnose.rules.launch`; one of the two, never both:
both read the condition from :mod:`traceviz.diagnose.cpu_wait`).
"""

from __future__ import annotations

from traceviz.analysis.timing.idle import CpuWork, IdleParts
from traceviz.diagnose import docs
from traceviz.diagnose.cpu_wait import covered, idle_evidence, is_cpu_bound, top_cpu_work
from traceviz.diagnose.facts import TraceFacts, cpu_side_gain
from traceviz.diagnose.finding import Finding, Severity

CPU_BOUND_ID = "cpu-bound"
#: The title names the top CPU work when it covers at least this share of the wait.
CPU_WORK_NAMED_SHARE = 0.1
#: Below this share of the wait covered by recorded CPU ops/annotations/Python frames, the
#: trace cannot say the CPU was busy (a sleep, an unprofiled thread, a step span outlasting
#: the work): info only.
CPU_WORK_RECORDED_SHARE = 0.2
GAIN_BASIS = (
    "upper bound: the device time spent waiting for the CPU (measured); only CPU work moved "
    "off the step's critical path (overlapped with device work) is saved"
)


def _title_work(facts: TraceFacts) -> str:
    """ " (name 218 ms per step before the first kernel)" when that work covers a fair share of
    the wait; otherwise how much of the wait no recorded op explains."""
    idle = facts.launch.idle
    wait = idle.total(IdleParts.cpu_wait_us)
    work = idle.cpu_work
    if wait <= 0:
        return ""
    by_name = work.groupby([CpuWork.name, CpuWork.where], sort=False)[CpuWork.overlap_us].sum()
    if len(by_name) and float(by_name.max()) >= CPU_WORK_NAMED_SHARE * wait:
        return f" ({top_cpu_work(facts)[0]})"
    unexplained = 1 - covered(facts)
    return f" (no CPU op or Python frame recorded for {100 * unexplained:.0f}% of the wait)"


def cpu_bound(facts: TraceFacts) -> list[Finding]:
    """The ``cpu-bound`` finding of a GPU trace whose device waits for the CPU, mostly in
    long gaps (:func:`~traceviz.diagnose.cpu_wait.is_cpu_bound`)."""
    return [_finding(facts)] if is_cpu_bound(facts) else []


def _finding(facts: TraceFacts) -> Finding:
    wait = facts.per_step(facts.launch.idle.total(IdleParts.cpu_wait_us))
    share = facts.share(wait) or 0.0
    named = _title_work(facts)
    recorded = covered(facts) >= CPU_WORK_RECORDED_SHARE
    what = "CPU-bound: the device waits for the CPU" if recorded else "the device idles"
    gain = cpu_side_gain(facts, wait, GAIN_BASIS)
    return Finding(
        id=CPU_BOUND_ID,
        # Without recorded CPU work in the wait, the trace cannot tell a busy CPU from a sleep
        # or a step span that outlasts the work: say what is measured, not the cause.
        severity=Severity.WARNING if recorded else Severity.INFO,
        title=f"{facts.name}: {what} {100 * share:.0f}% of the step{named}",
        evidence=tuple(idle_evidence(facts)),
        est_gain_us=gain.us,
        gain_basis=gain.basis,
        next_step="Overlap the CPU work with the device: preprocess in DataLoader workers "
        "(`num_workers>0`, `pin_memory=True`) or on the GPU, prefetch the next batch while "
        "this one runs, and keep Python work out of the step. `record_function` labels and "
        "`with_stack=True` show which CPU work it is.",
        docs_url=docs.PROFILER,
        trace=facts.name,
    )
