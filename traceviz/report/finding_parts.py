"""The HTML pieces of one diagnosis finding that the HTML report
(:func:`traceviz.report.html.finding_html`) and the dashboard's collapsible findings
(:mod:`traceviz.dashboard.tabs.findings`) both show: severity and title, the evidence lines
with the estimated gain, the next step with its docs link. Each layout wraps them its own way.

A finding is a :class:`traceviz.diagnose.finding.Finding` or anything with ``severity`` and
``title`` (``evidence_lines()``, ``gain_text()``, ``next_step`` and ``docs_url`` are optional).
All text is HTML-escaped here.
"""

from __future__ import annotations

from typing import Any


def severity_and_title(finding: Any) -> tuple[str, str]:
    """A finding's severity (``error``, ``warning``, ``info``; ``info`` when it has none) and
    title (the finding itself as text when it has none), as plain text."""
    severity = getattr(finding, "severity", "info")
    return str(getattr(severity, "value", severity)), str(getattr(finding, "title", finding))


def evidence_items(finding: Any) -> str:
    """The ``<li>`` items of a finding's evidence lines, then ``estimated gain: ...`` when it
    estimates one ("" when it has neither)."""
    lines_of = getattr(finding, "evidence_lines", None)
    lines = [str(line) for line in lines_of()] if callable(lines_of) else []
    gain_of = getattr(finding, "gain_text", None)
    gain = str(gain_of()) if callable(gain_of) else ""
    if gain:
        lines.append(f"estimated gain: {gain}")
    from html import escape  # here: the text report uses severity_and_title alone

    return "".join(f"<li>{escape(line)}</li>" for line in lines)


def next_step_html(finding: Any) -> str:
    """``<div>next step: ...</div>``, with a ``(docs)`` link when the finding's ``docs_url``
    is an http(s) address; "" when it has no next step."""
    next_step = str(getattr(finding, "next_step", "") or "")
    if not next_step:
        return ""
    from html import escape

    docs = str(getattr(finding, "docs_url", "") or "")
    link = f' (<a href="{escape(docs)}">docs</a>)' if docs.startswith(_WEB) else ""
    return f"<div>next step: {escape(next_step)}{link}</div>"


_WEB = ("https://", "http://")
