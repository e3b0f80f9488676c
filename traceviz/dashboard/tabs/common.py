"""What every dashboard tab shares: sizing, the stylesheet, figure and HTML panes."""

from __future__ import annotations

from typing import Any

import panel as pn

STRETCH = "stretch_width"


_CSS = """
.tv-cards { display: flex; flex-wrap: wrap; gap: 10px; }
.tv-card { border: 1px solid #ddd; border-radius: 6px; padding: 8px 12px; min-width: 150px; }
.tv-card .v { font-size: 1.15em; font-weight: 600; } .tv-card .d { color: #555; font-size: .85em; }
.tv-tag { font-size: .75em; color: #777; } table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 2px 8px; text-align: left; } th { background: #f5f5f5; }
.finding { margin: 6px 0; padding: 4px 10px; border-left: 4px solid #888; }
.sev-error { border-color: #d62728; } .sev-warning { border-color: #ff7f0e; }
.sev-info { border-color: #1f77b4; }
"""


def plot(fig: Any) -> pn.pane.Plotly:
    """A figure from :mod:`traceviz.report.figures` as a Panel pane."""
    height = int(fig.layout.height or 380)
    return pn.pane.Plotly(
        fig, sizing_mode=STRETCH, height=height, config={"displaylogo": False, "responsive": True}
    )


def html_pane(text: str) -> pn.pane.HTML:
    return pn.pane.HTML(text, sizing_mode=STRETCH, stylesheets=[_CSS])


def selectable_table(data: Any, **options: Any) -> pn.widgets.Tabulator:
    """A read-only, paginated Tabulator whose rows are selected one at a time (the tabs watch
    ``selection`` to explain a row); ``options`` add formatters, filters, titles."""
    return pn.widgets.Tabulator(
        data,
        pagination="remote",
        page_size=15,
        show_index=False,
        disabled=True,
        selectable=1,
        sizing_mode=STRETCH,
        layout="fit_data_stretch",
        **options,
    )
