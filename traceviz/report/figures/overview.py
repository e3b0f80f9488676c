"""The overview: headline metrics of both traces and device time by kernel kind."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from traceviz.analysis.compare import Comparison, Metric
from traceviz.report.figures.style import (
    HEADLINE_METRICS,
    KIND_COLORS,
    SIDE_COLORS,
    _empty,
    _layout,
    _records,
)
from traceviz.report.views import fmt_value
from traceviz.units import fmt_count, fmt_us


def metrics_figure(c: Comparison, *, names: Sequence[str] = HEADLINE_METRICS) -> go.Figure:
    """b / a of the headline metrics as bars on a log axis (1 = unchanged)."""
    a, b = c.names
    title = (
        f"{b} ÷ {a} for headline metrics (measured; estimated ones in grey; 1 = unchanged, "
        "log scale; hover for values)"
    )
    rows = c.metrics[c.metrics[Metric.name].isin(names)]
    rows = rows[np.isfinite(rows[Metric.ratio].astype(float)) & (rows[Metric.ratio] > 0)]
    if rows.empty:
        return _empty(title, "no metric is defined on both traces")
    fig = go.Figure()
    for basis, color in (("measured", SIDE_COLORS[1]), ("estimated", "#BAB0AC")):
        part = rows[rows[Metric.basis] == basis]
        if part.empty:
            continue
        hover = [
            f"{r['name']}: {fmt_value(r['a'], r['unit'])} → "
            f"{fmt_value(r['b'], r['unit'])} ({basis})<br>{r['description']}"
            for r in _records(part)
        ]
        fig.add_bar(
            x=part[Metric.ratio],
            y=part[Metric.name],
            orientation="h",
            name=basis,
            marker_color=color,
            text=[f"×{v:.2f}" for v in part[Metric.ratio]],
            hovertext=hover,
            hoverinfo="text",
        )
    fig.add_vline(x=1, line_dash="dot", line_color="#444")
    fig.update_xaxes(type="log", title_text=f"{b} / {a}")
    fig.update_yaxes(autorange="reversed")
    return _layout(fig, title, height=120 + 28 * len(rows))


def kinds_figure(c: Comparison) -> go.Figure:
    """Device time per kernel kind, one stacked bar per trace (measured, ms)."""
    title = "Device time by kernel kind (measured, ms)"
    kinds = c.kinds
    if kinds.empty:
        return _empty(title, "no kernels in either trace")
    table = kinds.groupby(["side", "kind"], observed=True)[["count", "time_us"]].sum()
    fig = go.Figure()
    order = table.groupby("kind", observed=True)["time_us"].sum().sort_values(ascending=False)
    for kind in order.index:
        xs, ys, hover = [], [], []
        for side, label in zip(("a", "b"), c.names, strict=True):
            if (side, kind) not in table.index:
                continue
            row = table.loc[(side, kind)]
            xs.append(float(row["time_us"]) / 1e3)
            ys.append(label)
            hover.append(f"{label} · {kind}: {fmt_us(row['time_us'])}, {fmt_count(row['count'])}")
        fig.add_bar(
            x=xs,
            y=ys,
            orientation="h",
            name=str(kind),
            hovertext=hover,
            hoverinfo="text",
            marker_color=KIND_COLORS.get(str(kind), "#888"),
        )
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title_text="device time (ms, measured)")
    fig.update_yaxes(autorange="reversed")
    return _layout(fig, title, height=260)
