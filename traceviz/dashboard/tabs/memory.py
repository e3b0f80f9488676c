"""The Memory tab: traffic by kernel kind, allocated memory, and the memory metrics."""

from __future__ import annotations

import panel as pn

from traceviz.analysis.compare import Comparison, Metric
from traceviz.dashboard.tabs.common import STRETCH, plot, view_table
from traceviz.report import figures
from traceviz.report.views import (
    metrics_view,
)


def memory(c: Comparison) -> pn.viewable.Viewable:
    names = (
        "est_bytes",
        "unestimated_time_share",
        "peak_allocated_bytes",
        "memcpy_bytes",
        "est_bytes_saved",
    )
    table = metrics_view(c, only=names, title="Memory")
    data = c.metrics[c.metrics[Metric.name].isin(names)]
    return pn.Column(
        plot(figures.memory_kind_figure(c)),
        plot(figures.allocated_figure(c)),
        view_table(table, data),
        sizing_mode=STRETCH,
        name="memory",
    )
