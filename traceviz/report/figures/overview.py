"""The overview: headline metrics of both traces and device time by kernel kind."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from traceviz.analysis.compare import Comparison, Metric
from traceviz.analysis.traffic.coverage import traffic_gap_note
from traceviz.report.figures.fast import figure
from traceviz.report.figures.style import (
    HEADLINE_METRICS,
    KIND_COLORS,
    _records,
    empty_spec,
    layout_spec,
    template_spec,
)
from traceviz.report.headline import change_text
from traceviz.report.metric_names import metric_label
from traceviz.report.views import fmt_value
from traceviz.units import fmt_count, fmt_us

#: Colours of a ratio: lower is better for every headline metric (time, counts, bytes).
BETTER, WORSE, SAME = "#54A24B", "#E45756", "#9D9D9D"
#: Above this share of a side's kernel time with no traffic estimate, memory traffic is
#: partial: a lower bound, not a total, so its ratio gets no better/worse colour.
PARTIAL_SHARE = 0.2
#: Bars of an estimated metric are drawn lighter, with a pattern.
ESTIMATED_PATTERN = {"shape": "/", "fgcolor": "white", "fgopacity": 0.6}


def metrics_figure(c: Comparison, *, names: Sequence[str] = HEADLINE_METRICS) -> go.Figure:
    """b ÷ a of the headline metrics as bars on a log axis (1 = unchanged): green where b is
    lower (better: every headline metric counts a cost), red where higher; estimated metrics
    hatched; bars and ticks read in one direction (``"2.63× less"``, ``"same"``, ``"2× more"``:
    :func:`~traceviz.report.headline.change_text`), never a ×0.38."""
    a, b = c.names
    title = (
        f"{b} against {a} for headline metrics (measured; hatched: estimated; green: {b} "
        f"lower, red: {b} higher; log scale; hover for values)"
    )
    rows = c.metrics[c.metrics[Metric.name].isin(names)]
    rows = rows[np.isfinite(rows[Metric.ratio].astype(float)) & (rows[Metric.ratio] > 0)]
    if rows.empty:
        return figure([], empty_spec(title, "no metric is defined on both traces"))
    records = _records(rows)
    ratios = [float(r["ratio"]) for r in records]
    labels = [metric_label(str(r["name"]), c.names) for r in records]
    colors = [_ratio_color(x) for x in ratios]
    if traffic_partial(c):  # unknown bytes are not zero: no colour, and said so
        for i, r in enumerate(records):
            if r["name"] == "est_bytes":
                labels[i], colors[i] = f"{labels[i]} (partial)", SAME
    hover = [
        f"{label}: {fmt_value(r['a'], r['unit'])} → {fmt_value(r['b'], r['unit'])} "
        f"({r['basis']})<br>{r['description']}"
        for label, r in zip(labels, records, strict=True)
    ]
    shapes = ["/" if r["basis"] == "estimated" else "" for r in records]
    ticks = log_ticks(min(ratios), max(ratios))
    bar = {
        "cliponaxis": False,
        "hoverinfo": "text",
        "hovertext": hover,
        "marker": {"color": colors, "pattern": _pattern(shapes)},
        "orientation": "h",
        "showlegend": False,
        "text": [change_text(v) for v in ratios],
        "textposition": "outside",
        "x": ratios,
        "y": labels,
        "type": "bar",
    }
    layout = {
        "template": template_spec(),
        "shapes": [
            {"line": {"color": "#444", "dash": "dot"}, "type": "line", "x0": 1, "x1": 1,
             "xref": "x", "y0": 0, "y1": 1, "yref": "y domain"}
        ],
        "xaxis": {
            "title": {"text": f"{b} against {a}  (left of 'same': {b} lower · right: {b} higher)"},
            "type": "log",
            "tickvals": ticks,
            "ticktext": [tick_text(t) for t in ticks],
            "range": [math.log10(min(ticks)), math.log10(max(ticks))],
        },
        "yaxis": {"autorange": "reversed"},
        **layout_spec(title, height=120 + 28 * len(rows)),
    }  # fmt: skip
    return figure([bar], layout)


def _pattern(shapes: list[str]) -> dict[str, Any]:
    """:data:`ESTIMATED_PATTERN` with a shape per bar, as plotly stores it (its key order)."""
    pattern = {k: v for k, v in ESTIMATED_PATTERN.items() if k != "shape"}
    return dict(sorted(pattern.items())) | {"shape": shapes}


def traffic_partial(c: Comparison) -> bool:
    """True when either side has more than :data:`PARTIAL_SHARE` of its kernel time with no
    traffic estimate, or the two sides' estimates cover shares of their kernel time too far
    apart to compare (:func:`~traceviz.analysis.traffic.coverage.traffic_gap_note`)."""
    shares = [s.traffic.unestimated_time_share for s in (c.a, c.b)]
    if any(x is not None and x > PARTIAL_SHARE for x in shares):
        return True
    return traffic_gap_note(c.a.traffic, c.b.traffic, c.names) is not None


def _ratio_color(ratio: float) -> str:
    if abs(math.log(ratio)) < math.log(1.02):  # within 2 %: unchanged
        return SAME
    return BETTER if ratio < 1 else WORSE


def tick_text(ratio: float) -> str:
    """A tick of a b/a axis in one direction: ``"5× less"``, ``"same"``, ``"2× more"``."""
    if ratio == 1:
        return "same"
    return f"{1 / ratio:g}× less" if ratio < 1 else f"{ratio:g}× more"


def log_ticks(low: float, high: float) -> list[float]:
    """Tick values 1-2-5 per decade spanning ``[low, high]`` and 1 (e.g. 0.2, 0.5, 1, 2)."""
    low, high = min(low, 1.0) / 1.3, max(high, 1.0) * 1.3
    ticks = [
        m * 10.0**e
        for e in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
        for m in (1, 2, 5)
    ]
    inside = [t for t in ticks if low <= t <= high]
    below = [t for t in ticks if t < low]
    above = [t for t in ticks if t > high]
    return ([below[-1]] if below else []) + inside + ([above[0]] if above else [])


def kinds_figure(c: Comparison) -> go.Figure:
    """Device time per kernel kind, one stacked bar per trace (measured, ms)."""
    title = "Device time by kernel kind (measured, ms)"
    kinds = c.kinds
    if kinds.empty:
        return figure([], empty_spec(title, "no kernels in either trace"))
    table = kinds.groupby(["side", "kind"], observed=True)[["count", "time_us"]].sum()
    order = table.groupby("kind", observed=True)["time_us"].sum().sort_values(ascending=False)
    data: list[dict[str, Any]] = []
    cells = dict(zip(table.index, zip(table["time_us"], table["count"], strict=True), strict=True))
    for kind in order.index:
        xs, ys, hover = [], [], []
        for side, label in zip(("a", "b"), c.names, strict=True):
            if (side, kind) not in cells:
                continue
            time_us, count = cells[(side, kind)]
            xs.append(float(time_us) / 1e3)
            ys.append(label)
            hover.append(f"{label} · {kind}: {fmt_us(float(time_us))}, {fmt_count(count)}")
        data.append(
            {
                "hoverinfo": "text",
                "hovertext": hover,
                "marker": {"color": KIND_COLORS.get(str(kind), "#888")},
                "name": str(kind),
                "orientation": "h",
                "x": xs,
                "y": ys,
                "type": "bar",
            }
        )
    layout = {
        "template": template_spec(),
        "barmode": "stack",
        "xaxis": {"title": {"text": "device time (ms, measured)"}},
        "yaxis": {"autorange": "reversed"},
        **layout_spec(title, height=max(260, 90 + 20 * len(order))),
    }
    # the legend to the right of the bars, its top at the plot's top (a legend at y=1 of the
    # container, anchored at its bottom, lay above the figure, under the figure before it)
    layout["legend"] |= {"orientation": "v", "yref": "paper", "y": 1, "yanchor": "top",
                         "x": 1.01, "title": {"text": "kind"}, "xanchor": "left"}  # fmt: skip
    layout["margin"]["b"] = 50
    return figure(data, layout)
