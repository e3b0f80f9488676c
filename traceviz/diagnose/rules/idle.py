"""CPU-bound steps: the device idles because the CPU has not issued its next work.

GPU traces (measured, :mod:`traceviz.analysis.idle`): each step's device idle time is split
into waiting for the CPU, blocked by a sync, waiting on another stream / event, launch latency
and between kernels. When waiting
for the CPU takes a large share of the step *and* most of that wait is in long gaps
(≥ :data:`~traceviz.analysis.idle.LONG_GAP_US`: CPU work such as preprocessing, data loading or
Python between the model's kernels, not launch overhead), the finding is ``cpu-bound`` and
names the CPU ops and annotations that ran meanwhile (e.g. ``video_classification.preprocess
218 ms per step before the first kernel``). When the wait is spread over short gaps it is
``launch-bound`` instead (:mod:`traceviz.diagnose.rules.launch` decides; one of the two, never
both).
"""

from __future__ import annotations

from traceviz.analysis.idle import CpuWork, IdleParts
from traceviz.diagnose import docs
from traceviz.diagnose.facts import TraceFacts, cpu_side_gain, short_name, us
from traceviz.diagnose.finding import Evidence, Finding, Severity, Unit

CPU_BOUND_ID = "cpu-bound"
#: At least half the CPU wait in long gaps: the CPU was busy with other work, not launching.
CPU_WORK_LONG_SHARE = 0.5
#: The CPU ops/annotations named in the evidence.
CPU_WORK_SHOWN = 3
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
PART_LABELS = {
    IdleParts.cpu_wait_us: "device idle waiting for the CPU",
    IdleParts.blocked_us: "device idle while the CPU was blocked in a sync",
    IdleParts.event_wait_us: "device idle waiting on another stream / event",
    IdleParts.launch_latency_us: "device idle in launch latency",
    IdleParts.between_us: "device idle between kernels (work already issued)",
}


def is_cpu_work(facts: TraceFacts) -> bool:
    """Most of the wait for the CPU is in long gaps (CPU work, not launch overhead)."""
    idle = facts.launch.idle
    wait = idle.total(IdleParts.cpu_wait_us)
    return wait > 0 and idle.total(IdleParts.long_cpu_wait_us) >= CPU_WORK_LONG_SHARE * wait


def idle_evidence(facts: TraceFacts) -> list[Evidence | str]:
    """The idle split per step (the four parts and where the wait was), then the CPU work."""
    idle = facts.launch.idle
    out: list[Evidence | str] = []
    for column, label in PART_LABELS.items():
        value = facts.per_step(idle.total(column))
        out.append(Evidence(f"{label} per step", value, Unit.US, facts.share(value)))
    lead = facts.per_step(idle.total(IdleParts.lead_cpu_wait_us))
    trail = facts.per_step(idle.total(IdleParts.trail_cpu_wait_us))
    if lead > 0:
        out.append(Evidence("waiting for the CPU before the first kernel, per step", lead, Unit.US))
    if trail > 0:
        out.append(Evidence("waiting for the CPU after the last kernel, per step", trail, Unit.US))
    work = top_cpu_work(facts)
    out += [f"CPU work meanwhile: {item}" for item in work]
    if idle.total(IdleParts.cpu_wait_us) > 0:
        out.append(
            Evidence(
                "wait covered by recorded CPU ops/annotations/Python frames",
                covered(facts),
                Unit.RATIO,
            )
        )
    return out


def covered(facts: TraceFacts) -> float:
    """The share of the wait for the CPU during which recorded CPU work ran on the launching
    thread: a CPU op, an annotation or a Python frame (``python_function``, recorded with
    ``with_stack=True``; frames that sleep or wait do not count) (0 when there is no wait;
    :attr:`~traceviz.analysis.idle.IdleSplit.recorded_us`)."""
    idle = facts.launch.idle
    wait = idle.total(IdleParts.cpu_wait_us)
    if wait <= 0:
        return 0.0
    ops = float(idle.cpu_work[CpuWork.overlap_us].sum())
    return min(max(idle.recorded_us, ops) / wait, 1.0)


def top_cpu_work(facts: TraceFacts) -> list[str]:
    """The CPU ops/annotations that overlapped the wait longest: "name 218 ms per step before
    the first kernel" (their overlap with the wait, per profiled step)."""
    work = facts.launch.idle.cpu_work
    if work.empty:
        return []
    grouped = work.groupby([CpuWork.name, CpuWork.where], sort=False)[CpuWork.overlap_us].sum()
    top = grouped.sort_values(ascending=False, kind="stable").head(CPU_WORK_SHOWN)
    names = top.index.get_level_values(0)
    wheres = top.index.get_level_values(1)
    return [
        f"{short_name(str(name), 60)} {us(facts.per_step(float(value)))} per step {where}"
        for name, where, value in zip(names, wheres, top.to_numpy(dtype=float), strict=True)
    ]


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


def cpu_bound(facts: TraceFacts) -> Finding:
    """The ``cpu-bound`` finding of ``facts`` (the caller decides that it applies)."""
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
