"""Blocking host calls: runtime/driver calls during which the CPU waits (measured).

A call blocks the CPU when it returns only after the device (or a copy) is done:

- ``sync``: ``*Synchronize`` calls (``cudaStreamSynchronize``, ``hipDeviceSynchronize``,
  ``cudaEventSynchronize``, ``cuCtxSynchronize``, …);
- ``sync_copy``: memcpy calls without ``Async`` (``cudaMemcpy``, ``hipMemcpyWithStream``,
  ``cuMemcpyDtoH``): they wait for the queue to drain, then copy;
- ``pageable_copy``: async memcpy calls whose copy goes to or from pageable (unpinned) host
  memory (the device activity is named ``… Pageable …``): the CPU stages the data itself;
- ``stalled_launch``: a kernel/graph launch call lasting at least
  :data:`STALL_FACTOR` × the median of its API name and at least :data:`STALL_MIN_US`, during
  which the device was idle most of the time (lazy module loading, first-call set-up, …). A
  long launch while the device works is the CPU waiting for room in a full launch queue —
  the CPU running ahead, not a cost — and is left out.

Why an analysis and not a parse-time :class:`~traceviz.schema.LaunchClass`: whether a call
blocks depends on more than its name — the pageable host buffer is only known once the call is
linked to its copy, and a stalled launch only against the trace's other launches — and the
launch class keeps saying what the API *is* (a ``hipMemcpyWithStream`` is still a memcpy for
the summary and the traffic figures).

Every figure is the call's measured CPU duration. Per step, the blocked time is the union of
the calls' spans clipped to the step, so it never exceeds the step's wall time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

import numpy as np
import numpy.typing as npt
import pandas as pd

from traceviz.analysis.windows import StepWindows, overlap, step_windows, union
from traceviz.parse.compile_log import STEP_SYNC_MARK
from traceviz.schema import ActivityKind, Kernels, LaunchClass, Launches, OpCategory, Ops
from traceviz.trace import Trace

#: A launch call this many times its API's median duration is stalled ...
STALL_FACTOR = 20.0
#: ... when it also lasts at least this long, µs.
STALL_MIN_US = 200.0
#: ... and the device was busy for less than this share of it.
STALL_IDLE_SHARE = 0.5
_STEP_PREFIX = "ProfilerStep#"
_LAUNCHES = (LaunchClass.KERNEL_LAUNCH.value, LaunchClass.GRAPH_LAUNCH.value)


class BlockReason(str, Enum):
    """Why a runtime/driver call blocks the CPU (see the module docstring)."""

    SYNC = "sync"
    SYNC_COPY = "sync_copy"
    PAGEABLE_COPY = "pageable_copy"
    STALLED_LAUNCH = "stalled_launch"


class BlockingColumns:
    """Columns of :attr:`BlockingCalls.calls` (one row per blocking call, in time order)."""

    launch_row = "launch_row"  # row in Trace.launches (int64)
    name = "name"  # API name, e.g. cudaStreamSynchronize (str)
    reason = "reason"  # BlockReason value (str)
    thread = "thread"  # "pid/tid" (str)
    ts_us = "ts_us"  # call start, µs (float64)
    dur_us = "dur_us"  # measured call duration = CPU time blocked, µs (float64)
    step = "step"  # index of the step window holding the call's start (−1: none) (int64)
    step_share = "step_share"  # call time inside that step / the step's wall time (float64)
    op = "op"  # innermost enclosing CPU op or annotation, e.g. aten::item (str or None)
    frame = "frame"  # innermost enclosing Python frame (str or None)
    copy_kind = "copy_kind"  # linked copy's direction "DtoH"/"HtoD"/… (str or None)
    bytes = "bytes"  # linked copies' bytes (float64, NaN when none)


class BlockedStep:
    """Columns of :attr:`BlockingCalls.per_step` (one row per step window)."""

    step = "step"  # ProfilerStep number (Int64; <NA> for the whole-trace window)
    wall_us = "wall_us"  # step wall time, µs
    calls = "calls"  # blocking calls starting in the step
    blocked_us = "blocked_us"  # union of their spans inside the step, µs (≤ wall_us)


@dataclass(frozen=True)
class BlockingCalls:
    """The blocking calls of one trace (see the module docstring)."""

    calls: pd.DataFrame  # columns: BlockingColumns
    per_step: pd.DataFrame  # columns: BlockedStep

    @property
    def blocked_us(self) -> float:
        """CPU time blocked inside the steps, µs (union per step, summed)."""
        return float(self.per_step[BlockedStep.blocked_us].sum())

    @property
    def wall_us(self) -> float:
        return float(self.per_step[BlockedStep.wall_us].sum())


def blocking_calls(trace: Trace) -> BlockingCalls:
    """Every call of ``trace.launches`` that blocks the CPU, with its issuer and step; not the
    runner's own wait for the device that closes each profiled step (a call inside the
    :data:`~traceviz.parse.compile_log.STEP_SYNC_MARK` annotation): the harness, not the
    model."""
    launches = trace.launches
    codes = _reason_codes(trace)
    rows = np.flatnonzero(codes)
    op, frame = issuers(trace, rows)
    model = op != STEP_SYNC_MARK
    rows, op, frame = rows[model], op[model], frame[model]
    ts = launches[Launches.ts_us].to_numpy(dtype=float)[rows]
    dur = np.nan_to_num(launches[Launches.dur_us].to_numpy(dtype=float)[rows])
    windows = step_windows(trace)
    step = windows.index_of(ts)
    kinds, sizes = _copies(trace, rows)
    lo = np.where(step >= 0, windows.start_us[np.clip(step, 0, None)], np.nan)
    hi = np.where(step >= 0, windows.end_us[np.clip(step, 0, None)], np.nan)
    inside = np.clip(np.minimum(ts + dur, hi) - np.maximum(ts, lo), 0.0, None)
    wall = hi - lo
    share = np.where(wall > 0, inside / np.where(wall > 0, wall, 1.0), np.nan)
    calls = pd.DataFrame(
        {
            BlockingColumns.launch_row: rows.astype(np.int64),
            BlockingColumns.name: launches[Launches.name].iloc[rows].astype(str).to_numpy(),
            BlockingColumns.reason: _spelled(codes, rows),
            BlockingColumns.thread: launches[Launches.thread].iloc[rows].astype(str).to_numpy(),
            BlockingColumns.ts_us: ts,
            BlockingColumns.dur_us: dur,
            BlockingColumns.step: step,
            BlockingColumns.step_share: share,
            BlockingColumns.op: op,
            BlockingColumns.frame: frame,
            BlockingColumns.copy_kind: kinds,
            BlockingColumns.bytes: sizes,
        }
    )
    calls = calls.sort_values(BlockingColumns.ts_us, kind="stable").reset_index(drop=True)
    return BlockingCalls(calls=calls, per_step=_per_step(windows, calls))


def blocking_reasons(trace: Trace) -> npt.NDArray[np.str_]:
    """Per row of ``trace.launches``, its :class:`BlockReason` value, or "" (not blocking)."""
    codes = _reason_codes(trace)
    return _spelled(codes, np.arange(codes.size))


def _spelled(codes: npt.NDArray[np.int8], rows: npt.NDArray[np.intp]) -> npt.NDArray[np.str_]:
    """The reasons of ``rows``, spelled out."""
    return np.array(_REASONS)[codes[rows]]


def _reason_codes(trace: Trace) -> npt.NDArray[np.int8]:
    """Per row of ``trace.launches``, its index into ``_REASONS`` (0: not blocking)."""
    launches = trace.launches
    classes = launches[Launches.launch_class]
    # codes into _REASONS, spelled out only for the calls that block (_spelled)
    out = np.zeros(len(launches), dtype=np.int8)
    is_copy = classes.isin([LaunchClass.MEMCPY.value]).to_numpy(dtype=bool)
    is_async = _contains(launches[Launches.name], "Async")
    out[classes.isin([LaunchClass.SYNC.value]).to_numpy(dtype=bool)] = 1
    out[is_copy & ~is_async] = 2
    pageable = np.zeros(len(launches), dtype=bool)
    pageable[_pageable_launch_rows(trace)] = True
    out[is_copy & is_async & pageable] = 3
    out[_stalled_launches(trace, classes)] = 4
    return out


_REASONS = ("", *(r.value for r in BlockReason))  # codes of blocking_reasons


def _contains(names: pd.Series, text: str) -> npt.NDArray[np.bool_]:
    return per_name(names, lambda labels: labels.str.contains(text, regex=False))


def _pageable_launch_rows(trace: Trace) -> npt.NDArray[np.int64]:
    kernels = trace.kernels
    is_copy = (kernels[Kernels.activity] == ActivityKind.MEMCPY.value).to_numpy(dtype=bool)
    pageable = _contains(kernels[Kernels.name], "Pageable")
    rows = kernels[Kernels.launch_row].to_numpy(dtype=float, na_value=np.nan)[is_copy & pageable]
    rows = rows[np.isfinite(rows)].astype(np.int64)
    return rows[(rows >= 0) & (rows < len(trace.launches))]


def _stalled_launches(trace: Trace, classes: pd.Series) -> npt.NDArray[np.bool_]:
    launches = trace.launches
    is_launch = classes.isin(_LAUNCHES).to_numpy(dtype=bool)
    durs = launches[Launches.dur_us].to_numpy(dtype=float)
    if not is_launch.any():
        return np.zeros(len(launches), dtype=bool)
    long = (
        is_launch
        & (durs >= STALL_MIN_US)
        & (durs >= STALL_FACTOR * _medians(launches, is_launch, durs))
    )
    if not long.any():
        return long
    starts = trace.kernels[Kernels.ts_us].to_numpy(dtype=float)
    busy = union(starts, starts + trace.kernels[Kernels.dur_us].to_numpy(dtype=float))
    rows = np.flatnonzero(long)  # the device's busy time only where it decides
    ts = launches[Launches.ts_us].to_numpy(dtype=float)[rows]
    call = np.nan_to_num(durs[rows])
    long[rows] = overlap(*busy, ts, ts + call) < STALL_IDLE_SHARE * call
    return long


def _medians(
    launches: pd.DataFrame, is_launch: npt.NDArray[np.bool_], durs: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """Per launch call, the median duration of the launch calls with its API name (NaN where
    not needed). Taken only for the names with a call of :data:`STALL_MIN_US` or more (the
    only ones a stall can be among), each name's median over its own calls (by code; missing
    names one group)."""
    codes = pd.factorize(launches[Launches.name])[0]
    out = np.full(len(durs), np.nan)
    wanted = np.unique(codes[is_launch & (durs >= STALL_MIN_US)])
    if wanted.size:
        rows = np.flatnonzero(is_launch & np.isin(codes, wanted))
        median = pd.Series(durs[rows]).groupby(codes[rows]).transform("median")
        out[rows] = median.to_numpy(float)
    return out


def issuers(
    trace: Trace, rows: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.object_], npt.NDArray[np.object_]]:
    """For the launch rows ``rows``: the innermost enclosing CPU op or annotation (not a
    ``ProfilerStep#``) and the innermost enclosing Python frame on the same thread, or None."""
    ops = trace.ops
    n = len(rows)
    op_out = np.full(n, None, dtype=object)
    frame_out = np.full(n, None, dtype=object)
    if n == 0 or ops.empty:
        return op_out, frame_out
    launches = trace.launches
    call_ts = launches[Launches.ts_us].to_numpy(dtype=float)[rows]
    call_thread = launches[Launches.thread].iloc[rows].astype(object).to_numpy()
    o_ts = ops[Ops.ts_us].to_numpy(dtype=float)
    o_end = o_ts + np.nan_to_num(ops[Ops.dur_us].to_numpy(dtype=float))
    parent = ops[Ops.parent_row].to_numpy(dtype=float, na_value=-1).astype(np.int64)
    is_frame = (ops[Ops.category] == OpCategory.PYTHON_FUNCTION.value).to_numpy(dtype=bool)
    is_op = ~is_frame & ~is_step_span(ops[Ops.name])
    start = np.full(n, -1, dtype=np.int64)  # latest op starting at or before each call
    for thread in pd.unique(call_thread):
        mine = np.flatnonzero((ops[Ops.thread] == thread).to_numpy(dtype=bool))
        if mine.size == 0:
            continue
        mine = mine[np.argsort(o_ts[mine], kind="stable")]
        calls = np.flatnonzero(call_thread == thread)
        pos = np.searchsorted(o_ts[mine], call_ts[calls], side="right") - 1
        start[calls] = np.where(pos >= 0, mine[np.maximum(pos, 0)], -1)
    op_row, frame_row = _innermost(start, call_ts, o_end, parent, is_frame, is_op, ops[Ops.name])
    names = ops[Ops.name]
    for out, found in ((op_out, op_row), (frame_out, frame_row)):
        at = np.flatnonzero(found >= 0)
        out[at] = [str(v) for v in names.iloc[found[at]].to_numpy(dtype=object)]
    return op_out, frame_out


def _innermost(
    start: npt.NDArray[np.int64],
    call_ts: npt.NDArray[np.float64],
    o_end: npt.NDArray[np.float64],
    parent: npt.NDArray[np.int64],
    is_frame: npt.NDArray[np.bool_],
    is_op: npt.NDArray[np.bool_],
    names: pd.Series,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Per call, the rows (−1: none) of the innermost op (``is_op``) and Python frame that
    end after the call's start, walking up the parents from ``start``: all calls one level
    at a time. A span with an empty name is taken, and replaced by an enclosing one met before
    the search ends (it ends once an op and a frame are both found)."""
    empty = per_name(names, lambda text: text == "")
    found = {kind: np.full(len(start), -1, dtype=np.int64) for kind in ("op", "frame")}
    named = {kind: np.zeros(len(start), dtype=bool) for kind in ("op", "frame")}
    row = start.copy()
    while True:
        at = np.flatnonzero((row >= 0) & ((found["op"] < 0) | (found["frame"] < 0)))
        if at.size == 0:
            return found["op"], found["frame"]
        here = row[at]
        inside = o_end[here] > call_ts[at]
        for kind, mask in (("op", is_op), ("frame", is_frame)):
            take = inside & mask[here] & ~named[kind][at]
            found[kind][at[take]] = here[take]
            named[kind][at[take]] = ~empty[here[take]]
        row[at] = parent[here]


def is_step_span(names: pd.Series) -> npt.NDArray[np.bool_]:
    """Per name (categorical or text), whether it is a ``ProfilerStep#N`` span."""
    return per_name(names, lambda text: text.str.startswith(_STEP_PREFIX))


def per_name(names: pd.Series, test: Callable[[pd.Series], pd.Series]) -> npt.NDArray[np.bool_]:
    """Per row, ``test`` of its value read as text (a categorical column: each category tested
    once, the rows looked up by code; a missing value: False)."""
    if not isinstance(names.dtype, pd.CategoricalDtype):
        return np.asarray(test(names.astype(str)), dtype=bool)
    labels = pd.Series(names.cat.categories.astype(str))
    hit = np.append(np.asarray(test(labels), dtype=bool), False)
    return hit[names.cat.codes.to_numpy()]  # code −1 (missing): the appended False


def _copies(
    trace: Trace, rows: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.object_], npt.NDArray[np.float64]]:
    """Direction and bytes of the copies each call in ``rows`` issued (None / NaN if none)."""
    kernels = trace.kernels
    kinds = np.full(len(rows), None, dtype=object)
    sizes = np.full(len(rows), np.nan)
    if len(rows) == 0 or kernels.empty:
        return kinds, sizes
    link = kernels[Kernels.launch_row].to_numpy(dtype=float, na_value=np.nan)
    is_copy = (kernels[Kernels.activity] == ActivityKind.MEMCPY.value).to_numpy(dtype=bool)
    frame = pd.DataFrame(
        {
            "row": link[is_copy],
            "kind": kernels[Kernels.copy_kind].astype(object).to_numpy()[is_copy],
            "bytes": kernels[Kernels.bytes].to_numpy(dtype=float, na_value=np.nan)[is_copy],
        }
    ).dropna(subset=["row"])
    if frame.empty:
        return kinds, sizes
    frame = frame[frame["row"].isin(rows.astype(float))]
    groups = frame.groupby("row")
    wanted = rows.astype(float)
    kinds = groups["kind"].first().reindex(wanted).to_numpy(dtype=object)
    sizes = groups["bytes"].sum(min_count=1).reindex(wanted).to_numpy(dtype=float)
    return kinds, sizes


def _per_step(windows: StepWindows, calls: pd.DataFrame) -> pd.DataFrame:
    ts = calls[BlockingColumns.ts_us].to_numpy(dtype=float)
    end = ts + calls[BlockingColumns.dur_us].to_numpy(dtype=float)
    step_of = calls[BlockingColumns.step].to_numpy(dtype=np.int64)
    counts = np.bincount(step_of[step_of >= 0], minlength=len(windows.steps))
    rows = []
    for i, (step, lo, hi) in enumerate(windows):
        starts, ends = union(np.clip(ts, lo, hi), np.clip(end, lo, hi))
        rows.append(
            {
                BlockedStep.step: step,
                BlockedStep.wall_us: hi - lo,
                BlockedStep.calls: int(counts[i]),
                BlockedStep.blocked_us: float((ends - starts).sum()),
            }
        )
    table = pd.DataFrame(rows)
    table[BlockedStep.step] = table[BlockedStep.step].astype("Int64")
    return table


def blocked_intervals(calls: pd.DataFrame) -> tuple[npt.NDArray[np.float64], ...]:
    """The union of the blocking calls' spans, as a sorted disjoint interval set (µs)."""
    ts = calls[BlockingColumns.ts_us].to_numpy(dtype=float)
    return union(ts, ts + calls[BlockingColumns.dur_us].to_numpy(dtype=float))
