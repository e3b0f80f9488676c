"""Step windows and interval arithmetic shared by the launch, blocking and idle analyses.

A step window is one ``ProfilerStep#N`` span, or the whole trace as one window when the trace
has no steps. Intervals are half-open ``[start, end)`` in µs on the trace's clock; an interval
*set* is a pair of sorted arrays of disjoint intervals.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from traceviz.analysis.kernels import issue_us
from traceviz.schema import Ops, Steps
from traceviz.trace import Trace

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class StepWindows:
    """Step windows: ``steps`` (ProfilerStep numbers; <NA> for a whole-trace window) and
    their ``start_us`` / ``end_us`` (µs, trace clock)."""

    steps: list[int | None]
    start_us: np.ndarray
    end_us: np.ndarray

    def __iter__(self) -> Iterator[tuple[int | None, float, float]]:
        return zip(self.steps, self.start_us.tolist(), self.end_us.tolist(), strict=True)

    def index_of(self, points: FloatArray) -> npt.NDArray[np.int64]:
        """Per time point (µs), the index of the window holding it (−1: outside all)."""
        order = np.argsort(self.start_us, kind="stable")
        starts, ends = self.start_us[order], self.end_us[order]
        pos = np.searchsorted(starts, points, side="right") - 1
        safe = np.clip(pos, 0, max(len(starts) - 1, 0))
        inside = (pos >= 0) & np.isfinite(points) & (points < ends[safe])
        return np.where(inside, order[safe], -1).astype(np.int64)

    def in_order(self) -> bool:
        """Finite windows, none of negative length, each starting at or after the end of the
        one before: a time point then lies in at most one window, and the windows' points,
        window after window, are in time order."""
        lo, hi = self.start_us, self.end_us
        return bool(
            np.isfinite(lo).all() and np.isfinite(hi).all() and (hi >= lo).all()
            and (lo[1:] >= hi[:-1]).all()
        )  # fmt: skip

    def rows_by_window(
        self, times: FloatArray
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.intp]]:
        """For windows :meth:`in_order`: the rows whose time is inside a window (``lo <= t <
        hi``, so never NaN), window after window, each window's in row order, each row's
        window, and the bounds: window ``i``'s rows are ``rows[bounds[i]:bounds[i + 1]]``."""
        at = np.searchsorted(self.start_us, times, side="right") - 1
        safe = np.clip(at, 0, None)
        inside = (at >= 0) & (times >= self.start_us[safe]) & (times < self.end_us[safe])
        rows = np.flatnonzero(inside)
        window = at[rows]
        order = np.argsort(window, kind="stable")
        rows, window = rows[order], window[order]
        bounds = np.searchsorted(window, np.arange(len(self.steps) + 1), side="left")
        return rows, window, bounds


#: A last step shorter than this share of the shortest of the others, ending where the trace's
#: CPU events end, was cut off by the profiler's stop (:func:`full_steps`).
PARTIAL_STEP_SHARE = 0.25


def full_steps(trace: Trace) -> pd.DataFrame:
    """``trace.steps`` (:class:`~traceviz.schema.Steps`) without a partial last step.

    ``torch.profiler`` opens ``ProfilerStep#N+1`` at each ``prof.step()`` and closes the open
    step when it stops, at the end of the trace: a trace stopped soon after a ``step()`` ends
    with a fragment of a step (the corpus MI250 trace: 49 µs after a 9.3 ms step, no kernel).
    The last of two or more steps is partial when it ends where the trace's CPU events end,
    lasts less than :data:`PARTIAL_STEP_SHARE` of the *shortest* of the others (not their
    median: with few steps one slow step would pull the median up and an ordinary last step
    would read as cut off) and issued fewer kernels than every other step (a step that issued
    as many did all its work, however fast: on a busy machine the first of two steps of a tiny
    model can take 4× the second); per-step figures leave it out (:func:`partial_steps` says
    how many were). An ONNX Runtime profile keeps every step: its steps are whole
    ``model_run`` calls, written when each run ends, never cut off by a profiler schedule."""
    steps = trace.steps
    return steps.iloc[:-1] if _last_is_partial(trace) else steps


def partial_steps(trace: Trace) -> int:
    """How many steps :func:`full_steps` leaves out (0 or 1)."""
    return int(_last_is_partial(trace))


def _last_is_partial(trace: Trace) -> bool:
    steps = trace.steps
    if len(steps) < 2 or trace.meta.is_onnxruntime:
        return False
    durs = steps[Steps.dur_us].to_numpy(dtype=float, na_value=np.nan)
    starts = steps[Steps.ts_us].to_numpy(dtype=float, na_value=np.nan)
    last = int(np.nanargmax(starts)) if np.isfinite(starts).any() else len(steps) - 1
    others = np.delete(durs, last)
    shortest = float(np.nanmin(others)) if np.isfinite(others).any() else float("nan")
    if not (durs[last] < PARTIAL_STEP_SHARE * shortest) or last != len(steps) - 1:
        return False  # the common case: decided without reading the ops
    ops = trace.ops
    ends = ops[Ops.ts_us].to_numpy(dtype=float) + np.nan_to_num(
        ops[Ops.dur_us].to_numpy(dtype=float)
    )
    cpu_end = float(np.nanmax(ends)) if len(ends) else float("nan")
    return bool(starts[last] + durs[last] >= cpu_end - 1e-3) and _issued_less(trace, last)


