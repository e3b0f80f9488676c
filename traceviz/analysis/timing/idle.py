"""Device idle time explained over the whole step (GPU traces; measured).

Each step window's device idle time (wall time minus the union of device activity that starts
in the step, clipped to it) is a set of gaps: the **leading** gap (step start → first device
activity), gaps **between** activities, and the **trailing** gap (last activity → step end).
Each gap is split, in this order of precedence, into:

- ``blocked_us`` — **blocked by a sync**: the CPU was inside a blocking call
  (:mod:`traceviz.analysis.timing.blocking`) while the device had nothing to run;
- ``cpu_wait_us`` — **waiting for the CPU**: the next activity's launch call had not yet
  returned (leading and trailing gaps: the CPU had not issued anything yet / anything more);
- ``event_wait_us`` — **waiting on another stream / event**: the next activity had been
  issued (its launch call had returned) after a stream-wait-event call on its thread
  (``cudaStreamWaitEvent``/``hipStreamWaitEvent``, :mod:`traceviz.analysis.timing.stream_waits`):
  its stream waited for another stream's work, not for the launch;
- ``launch_latency_us`` — **launch latency**: the next activity's launch call had returned,
  but the activity had not started yet;
- ``between_us`` — **between kernels**: the next activity was issued before the gap began
  (queued behind a dependency, another stream, or a replayed graph's own gaps); also mid-step
  gaps before an activity with no known launch, except where the CPU was blocked meanwhile
  (that part is ``blocked_us``).

The five parts add up to ``idle_us`` per step. :attr:`IdleSplit.cpu_work` names the CPU ops and
annotations (the outermost ones on the launching thread, not ``ProfilerStep#``) that ran while
the device waited for the CPU, and how long each overlapped the wait;
:attr:`IdleSplit.recorded_us` how much of the wait any recorded CPU work covers (ops,
annotations and Python frames together).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from traceviz.analysis.timing.blocking import (
    BlockingCalls,
    blocked_intervals,
    is_step_span,
    per_name,
)
from traceviz.analysis.timing.stream_waits import gated_activities
from traceviz.analysis.windows import (
    FloatArray,
    StepWindows,
    overlap,
    prefix_lengths,
    subtract,
    union,
)
from traceviz.schema import Kernels, Launches, OpCategory, Ops
from traceviz.trace import Trace

#: Python frames during which the CPU waits rather than works (built-in sleeps, lock acquires,
#: waits, selects, joins; ``threading.py(…): wait``): not recorded CPU work.
IDLE_FRAMES = re.compile(
    r"<built-in (?:function|method) (?:sleep|acquire|wait|select|poll|join|recv)\b"
    r"|\): (?:wait|join|sleep|acquire|select)$"
)
#: A gap this long (µs) is CPU work, not launch overhead: launching one kernel costs µs.
LONG_GAP_US = 1000.0
#: Where in the step a wait happened (:attr:`CpuWork.where`).
LEADING, BETWEEN, TRAILING = "before the first kernel", "between kernels", "after the last kernel"


class IdleParts:
    """Columns of :attr:`IdleSplit.per_step` (one row per step window), µs."""

    step = "step"  # ProfilerStep number (Int64; <NA> for the whole-trace window)
    wall_us = "wall_us"  # step wall time
    busy_us = "busy_us"  # union of device activity starting in the step, clipped to it
    # wall_us − busy_us = blocked + cpu_wait + event_wait + launch_latency + between
    idle_us = "idle_us"
    blocked_us = "blocked_us"  # idle while the CPU was inside a blocking call
    cpu_wait_us = "cpu_wait_us"  # idle waiting for the CPU to issue work
    # idle with the next work issued behind a stream-wait-event call (another stream's work)
    event_wait_us = "event_wait_us"
    launch_latency_us = "launch_latency_us"  # idle between a launch's return and its start
    between_us = "between_us"  # idle with the next work already issued
    lead_us = "lead_us"  # the leading gap (step start → first activity; whole step if none)
    lead_cpu_wait_us = "lead_cpu_wait_us"  # cpu_wait_us inside the leading gap
    trail_us = "trail_us"  # the trailing gap (last activity → step end)
    trail_cpu_wait_us = "trail_cpu_wait_us"  # cpu_wait_us inside the trailing gap
    long_cpu_wait_us = "long_cpu_wait_us"  # cpu_wait_us inside gaps ≥ LONG_GAP_US long


PARTS = (
    IdleParts.blocked_us,
    IdleParts.cpu_wait_us,
    IdleParts.event_wait_us,
    IdleParts.launch_latency_us,
    IdleParts.between_us,
)


class CpuWork:
    """Columns of :attr:`IdleSplit.cpu_work`: per step, gap position and op name, the time the
    op overlapped the device's wait for the CPU (largest first within a step)."""

    step = "step"  # step window index (int64)
    where = "where"  # LEADING / BETWEEN / TRAILING
    name = "name"  # the CPU op or annotation
    category = "category"  # OpCategory value
    overlap_us = "overlap_us"  # its time inside the wait, µs (summed over calls)


