"""Nesting beside zero-length spans: a span's parent is the innermost span that encloses it,
even where empty spans start at the same instant.

GIVEN spans on one thread where empty (0 µs) spans start together with a real one, as
integer-µs traces have them (an ``aten::to`` of 0 µs at the start of an ``aten::clamp``),
WHEN depths and parents are computed, THEN they are those of a plain stack pass: before the
fix the empty spans after a span were counted as ended before it, so it took a parent one or
two levels too high (on the A100 eager corpus trace 509 of 40,794 ops).
"""

from __future__ import annotations

import numpy as np
import pytest

from traceviz.parse.nesting import depths, parents, sort_order

# (start, duration) on one thread: a step [0, 100]; an op [10, 20] holding a clamp [10, 14]
# and, at the clamp's start, two empty ops; then an empty op alone at 50.
SPANS = [(0, 100), (10, 20), (10, 4), (10, 0), (10, 0), (50, 0), (60, 5), (60, 0)]


def _stack_pass(spans: list[tuple[float, float]]) -> tuple[list[int], list[int]]:
    """Depth and parent index of each span by a stack over spans sorted as sort_order does;
    a span that ends where another starts does not enclose it."""
    parent, depth, open_ = [-1] * len(spans), [0] * len(spans), []
    for i, (start, dur) in enumerate(spans):
        while open_ and (sum(spans[open_[-1]]) < start + dur or sum(spans[open_[-1]]) <= start):
            open_.pop()
        parent[i] = open_[-1] if open_ else -1
        depth[i] = len(open_)
        open_.append(i)
    return depth, parent


@pytest.mark.parametrize("shift", [0.0, 1e6])  # at 0 and far along a large clock
def test_empty_spans_at_a_start_do_not_lift_their_neighbours(shift: float) -> None:
    starts = np.array([s + shift for s, _ in SPANS], dtype=float)
    durs = np.array([d for _, d in SPANS], dtype=float)
    threads = np.zeros(len(SPANS), dtype=np.int64)
    order = sort_order(threads, starts, durs)
    assert list(order) == list(range(len(SPANS)))  # already in the sorted order
    depth = depths(starts, starts + durs, durs)
    parent = parents(depth, threads)
    want_depth, want_parent = _stack_pass(SPANS)
    assert depth.tolist() == want_depth
    assert parent.tolist() == want_parent
    assert parent[2] == 1 and parent[3] == 2 and parent[4] == 2  # under the clamp, not above
