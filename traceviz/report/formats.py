"""Output formats as one registry: ``--format`` of ``traceviz compare`` and ``traceviz summary``.

A format is a :class:`Renderer`: ``comparison(report, top=)`` renders a
:class:`~traceviz.report.bundle.Report` (headline, tables, findings), ``summary(summary,
findings, roofline=)`` one trace's :class:`~traceviz.analysis.summary.TraceSummary`, its
findings and its :class:`~traceviz.analysis.roofline.per_kernel.Roofline` (None: not computed, or
the device is not modelled).
Each returns the document as text, or, for the terminal format, a function that draws it on a
rich console (colours on a terminal, plain text in a file). A format that cannot render a kind
of result leaves that method out; :func:`names` lists the formats that can.

Adding a format is one class here (its module imported inside its methods, so ``--help`` stays
fast) and one entry in :data:`RENDERERS`; ``tests/test_formats.py`` then runs it over every
real report.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar, TypeAlias

from traceviz.errors import UsageError

if TYPE_CHECKING:
    from rich.console import Console

    from traceviz.analysis.roofline.per_kernel import Roofline
    from traceviz.analysis.summary import TraceSummary
    from traceviz.diagnose.finding import Finding
    from traceviz.report.bundle import Report

#: A rendered result: the document's text, or a function drawing it on a console (rich is
#: imported only by the formats that draw: JSON and Markdown start without it).
Rendered: TypeAlias = "str | Callable[[Console], None]"
COMPARISON = "comparison"
SUMMARY = "summary"


class Renderer:
    """One output format. Subclasses set :attr:`name` and override what they can render."""

    name: ClassVar[str]
    #: Which results it renders (:data:`COMPARISON`, :data:`SUMMARY`).
    renders: ClassVar[frozenset[str]] = frozenset()

    def comparison(self, report: Report, *, top: int) -> Rendered:
        raise UsageError(f"--format {self.name} is not offered for a comparison")

    def summary(
        self, summary: TraceSummary, findings: Sequence[Finding], roofline: Roofline | None = None
    ) -> Rendered:
        raise UsageError(f"--format {self.name} is not offered for a trace summary")


class TextRenderer(Renderer):
    """Rich tables for the terminal (the default)."""

    name = "text"
    renders = frozenset({COMPARISON, SUMMARY})

    def comparison(self, report: Report, *, top: int) -> Rendered:
        from traceviz.report.text import render_comparison

        return lambda console: render_comparison(report, console, top=top)

    def summary(
        self, summary: TraceSummary, findings: Sequence[Finding], roofline: Roofline | None = None
    ) -> Rendered:
        from traceviz.report.text import render_findings, render_summary

        def draw(console: Console) -> None:
            render_summary(summary, console, roofline=roofline)
            render_findings(findings, console)

        return draw


class JsonRenderer(Renderer):
    """JSON for scripts (a comparison's form is documented in docs/compare-json.md)."""

    name = "json"
    renders = frozenset({COMPARISON, SUMMARY})

    def comparison(self, report: Report, *, top: int) -> Rendered:
        from traceviz.report.json_report import comparison_json

        return json.dumps(comparison_json(report, top=top), indent=2) + "\n"

    def summary(
        self, summary: TraceSummary, findings: Sequence[Finding], roofline: Roofline | None = None
    ) -> Rendered:
        from traceviz.report.json_numbers import whole_counts

        shown = roofline.to_json(top=summary.top) if roofline is not None else None
        data = whole_counts(
            {**summary.to_json(), "roofline": shown, "findings": [f.to_json() for f in findings]}
        )
        return json.dumps(data, indent=2) + "\n"


class MarkdownRenderer(Renderer):
    """A Markdown document (for a pull request or an issue)."""

    name = "markdown"
    renders = frozenset({COMPARISON})

    def comparison(self, report: Report, *, top: int) -> Rendered:
        from traceviz.report.markdown import comparison_markdown

        return comparison_markdown(report, top=top)


class HtmlRenderer(Renderer):
    """One self-contained, offline HTML file with the figures."""

    name = "html"
    renders = frozenset({COMPARISON})

    def comparison(self, report: Report, *, top: int) -> Rendered:
        check_html_extra()
        from traceviz.report.html import comparison_html

        return comparison_html(report, top=top)


def check_html_extra(what: str = "an HTML report") -> None:
    """A :class:`UsageError` naming the dashboard extra when plotly (which draws the HTML
    report's figures) is not installed; found without importing it."""
    import importlib.util

    if importlib.util.find_spec("plotly") is None:
        raise UsageError(f"{what} needs plotly: pip install 'traceviz[dashboard]'")


#: Every format by name, in ``--help`` order (the first is the default).
RENDERERS: dict[str, Renderer] = {
    r.name: r for r in (TextRenderer(), JsonRenderer(), MarkdownRenderer(), HtmlRenderer())
}


def names(kind: str) -> tuple[str, ...]:
    """The formats that render ``kind`` (:data:`COMPARISON` or :data:`SUMMARY`)."""
    return tuple(name for name, r in RENDERERS.items() if kind in r.renders)


def renderer(name: str) -> Renderer:
    """The format called ``name`` (:class:`UsageError` naming the known ones otherwise)."""
    if name not in RENDERERS:
        raise UsageError(f"unknown format {name!r}; formats are {', '.join(RENDERERS)}")
    return RENDERERS[name]