@dataclass(frozen=True)
class IdleSplit:
    """The idle split of one trace (see the module docstring)."""

    per_step: pd.DataFrame  # columns: IdleParts
    cpu_work: pd.DataFrame  # columns: CpuWork
    main_thread: str | None  # the thread whose ops are named (most launch calls)
    #: the idle time counted in ``blocked_us``, as a sorted disjoint interval set (µs)
    blocked_spans: tuple[FloatArray, FloatArray]
    #: the part of ``cpu_wait_us`` (summed over the steps) during which the main thread ran
    #: recorded CPU work: a CPU op, an annotation or a Python frame (``python_function``,
    #: ``with_stack=True``), not ``ProfilerStep#`` and not a frame that waits
    #: (:data:`IDLE_FRAMES`: ``sleep``, lock ``acquire``, ``wait``, …), µs
    recorded_us: float = 0.0

    def total(self, column: str) -> float:
        """A column of :attr:`per_step` summed over the steps, µs."""
        return float(self.per_step[column].sum()) if len(self.per_step) else 0.0

    @property
    def largest(self) -> str | None:
        """The part (an :class:`IdleParts` column in :data:`PARTS`) with the most time, or
        None when there is no idle time."""
        totals = {part: self.total(part) for part in PARTS}
        best = max(totals, key=lambda k: totals[k])
        return best if totals[best] > 0 else None


def idle_split(trace: Trace, windows: StepWindows, blocking: BlockingCalls) -> IdleSplit:
    """Split each step's device idle time (see the module docstring)."""
    kernels = trace.kernels
    starts = kernels[Kernels.ts_us].to_numpy(dtype=float)
    ends = starts + np.nan_to_num(kernels[Kernels.dur_us].to_numpy(dtype=float))
    issued = kernels[Kernels.launch_ts_us].to_numpy(dtype=float) + kernels[
        Kernels.launch_dur_us
    ].to_numpy(dtype=float)
    # by start (stable: ties in row order, as each step's own stable sort had them), so that
    # a step's activities are one slice, found by two binary searches
    gated = gated_activities(trace)
    order = np.argsort(starts, kind="stable")
    starts, ends, issued, gated = starts[order], ends[order], issued[order], gated[order]
    blocked_set = _Blocked(*blocked_intervals(blocking.calls))
    thread = _main_thread(trace)
    ops = _outer_ops(trace, thread)
    outer = _OuterOps(ops)
    split = _split_steps if windows.in_order() else _split_each
    activities = (starts, ends, issued, gated)
    rows, work, blocked_spans, waits = split(windows, activities, blocked_set, outer)
    columns = [v for k, v in vars(IdleParts).items() if not k.startswith("_")]  # in order
    per_step = pd.DataFrame(rows, columns=columns)
    per_step[IdleParts.step] = per_step[IdleParts.step].astype("Int64")
    return IdleSplit(
        per_step=per_step,
        cpu_work=_work_table(ops, work),
        main_thread=thread,
        blocked_spans=blocked_spans,
        recorded_us=float(overlap(*_recorded_work(trace, thread), *waits).sum()),
    )


