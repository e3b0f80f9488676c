"""The device waiting for the CPU: when a GPU step does, and the evidence that says where.

Two rules split one condition between them (:func:`waits_for_cpu`): the device waits for the
CPU :data:`WAIT_SHARE` of the step or more, and not mostly while the CPU is blocked in syncs
(then ``sync-in-step`` is the finding). When most of that wait is in long gaps
(:func:`is_cpu_work`) the CPU was busy with other work: the step is ``cpu-bound``
(:mod:`traceviz.diagnose.rules.idle`); otherwise it is ``launch-bound``
(:mod:`traceviz.diagnose.rules.launch`). One of the two, never both; both show the idle split
and the CPU work that ran meanwhile (:func:`idle_evidence`). Measured:
:mod:`traceviz.analysis.timing.idle`.
"""

from __future__ import annotations

from traceviz.analysis.timing.idle import CpuWork, IdleParts
from traceviz.diagnose.facts import TraceFacts, short_name, us
from traceviz.diagnose.finding import Evidence, Unit

#: The device waits for the CPU a quarter of the step: the CPU, not the kernels, sets the pace.
WAIT_SHARE = 0.25
#: At least half the CPU wait in long gaps: the CPU was busy with other work, not launching.
CPU_WORK_LONG_SHARE = 0.5
#: The CPU ops/annotations named in the evidence.
CPU_WORK_SHOWN = 3
PART_LABELS = {
    IdleParts.cpu_wait_us: "device idle waiting for the CPU",
    IdleParts.blocked_us: "device idle while the CPU was blocked in a sync",
    IdleParts.event_wait_us: "device idle waiting on another stream / event",
    IdleParts.launch_latency_us: "device idle in launch latency",
    IdleParts.between_us: "device idle between kernels (work already issued)",
}


def waits_for_cpu(facts: TraceFacts) -> bool:
    """The device waits for the CPU :data:`WAIT_SHARE` of the step or more, longer than it
    idles while the CPU is blocked in syncs. False without launches to wait for (a CPU-only
    trace, an ONNX Runtime profile, a trace without kernels)."""
    if facts.is_onnxruntime or not facts.is_gpu or facts.summary.kernel_count == 0:
        return False
    wait_share = facts.launch.cpu_wait_share or 0.0
    idle = facts.launch.idle
    sync_dominates = idle.total(IdleParts.blocked_us) > idle.total(IdleParts.cpu_wait_us)
    return wait_share >= WAIT_SHARE and not sync_dominates


def is_cpu_work(facts: TraceFacts) -> bool:
    """Most of the wait for the CPU is in long gaps (CPU work, not launch overhead)."""
    idle = facts.launch.idle
    wait = idle.total(IdleParts.cpu_wait_us)
    return wait > 0 and idle.total(IdleParts.long_cpu_wait_us) >= CPU_WORK_LONG_SHARE * wait


def is_cpu_bound(facts: TraceFacts) -> bool:
    """The device waits for the CPU (:func:`waits_for_cpu`), mostly in long gaps: the
    ``cpu-bound`` finding's condition, which keeps ``launch-bound`` silent."""
    return waits_for_cpu(facts) and is_cpu_work(facts)


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
    :attr:`~traceviz.analysis.timing.idle.IdleSplit.recorded_us`)."""
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
