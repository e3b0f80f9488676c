"""Markdown (``traceviz compare --format markdown``)."""

from __future__ import annotations

from traceviz.report.backends_views import backends_views
from traceviz.report.bundle import Report
from traceviz.report.roofline_report import roofline_views
from traceviz.report.views import View, comparison_views, headline


def comparison_markdown(comparison: Report, *, top: int = 10) -> str:
    """The report as a Markdown document."""
    a, b = comparison.names
    parts = [f"# traceviz: {a} vs {b}", ""]
    parts += [f"- {line}" for line in headline(comparison)]
    parts += _findings_markdown(comparison)  # what to do, before the evidence
    views = [*comparison_views(comparison, top=top), *backends_views(comparison, top=top)]
    for view in [*views, *roofline_views(comparison, top=top)]:
        parts += ["", f"## {view.title}", "", _table(view)]
        if view.note:
            parts += ["", f"_{view.note}_"]
    return "\n".join(parts) + "\n"


def _findings_markdown(comparison: Report) -> list[str]:
    if not comparison.findings:
        return []
    lines = ["", "## Findings", ""]
    for finding in comparison.findings:
        to_md = getattr(finding, "to_markdown", None)
        lines.append(to_md() if callable(to_md) else f"- {finding}")
    return lines


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(view: View) -> str:
    lines = ["| " + " | ".join(_cell(c) for c in view.columns) + " |",
             "|" + "|".join("---" for _ in view.columns) + "|"]  # fmt: skip
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in view.rows]
    return "\n".join(lines)
