"""Plain HTML pieces shared by the renderers and the dashboard: one table view as HTML, and the
headline plus tables as a fragment (a report's rich display in Jupyter)."""

from __future__ import annotations

from traceviz.analysis.compare import Comparison
from traceviz.report.views import View, comparison_views, headline_details


def view_html(view: View) -> str:
    """One view as an HTML table (escaped)."""
    import html  # here, not at import: the text report never needs it (html.entities: ~2 ms)

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
    """The verdict sentence and top findings (:mod:`traceviz.report.headline`), then the
    headline lines and tables, as an HTML fragment (for Jupyter's rich display)."""
    import html

    from traceviz.report.headline import headline as first_screen
    from traceviz.report.headline_html import HEADLINE_CSS, headline_html

    first = f"<style>{HEADLINE_CSS}</style>{headline_html(first_screen(comparison))}"
    lines = "".join(f"<li>{html.escape(line)}</li>" for line in headline_details(comparison))
    tables = "".join(view_html(v) for v in comparison_views(comparison, top=top))
    return f"<div class='traceviz-comparison'>{first}<ul>{lines}</ul>{tables}</div>"