#: Activities sorted by start: starts, ends and launch ends (µs), and whether each is gated by
#: a stream-wait-event call (:func:`~traceviz.analysis.timing.stream_waits.gated_activities`).
_Activities = tuple[FloatArray, FloatArray, FloatArray, npt.NDArray[np.bool_]]
#: One step's parts: the rows of :attr:`IdleSplit.per_step`, the CPU work, the blocked spans
#: and the spans the device waited for the CPU (disjoint within a step; blocked time removed).
_Parts = tuple[
    list[dict[str, object]],
    list["_Work"],
    tuple[FloatArray, FloatArray],
    tuple[FloatArray, FloatArray],
]


def _split_each(
    windows: StepWindows, activities: _Activities, blocked_set: _Blocked, outer: _OuterOps
) -> _Parts:
    """:func:`_split_steps` one window at a time, for any windows (unordered, overlapping,
    infinite): each window alone is in order."""
    starts, ends, issued, gated = activities
    rows: list[dict[str, object]] = []
    work: list[_Work] = []
    spans: list[tuple[FloatArray, FloatArray]] = []
    waits: list[tuple[FloatArray, FloatArray]] = []
    for i, (step, lo, hi) in enumerate(windows):
        at = slice(*np.searchsorted(starts, [lo, hi], side="left"))
        mine = (starts[at], ends[at], issued[at], gated[at])
        one = StepWindows([step], np.array([lo]), np.array([hi]))
        near = _Blocked(*blocked_set.near(lo, hi))
        row, got, blocked, wait = _split_steps(one, mine, near, outer)
        rows += row
        work += [(i, *piece[1:]) for piece in got]
        spans.append(blocked)
        waits.append(wait)

    def joined(parts: list[tuple[FloatArray, FloatArray]], k: int) -> FloatArray:
        return np.concatenate([np.empty(0), *(p[k] for p in parts)])

    return (
        rows,
        work,
        union(joined(spans, 0), joined(spans, 1)),
        (joined(waits, 0), joined(waits, 1)),
    )


_LEAD, _BETWEEN, _TRAIL = 0, 1, 2  # gap positions by code (:func:`_split_steps`)
_WHERE = np.array([LEADING, BETWEEN, TRAILING], dtype=object)


def _split_steps(
    windows: StepWindows, activities: _Activities, blocked_set: _Blocked, outer: _OuterOps
) -> _Parts:
    """The split of windows in order (:meth:`StepWindows.in_order`), all steps at once: the
    gaps (:func:`_step_gaps`) split element-wise, each step's sums over its own slice, the set
    operations once over all steps, each result kept to its step (:func:`_union_by`,
    :func:`_subtract_by`); the CPU work is measured step by step."""
    lo, hi, issued, where, step, gated = _step_gaps(windows, activities)
    n_steps = windows.start_us.size
    bounds = np.searchsorted(step, np.arange(n_steps + 1), side="left")
    known = np.isfinite(issued)
    edge = where != _BETWEEN
    wait_end = np.where(known, np.clip(issued, lo, hi), np.where(edge, hi, lo))
    latency = np.where(known & (issued > lo), hi - wait_end, 0.0)
    between = (hi - lo) - (wait_end - lo) - latency
    # with the next activity gated, the time with it issued is waiting on another stream
    gated = gated & known
    event = np.where(gated, latency + between, 0.0)
    latency, between = np.where(gated, 0.0, latency), np.where(gated, 0.0, between)
    blocked = blocked_set.overlap(lo, wait_end)
    cpu = (wait_end - lo) - blocked
    unknown = np.where(~known & ~edge, blocked_set.overlap(lo, hi), 0.0)
    blocked, between = blocked + unknown, between - unknown
    idle = hi - lo
    # the wait intervals less the blocked time, per step, and the gap each one starts in
    w_lo, w_hi, w_step = _subtract_by(
        *_union_by(lo, wait_end, step), blocked_set.lo, blocked_set.hi
    )
    pos = np.searchsorted(lo, w_lo, side="right") - 1
    pos = np.clip(pos, bounds[w_step], bounds[w_step + 1] - 1)
    w_where = _WHERE[where[pos]]
    w_bounds = np.searchsorted(w_step, np.arange(n_steps + 1), side="left")
    rows: list[dict[str, object]] = []
    work: list[_Work] = []
    for i, (step_id, w_start, w_end) in enumerate(windows):
        at = slice(bounds[i], bounds[i + 1])
        gap, cpu_i, kind = idle[at], cpu[at], where[at]
        lead, trail = kind == _LEAD, kind == _TRAIL
        row = {
            IdleParts.idle_us: float(gap.sum()),
            IdleParts.blocked_us: float(blocked[at].sum()),
            IdleParts.cpu_wait_us: float(cpu_i.sum()),
            IdleParts.event_wait_us: float(event[at].sum()),
            IdleParts.launch_latency_us: float(latency[at].sum()),
            IdleParts.between_us: float(between[at].sum()),
            IdleParts.lead_us: float(gap[lead].sum()),
            IdleParts.lead_cpu_wait_us: float(cpu_i[lead].sum()),
            IdleParts.trail_us: float(gap[trail].sum()),
            IdleParts.trail_cpu_wait_us: float(cpu_i[trail].sum()),
            IdleParts.long_cpu_wait_us: float(cpu_i[gap >= LONG_GAP_US].sum()),
        }
        row[IdleParts.busy_us] = max((w_end - w_start) - row[IdleParts.idle_us], 0.0)
        rows.append({IdleParts.step: step_id, IdleParts.wall_us: w_end - w_start, **row})
        waits = slice(w_bounds[i], w_bounds[i + 1])
        work += _cpu_work(outer, (w_lo[waits], w_hi[waits], w_where[waits]), i)
    # the blocked spans of every step: idle time waiting (or unexplained) while blocked
    open_lo = np.concatenate([lo, lo[~known & ~edge]])
    open_hi = np.concatenate([wait_end, hi[~known & ~edge]])
    spans = _intersect(*union(open_lo, open_hi), blocked_set.lo, blocked_set.hi)
    return rows, work, union(*spans), (w_lo, w_hi)


