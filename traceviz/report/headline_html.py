"""The first screen (:mod:`traceviz.report.headline`) as HTML, for the HTML report, the
dashboard's Overview and a report's notebook display."""

from __future__ import annotations

import html

from traceviz.diagnose.finding import Finding
from traceviz.report.finding_parts import evidence_items, next_step_html, severity_and_title
from traceviz.report.headline import Headline, finding_gain
from traceviz.units import fmt_us

#: CSS of :func:`headline_html` (the dashboard and the HTML report add it to their own).
HEADLINE_CSS = """
.tv-verdict { font-size: 1.45em; font-weight: 600; line-height: 1.3; margin: 10px 0 6px; }
.tv-verdict .tv-interval { font-size: .62em; font-weight: 400; color: #555; display: block; }
.tv-verdict .tv-why { font-size: .72em; font-weight: 500; color: #333; display: block; }
.tv-note { background: #fff4e5; border-left: 4px solid #ff7f0e; padding: 6px 10px; }
.tv-top { margin: 4px 0 8px; } .tv-top h4 { margin: 6px 0 2px; }
.tv-top details > summary { cursor: pointer; }
.tv-top .tv-gain { color: #555; font-size: .9em; white-space: nowrap; }
"""


def headline_html(h: Headline) -> str:
    """The first screen as HTML: the profiled-vs-timed note when there is one, the verdict
    sentence (``class='tv-verdict'``: verdict, then its interval and the top finding on lines
    of their own), and the top findings, each a ``<details>`` line (severity, title,
    estimated gain) that opens on its evidence and next step."""
    verdict = h.verdict[:1].upper() + h.verdict[1:]
    interval = f"<span class='tv-interval'>{html.escape(h.interval)}</span>" if h.interval else ""
    why = f"<span class='tv-why'>Top finding: {html.escape(h.why)}</span>" if h.why else ""
    note = f"<div class='tv-note'>{html.escape(h.note)}</div>" if h.note else ""
    top = "".join(_top_finding_html(f) for f in h.top)
    top = f"<div class='tv-top'><h4>Top findings</h4>{top}</div>" if top else ""
    sentence = f"{html.escape(verdict)}{interval}{why}"
    # the note first, as in every report: the figures below it are not the timed ones
    return f"{note}<div class='tv-verdict' id='tv-verdict'>{sentence}</div>{top}"


def _top_finding_html(finding: Finding) -> str:
    severity, title = severity_and_title(finding)
    us = finding_gain(finding)
    gain = f"≈ {fmt_us(us)} per step" if us is not None else ""
    gain_html = f" <span class='tv-gain'>{html.escape(gain)}</span>" if gain else ""
    body = f"<ul>{evidence_items(finding)}</ul>{next_step_html(finding)}"
    return (
        f"<details class='finding sev-{html.escape(severity.lower())}'><summary><b>"
        f"[{html.escape(severity)}]</b> {html.escape(title)}{gain_html}</summary>{body}</details>"
    )
