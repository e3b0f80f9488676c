"""The Launch overhead tab: launch delay, device idle, per-step figures and the launch
metrics (measured).
"""

from __future__ import annotations

import panel as pn

from traceviz.analysis.compare import Comparison
from traceviz.dashboard.tabs.common import STRETCH, html_pane, plot
from traceviz.report import figures
from traceviz.report.snippet import view_html
from traceviz.report.views import (
    metrics_view,
)


def launch(c: Comparison) -> pn.viewable.Viewable:
    names = (
        "launch_count",
        "launch_api_time_us",
        "launch_delay_p50_us",
        "short_kernels",
        "device_idle_us",
        "cpu_wait_us",
    )
    view = metrics_view(c)
    rows = [r for r in view.rows if r[0] in names]
    table = view_html(type(view)("Launch overhead (measured)", view.columns, rows))
    return pn.Column(
        plot(figures.launch_delay_figure(c)),
        plot(figures.idle_figure(c)),
        plot(figures.per_step_figure(c)),
        html_pane(table),
        sizing_mode=STRETCH,
        name="launch",
    )
