"""Nesting of spans on a thread: depth, parent, self time, innermost enclosing span.

All functions work on spans already sorted by (thread, start, longest first), with no
per-span Python loop: depth comes from two sorted searches, parents from one search per depth
level. Threads are kept apart by laying them out on one number line (``timeline_keys``), each
thread in its own window far from the others.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Timeline:
    """Maps (thread code, time) to one sortable number so all threads are searched at once."""

    origin_us: float
    window_us: float

    @classmethod
    def covering(cls, starts: np.ndarray, ends: np.ndarray) -> Timeline:
        """The timeline whose windows hold every finite start and end (each array's finite
        extremes read in place: no filtered copies)."""
        lo, hi = np.inf, -np.inf
        for times in (starts, ends):
            finite = np.isfinite(times)
            lo = min(lo, float(np.min(times, where=finite, initial=np.inf)))
            hi = max(hi, float(np.max(times, where=finite, initial=-np.inf)))
        if lo > hi:  # no finite time at all
            return cls(0.0, 1.0)
        return cls(lo, 2.0 * (hi - lo) + 1.0)

    def keys(self, thread_codes: np.ndarray, times_us: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", over="ignore"):  # absurd timestamps sort last
            return thread_codes.astype(np.float64) * self.window_us + (times_us - self.origin_us)


def sort_order(thread_codes: np.ndarray, starts: np.ndarray, durs: np.ndarray) -> np.ndarray:
    """Row order by thread, then start, then longest first (so parents precede children);
    rows equal in all three keep their order (a missing start or duration counts as 0): the
    order of ``np.lexsort((-durs, starts, thread_codes))``.

    Made the way a profiler's output makes cheap: a stable sort by start (linear when the
    rows come in time order, none at all when they are), a stable radix sort by thread code,
    then longest first among the few rows that start together on a thread."""
    start_keys, dur_keys = np.nan_to_num(starts), -np.nan_to_num(durs)
    if len(start_keys) and np.all(start_keys[1:] >= start_keys[:-1]):
        order = np.arange(len(start_keys))
    else:
        order = np.argsort(start_keys, kind="stable")
    order = order[np.argsort(_small_ints(thread_codes[order]), kind="stable")]
    threads, start = thread_codes[order], start_keys[order]
    tied = (start[1:] == start[:-1]) & (threads[1:] == threads[:-1])
    if not tied.any():
        return order
    # Runs of rows tied on (thread, start): each run sorted by duration, longest first.
    run = np.concatenate([[0], np.cumsum(~tied)])
    members = np.flatnonzero(np.concatenate([tied, [False]]) | np.concatenate([[False], tied]))
    within = np.lexsort((dur_keys[order[members]], run[members]))
    order[members] = order[members[within]]
    return order


def _small_ints(values: np.ndarray) -> np.ndarray:
    """Integer ``values`` as int16 when they fit (NumPy's stable sort of 8- and 16-bit
    integers is a radix sort: linear), else as they are; the order of a stable sort is the
    same either way."""
    if values.dtype.kind not in "iu" or values.dtype.itemsize <= 2 or len(values) == 0:
        return values
    small = np.iinfo(np.int16)
    if small.min <= values.min() and values.max() <= small.max:
        return values.astype(np.int16)
    return values


def depths(start_keys: np.ndarray, end_keys: np.ndarray, durs: np.ndarray) -> np.ndarray:
    """Nesting depth of each span (0 = outermost), spans sorted by :func:`sort_order`.

    depth(i) = spans before i on its thread that have not ended when i starts. Spans before i
    all start no later than i, so this is i's position minus the spans that ended by then.
    The spans that "ended by then" counted from all spans take in too the zero-length (or
    negative) spans that start with i and sort at or after it (longest first): those are
    not before i and are given back.
    """
    ended_sorted = np.sort(end_keys, kind="stable")  # nearly sorted already: timsort is linear
    ended_before = np.searchsorted(ended_sorted, start_keys, side="right")
    position = np.arange(len(start_keys))
    depth = position - ended_before + _empty_from_here(start_keys, durs <= 0)
    return np.maximum(depth, 0).astype(np.int32)


def _empty_from_here(start_keys: np.ndarray, empty: np.ndarray) -> np.ndarray:
    """Per span, the empty spans at or after it among those starting with it (spans sorted
    by start key, so a tie is a run of neighbours)."""
    if len(start_keys) == 0:
        return np.zeros(0, dtype=np.int64)
    new_run = np.concatenate([[True], start_keys[1:] != start_keys[:-1]])
    run = np.cumsum(new_run) - 1
    count = empty.astype(np.int64)
    before = np.cumsum(count) - count  # empty spans before each row, all runs
    run_first = np.flatnonzero(new_run)
    run_total = np.add.reduceat(count, run_first)
    before_in_run = before - before[run_first][run]
    return run_total[run] - before_in_run


def parents(depth: np.ndarray, thread_codes: np.ndarray) -> np.ndarray:
    """Row of each span's parent (−1 for outermost), spans sorted by :func:`sort_order`.

    The parent is the nearest earlier span on the same thread one level up.
    """
    parent = np.full(len(depth), -1, dtype=np.int64)
    if len(depth) == 0:
        return parent
    rows_by_depth = np.argsort(_small_ints(depth), kind="stable")
    bounds = np.searchsorted(depth[rows_by_depth], np.arange(int(depth.max()) + 2))
    for level in range(1, int(depth.max()) + 1):
        above = rows_by_depth[bounds[level - 1] : bounds[level]]
        here = rows_by_depth[bounds[level] : bounds[level + 1]]
        if above.size == 0 or here.size == 0:
            continue
        pos = np.searchsorted(above, here) - 1
        found = pos >= 0
        candidate = above[np.maximum(pos, 0)]
        ok = found & (thread_codes[candidate] == thread_codes[here])
        parent[here[ok]] = candidate[ok]
    return parent


def self_times(durs: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Duration minus the summed durations of direct children (µs, never below 0)."""
    has_parent = parent >= 0
    child_total = np.bincount(
        parent[has_parent], weights=np.nan_to_num(durs[has_parent]), minlength=len(durs)
    )
    return np.maximum(durs - child_total, 0.0)


def innermost_enclosing(
    span_start_keys: np.ndarray,
    span_end_keys: np.ndarray,
    parent: np.ndarray,
    eligible: np.ndarray,
    query_start_keys: np.ndarray,
    query_end_keys: np.ndarray,
) -> np.ndarray:
    """For each query interval, the innermost eligible span containing it (−1 if none).

    Spans are sorted by :func:`sort_order`; keys come from one :class:`Timeline`. Starts at the
    last span starting at or before the query and climbs parents until one contains the query
    and is eligible. Each climb step is one vectorised pass.
    """
    result = np.full(len(query_start_keys), -1, dtype=np.int64)
    if len(span_start_keys) == 0 or len(query_start_keys) == 0:
        return result
    current = np.searchsorted(span_start_keys, query_start_keys, side="right") - 1
    pending = np.flatnonzero(current >= 0)
    current = current[pending]
    while pending.size:
        contains = (span_start_keys[current] <= query_start_keys[pending]) & (
            span_end_keys[current] >= query_end_keys[pending]
        )
        done = contains & eligible[current]
        result[pending[done]] = current[done]
        climb = ~done
        pending, current = pending[climb], parent[current[climb]]
        alive = current >= 0
        pending, current = pending[alive], current[alive]
    return result
