"""Shared look of every figure: side and kernel-kind colours, limits, layout helpers."""

from __future__ import annotations

import copy
import functools
import math
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from traceviz.analysis.compare import Comparison, Side
from traceviz.schema import (
    LaunchClass,
)

#: One colour per side in every figure (a, b): indigo and raspberry, used by no kernel kind
#: (a side's bars beside a kind's must not read as that kind).
SIDE_COLORS = ("#3F37C9", "#C2185B")  # a, b
KIND_COLORS: dict[str, str] = {
    "gemm": "#4C78A8",
    "conv": "#72B7B2",
    "attention": "#B279A2",
    "pointwise": "#F58518",
    "reduction": "#E45756",
    "normalization": "#54A24B",
    "copy": "#9D755D",
    "memcpy": "#BAB0AC",
    "memset": "#D3D3D3",
    "communication": "#EECA3B",
    "other": "#888888",
    "launch call": "#2F2F2F",
    "blocking call": "#D62728",  # the CPU waits: syncs, blocking copies (analysis.blocking)
    "compiled region": "#7F3C8D",
    "compiled graph": "#CF9FD6",
}
TITLE_WIDTH = 110  # characters per title line (a 14 px title fits ~1000 px)
LEGEND_PX = 34  # the bottom margin's room for one row of legend, under the axis title
MAX_MARKS = 20_000  # timeline marks, both traces together
TIMELINE_LAUNCH_CLASSES = (
    LaunchClass.KERNEL_LAUNCH.value,
    LaunchClass.GRAPH_LAUNCH.value,
    LaunchClass.MEMCPY.value,
    LaunchClass.MEMSET.value,
)
HEADLINE_METRICS = (
    "kernel_count",
    "kernel_time_us",
    "step_time_us",
    "launch_count",
    "launch_api_time_us",
    "device_idle_us",
    "cpu_wait_us",
    "est_bytes",
    "peak_allocated_bytes",
)


#: The trace types traceviz draws: :func:`template` keeps plotly_white's styling of these.
TEMPLATE_TRACES = ("bar", "scatter")


@functools.cache
def template() -> go.layout.Template:
    """plotly_white cut to :data:`TEMPLATE_TRACES` (its layout whole): the same look with less
    template JSON to copy and validate per figure. Built once; plotly copies it into each
    figure, so it is never mutated."""
    import plotly.io as pio

    white = pio.templates["plotly_white"]
    data = {name: white.data[name] for name in TEMPLATE_TRACES}
    return go.layout.Template(layout=white.layout, data=data)


@functools.cache
def _template_spec() -> dict[str, Any]:
    fig = go.Figure()
    fig.update_layout(template=template())
    return dict(fig._layout["template"])


def template_spec() -> dict[str, Any]:
    """:func:`template` as a figure's layout stores it (a fresh copy), for
    :func:`traceviz.report.figures.fast.figure`."""
    return copy.deepcopy(_template_spec())


def layout_spec(title: str, *, height: int = 380) -> dict[str, Any]:
    """A figure's title (wrapped: plotly never wraps one, and a long one runs off the figure),
    margins and legend below the axis title, and height (grown with the title's lines and the
    legend's row), as plotly stores them, in order (the caller puts them after its own keys)."""
    lines = wrap_title(title)
    top = 34 + 19 * len(lines)
    return {
        "title": {"font": {"size": 14}, "text": "<br>".join(lines), "x": 0.01, "xanchor": "left"},
        "margin": {"l": 60, "r": 20, "t": top, "b": 50 + LEGEND_PX},
        "legend": {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom", "x": 0},
        "height": height + top - 53 + LEGEND_PX,
    }


def empty_spec(title: str, message: str, *, height: int = 260) -> dict[str, Any]:
    """The layout of a figure that draws nothing but ``message`` (it has no traces), for
    :func:`~traceviz.report.figures.fast.figure`."""
    return {
        "template": template_spec(),
        "annotations": [
            {"showarrow": False, "text": message, "x": 0.5, "xref": "paper", "y": 0.5,
             "yref": "paper"}
        ],
        "xaxis": {"visible": False},
        "yaxis": {"visible": False},
        **layout_spec(title, height=height),
    }  # fmt: skip


def wrap_title(text: str, width: int = TITLE_WIDTH) -> list[str]:
    """``text`` as lines of at most ``width`` characters, broken at spaces (a longer word
    keeps a line of its own)."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]


def _sides(c: Comparison) -> list[tuple[Side, str]]:
    return [(c.a, SIDE_COLORS[0]), (c.b, SIDE_COLORS[1])]


def _records(table: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as plain dicts (for building hover texts)."""
    return [{str(k): v for k, v in row.items()} for row in table.to_dict("records")]


def _nan_to_none(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number
