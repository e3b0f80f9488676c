"""Do the profiled steps look like the timed ones? Per side, profiled step median vs timed.

A run directory holds two measurements of each side: the **timed** steps (run.json
``timing.*.samples_us``, outside the profiler, eager and compiled alternating in blocks) and
the **profiled** steps (the trace's ``ProfilerStep#N`` spans). Per-kernel times, device time,
fusion savings and every finding's gain come from the profiled steps; the speed verdict from
the timed ones. When a machine is busy while profiling, the profiled steps stop describing the
model: on a loaded 2-core VM eager's profiled steps took 64–145 ms against a timed median of
1.09 ms, and the report read "device time 719 ms → 15.3 ms".

:func:`profiled_vs_timed` compares, per side, the median of the profiled steps with the timed
median and its bootstrap interval (:func:`traceviz.analysis.timing.speed.median_interval`). The
profiler costs time of its own (a few µs per recorded event, more on a slow CPU): on the
sample runs the profiled median was 1.1–2.9× the timed one (one CPU run 5.5×), so a side
*disagrees* only when its profiled median lies outside the timed interval stretched by
:data:`PROFILER_ALLOWANCE` either way. The pair is *skewed* when one side's profiled steps are
inflated :data:`SKEW_MAX` × or more than the other's: per-kernel ratios between the sides are
then off by that factor even if neither side alone is flagged. Pure: no printing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from traceviz.analysis.timing.speed import LEVEL, finite_positive, median_interval
from traceviz.analysis.windows import full_steps
from traceviz.runs.runinfo import RunInfo, TimingStats
from traceviz.schema import Steps
from traceviz.trace import Trace

#: The profiler's own cost: a profiled median up to this factor above the top of the timed
#: interval (or below its bottom) still describes the model. 3× keeps every sample run but
#: one CPU run (5.5×) and flags the loaded-machine run of issue 24 (59×).
PROFILER_ALLOWANCE = 3.0
#: One side's inflation (profiled / timed median) this many times the other's skews every
#: per-kernel comparison between them (the sample runs: at most 1.75×, one CPU run 2.3×).
SKEW_MAX = 2.0


@dataclass(frozen=True)
class SideTiming:
    """One side's profiled steps against its timed steps (times in µs).

    - ``name``: the side's label (``"eager"``, ``"compiled"``);
    - ``profiled_median_us``, ``profiled_steps``: median and count of the trace's full
      ``ProfilerStep`` spans (wall time, µs);
    - ``timed_median_us``, ``timed_low_us``, ``timed_high_us``, ``timed_steps``: run.json's
      timed median, its bootstrap interval at ``level``, and the number of timed steps.
    """

    name: str
    profiled_median_us: float
    profiled_steps: int
    timed_median_us: float
    timed_low_us: float
    timed_high_us: float
    timed_steps: int
    level: float = LEVEL
    allowance: float = PROFILER_ALLOWANCE

    @property
    def inflation(self) -> float:
        """Profiled median over timed median (1.0: alike; 59: profiled 59× slower)."""
        return self.profiled_median_us / self.timed_median_us

    @property
    def scale(self) -> float:
        """Timed median over profiled median: the factor that brings a profiled step's time
        to the timed step's (an estimate: it assumes every part of the step stretched alike)."""
        return self.timed_median_us / self.profiled_median_us

    @property
    def disagrees(self) -> bool:
        """The profiled median lies outside the timed interval stretched by ``allowance``."""
        high, low = self.timed_high_us * self.allowance, self.timed_low_us / self.allowance
        return not (low <= self.profiled_median_us <= high)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "profiled_median_us": self.profiled_median_us,
            "profiled_steps": self.profiled_steps,
            "timed_median_us": self.timed_median_us,
            "timed_low_us": self.timed_low_us,
            "timed_high_us": self.timed_high_us,
            "timed_steps": self.timed_steps,
            "inflation": self.inflation,
            "disagrees": self.disagrees,
        }


@dataclass(frozen=True)
class ProfiledVsTimed:
    """Both sides' :class:`SideTiming` and whether the profiled figures can be compared.

    ``disagrees`` is True when either side :attr:`SideTiming.disagrees` or the pair is
    :attr:`skewed`; then per-kernel times are not representative of the timed steps.
    """

    a: SideTiming
    b: SideTiming
    allowance: float = PROFILER_ALLOWANCE
    skew_max: float = SKEW_MAX

    @property
    def sides(self) -> tuple[SideTiming, SideTiming]:
        return (self.a, self.b)

    @property
    def skew(self) -> float:
        """The larger side's inflation over the other's (1.0: both stretched alike)."""
        ratio = self.a.inflation / self.b.inflation
        return max(ratio, 1 / ratio)

    @property
    def skewed(self) -> bool:
        return self.skew >= self.skew_max

    @property
    def disagrees(self) -> bool:
        return self.skewed or any(side.disagrees for side in self.sides)

    def to_json(self) -> dict[str, Any]:
        """``docs/compare-json.md``, "Profiled vs timed steps"."""
        return {
            "disagrees": self.disagrees,
            "a": self.a.to_json(),
            "b": self.b.to_json(),
            "skew": self.skew,
            "skewed": self.skewed,
            "allowance": self.allowance,
            "skew_max": self.skew_max,
            "level": self.a.level,
        }


def profiled_vs_timed(
    a: Trace,
    b: Trace,
    *,
    names: tuple[str, str],
    run_info: RunInfo | None,
    allowance: float = PROFILER_ALLOWANCE,
    skew_max: float = SKEW_MAX,
) -> ProfiledVsTimed | None:
    """Compare each trace's profiled step median with run.json's timed median (a is eager,
    b compiled). None without run.json, without timed steps for both sides, or without a
    full ``ProfilerStep`` in either trace: nothing to check against."""
    if run_info is None or run_info.timing.compiled is None:
        return None
    sides = []
    timings = (run_info.timing.eager, run_info.timing.compiled)
    for name, trace, timing in zip(names, (a, b), timings, strict=True):
        side = _side(name, trace, timing, allowance)
        if side is None:
            return None
        sides.append(side)
    return ProfiledVsTimed(sides[0], sides[1], allowance=allowance, skew_max=skew_max)


def timed_steps(timing: TimingStats) -> int:
    """How many of the side's timed samples count (finite and positive, as the verdict's)."""
    return len(finite_positive(timing.samples_us))


def _side(name: str, trace: Trace, timing: TimingStats, allowance: float) -> SideTiming | None:
    profiled = full_steps(trace)[Steps.dur_us].to_numpy(dtype=float, na_value=np.nan)
    profiled = profiled[np.isfinite(profiled) & (profiled > 0)]
    interval = median_interval(timing.samples_us)
    if not len(profiled) or interval is None:
        return None
    median, low, high = interval
    if not (median > 0 and math.isfinite(median)):
        return None
    return SideTiming(
        name=name,
        profiled_median_us=float(np.median(profiled)),
        profiled_steps=len(profiled),
        timed_median_us=median,
        timed_low_us=low,
        timed_high_us=high,
        timed_steps=timed_steps(timing),
        allowance=allowance,
    )
