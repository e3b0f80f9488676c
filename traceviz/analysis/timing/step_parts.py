"""Where a mean step's wall time goes, per trace: the parts the step breakdown shows.

:func:`step_parts` turns a trace's launch-overhead analysis into (part, mean µs per step)
rows, measured: on GPU traces the :class:`~traceviz.analysis.timing.idle.IdleParts` of each step
(device busy, and the idle time split into blocked by a sync, waiting for the CPU, waiting on
another stream / event, launch latency and between kernels); on CPU-only traces the kernels
computing (:attr:`StepOverhead.busy_us`) and the framework overhead between them
(:attr:`StepOverhead.idle_us`). The parts of a step add up to at most its wall time.
"""

from __future__ import annotations

from traceviz.analysis.timing.idle import IdleParts
from traceviz.analysis.timing.launch import LaunchOverhead, StepOverhead
from traceviz.schema import DeviceKind
from traceviz.trace import Trace

__all__ = ["CPU_PARTS", "GPU_PARTS", "step_parts"]

#: The parts of a GPU trace's step, in drawing order (IdleParts columns).
GPU_PARTS = (
    IdleParts.busy_us,
    IdleParts.blocked_us,
    IdleParts.cpu_wait_us,
    IdleParts.event_wait_us,
    IdleParts.launch_latency_us,
    IdleParts.between_us,
)
#: The parts of a CPU-only trace's step (StepOverhead columns).
CPU_PARTS = (StepOverhead.busy_us, StepOverhead.idle_us)


def step_parts(trace: Trace, launch: LaunchOverhead) -> list[tuple[str, float]]:
    """(part, mean µs per step) for each of :data:`GPU_PARTS` or, on a CPU-only ``trace``,
    :data:`CPU_PARTS`; ``launch`` is the trace's launch-overhead analysis. Means are over the
    steps (the whole trace counts as one step when it has none)."""
    if trace.device_kind is DeviceKind.CPU:
        per = launch.per_step
        n = max(len(per), 1)
        return [(part, float(per[part].sum()) / n) for part in CPU_PARTS]
    split = launch.idle
    n = max(len(split.per_step), 1)
    return [(part, split.total(part) / n) for part in GPU_PARTS]
