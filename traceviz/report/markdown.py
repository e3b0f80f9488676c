"""Markdown (``traceviz compare --format markdown``) and the plain HTML tables shown for a
``Comparison`` in Jupyter."""

from __future__ import annotations

import html

from traceviz.analysis.compare import Comparison
from traceviz.report.views import View, comparison_views, headline


def comparison_markdown(comparison: Comparison, *, top: int = 10) -> str:
    """The comparison as a Markdown document."""
    a, b = comparison.names
    parts = [f"# traceviz: {a} vs {b}", ""]
    parts += [f"- {line}" for line in headline(comparison)]
    for view in comparison_views(comparison, top=top):
        parts += ["", f"## {view.title}", "", _table(view)]
        if view.note:
            parts += ["", f"_{view.note}_"]
    parts += _findings_markdown(comparison)
    return "\n".join(parts) + "\n"


def _findings_markdown(comparison: Comparison) -> list[str]:
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


def view_html(view: View) -> str:
    """One view as an HTML table (escaped)."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in view.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in view.rows
    )
    note = f"<p><em>{html.escape(view.note)}</em></p>" if view.note else ""
    return (
        f"<h3>{html.escape(view.title)}</h3><table><thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table>{note}"
    )


def comparison_html_snippet(comparison: Comparison, *, top: int = 10) -> str:
    """Headline and tables as an HTML fragment (for Jupyter's rich display)."""
    lines = "".join(f"<li>{html.escape(line)}</li>" for line in headline(comparison))
    tables = "".join(view_html(v) for v in comparison_views(comparison, top=top))
    return f"<div class='traceviz-comparison'><ul>{lines}</ul>{tables}</div>"
