"""The step bridge: the measured step-time difference of two traces, split into its causes.

``difference`` = step of a − step of b (eager − compiled: positive when b is faster), where a
step is run.json's **timed median** (outside the profiler) when the pair is a run directory
with timings, else the median of each trace's profiled steps (basis ``profiled step
medians``). It is split into parts, each the part's mean µs per profiled step in a minus that
in b (:class:`BridgeParts`; positive: b spends less on it):

- ``fused_pointwise``: device time of pointwise, reduction and normalization kernels (what
  fusion removes or merges);
- ``library``: GEMM, convolution and attention kernels (cuBLAS, cuDNN, flash attention, …),
  and any kernel launched by a matmul/conv/attention op whatever its name's kind;
- ``layout_copy``: copies, casts, layout transforms, memcpy and memset (negative when b adds
  layout kernels, e.g. Inductor's NCHW → NHWC around a convolution);
- ``other_kernels``: every other kernel (communication, unclassified);
- ``launch_idle``: device idle time not spent waiting for the CPU to issue work — blocked in a
  sync, launch latency, waits on another stream, gaps between issued kernels
  (:mod:`traceviz.analysis.timing.idle`);
- ``cpu_overhead``: device idle while the CPU had not yet issued the next work (Python,
  framework and Dynamo guard time); on CPU-only traces the step time outside the CPU kernels;
- ``profiler``: the step figure minus the mean profiled step: the profiler's own cost (it
  slows the CPU side of each launch) and the steps' spread (0 when the step figure is the
  profiled mean's own basis and the steps are even);
- ``remainder`` = difference − the parts above, always reported: here, device time counted
  twice by kernels running at once on several streams (each kernel's time counts in its
  group, the union only once in the step).

Kernel time per group is each kernel's duration clipped to its step window (a kernel belongs
to the step it starts in), the same rule as the device busy time of
:mod:`traceviz.analysis.timing.launch`; parts + remainder equal the difference exactly. All figures
are µs per step, measured from the traces and run.json.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from traceviz.analysis.inductor_names import eager_op_base
from traceviz.analysis.kernel_kinds import KernelKind
from traceviz.analysis.kernels import Classified
from traceviz.analysis.timing.launch import StepOverhead, step_windows
from traceviz.aten_ops import ATTENTION_OPS, CONV_OPS, MATMUL_OPS
from traceviz.schema import DeviceKind, Kernels

if TYPE_CHECKING:
    from traceviz.analysis.compare import Side
    from traceviz.runs.runinfo import RunInfo

__all__ = ["BRIDGE_PARTS", "BridgeParts", "StepBridge", "step_bridge"]

TIMED = "timed medians"
PROFILED = "profiled step medians"


class BridgeParts:
    """Columns of :attr:`StepBridge.parts`, one row per part (µs per step)."""

    part = "part"  # a BRIDGE_PARTS id
    label = "label"  # words for people
    a_us = "a_us"  # the part in a, µs per step
    b_us = "b_us"  # the part in b, µs per step
    delta_us = "delta_us"  # a_us − b_us: its share of the difference, µs per step


#: (id, label) of each part, in order; the remainder follows them.
BRIDGE_PARTS: tuple[tuple[str, str], ...] = (
    ("fused_pointwise", "pointwise / reduction / norm kernels"),
    ("library", "library GEMM / conv / attention kernels"),
    ("layout_copy", "layout / copy / memcpy / memset kernels"),
    ("other_kernels", "other kernels"),
    ("launch_idle", "launch latency, syncs and gaps (device idle)"),
    ("cpu_overhead", "CPU / framework overhead (device waits for the CPU)"),
    ("profiler", "profiler overhead and step spread (step figure − mean profiled step)"),
)

_GROUP = {
    KernelKind.POINTWISE.value: "fused_pointwise",
    KernelKind.REDUCTION.value: "fused_pointwise",
    KernelKind.NORMALIZATION.value: "fused_pointwise",
    KernelKind.GEMM.value: "library",
    KernelKind.CONV.value: "library",
    KernelKind.ATTENTION.value: "library",
    KernelKind.COPY.value: "layout_copy",
    KernelKind.MEMCPY.value: "layout_copy",
    KernelKind.MEMSET.value: "layout_copy",
}
_LIBRARY_OPS = MATMUL_OPS | CONV_OPS | ATTENTION_OPS


@dataclass(frozen=True)
class StepBridge:
    """The bridge of one pair (see the module docstring): ``names`` (a, b), ``basis`` (``timed
    medians`` or ``profiled step medians``), the two step figures and their ``difference``
    (a − b), µs; ``parts`` (:class:`BridgeParts`), ``remainder_us`` = difference − Σ parts
    deltas, and ``remainder_share`` = |remainder| / |difference| (None when the difference
    is 0)."""

    names: tuple[str, str]
    basis: str
    step_a_us: float
    step_b_us: float
    difference_us: float
    parts: pd.DataFrame
    remainder_us: float
    remainder_share: float | None

    def to_json(self) -> dict[str, Any]:
        from traceviz.records import records

        return {
            "names": {"a": self.names[0], "b": self.names[1]},
            "basis": self.basis,
            "step_a_us": self.step_a_us,
            "step_b_us": self.step_b_us,
            "difference_us": self.difference_us,
            "parts": records(self.parts),
            "remainder_us": self.remainder_us,
            "remainder_share": self.remainder_share,
        }


def step_bridge(a: Side, b: Side, *, run_info: RunInfo | None = None) -> StepBridge | None:
    """The bridge of side a − side b (``run_info``: the run's run.json, whose timed medians
    are the step figures when it has both), or None when a side has no step to measure."""
    per_a, per_b = _side_parts(a), _side_parts(b)
    if per_a is None or per_b is None:
        return None
    timed = _timed(run_info)
    if timed is not None:
        basis, (step_a, step_b) = TIMED, timed
    else:
        basis, step_a, step_b = PROFILED, _median_step(a), _median_step(b)
    per_a["profiler"] = step_a - per_a.pop("_wall")
    per_b["profiler"] = step_b - per_b.pop("_wall")
    rows = [
        {
            BridgeParts.part: part,
            BridgeParts.label: label,
            BridgeParts.a_us: per_a[part],
            BridgeParts.b_us: per_b[part],
            BridgeParts.delta_us: per_a[part] - per_b[part],
        }
        for part, label in BRIDGE_PARTS
    ]
    parts = pd.DataFrame(rows)
    difference = step_a - step_b
    remainder = difference - math.fsum(parts[BridgeParts.delta_us])
    share = abs(remainder) / abs(difference) if difference != 0 else None
    return StepBridge(
        names=(a.name, b.name),
        basis=basis,
        step_a_us=step_a,
        step_b_us=step_b,
        difference_us=difference,
        parts=parts,
        remainder_us=remainder,
        remainder_share=share,
    )


def _timed(run_info: RunInfo | None) -> tuple[float, float] | None:
    """run.json's timed medians (eager, compiled), or None without both."""
    timing = run_info.timing if run_info is not None else None
    if timing is None or timing.compiled is None:
        return None
    return float(timing.eager.median_us), float(timing.compiled.median_us)


