"""Compiled regions: device time inside and outside them, per frame."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from traceviz.analysis.compare import Comparison
from traceviz.report.figures.fast import figure, scalars, subplots
from traceviz.report.figures.style import (
    SIDE_COLORS,
    _records,
    _sides,
    layout_spec,
    template_spec,
)
from traceviz.report.views import frame_label
from traceviz.units import fmt_count, fmt_us


def regions_figure(c: Comparison) -> go.Figure:
    """Device time inside compiled regions, in graph-break gaps and outside (measured), and
    device time per compiled frame."""
    notes = [
        f"{s.name}: {s.regions.graph_breaks} graph break(s), {s.regions.recompiles} recompile(s)"
        for s, _ in _sides(c)
    ]
    title = f"Compiled regions (measured, ms) — {'; '.join(notes)}"
    layout, grid = subplots(
        rows=1,
        cols=2,
        column_widths=(0.45, 0.55),
        subplot_titles=("device time by where it was issued", "device time per compiled frame X/Y"),
    )
    parts = (
        ("inside compiled regions", "#54A24B"),
        ("between regions of a step (graph-break gaps)", "#E45756"),
        ("outside compiled regions (other)", "#BAB0AC"),
    )
    data: list[dict[str, Any]] = []
    for side, _ in _sides(c):
        r = side.regions
        # a partition of the kernel time: gap kernels may sit inside a (nesting) region
        values = (r.code_time_us, r.between_time_us, r.other_time_us)
        for (part, color), value in zip(parts, values, strict=True):
            data.append(
                {
                    "hoverinfo": "text",
                    "hovertext": f"{side.name}: {part} {fmt_us(value)}",
                    "legendgroup": part,
                    "marker": {"color": color},
                    "name": part,
                    "showlegend": side is c.a,
                    "x": [side.name],
                    "y": scalars([value / 1e3]),
                    "type": "bar",
                    "xaxis": "x",
                    "yaxis": "y",
                }
            )
    frames = c.regions
    for which, color in (("a", SIDE_COLORS[0]), ("b", SIDE_COLORS[1])):
        rows = frames[frames["side"] == which]
        if rows.empty:
            continue
        label = c.names[0 if which == "a" else 1]
        shown = [(r, frame_label(r, outside="")) for r in _records(rows)]
        x = [f"{label} {frame}" for _, frame in shown]
        hover = [
            f"{label} {'frame ' if '/' in frame else ''}{frame}: {fmt_count(r['calls'])} calls, "
            f"{fmt_count(r['kernel_count'])} kernels, {fmt_us(r['kernel_time_us'])} device, "
            f"{fmt_us(r['wall_us'])} wall"
            for r, frame in shown
        ]
        data.append(
            {
                "hoverinfo": "text",
                "hovertext": hover,
                "marker": {"color": color},
                "name": f"{label} frames",
                "x": x,
                "y": rows["kernel_time_us"].to_numpy(dtype=float) / 1e3,
                "type": "bar",
                "xaxis": "x2",
                "yaxis": "y2",
            }
        )
    if frames.empty:
        layout["annotations"].append(
            {"showarrow": False, "text": "no Torch-Compiled Region in either trace", "x": 0.8,
             "xref": "paper", "y": 0.5, "yref": "paper"}
        )  # fmt: skip
    layout["template"] = template_spec()
    layout["barmode"] = "stack"
    layout["yaxis"]["title"] = {"text": "device time (ms)"}
    layout |= layout_spec(title, height=380)
    return figure(data, layout, grid=grid)
