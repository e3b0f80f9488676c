"""The first thing every front end says: one sentence with the timed verdict, its interval and one
"why", then the top findings.

:func:`headline` is pure (a report in, a :class:`Headline` of text parts out); the dashboard's
Overview, the HTML report, the terminal and the notebook all draw the same parts, so they say
the same thing in the same words (the HTML form: :mod:`traceviz.report.headline_html`). Ratios
read in one direction only: ``"compiled is 2.57× faster"`` or ``"compiled is 1.35× slower"``
(never a ``0.39×`` beside a ``2.57×``): a ratio below 1 is turned over
(:func:`traceviz.analysis.timing.speed.ratio_words`, :func:`change_text`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from traceviz.analysis.compare import Comparison
from traceviz.analysis.timing.speed import FASTER, SAME, SLOWER, UNKNOWN, SpeedVerdict
from traceviz.analysis.timing.speed import interval_words as interval_text
from traceviz.analysis.timing.speed import ratio_words as speed_ratio_text
from traceviz.diagnose.finding import Finding
from traceviz.diagnose.rules.slower import NO_WORK, NOISE_ID, RULE_ID, comparison_speed
from traceviz.report.finding_parts import severity_and_title
from traceviz.report.profiled_note import profiled_note
from traceviz.units import fmt_us

#: How many findings follow the sentence.
TOP_FINDINGS = 3
#: Findings that only restate the speed verdict: never the "why", never a top finding.
VERDICT_IDS = frozenset({RULE_ID, NOISE_ID})


@dataclass(frozen=True)
class Headline:
    """The first screen's words.

    - ``verdict``: ``"compiled is 2.57× faster than eager"`` (or why there is no verdict);
    - ``interval``: ``"95% interval 2.41–2.70×; median step 1.20 ms → 467 µs, timed"`` (the
      interval in the verdict's direction, the step times, the basis); empty when unknown;
    - ``why``: the title of the finding with the largest estimated gain (``"because …"`` is
      added by :attr:`sentence`), empty without findings;
    - ``note``: the profiled-vs-timed warning (:mod:`traceviz.report.profiled_note`) or empty;
    - ``top``: up to :data:`TOP_FINDINGS` findings, largest estimated gain first.
    """

    verdict: str
    interval: str
    why: str
    note: str
    top: tuple[Finding, ...]

    @property
    def sentence(self) -> str:
        """The verdict, its interval in brackets and the why, as one sentence."""
        text = self.verdict + (f" ({self.interval})" if self.interval else "")
        text += f"; top finding: {self.why}" if self.why else ""
        return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def headline(report: Comparison) -> Headline:
    """The :class:`Headline` of ``report`` (a :class:`~traceviz.report.bundle.Report`; a
    plain comparison has no findings): verdict from
    :func:`~traceviz.diagnose.rules.slower.comparison_speed` (the timed one when run.json
    has timing), findings from ``report.findings``."""
    verdict = comparison_speed(report)
    top = top_findings(getattr(report, "findings", []))
    return Headline(
        verdict=_verdict_text(report, verdict),
        interval=_interval_text(report, verdict),
        why=severity_and_title(top[0])[1] if top else "",
        note=profiled_note(report.profiled_timing) or "",
        top=tuple(top),
    )


def top_findings(findings: Sequence[Finding], n: int = TOP_FINDINGS) -> list[Finding]:
    """Up to ``n`` findings that do not restate the verdict: largest estimated gain first
    (findings without an estimate after, in the report's order, most severe first)."""
    causes = [f for f in findings if getattr(f, "id", "") not in VERDICT_IDS]
    with_gain = sorted(
        (f for f in causes if finding_gain(f) is not None), key=lambda f: -(finding_gain(f) or 0)
    )
    without = [f for f in causes if finding_gain(f) is None]
    return (with_gain + without)[:n]


def finding_gain(finding: Finding) -> float | None:
    """A finding's finite estimated gain (µs per step), else None (a finding is anything
    with ``severity`` and ``title``, as :mod:`traceviz.report.finding_parts` reads it)."""
    gain = getattr(finding, "est_gain_us", None)
    return float(gain) if gain is not None and math.isfinite(gain) else None


def change_text(ratio: float) -> str:
    """A cost's ``b / a`` in one direction: ``"2.57× less"`` for 0.39, ``"1.35× more"``
    for 1.35, ``"same"`` for 1, ``"–"`` when not finite (a side with none of it)."""
    if ratio is None or not math.isfinite(ratio) or ratio < 0:
        return "–"
    if ratio == 0:
        return "none left"
    if ratio < 1:
        return f"{1 / ratio:.2f}× less"
    if ratio > 1:
        return f"{ratio:.2f}× more"
    return "same"


def _verdict_text(report: Comparison, v: SpeedVerdict) -> str:
    a, b = report.names
    if v.verdict == UNKNOWN and v.basis == NO_WORK:
        return "No speed verdict: a trace records no ops and no kernels"
    if v.verdict == UNKNOWN:
        return "No speed verdict: no steps and no trace span"
    if report.fusion.comparability.other_workload:
        return f"No speed verdict: {a} and {b} are not one workload"
    if v.verdict in (FASTER, SLOWER):
        return f"{b} is {speed_ratio_text(v.ratio)} than {a}"
    if v.verdict == SAME and v.tested:
        return f"No significant difference between {b} and {a}"
    return f"{b} is within 5% of {a}"


def _interval_text(report: Comparison, v: SpeedVerdict) -> str:
    """The median ratio when no side wins, the interval in the verdict's direction, the
    step times and the basis."""
    if v.verdict == UNKNOWN or not (math.isfinite(v.a_us) and math.isfinite(v.b_us)):
        return ""
    what = "median" if v.tested else "mean"
    steps = f"{what} step {fmt_us(v.a_us)} → {fmt_us(v.b_us)}, {v.basis}"
    if report.fusion.comparability.other_workload:
        return steps  # the step times, without a ratio: two workloads' say nothing
    parts = [] if v.verdict in (FASTER, SLOWER) else [f"{what} {speed_ratio_text(v.ratio)}"]
    if v.low is None or v.high is None:
        parts.append("no interval: one profiled window" if not v.tested else "no interval")
    else:
        parts.append(f"{100 * v.level:.0f}% interval {interval_text(v.low, v.high)}")
    return "; ".join([*parts, steps])
