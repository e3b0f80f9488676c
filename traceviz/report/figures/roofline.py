"""The step bridge as a waterfall and the roofline as a scatter (docs/roofline.md).

Both are built from :mod:`traceviz.report.roofline_report` (the bridge and each side's roofline,
with the report's ``--peaks`` override), so they show the figures the text, Markdown and JSON
reports print.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from traceviz.analysis.compare import Comparison
from traceviz.analysis.roofline.bridge import BridgeParts
from traceviz.analysis.roofline.peaks import PRECISIONS, DevicePeaks
from traceviz.analysis.roofline.per_kernel import RooflineByName
from traceviz.report.figures.fast import figure
from traceviz.report.figures.style import SIDE_COLORS, empty_spec, layout_spec, template
from traceviz.report.roofline_report import bridge_of, roofline_of, signed_us
from traceviz.units import fmt_us

__all__ = ["ROOFLINE_FIGURES", "bridge_figure", "roofline_figure"]

_DASHES = {"fp32": "solid", "tf32": "dot", "bf16": "dash", "fp16": "dashdot", "fp8": "longdash"}


def bridge_figure(c: Comparison) -> go.Figure:
    """A waterfall from a's step to b's: each part of the step bridge takes away its Δ (a
    part b spends less on goes down), the remainder last, then b's step."""
    a, b = c.names
    bridge = bridge_of(c)
    if bridge is None:
        return figure(
            [], empty_spec(f"Step bridge {a} → {b} (measured)", "no step to compare on a side")
        )
    title = (
        f"Step bridge {a} → {b}: where the step time goes (measured, µs per step; "
        f"{bridge.basis}; down: {b} spends less)"
    )
    labels = [f"{a} step", *bridge.parts[BridgeParts.label].astype(str), "remainder", f"{b} step"]
    deltas = [-float(d) for d in bridge.parts[BridgeParts.delta_us]]
    values = [bridge.step_a_us, *deltas, -bridge.remainder_us, bridge.step_b_us]
    measures = ["absolute", *["relative"] * (len(deltas) + 1), "total"]
    fig = go.Figure(
        go.Waterfall(
            x=labels,
            y=values,
            measure=measures,
            text=[
                signed_us(v) if m == "relative" else fmt_us(v)
                for v, m in zip(values, measures, strict=True)
            ],
            textposition="outside",
            decreasing={"marker": {"color": "#54A24B"}},
            increasing={"marker": {"color": "#E45756"}},
            totals={"marker": {"color": SIDE_COLORS[1]}},
            connector={"line": {"color": "#999"}},
        )
    )
    fig.update_layout(template=template(), yaxis_title="µs per step", showlegend=False)
    fig.update_layout(**layout_spec(title, height=420))
    return fig


def roofline_figure(c: Comparison) -> go.Figure:
    """Each side's kernels (per name, with FLOPs and bytes) at their arithmetic intensity
    (x, FLOP/byte) and achieved TFLOP/s (y), both log scale, under the roofs of their device:
    ``min(peak TFLOP/s, intensity × peak TB/s)`` for each precision the kernels compute in."""
    a, b = c.names
    fig = go.Figure()
    hidden = 0
    roofs: dict[str, tuple[DevicePeaks, set[str]]] = {}
    basis = []
    for which, color in zip(("a", "b"), SIDE_COLORS, strict=True):
        roofline = roofline_of(c, which)
        if roofline is None:
            continue
        name = c.side(which).name
        basis.append(f"{name}: {roofline.peaks.basis.value}")
        table = roofline.by_name
        drawn = table[(table[RooflineByName.flops] > 0) & (table[RooflineByName.bytes] > 0)]
        hidden += len(table) - len(drawn)
        if roofline.peaks.peaks is not None:
            peaks = roofline.peaks.peaks
            used = set(roofline.per_kernel["precision"].dropna().astype(str))
            roofs.setdefault(peaks.name, (peaks, set()))[1].update(used or {"fp32"})
        if drawn.empty:
            continue
        fig.add_trace(
            go.Scatter(
                x=drawn[RooflineByName.intensity],
                y=drawn[RooflineByName.achieved_tflops],
                mode="markers",
                name=name,
                marker={"color": color, "size": _sizes(drawn[RooflineByName.time_us])},
                hovertext=_hover(drawn),
                hoverinfo="text",
            )
        )
    for peaks, precisions in roofs.values():
        for precision in (p for p in PRECISIONS if p in precisions):
            _add_roof(fig, peaks, precision)
    title = (
        f"Roofline of {a} and {b}: achieved TFLOP/s against FLOP/byte (measured times; FLOPs "
        f"and bytes estimated from shapes; lines: the device's roofs; marker size: device "
        f"time; peaks {', '.join(basis) or 'none'}; {hidden} kernel names without FLOPs or "
        "bytes not drawn)"
    )
    if not fig.data:
        why = "no kernel with both FLOPs and bytes (GEMM, conv, attention)"
        return figure([], empty_spec(title, why))
    fig.update_layout(template=template())
    fig.update_xaxes(type="log", title_text="arithmetic intensity, FLOP/byte")
    fig.update_yaxes(type="log", title_text="achieved TFLOP/s")
    fig.update_layout(**layout_spec(title, height=460))
    return fig


def _add_roof(fig: go.Figure, peaks: DevicePeaks, precision: str) -> None:
    """The roof of one precision: memory slope up to the ridge, then the compute peak."""
    peak = peaks.tflops(precision)
    if peak is None:
        return
    ridge = peak / peaks.hbm_tbps
    xs = np.logspace(math.log10(ridge) - 4, math.log10(ridge) + 2, 60)
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=np.minimum(peak, xs * peaks.hbm_tbps),
            mode="lines",
            name=f"{peaks.name} {precision} roof ({peak:g} TFLOP/s, {peaks.hbm_tbps:g} TB/s)",
            line={"color": "#444", "dash": _DASHES[precision], "width": 1},
            hoverinfo="name",
        )
    )


def _hover(drawn: pd.DataFrame) -> list[str]:
    """One hover text per kernel name: kind, count, time, intensity, TFLOP/s, % of roof, bound."""
    n = RooflineByName
    columns = [n.name, n.kind, n.count, n.time_us, n.intensity, n.achieved_tflops,
               n.pct_of_roof, n.bound]  # fmt: skip
    return [
        f"{name}<br>{kind}, {int(count)}×, {fmt_us(time)}<br>{flop_b:.3g} FLOP/B, "
        f"{tflops:.3g} TFLOP/s, {pct:.1f}% of roof, {bound}"
        for name, kind, count, time, flop_b, tflops, pct, bound in drawn[columns].itertuples(
            index=False, name=None
        )
    ]


def _sizes(times: object) -> list[float]:
    values = np.asarray(times, dtype=float)
    top = float(np.nanmax(values)) if values.size else 1.0
    return [6.0 + 18.0 * math.sqrt(v / top) if top > 0 and v == v else 6.0 for v in values]


#: The figures of the report's "Step bridge and roofline" section and the dashboard Overview.
ROOFLINE_FIGURES = (bridge_figure, roofline_figure)
