"""The dashboard's views of one comparison, as Panel components.

Figures come from :mod:`traceviz.report.figures` and tables from :mod:`traceviz.report.views`
(the ones the CLI and the HTML report show); the tabs lay them out and add the interactive
parts (kernel table, step choice, click-to-explain), one module per tab in
:mod:`traceviz.dashboard.tabs`. This module is their registry, :data:`VIEWS`; every tab's
names stay importable from here.
"""

from __future__ import annotations

from collections.abc import Callable

import panel as pn

from traceviz.dashboard.tabs.common import STRETCH, html_pane, plot
from traceviz.dashboard.tabs.fusion import LinesView, explain_line, fusion
from traceviz.dashboard.tabs.kernels import KernelsView, explain_kernel, kernel_table
from traceviz.dashboard.tabs.launch import launch
from traceviz.dashboard.tabs.memory import memory
from traceviz.dashboard.tabs.overview import CARD_METRICS, findings_html, overview
from traceviz.dashboard.tabs.regions import regions
from traceviz.dashboard.tabs.timeline import TimelineView
from traceviz.report.bundle import Report

__all__ = [
    "CARD_METRICS",
    "STRETCH",
    "VIEWS",
    "Component",
    "KernelsView",
    "LinesView",
    "TimelineView",
    "explain_kernel",
    "explain_line",
    "findings_html",
    "fusion",
    "html_pane",
    "kernel_table",
    "launch",
    "memory",
    "overview",
    "plot",
    "regions",
]

#: Tab title → builder, in the order the dashboard shows them.
Component = pn.viewable.Viewable | pn.viewable.Viewer
VIEWS: dict[str, Callable[[Report], Component]] = {
    "Overview": overview,
    "Kernels": lambda c: KernelsView(comparison=c),
    "Timeline": lambda c: TimelineView(comparison=c),
    "Fusion": fusion,
    "Launch overhead": launch,
    "Memory": memory,
    "Regions": regions,
}
