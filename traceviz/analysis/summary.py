"""One trace at a glance: the numbers behind ``traceviz summary``.

Every figure is measured (read from the trace), never estimated; the JSON form is documented
in ``docs/summary-json.md`` and versioned by :data:`SUMMARY_SCHEMA_VERSION`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from traceviz.analysis.memory import peak_allocated
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
LAUNCH_CLASSES_COUNTED = (LaunchClass.KERNEL_LAUNCH.value, LaunchClass.GRAPH_LAUNCH.value)


@dataclass(frozen=True)
class TraceSummary:
    """Headline figures of one trace.

    Tables (DataFrames):

    - ``activities``: ``activity`` (kernel/memcpy/memset), ``count``, ``time_us`` (summed
      device time, µs), ``bytes`` (memcpy/memset only).
    - ``top_kernels``: ``name``, ``count``, ``time_us`` (total, µs), ``mean_us``,
      ``share_pct`` (of all kernel time), the ``top`` largest by total time.
    - ``launch_classes``: ``launch_class``, ``count``, ``time_us`` (CPU time inside the calls).
    - ``region_kinds``: ``kind``, ``calls``, ``wall_us`` (CPU wall time), ``kernel_count``,
      ``kernel_time_us`` (device time of the kernels issued inside).
    """

    source: str
    device: str
    device_names: list[str]
    span_us: float
    step_count: int
    step_mean_us: float | None
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
    activities: pd.DataFrame
    top_kernels: pd.DataFrame
    launch_classes: pd.DataFrame
    region_kinds: pd.DataFrame

    def to_json(self) -> dict[str, Any]:
        """The documented JSON form (``docs/summary-json.md``)."""
        return {
            "schema_version": SUMMARY_SCHEMA_VERSION,
            "source": self.source,
            "device": self.device,
            "device_names": self.device_names,
            "span_us": self.span_us,
            "step_count": self.step_count,
            "step_mean_us": self.step_mean_us,
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
        }


def summarize(trace: Trace, *, top: int = 10) -> TraceSummary:
    """Headline figures of ``trace``; ``top`` is the number of kernels to list."""
    if top < 0:
        raise ValueError("top must be >= 0")
    kernels = trace.kernels
    activity = kernels[Kernels.activity]
    is_kernel = (activity == ActivityKind.KERNEL.value).to_numpy()
    is_memcpy = (activity == ActivityKind.MEMCPY.value).to_numpy()
    launches = trace.launches
    counted = launches[Launches.launch_class].isin(LAUNCH_CLASSES_COUNTED).to_numpy()
    steps = trace.steps
    return TraceSummary(
        source=trace.meta.source,
        device=trace.device_kind.value,
        device_names=trace.meta.device_names,
        span_us=trace.meta.span_us,
        step_count=len(steps),
        step_mean_us=float(steps["dur_us"].mean()) if len(steps) else None,
        kernel_count=int(is_kernel.sum()),
        kernel_time_us=_sum(kernels[Kernels.dur_us][is_kernel]),
        memcpy_count=int(is_memcpy.sum()),
        memcpy_bytes=int(kernels[Kernels.bytes][is_memcpy].sum()),
        memset_count=int((activity == ActivityKind.MEMSET.value).sum()),
        launch_count=int(counted.sum()),
        launch_api_time_us=_sum(launches[Launches.dur_us][counted]),
        compiled_region_calls=int(
            (trace.regions[Regions.kind] == RegionKind.COMPILED_REGION.value).sum()
        ),
        peak_allocated_bytes=peak_allocated(trace),
        memory_events=len(trace.memory),
        events_in=trace.stats.events_in,
        events_ignored=trace.stats.events_ignored,
        ignored=dict(trace.stats.ignored),
        activities=_activities(kernels),
        top_kernels=_top_kernels(kernels[is_kernel], top),
        launch_classes=_grouped(launches, Launches.launch_class, Launches.dur_us),
        region_kinds=_region_kinds(trace.regions),
    )


def _sum(values: pd.Series) -> float:
    return float(np.nansum(values.to_numpy(dtype=float)))


def _activities(kernels: pd.DataFrame) -> pd.DataFrame:
    grouped = kernels.groupby(Kernels.activity, observed=True)
    table = pd.DataFrame(
        {
            "count": grouped.size(),
            "time_us": grouped[Kernels.dur_us].sum(),
            "bytes": grouped[Kernels.bytes].sum(),
        }
    )
    return table.reset_index().rename(columns={Kernels.activity: "activity"})


def _top_kernels(kernels: pd.DataFrame, top: int) -> pd.DataFrame:
    total = _sum(kernels[Kernels.dur_us])
    grouped = kernels.groupby(Kernels.name, observed=True)[Kernels.dur_us]
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
            "wall_us": grouped[Regions.dur_us].sum(),
            "kernel_count": grouped[Regions.kernel_count].sum(),
            "kernel_time_us": grouped[Regions.kernel_time_us].sum(),
        }
    )
    return table.reset_index()
