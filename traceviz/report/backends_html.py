"""The HTML report's "Backends" section: the backends figures and tables, present only for a
run with ONNX Runtime backends."""

from __future__ import annotations

from typing import Any

from traceviz.report.backends_views import backends_views
from traceviz.report.figures import figures_html
from traceviz.report.figures.backends import BACKEND_FIGURES
from traceviz.report.snippet import view_html

SECTION = ("backends", "Backends")


def backends_sections(report: Any, *, top: int = 10) -> list[tuple[str, str, str]]:
    """``[(anchor, title, html)]``: one section, or none without ONNX Runtime data."""
    views = backends_views(report, top=top)
    if not views:
        return []
    figures = figures_html(BACKEND_FIGURES, report, "fig-backends")
    return [(*SECTION, figures + "".join(view_html(v) for v in views))]
