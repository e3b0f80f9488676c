"""Whether traceviz models a trace's device, and what an unmodelled device's trace holds.

traceviz models CUDA and ROCm GPUs (kernels, launches, memcpy/memset) and CPU-only traces (the
CPU ops that compute are the kernels). A trace of another accelerator (``DeviceKind.OTHER``,
e.g. Meta's MTIA) loads, but its device work is not in the kernels table: its kernel, launch,
idle and traffic figures are **not analysed** (null), never "measured zero".
:func:`device_activity` says what such a trace holds instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from traceviz.schema import DeviceKind, Launches, Ops, Spans
from traceviz.trace import Trace

#: The basis of a figure traceviz cannot compute for a device it does not model.
NOT_ANALYSED = "not-analysed"


def is_analysed(trace: Trace) -> bool:
    """True when traceviz models the trace's device (CUDA, ROCm, or a CPU-only trace)."""
    return trace.device_kind is not DeviceKind.OTHER


@dataclass(frozen=True)
class DeviceActivity:
    """What a trace of an unmodelled device holds, measured.

    - ``device_names``: deviceProperties names (``["ARTEMIS"]``);
    - ``runtime_calls`` / ``runtime_time_us``: rows of ``Trace.launches`` (the device
      runtime's API calls; none is a launch traceviz recognises) and their summed CPU time, µs;
    - ``device_events`` / ``device_event_time_us``: duration events recorded on a device
      process (its pid is a ``deviceProperties`` id; without ids, a process with no CPU op
      and no runtime call), from ``Trace.spans``, and their summed duration, µs (events on
      parallel streams overlap: this is not wall time);
    - ``categories``: the trace categories (``cat``) of those device events
      (``mtia_ccp_events``), most events first.
    """

    device_names: tuple[str, ...]
    runtime_calls: int
    runtime_time_us: float
    device_events: int
    device_event_time_us: float
    categories: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "device_names": list(self.device_names),
            "runtime_calls": self.runtime_calls,
            "runtime_time_us": self.runtime_time_us,
            "device_events": self.device_events,
            "device_event_time_us": self.device_event_time_us,
            "categories": list(self.categories),
        }


def device_activity(trace: Trace) -> DeviceActivity | None:
    """What the trace holds for a device traceviz does not model; None when it models it."""
    if is_analysed(trace):
        return None
    spans = trace.spans
    pids = _pids(spans[Spans.thread])
    on_device = pids.isin(_device_pids(trace, pids)).to_numpy(dtype=bool)
    events = spans[on_device]
    counts = events[Spans.category].astype(object).astype(str).value_counts(sort=True)
    launches = trace.launches
    return DeviceActivity(
        device_names=tuple(trace.meta.device_names),
        runtime_calls=len(launches),
        runtime_time_us=float(np.nansum(launches[Launches.dur_us].to_numpy(dtype=float))),
        device_events=len(events),
        device_event_time_us=float(np.nansum(events[Spans.dur_us].to_numpy(dtype=float))),
        categories=tuple(str(c) for c in counts.index),
    )


def _pids(threads: pd.Series) -> pd.Series:
    """The pid part of ``"pid/tid"`` thread labels."""
    return threads.astype(object).astype(str).str.split("/", n=1).str[0]


def _device_pids(trace: Trace, span_pids: pd.Series) -> set[str]:
    """Processes of the device: deviceProperties ids, else span processes that hold no CPU op
    and no runtime call (and are not the profiler's own ``Spans`` process)."""
    ids = {str(d.get("id")) for d in trace.meta.devices if d.get("id") is not None}
    if ids:
        return ids
    host = set(_pids(trace.ops[Ops.thread])) | set(_pids(trace.launches[Launches.thread]))
    return {pid for pid in set(span_pids) if pid not in host and pid != "Spans"}
