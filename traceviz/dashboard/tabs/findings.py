"""Findings as one line each — severity and title — that expand to their evidence, gain and
next step (a ``<details>`` element: no script, so it works in a served page, a notebook and
a saved page alike). The Overview, Ranks and rank-trace views list their findings this way,
after their cards and charts."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from traceviz.dashboard.tabs.common import html_pane
from traceviz.report.finding_parts import evidence_items, next_step_html, severity_and_title

#: The CSS of a collapsed finding (added to the pane's stylesheet with the common one).
FINDINGS_CSS = """
details.finding > summary { cursor: pointer; list-style-position: inside; }
details.finding[open] > summary { margin-bottom: 2px; }
details.finding ul { margin: 2px 0 4px; }
"""


def finding_body(finding: Any) -> str:
    """HTML of what a finding's line expands to: its evidence lines, the estimated gain and
    the next step (with a docs link when it has one), as the HTML report shows them."""
    items = evidence_items(finding)
    body = (f"<ul>{items}</ul>" if items else "") + next_step_html(finding)
    return body or "<div class='tv-tag'>no evidence recorded</div>"


def finding_details(finding: Any) -> str:
    """One finding as a collapsed ``<details>``: the line shows ``[severity] title``."""
    severity, title = severity_and_title(finding)
    sev = html.escape(severity.lower())
    return (
        f"<details class='finding sev-{sev}' data-severity='{sev}'><summary>"
        f"<b>[{html.escape(severity)}]</b> {html.escape(title)}</summary>"
        f"{finding_body(finding)}</details>"
    )


def findings_block(findings: Sequence[Any], *, empty: str) -> str:
    """HTML: a heading with the count, then each finding collapsed (``empty`` when none)."""
    if not findings:
        return f"<h4>Findings</h4><p class='tv-tag'>{html.escape(empty)}</p>"
    rows = "".join(finding_details(f) for f in findings)
    return (
        f"<h4>Findings ({len(findings)})</h4>"
        f"<p class='tv-tag'>one line each; click a finding for its evidence and next step</p>"
        f"{rows}"
    )


def findings_pane(findings: Sequence[Any], *, empty: str) -> Any:
    """:func:`findings_block` as a Panel HTML pane."""
    return html_pane(findings_block(findings, empty=empty), FINDINGS_CSS)
