"""The one figure layer: every plot of a comparison, built from result objects.

The HTML report, the dashboard and the notebook widgets all call these builders; nothing else
in traceviz makes a figure, and nothing here shows one (no ``fig.show()``). Each builder takes
a :class:`~traceviz.analysis.compare.Comparison` and keyword-only options and returns a new
``plotly.graph_objects.Figure`` whose title says what is drawn, in which unit, and whether it
is measured (read from the traces) or estimated (modelled).

Big traces stay responsive: the timeline draws at most ``max_marks`` marks, merging the events
of each lane into time bins beyond that (the figure's ``layout.meta`` says how many marks and
events it holds); histograms and memory curves are binned here, not in the browser.

One module per view (``overview``, ``timeline``, ``fusion``, ``launch``, ``memory``,
``regions``) plus ``style`` (colours, limits, layout helpers) and ``fast`` (the figure made
at once from its finished properties, skipping plotly's per-call validation: the same
figure, a fraction of the time); every builder is importable from this package, and
:data:`VIEW_FIGURES` lists them by view.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import plotly.graph_objects as go

from traceviz.analysis.compare import Comparison
from traceviz.report.figures.fusion import fusion_figure
from traceviz.report.figures.launch import (
    idle_figure,
    launch_delay_figure,
    per_step_figure,
)
from traceviz.report.figures.memory import (
    allocated_figure,
    memory_kind_figure,
)
from traceviz.report.figures.overview import (
    kinds_figure,
    metrics_figure,
)
from traceviz.report.figures.regions import (
    regions_figure,
)
from traceviz.report.figures.style import (
    HEADLINE_METRICS,
    KIND_COLORS,
    MAX_MARKS,
    SIDE_COLORS,
    TIMELINE_LAUNCH_CLASSES,
)
from traceviz.report.figures.timeline import (
    step_labels,
    timeline_figure,
    timeline_marks,
)

FigureBuilder = Callable[[Comparison], go.Figure]

#: The figures of each view, in order (the dashboard's tabs and the report's sections).
VIEW_FIGURES: dict[str, list[FigureBuilder]] = {
    "Overview": [metrics_figure, kinds_figure],
    "Timeline": [timeline_figure],
    "Fusion": [fusion_figure],
    "Launch overhead": [launch_delay_figure, idle_figure, per_step_figure],
    "Memory": [memory_kind_figure, allocated_figure],
    "Regions": [regions_figure],
}


def all_figures(c: Comparison) -> dict[str, list[go.Figure]]:
    """Every figure of :data:`VIEW_FIGURES`, built with default options."""
    return {view: [build(c) for build in builders] for view, builders in VIEW_FIGURES.items()}


def figures_html(
    builders: Iterable[Callable[[Any], go.Figure]], subject: Any, id_prefix: str
) -> str:
    """Each ``build(subject)`` as a responsive ``<div id="{id_prefix}-{i}">`` (i from 0), without
    plotly.js (the offline HTML report embeds it once for the whole page) and the plotly logo,
    concatenated in order."""
    import plotly.io as pio

    return "".join(
        pio.to_html(
            build(subject),
            full_html=False,
            include_plotlyjs=False,
            config={"displaylogo": False, "responsive": True},
            div_id=f"{id_prefix}-{i}",
        )
        for i, build in enumerate(builders)
    )


__all__ = [
    "HEADLINE_METRICS",
    "KIND_COLORS",
    "MAX_MARKS",
    "SIDE_COLORS",
    "TIMELINE_LAUNCH_CLASSES",
    "VIEW_FIGURES",
    "FigureBuilder",
    "all_figures",
    "allocated_figure",
    "figures_html",
    "fusion_figure",
    "idle_figure",
    "kinds_figure",
    "launch_delay_figure",
    "memory_kind_figure",
    "metrics_figure",
    "per_step_figure",
    "regions_figure",
    "step_labels",
    "timeline_figure",
    "timeline_marks",
]
