"""Launch overhead: how much CPU time goes into launching kernels, and how long the device
waits for the CPU.

Per step (``ProfilerStep#N``; the whole trace as one window when there are none):

- **launch API time**: CPU time inside kernel/graph launch calls;
- **launch delay**: device start − launch call end, per kernel;
- **device idle**: step wall time minus the union of device activity inside the step;
- **waiting for the CPU**: on GPU traces, the idle time in which the CPU had not yet issued
  the device's next work — before the first kernel of the step, between kernels, and after the
  last one — less the time the CPU was blocked in a sync (:mod:`traceviz.analysis.timing.idle`
  splits the whole idle time; :mod:`traceviz.analysis.timing.blocking` lists the blocking calls);
- **kernels shorter than their launch**: kernels whose duration is below their launch call's;
- on CPU-only traces, **framework overhead**: step wall time − CPU kernel time.

All figures are measured from the trace.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from traceviz.analysis.timing.blocking import BlockingCalls, blocking_calls
from traceviz.analysis.timing.idle import IdleParts, IdleSplit, idle_split
from traceviz.analysis.windows import StepWindows, step_windows
from traceviz.schema import ActivityKind, DeviceKind, Kernels, LaunchClass, Launches
from traceviz.trace import Trace

__all__ = ["LaunchOverhead", "StepOverhead", "StepWindows", "launch_overhead", "step_windows"]

LAUNCH_CLASSES = (LaunchClass.KERNEL_LAUNCH.value, LaunchClass.GRAPH_LAUNCH.value)


class StepOverhead:
    """Columns of :attr:`LaunchOverhead.per_step` (one row per step window)."""

    step = "step"  # ProfilerStep number (Int64; <NA> for the whole-trace window)
    wall_us = "wall_us"  # step wall time, µs
    kernel_count = "kernel_count"  # kernels (not memcpy/memset) starting in the step
    kernel_time_us = "kernel_time_us"  # their summed duration, µs
    busy_us = "busy_us"  # union of device activity inside the step, µs
    idle_us = "idle_us"  # wall_us − busy_us, µs (on CPU traces: framework overhead)
    cpu_wait_us = "cpu_wait_us"  # idle time waiting for the CPU (IdleParts.cpu_wait_us), µs
    launch_calls = "launch_calls"  # kernel/graph launch API calls in the step
    launch_api_us = "launch_api_us"  # CPU time inside them, µs


@dataclass(frozen=True)
class LaunchOverhead:
    """Launch-overhead figures of one trace (see the module docstring)."""

    device_kind: DeviceKind
    per_step: pd.DataFrame  # columns: StepOverhead
    launch_calls: int
    launch_api_us: float
    mean_launch_us: float | None
    delay_p50_us: float | None
    delay_p90_us: float | None
    delays_us: np.ndarray  # every kernel's launch delay (graph replays excluded), µs
    short_kernels: int  # kernels shorter than their own launch call
    kernel_count: int
    idle_us: float
    cpu_wait_us: float
    wall_us: float
    blocking: BlockingCalls  # the calls that block the CPU, per step
    idle: IdleSplit  # each step's idle time split (GPU traces; CPU traces: all idle is overhead)

    @property
    def idle_share(self) -> float | None:
        return self.idle_us / self.wall_us if self.wall_us > 0 else None

    @property
    def cpu_wait_share(self) -> float | None:
        return self.cpu_wait_us / self.wall_us if self.wall_us > 0 else None


def launch_overhead(trace: Trace) -> LaunchOverhead:
    """Launch-overhead figures of ``trace``."""
    kernels = trace.kernels
    is_kernel = (kernels[Kernels.activity] == ActivityKind.KERNEL.value).to_numpy()
    launches = trace.launches
    counted = launches[Launches.launch_class].isin(LAUNCH_CLASSES).to_numpy()
    direct = is_kernel & ~kernels[Kernels.in_graph].to_numpy()
    delays = kernels[Kernels.launch_delay_us].to_numpy(dtype=float)[direct]
    delays = delays[np.isfinite(delays)]
    durs = kernels[Kernels.dur_us].to_numpy(dtype=float)
    launch_durs = kernels[Kernels.launch_dur_us].to_numpy(dtype=float)
    blocking = blocking_calls(trace)
    idle = idle_split(trace, step_windows(trace), blocking)
    per_step = _per_step(trace, is_kernel, counted, idle)
    api = launches[Launches.dur_us].to_numpy(dtype=float)[counted]
    return LaunchOverhead(
        device_kind=trace.device_kind,
        per_step=per_step,
        launch_calls=int(counted.sum()),
        launch_api_us=float(np.nansum(api)),
        mean_launch_us=float(np.nanmean(api)) if api.size else None,
        delay_p50_us=float(np.percentile(delays, 50)) if delays.size else None,
        delay_p90_us=float(np.percentile(delays, 90)) if delays.size else None,
        delays_us=delays,
        short_kernels=int((direct & (durs < launch_durs)).sum()),
        kernel_count=int(is_kernel.sum()),
        idle_us=float(per_step[StepOverhead.idle_us].sum()),
        cpu_wait_us=float(per_step[StepOverhead.cpu_wait_us].sum()),
        wall_us=float(per_step[StepOverhead.wall_us].sum()),
        blocking=blocking,
        idle=idle,
    )


def _per_step(
    trace: Trace, is_kernel: np.ndarray, counted: np.ndarray, idle: IdleSplit
) -> pd.DataFrame:
    """Per step: busy and waiting time from the idle split (on CPU traces, busy is the CPU
    kernel time and nothing waits for a launch), counts and sums over the rows starting in it."""
    windows = step_windows(trace)
    kernel_rows = _rows_by_window(windows, trace.kernels[Kernels.ts_us].to_numpy(dtype=float))
    launch_rows = _rows_by_window(windows, trace.launches[Launches.ts_us].to_numpy(dtype=float))
    launch_durs = trace.launches[Launches.dur_us].to_numpy(dtype=float)
    kernel_durs = trace.kernels[Kernels.excl_dur_us].to_numpy(dtype=float)  # nested ones once
    cpu = trace.device_kind is DeviceKind.CPU
    gpu = trace.device_kind in (DeviceKind.CUDA, DeviceKind.ROCM)
    busy = idle.per_step[IdleParts.busy_us].to_numpy(dtype=float)
    waits = idle.per_step[IdleParts.cpu_wait_us].to_numpy(dtype=float)
    rows = []
    for i, (step, lo, hi) in enumerate(windows):
        in_step = launch_rows[i][counted[launch_rows[i]]]
        inside_kernels = kernel_rows[i][is_kernel[kernel_rows[i]]]
        kernel_time = float(np.nansum(kernel_durs[inside_kernels]))
        busy_us = min(kernel_time, hi - lo) if cpu else float(busy[i])
        rows.append(
            {
                StepOverhead.step: step,
                StepOverhead.wall_us: hi - lo,
                StepOverhead.kernel_count: int(inside_kernels.size),
                StepOverhead.kernel_time_us: kernel_time,
                StepOverhead.busy_us: busy_us,
                StepOverhead.idle_us: max(hi - lo - busy_us, 0.0),
                StepOverhead.cpu_wait_us: float(waits[i]) if gpu else 0.0,
                StepOverhead.launch_calls: int(in_step.size),
                StepOverhead.launch_api_us: float(np.nansum(launch_durs[in_step])),
            }
        )
    table = pd.DataFrame(rows)
    table[StepOverhead.step] = table[StepOverhead.step].astype("Int64")
    return table


def _rows_by_window(windows: StepWindows, times: np.ndarray) -> list[np.ndarray]:
    """Per window, the rows whose time lies in it (``lo <= t < hi``), in row order."""
    if windows.in_order():
        rows, _, bounds = windows.rows_by_window(times)
        return [rows[bounds[i] : bounds[i + 1]] for i in range(len(windows.steps))]
    return [np.flatnonzero((times >= lo) & (times < hi)) for _, lo, hi in windows]
