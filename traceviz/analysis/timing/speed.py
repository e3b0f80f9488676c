"""Is b faster or slower than a? A verdict with statistical support, or an honest "unknown".

The step times come, best first, from:

1. **timed**: run.json's ``timing.eager.samples_us`` and ``timing.compiled.samples_us``
   (steps timed one by one outside the profiler);
2. **profiled steps**: the ``ProfilerStep#N`` wall times of each trace, when both have at
   least :data:`MIN_SAMPLES`;
3. **one profiled window**: the traces' mean step time (or span) alone; no test is possible.

With samples (1, 2), the ratio of medians b/a gets a percentile **bootstrap** interval
(:data:`LEVEL`, :data:`RESAMPLES` resamples of each side, fixed seed: the same input always
gives the same interval). b is **slower** when the whole interval lies above 1 and the ratio
is at least ``1 + tolerance``, **faster** when it lies below 1 and the ratio at most
``1 / (1 + tolerance)``, else there is **no significant difference**. Without samples (3) the
verdict is the point estimate's, labelled ``"untested"``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from traceviz.analysis.windows import full_steps
from traceviz.runs.runinfo import RunInfo
from traceviz.schema import Steps
from traceviz.trace import Trace

#: Fewer samples than this per side do not support an interval (three steps can at least show
#: whether one was special; their interval spans the steps' own spread).
MIN_SAMPLES = 3
#: Bootstrap resamples of each side, and the interval's confidence level.
RESAMPLES = 2000
LEVEL = 0.95
#: Fixed seed: the verdict of one input never changes from run to run.
SEED = 0
#: Differences under 5% are not called slower or faster, however sure.
TOLERANCE = 0.05

#: Most values drawn at once while bootstrapping (bounds memory for long sample lists).
_MAX_DRAWS = 1_000_000

SLOWER, FASTER, SAME, UNKNOWN = "slower", "faster", "no significant difference", "unknown"
TIMED, PROFILED_STEPS, ONE_WINDOW = "timed", "profiled steps", "one profiled window"


@dataclass(frozen=True)
class SpeedVerdict:
    """b against a: step times (µs), their ratio, its interval, the verdict and its basis.

    - ``a_us``/``b_us``: median step time (``basis`` timed or profiled steps), or the mean
      step time of one profiled window;
    - ``ratio``: ``b_us / a_us`` (above 1: b is slower); ``low``/``high``: its bootstrap
      interval at ``level`` (None without samples);
    - ``verdict``: ``"slower"``, ``"faster"``, ``"no significant difference"``, or
      ``"unknown"`` (no step time); ``tested``: False when it rests on a point estimate;
    - ``basis``: ``"timed"``, ``"profiled steps"`` or ``"one profiled window"``;
      ``n_a``/``n_b``: samples per side.
    """

    a_us: float
    b_us: float
    ratio: float
    low: float | None
    high: float | None
    level: float
    verdict: str
    basis: str
    n_a: int
    n_b: int

    @property
    def tested(self) -> bool:
        return self.low is not None and self.high is not None

    def interval_text(self) -> str:
        """``"95% interval 1.18–1.39× faster"`` (one way round: :func:`interval_words`), or
        ``"no interval: one profiled window"``."""
        if self.low is None or self.high is None:
            return f"no interval: {self.basis}"
        return f"{100 * self.level:.0f}% interval {interval_words(self.low, self.high)}"

    def to_json(self) -> dict[str, Any]:
        return {
            "a_us": self.a_us,
            "b_us": self.b_us,
            "ratio": _finite(self.ratio),
            "low": self.low,
            "high": self.high,
            "level": self.level,
            "verdict": self.verdict,
            "basis": self.basis,
            "n_a": self.n_a,
            "n_b": self.n_b,
        }


def ratio_words(ratio: float) -> str:
    """A step-time ratio ``b / a`` read one way round: ``"2.57× faster"`` for 0.39,
    ``"1.35× slower"`` for 1.35, ``"as fast"`` for 1; ``"–"`` when not finite or not positive.
    Never a ``0.39×`` beside a ``2.57×``."""
    if not math.isfinite(ratio) or ratio <= 0:
        return "–"
    if ratio < 1:
        return f"{1 / ratio:.2f}× faster"
    if ratio > 1:
        return f"{ratio:.2f}× slower"
    return "as fast"


def interval_words(low: float, high: float) -> str:
    """An interval of ``b / a`` one way round: ``"1.18–1.39× faster"``, ``"1.27–1.55×
    slower"``, or across 1 ``"1.02× slower to 1.16× faster"``."""
    if high < 1:
        return f"{1 / high:.2f}–{1 / low:.2f}× faster"
    if low > 1:
        return f"{low:.2f}–{high:.2f}× slower"
    return f"{ratio_words(high)} to {ratio_words(low)}"


def speed_verdict(
    a: Trace,
    b: Trace,
    *,
    run_info: RunInfo | None = None,
    tolerance: float = TOLERANCE,
    resamples: int = RESAMPLES,
    level: float = LEVEL,
    seed: int = SEED,
) -> SpeedVerdict:
    """The verdict for b against a (see the module docstring); ``run_info`` is run.json."""
    timed = _timed_samples(run_info)
    if timed is not None:
        return compare_samples(*timed, basis=TIMED, tolerance=tolerance, resamples=resamples,
                               level=level, seed=seed)  # fmt: skip
    steps_a, steps_b = _step_samples(a), _step_samples(b)
    if len(steps_a) >= MIN_SAMPLES and len(steps_b) >= MIN_SAMPLES:
        return compare_samples(steps_a, steps_b, basis=PROFILED_STEPS, tolerance=tolerance,
                               resamples=resamples, level=level, seed=seed)  # fmt: skip
    return _one_window(_window_us(a, steps_a), _window_us(b, steps_b), tolerance, level)


