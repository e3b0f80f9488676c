"""Kernels by kind and source: what each kernel does and who produced it.

``classify(trace)`` returns the trace's kernels table with three more columns:

- ``kind``: :class:`~traceviz.analysis.kernel_kinds.KernelKind` value (category);
- ``source``: :class:`~traceviz.analysis.kernel_kinds.KernelSource` value (category);
- ``in_region``: issued inside a compiled region (bool).

``kind_table`` aggregates them: one row per (kind, source) with ``count`` and ``time_us``
(summed device time, µs, measured).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from traceviz.analysis.kernel_kinds import trace_kinds, trace_sources
from traceviz.schema import Kernels, Regions
from traceviz.trace import Trace


class Classified:
    """Columns :func:`classify` adds to the kernels table."""

    kind = "kind"
    source = "source"
    in_region = "in_region"


_PANDAS_3 = int(pd.__version__.split(".")[0]) >= 3


def copies_on_write() -> bool:
    """Whether pandas copies a column on its first write (always from pandas 3; an option in
    pandas 2): then a shallow copy of a table shares its columns safely, and a caller's
    in-place edit of the copy never reaches the original (``trace.kernels``)."""
    return _PANDAS_3 or pd.options.mode.copy_on_write is True


def classify(trace: Trace) -> pd.DataFrame:
    """The kernels table plus ``kind``, ``source`` and ``in_region`` columns."""
    kernels = trace.kernels
    # issued inside any compiled-region marker (FX-graph calls included: some ROCm traces
    # have only those)
    in_region = issued_inside(trace, trace.regions)
    out = kernels.copy(deep=not copies_on_write())
    out[Classified.kind] = trace_kinds(trace)  # ORT profiles: by op type
    out[Classified.source] = trace_sources(trace, in_region)  # ORT profiles: onnxruntime
    out[Classified.in_region] = in_region
    return out


def kind_table(classified: pd.DataFrame) -> pd.DataFrame:
    """Count and device time (µs, exclusive: ``excl_dur_us``) per (kind, source)."""
    # grouped on the three columns it reads (not the whole classified table)
    columns = [Classified.kind, Classified.source, Kernels.excl_dur_us]
    grouped = classified[columns].groupby([Classified.kind, Classified.source], observed=True)
    table = pd.DataFrame(
        {"count": grouped.size(), "time_us": grouped[Kernels.excl_dur_us].sum(min_count=0)}
    )
    return table.reset_index()


def issue_us(kernels: pd.DataFrame) -> np.ndarray:
    """When each kernel was issued, µs: its launch call's start, else its own start (CPU
    kernels, or device activity whose launch is not in the trace)."""
    launch = kernels[Kernels.launch_ts_us].to_numpy(dtype=float, na_value=np.nan)
    start = kernels[Kernels.ts_us].to_numpy(dtype=float, na_value=np.nan)
    return np.where(np.isnan(launch), start, launch)


def issued_inside(trace: Trace, spans: pd.DataFrame) -> np.ndarray:
    """Per kernel: issued (launched, or run for CPU kernels) inside one of ``spans`` (rows of
    a regions table) on that span's thread."""
    kernels = trace.kernels
    inside = np.zeros(len(kernels), dtype=bool)
    if spans.empty:  # every eager trace: no region to be inside
        return inside
    issue = issue_us(kernels)
    threads = kernels[Kernels.thread].astype(object).to_numpy()
    for thread, group in spans.groupby(Regions.thread, observed=True):
        starts = group[Regions.ts_us].to_numpy(dtype=float)
        ends = starts + np.nan_to_num(group[Regions.dur_us].to_numpy(dtype=float))
        on_thread = threads == thread
        inside[on_thread] = covered(issue[on_thread], starts, ends)
    return inside


def covered(points: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Which points fall inside the union of the [start, end] intervals."""
    if starts.size == 0:
        return np.zeros(len(points), dtype=bool)
    order = np.argsort(starts)
    starts, reach = starts[order], np.maximum.accumulate(ends[order])
    pos = np.searchsorted(starts, points, side="right") - 1
    return (pos >= 0) & (points <= reach[np.maximum(pos, 0)])
