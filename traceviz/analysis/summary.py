"""One trace at a glance: the numbers behind ``traceviz summary``.

Every figure is measured (read from the trace), never estimated; the JSON form is documented
in ``docs/summary-json.md`` and versioned by :data:`SUMMARY_SCHEMA_VERSION`. On a device
traceviz does not model (``device == "other"``) the device figures are not analysed: null in
JSON (:data:`DEVICE_FIGURES`), "n/a" in text, and ``device_activity`` says what the trace holds.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from traceviz.analysis.device import NOT_ANALYSED, DeviceActivity, device_activity, is_analysed
from traceviz.analysis.traffic.memory import peak_allocated
from traceviz.analysis.windows import full_steps, union
from traceviz.records import records
from traceviz.schema import (
    ActivityKind,
    Kernels,
    LaunchClass,
    Launches,
    RegionKind,
    Regions,
)
from traceviz.trace import Trace

SUMMARY_SCHEMA_VERSION = 1


class Unset(enum.Enum):
    """A keyword not given (where None is a value)."""

    UNSET = enum.auto()


UNSET = Unset.UNSET
LAUNCH_CLASSES_COUNTED = (LaunchClass.KERNEL_LAUNCH.value, LaunchClass.GRAPH_LAUNCH.value)
#: Keys of the JSON form that need a device model (null when ``basis`` is ``not-analysed``).
DEVICE_FIGURES = (
    "kernel_count", "kernel_time_us", "memcpy_count", "memcpy_bytes", "memset_count",
    "launch_count", "launch_api_time_us",
)  # fmt: skip


@dataclass(frozen=True)
class TraceSummary:
    """Headline figures of one trace.

    Tables (DataFrames, computed from ``trace`` when first read: a comparison reads only the
    figures above them):

    - ``activities``: ``activity`` (kernel/memcpy/memset), ``count``, ``time_us`` (summed
      device time, µs: ``excl_dur_us``, so a nested CPU kernel counts once), ``bytes``
      (memcpy/memset only). Kernel times below are exclusive the same way.
    - ``top_kernels``: ``name``, ``count``, ``time_us`` (total, µs), ``mean_us``,
      ``share_pct`` (of all kernel time), the ``top`` largest by total time.
    - ``launch_classes``: ``launch_class``, ``count``, ``time_us`` (CPU time inside the calls).
    - ``region_kinds``: ``kind``, ``calls``, ``wall_us`` (CPU wall time the kind's spans cover,
      per thread: a region nested in another, as after a graph break, counts once),
      ``kernel_count``, ``kernel_time_us`` (device time of the kernels issued inside).
    """

    source: str
    device: str
    device_names: list[str]
    span_us: float
    step_count: int  # full ProfilerStep spans (a partial last step left out: partial_steps)
    step_mean_us: float | None  # their mean wall time, µs
    kernel_count: int
    kernel_time_us: float
    memcpy_count: int
    memcpy_bytes: int
    memset_count: int
    launch_count: int
    launch_api_time_us: float
    compiled_region_calls: int
    peak_allocated_bytes: int | None
    memory_events: int
    events_in: int
    events_ignored: int
    ignored: dict[str, int]
    trace: Trace = field(repr=False, compare=False)  # the tables below are read from it
    top: int = 10  # how many kernels ``top_kernels`` lists
    basis: str = "measured"  # "not-analysed": the device has no model, device figures n/a
    device_activity: DeviceActivity | None = None  # what an unmodelled device's trace holds
    # steps left out of step_count and every per-step figure: a last step the profiler's stop
    # cut short (traceviz.analysis.windows.full_steps)
    partial_steps: int = 0

    @cached_property
    def activities(self) -> pd.DataFrame:
        return _activities(self.trace.kernels)

    @cached_property
    def top_kernels(self) -> pd.DataFrame:
        kernels = self.trace.kernels
        is_kernel = (kernels[Kernels.activity] == ActivityKind.KERNEL.value).to_numpy()
        return _top_kernels(kernels[is_kernel], self.top)

    @cached_property
    def launch_classes(self) -> pd.DataFrame:
        return _grouped(self.trace.launches, Launches.launch_class, Launches.dur_us)

    @cached_property
    def region_kinds(self) -> pd.DataFrame:
        return _region_kinds(self.trace.regions)

    @property
    def analysed(self) -> bool:
        """The device figures mean something (traceviz models this trace's device)."""
        return self.basis != NOT_ANALYSED

    def to_json(self) -> dict[str, Any]:
        """The documented JSON form (``docs/summary-json.md``)."""
        out = self._json()
        if not self.analysed:
            out.update(dict.fromkeys(DEVICE_FIGURES))
        return out

    def _json(self) -> dict[str, Any]:
        activity = self.device_activity
        return {
            "schema_version": SUMMARY_SCHEMA_VERSION,
            "source": self.source,
            "device": self.device,
            "device_names": self.device_names,
            "span_us": self.span_us,
            "step_count": self.step_count,
            "step_mean_us": self.step_mean_us,
            "partial_steps": self.partial_steps,
            "kernel_count": self.kernel_count,
            "kernel_time_us": self.kernel_time_us,
            "memcpy_count": self.memcpy_count,
            "memcpy_bytes": self.memcpy_bytes,
            "memset_count": self.memset_count,
            "launch_count": self.launch_count,
            "launch_api_time_us": self.launch_api_time_us,
            "compiled_region_calls": self.compiled_region_calls,
            "peak_allocated_bytes": self.peak_allocated_bytes,
            "memory_events": self.memory_events,
            "events_in": self.events_in,
            "events_ignored": self.events_ignored,
            "ignored": self.ignored,
            "activities": records(self.activities),
            "top_kernels": records(self.top_kernels),
            "launch_classes": records(self.launch_classes),
            "region_kinds": records(self.region_kinds),
            "basis": self.basis,
            "device_activity": activity.to_json() if activity is not None else None,
        }


def summarize(
    trace: Trace, *, top: int = 10, peak_allocated_bytes: int | Unset | None = UNSET
) -> TraceSummary:
    """Headline figures of ``trace``; ``top`` is the number of kernels to list.
    ``peak_allocated_bytes``, when the caller has it already (``MemoryTraffic`` of this
    trace), is taken instead of read again from the allocator events."""
    if top < 0:
        raise ValueError("top must be >= 0")
    kernels = trace.kernels
    activity = kernels[Kernels.activity]
    is_kernel = (activity == ActivityKind.KERNEL.value).to_numpy()
    is_memcpy = (activity == ActivityKind.MEMCPY.value).to_numpy()
    launches = trace.launches
    counted = launches[Launches.launch_class].isin(LAUNCH_CLASSES_COUNTED).to_numpy()
    steps = full_steps(trace)
    return TraceSummary(
        source=trace.meta.source,
        device=trace.device_kind.value,
        device_names=trace.meta.device_names,
        span_us=trace.meta.span_us,
        step_count=len(steps),
        step_mean_us=float(steps["dur_us"].mean()) if len(steps) else None,
        kernel_count=int(is_kernel.sum()),
        kernel_time_us=_sum(kernels[Kernels.excl_dur_us][is_kernel]),
        memcpy_count=int(is_memcpy.sum()),
        memcpy_bytes=int(kernels[Kernels.bytes][is_memcpy].sum()),
        memset_count=int((activity == ActivityKind.MEMSET.value).sum()),
        launch_count=int(counted.sum()),
        launch_api_time_us=_sum(launches[Launches.dur_us][counted]),
        compiled_region_calls=int(
            (trace.regions[Regions.kind] == RegionKind.COMPILED_REGION.value).sum()
        ),
        peak_allocated_bytes=(
            peak_allocated(trace)
            if isinstance(peak_allocated_bytes, Unset)
            else peak_allocated_bytes
        ),
        memory_events=len(trace.memory),
        events_in=trace.stats.events_in,
        events_ignored=trace.stats.events_ignored,
        ignored=dict(trace.stats.ignored),
        trace=trace,
        top=top,
        basis="measured" if is_analysed(trace) else NOT_ANALYSED,
        device_activity=device_activity(trace),
        partial_steps=len(trace.steps) - len(steps),
    )


def _sum(values: pd.Series) -> float:
    return float(np.nansum(values.to_numpy(dtype=float)))


def _activities(kernels: pd.DataFrame) -> pd.DataFrame:
    grouped = kernels.groupby(Kernels.activity, observed=True)
    table = pd.DataFrame(
        {
            "count": grouped.size(),
            "time_us": grouped[Kernels.excl_dur_us].sum(),
            "bytes": grouped[Kernels.bytes].sum(),
        }
    )
    return table.reset_index().rename(columns={Kernels.activity: "activity"})


def _top_kernels(kernels: pd.DataFrame, top: int) -> pd.DataFrame:
    total = _sum(kernels[Kernels.excl_dur_us])
    grouped = kernels.groupby(Kernels.name, observed=True)[Kernels.excl_dur_us]
    table = pd.DataFrame({"count": grouped.size(), "time_us": grouped.sum()})
    table["mean_us"] = table["time_us"] / table["count"]
    table["share_pct"] = 100.0 * table["time_us"] / total if total > 0 else 0.0
    table = table.sort_values("time_us", ascending=False).head(top)
    return table.reset_index().rename(columns={Kernels.name: "name"})


def _grouped(table: pd.DataFrame, key: str, dur: str) -> pd.DataFrame:
    grouped = table.groupby(key, observed=True)[dur]
    out = pd.DataFrame({"count": grouped.size(), "time_us": grouped.sum()})
    return out.sort_values("count", ascending=False).reset_index()


def _region_kinds(regions: pd.DataFrame) -> pd.DataFrame:
    grouped = regions.groupby(Regions.kind, observed=True)
    table = pd.DataFrame(
        {
            "calls": grouped.size(),
            "wall_us": pd.Series(
                [_covered_us(rows) for _, rows in grouped], index=grouped.size().index, dtype=float
            ),
            "kernel_count": grouped[Regions.kernel_count].sum(),
            "kernel_time_us": grouped[Regions.kernel_time_us].sum(),
        }
    )
    return table.reset_index()


def _covered_us(spans: pd.DataFrame) -> float:
    """Wall time covered by ``spans`` (Regions rows), per thread, overlapping spans once, µs."""
    total = 0.0
    for _, rows in spans.groupby(Regions.thread, observed=True):
        starts = rows[Regions.ts_us].to_numpy(dtype=float)
        lo, hi = union(starts, starts + rows[Regions.dur_us].to_numpy(dtype=float))
        total += float((hi - lo).sum())
    return total
