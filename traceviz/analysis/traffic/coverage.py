"""Whether two memory-traffic totals can be compared: the coverage guard.

A trace's traffic total (:attr:`~traceviz.analysis.traffic.memory.MemoryTraffic.total_bytes`) sums
only the kernels that have a figure; kernels without one (basis ``none``) move bytes nobody
counted. Two totals are comparable only when their figures cover about the same share of
each side's kernel time: when one side's estimates cover far less (a CUDA-graph replay,
``torch.compile(mode="reduce-overhead")``: the replayed cuBLAS and attention kernels have no
launching op with shapes), b − a and b / a measure the missing estimates, not the traffic.

**The rule**: the ``est_bytes`` metric's Δ and ratio are left out (NaN, "–") when the covered
shares (1 − ``unestimated_time_share``, of kernel time) differ by more than
:data:`COVERAGE_GAP` (10 percentage points): twice the largest gap of the same-model sample
runs (5.3 points), while the broken pairs (reduce-overhead, cross-device corpus pairs) differ
by 26 points or more. A side with no kernel time (share unknown) is not judged.
"""

from __future__ import annotations

import math

from traceviz.analysis.traffic.memory import MemoryTraffic

__all__ = ["COVERAGE_GAP", "coverage", "traffic_gap_note"]

#: Largest difference between the two sides' covered shares of kernel time (0–1) at which
#: their traffic totals are still compared (a difference above it withholds Δ and ratio).
COVERAGE_GAP = 0.10


def coverage(traffic: MemoryTraffic) -> float | None:
    """Share (0–1) of a trace's kernel time whose rows have a byte figure (measured,
    estimated or compiler's); None when the trace has no kernel time."""
    share = traffic.unestimated_time_share
    if share is None or math.isnan(share):
        return None
    return 1.0 - share


def traffic_gap_note(a: MemoryTraffic, b: MemoryTraffic, names: tuple[str, str]) -> str | None:
    """Why the two traffic totals are not compared (one line for people), or None when they
    are: their covered shares of kernel time differ by more than :data:`COVERAGE_GAP`.
    ``names`` label the two sides in the line."""
    ca, cb = coverage(a), coverage(b)
    if ca is None or cb is None or not abs(ca - cb) > COVERAGE_GAP + 1e-12:
        return None
    return (
        f"no Δ or ratio: the estimates cover {_pct(ca)} of {names[0]}'s "
        f"kernel time and {_pct(cb)} of {names[1]}'s (more than "
        f"{COVERAGE_GAP * 100:.0f} points apart)"
    )


def _pct(share: float) -> str:
    return f"{100 * share:.1f}%"
