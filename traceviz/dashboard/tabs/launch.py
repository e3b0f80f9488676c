"""The Launch overhead tab: launch delay, device idle, per-step figures and the launch
metrics (measured).
"""

from __future__ import annotations

import panel as pn

from traceviz.analysis.compare import Comparison, Metric
from traceviz.dashboard.tabs.common import STRETCH, plot, view_table
from traceviz.report import figures
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
    table = metrics_view(c, only=names, title="Launch overhead (measured)")
    data = c.metrics[c.metrics[Metric.name].isin(names)]
    return pn.Column(
        plot(figures.launch_delay_figure(c)),
        plot(figures.idle_figure(c)),
        plot(figures.per_step_figure(c)),
        view_table(table, data),
        sizing_mode=STRETCH,
        name="launch",
    )