def _issued_less(trace: Trace, last: int) -> bool:
    """Step row ``last`` issued fewer kernels than each other step (True when no step issued
    any: the kernels cannot tell, the length decides)."""
    at = _windows(trace.steps).index_of(issue_us(trace.kernels))
    counts = np.bincount(at[at >= 0], minlength=len(trace.steps))
    others = np.delete(counts, last)
    return not others.any() or bool(counts[last] < others.min())


def step_windows(trace: Trace) -> StepWindows:
    """One window per ProfilerStep (a partial last step left out: :func:`full_steps`), or one
    whole-trace window when there are none."""
    steps = full_steps(trace)
    if len(steps):
        return _windows(steps)
    first, last = trace.meta.time_origin_us, trace.meta.time_end_us
    return StepWindows(
        steps=[None],
        start_us=np.array([first if first is not None else 0.0]),
        end_us=np.array([last if last is not None else 0.0]),
    )


def _windows(steps: pd.DataFrame) -> StepWindows:
    """One window per row of a steps table (:class:`~traceviz.schema.Steps`)."""
    starts = steps[Steps.ts_us].to_numpy(dtype=float)
    return StepWindows(
        steps=[int(s) for s in steps[Steps.step].to_numpy(dtype=np.int64)],
        start_us=starts,
        end_us=starts + np.nan_to_num(steps[Steps.dur_us].to_numpy(dtype=float)),
    )


def union(starts: FloatArray, ends: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The union of intervals as a sorted set of disjoint intervals (empty ones dropped)."""
    keep = np.isfinite(starts) & np.isfinite(ends) & (ends > starts)
    s, e = starts[keep], ends[keep]
    if s.size == 0:
        return np.empty(0), np.empty(0)
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    reach = np.maximum.accumulate(e)
    new = np.ones(s.size, dtype=bool)
    new[1:] = s[1:] > reach[:-1]
    # a merged interval's end is its largest end: the reach at its last member (every
    # earlier interval ends before its first member starts, and that one ends after it starts)
    last = np.append(np.flatnonzero(new)[1:] - 1, s.size - 1)
    return s[new], reach[last]


def prefix_lengths(set_starts: FloatArray, set_ends: FloatArray) -> FloatArray:
    """The set's cumulative lengths: 0, then the running sum of its intervals' lengths, µs
    (what :func:`covered` needs; compute it once when one set is asked many times)."""
    return np.concatenate([[0.0], np.cumsum(set_ends - set_starts)])


def covered(
    set_starts: FloatArray,
    set_ends: FloatArray,
    x: FloatArray,
    prefix: FloatArray | None = None,
) -> FloatArray:
    """Length of the interval set inside (−∞, x], per x (the set's cumulative measure);
    ``prefix`` is :func:`prefix_lengths` of the set, when the caller has it already."""
    if set_starts.size == 0:
        return np.zeros(np.shape(x))
    if prefix is None:
        prefix = prefix_lengths(set_starts, set_ends)
    idx = np.searchsorted(set_starts, x, side="right") - 1
    # np.maximum(v, 0) is what np.clip(v, 0, None) calls (numpy's _clip), without its wrappers:
    # this runs a few hundred times per trace
    safe = np.maximum(idx, 0)
    part = np.maximum(np.minimum(x, set_ends[safe]) - set_starts[safe], 0.0)
    return np.where(idx >= 0, prefix[safe] + part, 0.0)


def overlap(
    set_starts: FloatArray,
    set_ends: FloatArray,
    lo: FloatArray,
    hi: FloatArray,
    prefix: FloatArray | None = None,
) -> FloatArray:
    """Per interval [lo, hi), its overlap with the interval set, µs (``prefix``: as
    :func:`covered`)."""
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    if prefix is None and set_starts.size:
        prefix = prefix_lengths(set_starts, set_ends)
    upto_hi = covered(set_starts, set_ends, hi, prefix)
    return np.maximum(upto_hi - covered(set_starts, set_ends, lo, prefix), 0.0)  # (clip's)


def subtract(
    a_starts: FloatArray, a_ends: FloatArray, b_starts: FloatArray, b_ends: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Set A minus set B (both sorted disjoint interval sets), as a sorted disjoint set."""
    if a_starts.size == 0 or b_starts.size == 0:
        return a_starts, a_ends
    points = np.unique(np.concatenate([a_starts, a_ends, b_starts, b_ends]))
    lo, hi = points[:-1], points[1:]
    mid = (lo + hi) / 2
    in_a = _inside(a_starts, a_ends, mid)
    in_b = _inside(b_starts, b_ends, mid)
    keep = in_a & ~in_b
    return union(lo[keep], hi[keep])


def _inside(starts: FloatArray, ends: FloatArray, x: FloatArray) -> npt.NDArray[np.bool_]:
    idx = np.searchsorted(starts, x, side="right") - 1
    safe = np.maximum(idx, 0)  # (np.clip(idx, 0, None)'s own call)
    return (idx >= 0) & (x < ends[safe])
