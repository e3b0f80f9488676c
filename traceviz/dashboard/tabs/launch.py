"""The Launch overhead tab: launch delay, device idle, per-step figures and the launch
metrics (measured).
"""

from __future__ import annotations

import panel as pn

from traceviz.analysis.compare import Comparison
from traceviz.dashboard.tabs.common import metrics_tab
from traceviz.report import figures

LAUNCH_METRICS = (
    "launch_count",
    "launch_api_time_us",
    "launch_delay_p50_us",
    "short_kernels",
    "device_idle_us",
    "cpu_wait_us",
)


def launch(c: Comparison) -> pn.viewable.Viewable:
    plots = [figures.launch_delay_figure(c), figures.idle_figure(c), figures.per_step_figure(c)]
    return metrics_tab(c, LAUNCH_METRICS, "Launch overhead (measured)", plots, "launch")