def compare_samples(
    a: Sequence[float] | npt.NDArray[np.float64],
    b: Sequence[float] | npt.NDArray[np.float64],
    *,
    basis: str = TIMED,
    tolerance: float = TOLERANCE,
    resamples: int = RESAMPLES,
    level: float = LEVEL,
    seed: int = SEED,
) -> SpeedVerdict:
    """Bootstrap the ratio of medians ``median(b) / median(a)`` of two samples of step times."""
    xa, xb = finite_positive(a), finite_positive(b)
    if len(xa) < MIN_SAMPLES or len(xb) < MIN_SAMPLES:
        ma = float(np.median(xa)) if len(xa) else math.nan
        mb = float(np.median(xb)) if len(xb) else math.nan
        return _one_window(ma, mb, tolerance, level, basis=basis, n=(len(xa), len(xb)))
    rng = np.random.default_rng(seed)
    ma, mb = float(np.median(xa)), float(np.median(xb))
    ratios = _bootstrap_median(xb, resamples, rng) / _bootstrap_median(xa, resamples, rng)
    tail = 100 * (1 - level) / 2
    low, high = (float(v) for v in np.percentile(ratios, [tail, 100 - tail]))
    ratio = mb / ma
    if low > 1 and ratio >= 1 + tolerance:
        verdict = SLOWER
    elif high < 1 and ratio <= 1 / (1 + tolerance):
        verdict = FASTER
    else:
        verdict = SAME
    return SpeedVerdict(ma, mb, ratio, low, high, level, verdict, basis, len(xa), len(xb))


def median_interval(
    samples: Sequence[float] | npt.NDArray[np.float64],
    *,
    resamples: int = RESAMPLES,
    level: float = LEVEL,
    seed: int = SEED,
) -> tuple[float, float, float] | None:
    """One sample's median (µs) and its percentile bootstrap interval at ``level``:
    ``(median, low, high)``; None with fewer than :data:`MIN_SAMPLES` finite positive values."""
    values = finite_positive(samples)
    if len(values) < MIN_SAMPLES:
        return None
    medians = _bootstrap_median(values, resamples, np.random.default_rng(seed))
    tail = 100 * (1 - level) / 2
    low, high = (float(v) for v in np.percentile(medians, [tail, 100 - tail]))
    return float(np.median(values)), low, high


def _bootstrap_median(
    values: npt.NDArray[np.float64], resamples: int, rng: np.random.Generator
) -> npt.NDArray[np.float64]:
    """Medians of ``resamples`` resamples of ``values``, drawn in batches of bounded size."""
    batch = max(1, _MAX_DRAWS // len(values))
    parts = []
    for start in range(0, resamples, batch):
        size = (min(batch, resamples - start), len(values))
        parts.append(np.median(rng.choice(values, size=size, replace=True), axis=1))
    return np.concatenate(parts)


def _one_window(
    a_us: float,
    b_us: float,
    tolerance: float,
    level: float,
    *,
    basis: str = ONE_WINDOW,
    n: tuple[int, int] = (1, 1),
) -> SpeedVerdict:
    """A point estimate, untested."""
    if not (a_us > 0 and b_us > 0 and math.isfinite(a_us) and math.isfinite(b_us)):
        return SpeedVerdict(a_us, b_us, math.nan, None, None, level, UNKNOWN, basis, *n)
    ratio = b_us / a_us
    verdict = SAME
    if ratio >= 1 + tolerance:
        verdict = SLOWER
    elif ratio <= 1 / (1 + tolerance):
        verdict = FASTER
    return SpeedVerdict(a_us, b_us, ratio, None, None, level, verdict, basis, *n)


def _timed_samples(
    run_info: RunInfo | None,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]] | None:
    """run.json's timed step samples (µs) of eager and compiled, when both have enough."""
    compiled = run_info.timing.compiled if run_info is not None else None
    if run_info is None or compiled is None:
        return None
    xa, xb = finite_positive(run_info.timing.eager.samples_us), finite_positive(compiled.samples_us)
    if len(xa) < MIN_SAMPLES or len(xb) < MIN_SAMPLES:
        return None
    return xa, xb


def _step_samples(trace: Trace) -> npt.NDArray[np.float64]:
    return finite_positive(full_steps(trace)[Steps.dur_us].to_numpy(dtype=float))


def _window_us(trace: Trace, steps: npt.NDArray[np.float64]) -> float:
    """Mean step time, or the whole trace's span without steps."""
    return float(np.mean(steps)) if len(steps) else float(trace.meta.span_us)


def finite_positive(values: Any) -> npt.NDArray[np.float64]:
    """Finite, positive samples as floats (anything else is dropped)."""
    try:
        array = np.asarray(values, dtype=float).ravel()
    except (TypeError, ValueError):
        return np.zeros(0)
    return array[np.isfinite(array) & (array > 0)]


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
