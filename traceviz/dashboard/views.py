"""The dashboard's views of one comparison, as Panel components.

Figures come from :mod:`traceviz.report.figures` and tables from :mod:`traceviz.report.views`
(the ones the CLI and the HTML report show); the tabs lay them out and add the interactive
parts (kernel table, step choice, click-to-explain), one module per tab in
:mod:`traceviz.dashboard.tabs` (the two metrics tabs in its ``common``). This module is their
registry, :data:`VIEWS`.

A tab that applies only to some reports (ONNX Runtime backends, many ranks) is added with
:func:`register_view` and a ``when`` test; :func:`views_for` lists the tabs a report shows.
The dashboard builds a tab only when it is first opened, so a registered builder costs
nothing until then.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import panel as pn

from traceviz.dashboard.tabs.backends import backends, has_backends
from traceviz.dashboard.tabs.common import STRETCH, html_pane, launch, memory
from traceviz.dashboard.tabs.fusion import LinesView, fusion
from traceviz.dashboard.tabs.kernel_diff import KernelDiffView
from traceviz.dashboard.tabs.kernels import KernelsView, explain_kernel, kernel_table, kernels
from traceviz.dashboard.tabs.overview import overview
from traceviz.dashboard.tabs.ranks import has_ranks, ranks
from traceviz.dashboard.tabs.regions import regions
from traceviz.dashboard.tabs.timeline import TimelineView
from traceviz.report.bundle import Report

__all__ = [  # the tabs' names their users import from here
    "STRETCH",
    "KernelDiffView",
    "KernelsView",
    "LinesView",
    "explain_kernel",
    "html_pane",
    "kernel_table",
]

#: Tab title → builder, in the order the dashboard shows them.
Component = pn.viewable.Viewable | pn.viewable.Viewer
VIEWS: dict[str, Callable[[Report], Component]] = {
    "Overview": overview,
    "Kernels": kernels,
    "Timeline": lambda c: TimelineView(comparison=c),
    "Fusion": fusion,
    "Launch overhead": launch,
    "Memory": memory,
    "Regions": regions,
}

#: Tab title → test: the tab shows only for reports it accepts (a title not here: always).
VIEW_WHEN: dict[str, Callable[[Report], bool]] = {}


def register_view(
    title: str,
    build: Callable[[Report], Component],
    *,
    when: Callable[[Report], bool] | None = None,
    before: str | None = None,
) -> None:
    """Add (or replace) the tab ``title``: ``build(report)`` makes its component when the tab
    is first opened; ``when(report)`` says whether a report shows it at all; ``before`` puts it
    in front of that tab (default: last)."""
    VIEW_WHEN.pop(title, None)
    items: list[tuple[str, Any]] = [(t, b) for t, b in VIEWS.items() if t != title]
    at = next((i for i, (t, _) in enumerate(items) if t == before), len(items))
    items.insert(at, (title, build))
    VIEWS.clear()
    VIEWS.update(items)
    if when is not None:
        VIEW_WHEN[title] = when


def views_for(report: Report) -> list[str]:
    """The titles of the tabs ``report`` shows, in order."""
    return [title for title in VIEWS if title not in VIEW_WHEN or VIEW_WHEN[title](report)]


# Tabs shown only for some reports.
register_view("Backends", backends, when=has_backends)  # runs with ONNX Runtime backends
register_view("Ranks", ranks, when=has_ranks)  # reports that carry a job's ranks
