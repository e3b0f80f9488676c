"""Trace metadata: device kind, devices, versions, time base, profiler flags, names."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from traceviz.parse.events import TraceHeader
from traceviz.parse.source import EventSource
from traceviz.schema import DeviceKind, Launches

VERSION_KEYS = tuple(f for f in TraceHeader.__struct_fields__ if f.endswith("_version"))
FLAG_KEYS = ("record_shapes", "profile_memory", "with_stack", "with_flops", "with_modules")
AMD_NAME_HINTS = ("AMD", "Instinct", "Radeon")


def device_kind(
    doc: TraceHeader | None,
    devices: list[dict[str, Any]],
    n_device_rows: int,
    launches: pd.DataFrame,
) -> DeviceKind:
    """cuda / rocm when there is GPU activity or GPU runtime calls, cpu when there is none,
    other for runtime calls of an accelerator traceviz does not model."""
    names = [str(n) for n in launches[Launches.name].cat.categories]
    hip_calls = any(n.startswith("hip") for n in names)
    cuda_calls = any(n.startswith(("cuda", "cu")) for n in names)
    amd_device = any(any(h in str(d.get("name", "")) for h in AMD_NAME_HINTS) for d in devices)
    rocm_header = doc is not None and (
        doc.roctracer_version is not None or doc.hip_runtime_version is not None
    )
    if hip_calls or ((n_device_rows or cuda_calls) and (amd_device or rocm_header)):
        return DeviceKind.ROCM
    if n_device_rows or cuda_calls:
        return DeviceKind.CUDA
    if len(launches):
        return DeviceKind.OTHER
    return DeviceKind.CPU


def device_list(doc: TraceHeader | None) -> list[dict[str, Any]]:
    if doc is None:
        return []
    props = doc.deviceProperties if doc.deviceProperties is not None else doc.computeProperties
    return [d for d in props if isinstance(d, dict)] if isinstance(props, list) else []


def names_from_metadata(events: EventSource) -> tuple[dict, dict]:
    """process_name / thread_name metadata events → (pid → name, "pid/tid" → name)."""
    processes: dict[str, str] = {}
    threads: dict[str, str] = {}
    columns = (events.values(f) for f in ("label", "name", "pid", "tid"))
    for label, name, pid, tid in zip(*map(list, columns), strict=True):
        if not isinstance(label, str):
            continue
        if name == "process_name":
            processes[str(pid)] = label
        elif name == "thread_name":
            threads[f"{pid}/{tid}"] = label
    return processes, threads


def header_facts(doc: TraceHeader | None) -> dict[str, Any]:
    """Keyword arguments for TraceMeta taken from the document's top-level keys."""
    if doc is None:
        return {}
    base = doc.baseTimeNanoseconds
    return {
        "schema_version": doc.schemaVersion if isinstance(doc.schemaVersion, int) else None,
        "versions": {k: getattr(doc, k) for k in VERSION_KEYS if getattr(doc, k) is not None},
        "base_time_ns": base if isinstance(base, int) else None,
        "display_time_unit": doc.displayTimeUnit if isinstance(doc.displayTimeUnit, str) else None,
        "distributed": doc.distributedInfo if isinstance(doc.distributedInfo, dict) else {},
        "profiler_flags": {
            k: _flag(getattr(doc, k)) for k in FLAG_KEYS if getattr(doc, k) is not None
        },
        "trace_name": doc.traceName if isinstance(doc.traceName, str) else None,
    }


def _flag(value: Any) -> Any:
    return bool(value) if isinstance(value, (bool, int)) else value


def time_bounds(
    tables: Sequence[tuple[np.ndarray, np.ndarray]],
) -> tuple[float | None, float | None]:
    """Earliest start and latest end over (starts, durations) pairs, ignoring NaN."""
    lo, hi = np.inf, -np.inf
    for starts, durs in tables:
        finite = np.isfinite(starts)
        if not finite.any():
            continue
        lo = min(lo, float(starts[finite].min()))
        ends = starts[finite] + np.nan_to_num(durs[finite])
        hi = max(hi, float(ends.max()))
    return (lo, hi) if np.isfinite(lo) else (None, None)
