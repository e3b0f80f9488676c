"""The Memory tab: traffic by kernel kind, allocated memory, and the memory metrics."""

from __future__ import annotations

import panel as pn

from traceviz.analysis.compare import Comparison
from traceviz.dashboard.tabs.common import metrics_tab
from traceviz.report import figures

MEMORY_METRICS = (
    "est_bytes",
    "unestimated_time_share",
    "peak_allocated_bytes",
    "memcpy_bytes",
    "est_bytes_saved",
)


def memory(c: Comparison) -> pn.viewable.Viewable:
    plots = [figures.memory_kind_figure(c), figures.allocated_figure(c)]
    return metrics_tab(c, MEMORY_METRICS, "Memory", plots, "memory")
