"""Backends side by side: step time with its spread, kernels per step and ONNX op counts per
level (a report's :attr:`backends`, runs with ONNX Runtime backends; the cross-backend fusion
table is a table view, :mod:`traceviz.report.backends_views`).

Each builder takes a report and returns a figure; a report without ONNX Runtime data gets an
empty figure that says so.
"""

from __future__ import annotations

import math
from typing import Any

import plotly.graph_objects as go

from traceviz.analysis.backends import BackendRow, BackendsView
from traceviz.report.backends_views import op_counts_view
from traceviz.report.figures.style import SIDE_COLORS, _empty, _layout, _nan_to_none, _records
from traceviz.units import fmt_us

__all__ = [
    "BACKEND_FIGURES",
    "backend_color",
    "kernels_per_step_figure",
    "latency_figure",
    "op_counts_figure",
]

ORT_COLOR = "#54A24B"
LOG_RATIO = 20  # step times further apart than this go on a log axis
NO_DATA = (
    "no ONNX Runtime data in this run (traceviz run MODEL --backends eager,compile,onnxruntime)"
)


def backend_color(backend: str) -> str:
    """Eager and compile in the side colours, ORT levels in one colour of their own."""
    if backend == "eager":
        return SIDE_COLORS[0]
    return SIDE_COLORS[1] if backend == "compile" else ORT_COLOR


def _view(report: Any) -> BackendsView | None:
    view = getattr(report, "backends", None)
    return view if isinstance(view, BackendsView) else None


def latency_figure(report: Any) -> go.Figure:
    """Median step time per backend (measured outside the profiler), whiskers ± IQR/2."""
    title = "Step time per backend (measured, µs): median, whiskers the 25th–75th percentiles"
    view = _view(report)
    if view is None:
        return _empty(title, NO_DATA)
    rows = [r for r in _records(view.rows) if _nan_to_none(r[BackendRow.step_median_us])]
    if not rows:
        return _empty(title, "run.json has no step times for these backends")
    fig = go.Figure()
    fig.add_bar(
        x=[r[BackendRow.backend] for r in rows],
        y=[r[BackendRow.step_median_us] for r in rows],
        error_y={
            "type": "data",
            "symmetric": False,
            "array": [_above(r) for r in rows],
            "arrayminus": [_below(r) for r in rows],
        },
        marker_color=[backend_color(str(r[BackendRow.backend])) for r in rows],
        hovertext=[_latency_hover(r) for r in rows],
        hoverinfo="text",
        showlegend=False,
    )
    method = view.latency_method or "run.json timing"
    medians = [float(r[BackendRow.step_median_us]) for r in rows]
    log = min(medians) > 0 and max(medians) / min(medians) > LOG_RATIO
    fig.update_yaxes(type="log" if log else "linear")
    scale = ", log scale" if log else ""
    return _layout(fig, f"{title} — {method}{scale}", yaxis_title="µs per step")


def kernels_per_step_figure(report: Any) -> go.Figure:
    """Kernels per step (ORT: node runs per model run) and their time per step (measured)."""
    title = "Kernels per step (measured): torch kernels, ORT node runs"
    view = _view(report)
    if view is None:
        return _empty(title, NO_DATA)
    rows = _records(view.rows)
    fig = go.Figure()
    fig.add_bar(
        x=[r[BackendRow.backend] for r in rows],
        y=[_nan_to_none(r[BackendRow.kernels_per_step]) for r in rows],
        marker_color=[backend_color(str(r[BackendRow.backend])) for r in rows],
        hovertext=[
            f"{r[BackendRow.backend]}: {_nan_to_none(r[BackendRow.kernels_per_step])} per step, "
            f"{_us(r[BackendRow.kernel_time_per_step_us])} kernel time per step"
            for r in rows
        ],
        hoverinfo="text",
        showlegend=False,
    )
    return _layout(fig, title, yaxis_title="kernels per step")


def op_counts_figure(report: Any) -> go.Figure:
    """Nodes per op type in the exported graph and each level: the ops whose count changes."""
    title = "ONNX op counts per graph (ops whose count changes)"
    view = _view(report)
    if view is None:
        return _empty(title, NO_DATA)
    table = op_counts_view(view)
    changed = [row for row in table.rows if len(set(row[1:])) > 1]
    if not changed:
        return _empty(title, "no level changed the exported graph's op counts")
    fig = go.Figure()
    for i, graph in enumerate(table.columns[1:], start=1):
        fig.add_bar(
            name=graph,
            x=[row[0] for row in changed],
            y=[int(row[i]) for row in changed],
            marker_color=SIDE_COLORS[0] if graph == "exported" else None,
        )
    return _layout(fig, title, barmode="group", yaxis_title="nodes")


def _above(row: dict[str, Any]) -> float:
    """Median to the 75th percentile (half the IQR where run.json kept no samples)."""
    q3, median = _nan_to_none(row[BackendRow.step_q3_us]), float(row[BackendRow.step_median_us])
    if q3 is not None:
        return max(q3 - median, 0.0)
    iqr = _nan_to_none(row[BackendRow.step_iqr_us])
    return 0.0 if iqr is None else iqr / 2


def _below(row: dict[str, Any]) -> float:
    """The 25th percentile to the median (never below zero)."""
    q1, median = _nan_to_none(row[BackendRow.step_q1_us]), float(row[BackendRow.step_median_us])
    if q1 is not None:
        return max(median - q1, 0.0)
    iqr = _nan_to_none(row[BackendRow.step_iqr_us])
    return 0.0 if iqr is None else min(iqr / 2, median)


def _us(value: Any) -> str:
    number = _nan_to_none(value)
    return "–" if number is None else fmt_us(number)


def _latency_hover(row: dict[str, Any]) -> str:
    ratio = _nan_to_none(row[BackendRow.ratio_to_eager])
    text = (
        f"{row[BackendRow.backend]}: median {_us(row[BackendRow.step_median_us])}, "
        f"IQR {_us(row[BackendRow.step_iqr_us])} ({row[BackendRow.timing]})"
    )
    return text + ("" if ratio is None or math.isnan(ratio) else f", {ratio:.2f}× eager")


#: The backends view's figures, in order (the HTML report's section, the dashboard's tab).
BACKEND_FIGURES = (latency_figure, kernels_per_step_figure, op_counts_figure)