def _median_step(side: Side) -> float:
    """The median wall time of the side's profiled step windows, µs."""
    return float(np.median(side.launch.per_step[StepOverhead.wall_us].to_numpy(dtype=float)))


def _side_parts(side: Side) -> dict[str, float] | None:
    """The side's mean µs per step of each kernel group and idle part, plus ``_wall``, the
    mean profiled step; None without a step window."""
    per_step = side.launch.per_step
    if per_step.empty:
        return None
    n = len(per_step)
    wall = float(per_step[StepOverhead.wall_us].sum()) / n
    idle = float(per_step[StepOverhead.idle_us].sum()) / n
    parts = dict.fromkeys((p for p, _ in BRIDGE_PARTS), 0.0)
    for group, time_us in _group_times(side).items():
        parts[group] += time_us / n
    if side.trace.device_kind is DeviceKind.CPU:
        parts["cpu_overhead"] = idle
    else:
        wait = float(np.nansum(per_step[StepOverhead.cpu_wait_us].to_numpy(dtype=float))) / n
        parts["cpu_overhead"] = wait
        parts["launch_idle"] = idle - wait
    parts["_wall"] = wall
    return parts


def _group_times(side: Side) -> dict[str, float]:
    """Device time per part over all step windows, µs: each kernel's time clipped to the window
    it starts in (CPU-only traces: exclusive time, nested kernels counted once)."""
    trace = side.trace
    kernels = side.kernels
    windows = step_windows(trace)
    starts = kernels[Kernels.ts_us].to_numpy(dtype=float)
    window = windows.index_of(starts)
    inside = window >= 0
    if trace.device_kind is DeviceKind.CPU:
        time = np.nan_to_num(kernels[Kernels.excl_dur_us].to_numpy(dtype=float, na_value=np.nan))
    else:
        dur = np.nan_to_num(kernels[Kernels.dur_us].to_numpy(dtype=float))
        safe = np.maximum(window, 0)
        # the duration itself unless the window ends first (start + dur - start would round:
        # trace clocks are large numbers of µs)
        time = np.minimum(dur, windows.end_us[safe] - starts)
    time = np.where(inside, np.maximum(time, 0.0), 0.0)
    groups = _groups(kernels)
    totals = pd.Series(time).groupby(groups).sum()
    return {str(k): float(v) for k, v in totals.items()}


def _groups(kernels: pd.DataFrame) -> np.ndarray:
    """The bridge part of each kernel row: by kind, and ``library`` for any kernel whose
    launching op is a matmul, convolution or attention op."""
    kinds = kernels[Classified.kind].astype(object).to_numpy()
    groups = np.array([_GROUP.get(k, "other_kernels") for k in kinds], dtype=object)
    op_names = kernels[Kernels.op_name]
    codes, uniques = pd.factorize(op_names, use_na_sentinel=True)
    library = np.array(
        [eager_op_base(str(u), strip_inplace=True) in _LIBRARY_OPS for u in uniques] + [False]
    )
    is_library = library[np.where(codes >= 0, codes, len(uniques))]
    is_device_kernel = (kernels[Kernels.activity] == "kernel").to_numpy(dtype=bool)
    groups[is_library & is_device_kernel] = "library"
    return groups