def _step_gaps(
    windows: StepWindows, activities: _Activities
) -> tuple[
    FloatArray,
    FloatArray,
    FloatArray,
    npt.NDArray[np.int8],
    npt.NDArray[np.int64],
    npt.NDArray[np.bool_],
]:
    """The idle gaps of every window in order (:meth:`StepWindows.in_order`), one after
    the other: each gap's [lo, hi), the next activity's launch end, its position code, its
    window index and whether the next activity is gated by a stream-wait-event call.

    An activity belongs to the last window starting at or before it, if it starts before that
    window's end. The activities are in start order, so each window's are one run; its gaps
    are the leading one, one before each further activity and the trailing one (the leading
    one only, the whole window, when it has none), empty ones dropped. The running reach of
    the ends (clipped to the window) is taken over all of them at once: an earlier window's
    ends lie at or before this window's start, so they never raise it."""
    starts, ends, issued, gated = activities
    w_lo, w_hi = windows.start_us, windows.end_us
    n_steps = w_lo.size
    step_of = np.searchsorted(w_lo, starts, side="right") - 1
    safe = np.clip(step_of, 0, None)
    inside = (step_of >= 0) & np.isfinite(starts) & (starts >= w_lo[safe]) & (starts < w_hi[safe])
    act = np.flatnonzero(inside)
    a_step = step_of[act]
    a_lo, a_hi = w_lo[a_step], w_hi[a_step]
    s = np.clip(starts[act], a_lo, a_hi)
    reach = np.maximum.accumulate(np.clip(ends[act], a_lo, a_hi)) if act.size else s
    first = np.ones(act.size, dtype=bool)
    first[1:] = a_step[1:] != a_step[:-1]
    previous = np.empty(act.size)
    previous[1:] = reach[:-1]
    counts = np.bincount(a_step, minlength=n_steps)
    ends_at = np.cumsum(counts)  # per window, its activities' end in ``act``
    total = act.size + n_steps
    lo, hi, launched = np.empty(total), np.empty(total), np.empty(total)
    gate = np.zeros(total, dtype=bool)
    where = np.empty(total, dtype=np.int8)
    step = np.empty(total, dtype=np.int64)
    at = np.arange(act.size) + a_step  # one trailing gap per earlier window before it
    lo[at] = np.where(first, a_lo, previous)
    hi[at] = s
    launched[at] = issued[act]
    gate[at] = gated[act]
    where[at] = np.where(first, _LEAD, _BETWEEN)
    step[at] = a_step
    trail = ends_at + np.arange(n_steps)
    some = counts > 0
    lo[trail] = np.where(some, reach[np.maximum(ends_at - 1, 0)] if act.size else w_lo, w_lo)
    hi[trail] = w_hi
    launched[trail] = np.nan
    where[trail] = np.where(some, _TRAIL, _LEAD)
    step[trail] = np.arange(n_steps)
    keep = hi > lo
    return lo[keep], hi[keep], launched[keep], where[keep], step[keep], gate[keep]


