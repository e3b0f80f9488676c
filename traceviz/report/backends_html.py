"""The HTML report's "Backends" section: the backends figures and tables, present only for a
run with ONNX Runtime backends."""

from __future__ import annotations

from typing import Any

import plotly.io as pio

from traceviz.report.backends_views import backends_views
from traceviz.report.figures.backends import BACKEND_FIGURES
from traceviz.report.snippet import view_html

SECTION = ("backends", "Backends")


def backends_sections(report: Any, *, top: int = 10) -> list[tuple[str, str, str]]:
    """``[(anchor, title, html)]``: one section, or none without ONNX Runtime data."""
    views = backends_views(report, top=top)
    if not views:
        return []
    figures = "".join(
        pio.to_html(
            build(report),
            full_html=False,
            include_plotlyjs=False,
            config={"displaylogo": False, "responsive": True},
            div_id=f"fig-backends-{i}",
        )
        for i, build in enumerate(BACKEND_FIGURES)
    )
    return [(*SECTION, figures + "".join(view_html(v) for v in views))]
