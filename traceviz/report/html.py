"""The HTML report (``traceviz compare --format html``): one self-contained, offline file.

plotly.js is embedded once; every figure comes from :mod:`traceviz.report.figures` and every
table from :mod:`traceviz.report.views` (the same ones the text and Markdown reports print),
so the report shows exactly what the dashboard and the CLI show.
"""

from __future__ import annotations

import html
from typing import Any

from plotly.offline import get_plotlyjs

from traceviz.report import headline as first
from traceviz.report.backends_views import backends_views
from traceviz.report.bundle import Report
from traceviz.report.figures import VIEW_FIGURES, figures_html
from traceviz.report.figures.backends import BACKEND_FIGURES
from traceviz.report.figures.roofline import ROOFLINE_FIGURES
from traceviz.report.finding_parts import evidence_items, next_step_html, severity_and_title
from traceviz.report.headline_html import HEADLINE_CSS, headline_html
from traceviz.report.roofline_report import roofline_views
from traceviz.report.snippet import view_html
from traceviz.report.views import comparison_views, headline_details

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto;
       max-width: 1280px; padding: 0 24px 48px; color: #222; }
h1 { font-size: 1.5em; margin-top: 24px; }
h2 { border-bottom: 1px solid #ddd; padding-bottom: 4px; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; }
th { background: #f5f5f5; } td { font-variant-numeric: tabular-nums; }
nav a { margin-right: 12px; }
.finding { margin: 6px 0; padding: 6px 10px; border-left: 4px solid #888; }
.sev-critical, .sev-error, .sev-high { border-color: #d62728; }
.sev-warning, .sev-medium { border-color: #ff7f0e; } .sev-info, .sev-low { border-color: #1f77b4; }
.muted { color: #666; font-size: 12px; }
td { max-width: 34em; overflow-wrap: anywhere; }
section { overflow-x: auto; } .js-plotly-plot, .plotly-graph-div { max-width: 100%; }
"""


def comparison_html(comparison: Report, *, top: int = 10) -> str:
    """The report as a complete HTML document that needs no network to display."""
    a, b = comparison.names
    title = f"traceviz: {a} vs {b}"
    details = "".join(f"<li>{html.escape(line)}</li>" for line in headline_details(comparison))
    sections = [("summary", "Summary", f"<ul>{details}</ul>")]
    findings = "".join(finding_html(f) for f in comparison.findings) or (
        "<p class='muted'>No findings: no diagnosis rule applied to this pair.</p>"
    )
    sections.append(("findings", "Findings", findings))
    for number, (view, builders) in enumerate(VIEW_FIGURES.items()):
        figures = figures_html(builders, comparison, f"fig-{number}")
        sections.append((f"view-{number}", view, figures))
    # the step bridge's waterfall and the roofline scatter, then their tables (docs/roofline.md)
    roofline = figures_html(ROOFLINE_FIGURES, comparison, "fig-roofline")
    roofline += "".join(view_html(v) for v in roofline_views(comparison, top=top))
    sections.append(("roofline", "Step bridge and roofline", roofline))
    sections += backends_sections(comparison, top=top)  # runs with ONNX Runtime backends
    tables = "".join(view_html(v) for v in comparison_views(comparison, top=top))
    sections.append(("tables", "Tables", tables))
    nav = "".join(f'<a href="#{key}">{html.escape(name)}</a>' for key, name, _ in sections)
    body = "".join(
        f'<section id="{key}"><h2>{html.escape(name)}</h2>{content}</section>'
        for key, name, content in sections
    )
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{_STYLE}{HEADLINE_CSS}</style>"
        f"<script type='text/javascript'>{get_plotlyjs()}</script></head><body>"
        f"<h1>{html.escape(title)}</h1>{headline_html(first.headline(comparison))}"
        f"<nav>{nav}</nav>{body}"
        "<p class='muted'>Made by traceviz. Every figure says whether it is measured (read from "
        "the traces) or estimated (modelled from shapes).</p></body></html>\n"
    )


def finding_html(finding: Any) -> str:
    """One diagnosis finding (a :class:`traceviz.diagnose.finding.Finding` or anything with
    ``severity`` and ``title``): severity, title, evidence, estimated gain and next step."""
    severity, title = severity_and_title(finding)
    return (
        f"<div class='finding sev-{html.escape(severity.lower())}'>"
        f"<b>[{html.escape(severity)}]</b> {html.escape(title)}"
        f"<ul>{evidence_items(finding)}</ul>{next_step_html(finding)}</div>"
    )


def backends_sections(report: Any, *, top: int = 10) -> list[tuple[str, str, str]]:
    """The "Backends" section ``[(anchor, title, html)]``: its figures and tables, or none for a
    run without ONNX Runtime backends."""
    views = backends_views(report, top=top)
    if not views:
        return []
    figures = figures_html(BACKEND_FIGURES, report, "fig-backends")
    return [("backends", "Backends", figures + "".join(view_html(v) for v in views))]