def _union_by(
    starts: FloatArray, ends: FloatArray, group: npt.NDArray[np.int64]
) -> tuple[FloatArray, FloatArray, npt.NDArray[np.int64]]:
    """:func:`~traceviz.analysis.windows.union` of each group's intervals on its own (groups:
    window indices of windows in order, so that every interval of a group lies at or after
    every interval of the groups before it), in group order, with each result's group."""
    keep = np.isfinite(starts) & np.isfinite(ends) & (ends > starts)
    s, e, g = starts[keep], ends[keep], group[keep]
    if s.size == 0:
        return np.empty(0), np.empty(0), np.empty(0, dtype=np.int64)
    order = np.lexsort((s, g))  # stable: ties in the order given, as union's argsort
    s, e, g = s[order], e[order], g[order]
    reach = np.maximum.accumulate(e)
    new = np.ones(s.size, dtype=bool)
    new[1:] = (s[1:] > reach[:-1]) | (g[1:] != g[:-1])
    last = np.append(np.flatnonzero(new)[1:] - 1, s.size - 1)
    # a merged interval's end is its largest: the reach at its last member (every earlier
    # interval ends before its first member starts, which ends after it starts)
    return s[new], reach[last], g[new]


def _subtract_by(
    a_starts: FloatArray,
    a_ends: FloatArray,
    a_group: npt.NDArray[np.int64],
    b_starts: FloatArray,
    b_ends: FloatArray,
) -> tuple[FloatArray, FloatArray, npt.NDArray[np.int64]]:
    """:func:`~traceviz.analysis.windows.subtract` of set B from each group's part of A
    (:func:`_union_by`'s result: sorted, disjoint), with each result's group: A's pieces cut at
    every endpoint, those inside A and not inside B merged again within their group."""
    if a_starts.size == 0 or b_starts.size == 0:
        return a_starts, a_ends, a_group
    points = np.unique(np.concatenate([a_starts, a_ends, b_starts, b_ends]))
    lo, hi = points[:-1], points[1:]
    mid = (lo + hi) / 2
    idx = np.searchsorted(a_starts, mid, side="right") - 1
    safe = np.clip(idx, 0, None)
    in_a = (idx >= 0) & (mid < a_ends[safe])
    at_b = np.searchsorted(b_starts, mid, side="right") - 1
    in_b = (at_b >= 0) & (mid < b_ends[np.clip(at_b, 0, None)])
    keep = in_a & ~in_b
    return _union_by(lo[keep], hi[keep], a_group[safe][keep])


class _Blocked:
    """The blocked interval set (sorted, disjoint, µs) and its prefix lengths, computed once
    for every step's :func:`~traceviz.analysis.windows.overlap`."""

    def __init__(self, lo: FloatArray, hi: FloatArray) -> None:
        self.lo, self.hi = lo, hi
        self._prefix = prefix_lengths(lo, hi)

    def overlap(self, lo: FloatArray, hi: FloatArray) -> FloatArray:
        """Per interval [lo, hi), its overlap with the blocked set, µs."""
        return overlap(self.lo, self.hi, lo, hi, self._prefix)

    def near(self, lo: float, hi: float) -> tuple[FloatArray, FloatArray]:
        """The blocked intervals touching [lo, hi] (ends included), as a set: subtracting
        these from a set inside [lo, hi] gives what subtracting the whole set gives (the
        others only add points outside it); the whole set when the window is not finite."""
        if not (np.isfinite(lo) and np.isfinite(hi)):
            return self.lo, self.hi
        first = int(np.searchsorted(self.hi, min(lo, hi), side="left"))
        last = int(np.searchsorted(self.lo, max(lo, hi), side="right"))
        return self.lo[first:last], self.hi[first:last]


