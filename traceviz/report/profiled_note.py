"""The words for :class:`~traceviz.analysis.timing.profiled.ProfiledVsTimed`: the note that
leads every report (text, Markdown, HTML, ``traceviz run``/``demo``) when a run's profiled
steps do not look like its timed ones, so that no per-kernel ratio is read as a saving first.
"""

from __future__ import annotations

from traceviz.analysis.timing.profiled import ProfiledVsTimed, SideTiming
from traceviz.units import fmt_us

#: What the kernel-count line says instead of the device times when the note is shown.
DEVICE_TIME_WITHHELD = "device time withheld (profiled steps not representative: see above)"


def profiled_note(check: ProfiledVsTimed | None) -> str | None:
    """``"profiled times are not representative: …"`` when ``check`` disagrees, else None.

    Names each side's profiled median against its timed median and interval, why (the
    machine was busy while profiling, or one side's steps stretched more than the other's),
    and what follows: the verdict is the timed one, the profiled per-kernel figures below
    compare within a side only."""
    if check is None or not check.disagrees:
        return None
    sides = "; ".join(_side_text(side) for side in check.sides)
    if any(side.disagrees for side in check.sides):
        why = (
            "the machine was busy while profiling (the profiler's own cost allows up to "
            f"{check.allowance:g}× the timed interval)"
        )
    else:
        more, less = sorted(check.sides, key=lambda s: s.inflation, reverse=True)
        why = f"{more.name}'s profiled steps stretched {check.skew:.1f}× more than {less.name}'s"
    return (
        f"profiled times are not representative: {sides}: {why}. The step-time verdict is "
        "the timed one; device time is withheld, and the per-kernel times, fusion savings "
        "and gains below are as profiled: compare them within a side, not across sides"
    )


def _side_text(side: SideTiming) -> str:
    """``"profiled eager steps took 64.0 ms (median of 5) vs 1.09 ms timed (95% interval
    1.05 ms–1.12 ms), 58.7×"``."""
    return (
        f"profiled {side.name} steps took {fmt_us(side.profiled_median_us)} (median of "
        f"{side.profiled_steps}) vs {fmt_us(side.timed_median_us)} timed "
        f"({100 * side.level:.0f}% interval {fmt_us(side.timed_low_us)}–"
        f"{fmt_us(side.timed_high_us)}, {side.timed_steps} steps), "
        f"{_factor(side.inflation)}"
    )


def _factor(value: float) -> str:
    """``"58.7×"``; under 1 with two significant digits (``"0.0028×"``, never ``"0.0×"``)."""
    return f"{value:.1f}×" if value >= 0.95 else f"{value:.2g}×"
