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
from traceviz.report.figures.fast import figure, scalars
from traceviz.report.figures.style import (
    SIDE_COLORS,
    _nan_to_none,
    _records,
    empty_spec,
    layout_spec,
    template_spec,
)
from traceviz.report.views import fmt_value

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
        return figure([], empty_spec(title, NO_DATA))
    rows = [r for r in _records(view.rows) if _nan_to_none(r[BackendRow.step_median_us])]
    if not rows:
        return figure([], empty_spec(title, "run.json has no step times for these backends"))
    whiskers = [_whiskers(r) for r in rows]
    bar = {
        "error_y": {
            "array": scalars([above for above, _ in whiskers]),
            "arrayminus": scalars([below for _, below in whiskers]),
            "symmetric": False,
            "type": "data",
        },
        "hoverinfo": "text",
        "hovertext": [_latency_hover(r) for r in rows],
        "marker": {"color": [backend_color(str(r[BackendRow.backend])) for r in rows]},
        "showlegend": False,
        "x": scalars([r[BackendRow.backend] for r in rows]),
        "y": scalars([r[BackendRow.step_median_us] for r in rows]),
        "type": "bar",
    }
    method = view.latency_method or "run.json timing"
    medians = [float(r[BackendRow.step_median_us]) for r in rows]
    log = min(medians) > 0 and max(medians) / min(medians) > LOG_RATIO
    scale = ", log scale" if log else ""
    layout = {
        "template": template_spec(),
        "yaxis": {"type": "log" if log else "linear", "title": {"text": "µs per step"}},
        **layout_spec(f"{title} — {method}{scale}"),
    }
    return figure([bar], layout)


def kernels_per_step_figure(report: Any) -> go.Figure:
    """Kernels per step (ORT: node runs per model run) and their time per step (measured)."""
    title = "Kernels per step (measured): torch kernels, ORT node runs"
    view = _view(report)
    if view is None:
        return figure([], empty_spec(title, NO_DATA))
    rows = _records(view.rows)
    bar = {
        "hoverinfo": "text",
        "hovertext": [
            f"{r[BackendRow.backend]}: {_nan_to_none(r[BackendRow.kernels_per_step])} per step, "
            f"{fmt_value(r[BackendRow.kernel_time_per_step_us], 'us')} kernel time per step"
            for r in rows
        ],
        "marker": {"color": [backend_color(str(r[BackendRow.backend])) for r in rows]},
        "showlegend": False,
        "x": scalars([r[BackendRow.backend] for r in rows]),
        "y": [_nan_to_none(r[BackendRow.kernels_per_step]) for r in rows],
        "type": "bar",
    }
    layout = {
        "template": template_spec(),
        **layout_spec(title),
        "yaxis": {"title": {"text": "kernels per step"}},
    }
    return figure([bar], layout)


def op_counts_figure(report: Any) -> go.Figure:
    """Nodes per op type in the exported graph and each level: the ops whose count changes."""
    title = "ONNX op counts per graph (ops whose count changes)"
    view = _view(report)
    if view is None:
        return figure([], empty_spec(title, NO_DATA))
    table = op_counts_view(view)
    changed = [row for row in table.rows if len(set(row[1:])) > 1]
    if not changed:
        why = "no level changed the exported graph's op counts"
        return figure([], empty_spec(title, why))
    data = []
    for i, graph in enumerate(table.columns[1:], start=1):
        bar: dict[str, Any] = {"marker": {"color": SIDE_COLORS[0]}} if graph == "exported" else {}
        bar |= {
            "name": graph,
            "x": scalars([row[0] for row in changed]),
            "y": [int(row[i]) for row in changed],
            "type": "bar",
        }
        data.append(bar)
    layout = {
        "template": template_spec(),
        **layout_spec(title),
        "barmode": "group",
        "yaxis": {"title": {"text": "nodes"}},
    }
    return figure(data, layout)


def _whiskers(row: dict[str, Any]) -> tuple[float, float]:
    """Median to the 75th percentile and the 25th percentile to the median (half the IQR each
    where run.json kept no samples; never below zero)."""
    median = float(row[BackendRow.step_median_us])
    half = (_nan_to_none(row[BackendRow.step_iqr_us]) or 0.0) / 2
    q1, q3 = _nan_to_none(row[BackendRow.step_q1_us]), _nan_to_none(row[BackendRow.step_q3_us])
    above = half if q3 is None else max(q3 - median, 0.0)
    return above, min(half, median) if q1 is None else max(median - q1, 0.0)


def _latency_hover(row: dict[str, Any]) -> str:
    ratio = _nan_to_none(row[BackendRow.ratio_to_eager])
    text = (
        f"{row[BackendRow.backend]}: median {fmt_value(row[BackendRow.step_median_us], 'us')}, "
        f"IQR {fmt_value(row[BackendRow.step_iqr_us], 'us')} ({row[BackendRow.timing]})"
    )
    return text + ("" if ratio is None or math.isnan(ratio) else f", {ratio:.2f}× eager")


#: The backends view's figures, in order (the HTML report's section, the dashboard's tab).
BACKEND_FIGURES = (latency_figure, kernels_per_step_figure, op_counts_figure)
