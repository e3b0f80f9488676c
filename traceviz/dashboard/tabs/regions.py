"""The Regions tab: compiled regions, and the graph breaks Dynamo reported in run.json."""

from __future__ import annotations

import html
from typing import Any

import panel as pn

from traceviz.analysis.compare import Comparison
from traceviz.dashboard.tabs.common import STRETCH, html_pane, plot, view_table
from traceviz.report import figures
from traceviz.report.views import (
    regions_view,
)


def regions(c: Comparison) -> pn.viewable.Viewable:
    parts: list[Any] = [plot(figures.regions_figure(c))]
    view = regions_view(c)
    if view.rows or view.note:
        parts.append(view_table(view))
    breaks = c.run_info.dynamo.graph_breaks if c.run_info is not None else []
    if breaks:
        items = "".join(
            f"<li><b>{html.escape(g.reason)}</b> at "
            f"{html.escape(str(g.file))}:{html.escape(str(g.line))}</li>"
            for g in breaks
        )
        parts.append(
            html_pane(f"<h4>Graph breaks reported by Dynamo (run.json)</h4><ul>{items}</ul>")
        )
    return pn.Column(*parts, sizing_mode=STRETCH, name="regions")