def _intersect(
    a_lo: FloatArray, a_hi: FloatArray, b_lo: FloatArray, b_hi: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """A ∩ B of two sorted disjoint interval sets."""
    return subtract(a_lo, a_hi, *subtract(a_lo, a_hi, b_lo, b_hi))


def _main_thread(trace: Trace) -> str | None:
    """The thread with the most launch calls (the one that feeds the device)."""
    threads = trace.launches[Launches.thread]
    if threads.empty:
        return None
    # value_counts' first: the most calls, the first to appear among equals
    codes, uniques = pd.factorize(threads)
    counts = np.bincount(codes[codes >= 0], minlength=len(uniques))
    if not counts.size:
        return str(threads.astype(str).value_counts().index[0])
    return str(uniques[int(np.argmax(counts))])


def _outer_ops(trace: Trace, thread: str | None) -> pd.DataFrame:
    """The outermost CPU ops and annotations of ``thread`` (not ``ProfilerStep#``): each starts
    after every earlier one has ended, so they never overlap and their credited time never
    exceeds the wait. Found by time, not by ``parent_row``: Python frames recorded with
    ``with_stack=True`` do not always nest cleanly around the ops."""
    ops = trace.ops
    if thread is None or ops.empty:
        return ops[list(_OUTER_COLUMNS)].iloc[:0]
    mine = (
        (ops[Ops.thread] == thread).to_numpy(dtype=bool)
        & (ops[Ops.category] != OpCategory.PYTHON_FUNCTION.value).to_numpy(dtype=bool)
        & ~is_step_span(ops[Ops.name])
    )
    rows = np.flatnonzero(mine)
    ts = ops[Ops.ts_us].to_numpy(dtype=float)[rows]
    end = ts + np.nan_to_num(ops[Ops.dur_us].to_numpy(dtype=float)[rows])
    order = _by_start_longer_first(ts, end)
    rows, ts, end = rows[order], ts[order], end[order]
    reach = np.concatenate([[-np.inf], np.maximum.accumulate(end)[:-1]])
    return ops[list(_OUTER_COLUMNS)].iloc[rows[ts >= reach]]  # the columns read of them


def _recorded_work(trace: Trace, thread: str | None) -> tuple[FloatArray, FloatArray]:
    """The spans (sorted, disjoint, µs) during which ``thread`` ran recorded CPU work: its
    CPU ops, annotations and Python frames, less the frames that wait (:data:`IDLE_FRAMES`);
    ``ProfilerStep#`` spans left out (they cover the whole step, work or not)."""
    ops = trace.ops
    if thread is None or ops.empty:
        return np.empty(0), np.empty(0)
    mine = (ops[Ops.thread] == thread).to_numpy(dtype=bool) & ~is_step_span(ops[Ops.name])
    python = (ops[Ops.category] == OpCategory.PYTHON_FUNCTION.value).to_numpy(dtype=bool)
    waiting = mine & python & per_name(ops[Ops.name], lambda text: text.str.contains(IDLE_FRAMES))
    ts = ops[Ops.ts_us].to_numpy(dtype=float)
    end = ts + np.nan_to_num(ops[Ops.dur_us].to_numpy(dtype=float))
    work = mine & ~waiting
    return subtract(*union(ts[work], end[work]), *union(ts[waiting], end[waiting]))


#: The ops columns the outer ops are read by (:class:`_OuterOps`, :func:`_work_table`).
_OUTER_COLUMNS = (Ops.ts_us, Ops.dur_us, Ops.name, Ops.category)


def _by_start_longer_first(ts: FloatArray, end: FloatArray) -> npt.NDArray[np.intp]:
    """``np.lexsort((-end, ts))``: by start, the longer first on equal starts, then in row
    order. The ops table is in start order already, so only runs of equal starts are sorted
    (a row with a start of its own stays where it is); any other order is sorted whole."""
    n = ts.size
    if n < 2 or not bool(np.all(ts[1:] >= ts[:-1])):  # (a NaN start: sorted whole)
        return np.lexsort((-end, ts))
    equal = ts[1:] == ts[:-1]
    tied = np.zeros(n, dtype=bool)
    tied[1:] |= equal
    tied[:-1] |= equal
    order = np.arange(n, dtype=np.intp)
    at = np.flatnonzero(tied)
    order[at] = at[np.lexsort((-end[at], ts[at]))]
    return order


#: One piece of CPU work: (step index, where, row in the outer-ops table, overlap µs).
_Work = tuple[int, str, npt.NDArray[np.int64], FloatArray]


class _OuterOps:
    """The outer ops' spans [lo, hi) (µs), and whether both ends are sorted (the outer ops
    never overlap, so they are unless a duration is negative), for :meth:`rows_within`."""

    def __init__(self, ops: pd.DataFrame) -> None:
        self.lo = ops[Ops.ts_us].to_numpy(dtype=float)
        self.hi = self.lo + np.nan_to_num(ops[Ops.dur_us].to_numpy(dtype=float))
        self.sorted = bool(np.all(np.diff(self.lo) >= 0) and np.all(np.diff(self.hi) >= 0))

    def rows_within(self, start: float, end: float) -> npt.NDArray[np.intp]:
        """Rows (ascending) whose span ends after ``start`` and begins before ``end``."""
        if not self.sorted:
            return np.flatnonzero((self.hi > start) & (self.lo < end))
        first = int(np.searchsorted(self.hi, start, side="right"))
        last = int(np.searchsorted(self.lo, end, side="left"))
        return np.arange(first, max(first, last), dtype=np.intp)


def _cpu_work(
    outer: _OuterOps,
    wait: tuple[FloatArray, FloatArray, npt.NDArray[np.object_]],
    step: int,
) -> list[_Work]:
    """The overlap of the outer ops with one step's wait intervals, per gap position."""
    w_lo, w_hi, where = wait
    o_lo, o_hi = outer.lo, outer.hi
    if o_lo.size == 0 or w_lo.size == 0:
        return []
    rows = outer.rows_within(w_lo[0], w_hi[-1])
    out: list[_Work] = []
    for label in (LEADING, BETWEEN, TRAILING):
        mine = where == label
        if rows.size and mine.any():
            got = overlap(w_lo[mine], w_hi[mine], o_lo[rows], o_hi[rows])
            hit = got > 0
            out.append((step, label, rows[hit], got[hit]))
    return out


_WORK_COLUMNS = [CpuWork.step, CpuWork.where, CpuWork.name, CpuWork.category, CpuWork.overlap_us]


def _work_table(ops: pd.DataFrame, work: list[_Work]) -> pd.DataFrame:
    """:class:`CpuWork` rows: overlaps summed per step, position and name, largest first.
    Grouped by codes and spelled after the sum (a missing name or category reads "nan")."""
    if not work:
        return pd.DataFrame(columns=_WORK_COLUMNS)
    rows = np.concatenate([w[2] for w in work])
    positions = [LEADING, BETWEEN, TRAILING]
    frame = pd.DataFrame(
        {
            CpuWork.step: np.concatenate([np.full(w[2].size, w[0]) for w in work]),
            CpuWork.where: np.concatenate(
                [np.full(w[2].size, positions.index(w[1])) for w in work]
            ),
            CpuWork.overlap_us: np.concatenate([w[3] for w in work]),
        }
    )
    texts = {CpuWork.where: np.array(positions, dtype=object)}
    for column, source in ((CpuWork.name, Ops.name), (CpuWork.category, Ops.category)):
        codes, uniques = pd.factorize(ops[source].iloc[rows], use_na_sentinel=False)
        frame.insert(len(frame.columns) - 1, column, codes)
        texts[column] = np.asarray(uniques.astype(str), dtype=object)
    summed = frame.groupby(_WORK_COLUMNS[:4], sort=False)[CpuWork.overlap_us].sum().reset_index()
    for column, spelled in texts.items():
        summed[column] = pd.array(spelled, dtype="str").take(summed[column].to_numpy())
    return summed.sort_values(
        [CpuWork.step, CpuWork.overlap_us], ascending=[True, False], kind="stable"
    ).reset_index(drop=True)
