"""Launch overhead: launch delays, where the step's idle time goes, per-step breakdown."""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go

from traceviz.analysis.compare import Comparison, Side
from traceviz.analysis.timing.idle import IdleParts
from traceviz.analysis.timing.launch import StepOverhead
from traceviz.analysis.timing.step_parts import step_parts
from traceviz.report.figures.fast import figure, scalars, subplots
from traceviz.report.figures.style import (
    _sides,
    empty_spec,
    layout_spec,
    template_spec,
)
from traceviz.schema import (
    DeviceKind,
)
from traceviz.units import fmt_count, fmt_us


def launch_delay_figure(c: Comparison, *, bins: int = 60) -> go.Figure:
    """Distribution of kernel launch delays (device start − launch call end), share of
    kernels per log-spaced bin."""
    title = "Launch delay: device start − launch call end (measured, µs; share of kernels)"
    delays = [
        (side, color, np.asarray(side.launch.delays_us, dtype=float)) for side, color in _sides(c)
    ]
    present = [d[d > 0] for _, _, d in delays if d.size]
    if not any(p.size for p in present):
        return figure(
            [],
            empty_spec(
                title,
                "no launch delays: no kernel was launched by a runtime call "
                "(CPU-only traces run their kernels in the op itself)",
            ),
        )
    lo = max(min(p.min() for p in present if p.size), 0.01)
    hi = max(max(p.max() for p in present if p.size), lo * 10)
    edges = np.geomspace(lo, hi, bins + 1)
    data: list[dict[str, Any]] = []
    for side, color, d in delays:
        if not d.size:
            continue
        counts = _histogram(np.clip(d, lo, hi), edges)
        share = 100.0 * counts / d.size
        p50 = side.launch.delay_p50_us
        data.append(
            {
                "fill": "tozeroy",
                "hovertemplate": "≥ %{x:.3g} µs: %{y:.2f}% of kernels<extra>"
                + side.name
                + "</extra>",
                "line": {"color": color, "shape": "hv"},
                "mode": "lines",
                "name": f"{side.name} (p50 {fmt_us(p50)}, {fmt_count(d.size)} kernels)",
                "x": edges.copy(),
                "y": np.append(share, share[-1]),
                "type": "scatter",
            }
        )
    layout = {
        "template": template_spec(),
        "xaxis": {
            "title": {"text": "launch delay (µs, log; ≤ 0 counted in the first bin)"},
            "type": "log",
        },
        "yaxis": {"title": {"text": "% of kernels"}},
        **layout_spec(title),
    }
    return figure(data, layout)


def _histogram(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """``np.histogram(values, bins=edges)[0]`` (the last bin closed, values outside the edges
    or NaN not counted) by one binary search per value instead of a sort."""
    inside = values[(values >= edges[0]) & (values <= edges[-1])]
    bins = np.searchsorted(edges, inside, side="right") - 1
    bins[bins == len(edges) - 1] = len(edges) - 2
    return np.bincount(bins, minlength=len(edges) - 1)


#: Display name and colour of each part of a step (the idle parts from analysis.timing.idle).
_STEP_PARTS: dict[str, tuple[str, str]] = {
    IdleParts.busy_us: ("device busy", "#54A24B"),
    IdleParts.blocked_us: ("device idle, CPU blocked in a sync", "#B279A2"),
    IdleParts.cpu_wait_us: ("device idle, waiting for the CPU", "#E45756"),
    IdleParts.event_wait_us: ("device idle, waiting on another stream / event", "#4C78A8"),
    IdleParts.launch_latency_us: ("device idle, launch latency", "#F58518"),
    IdleParts.between_us: ("device idle, between issued kernels", "#BAB0AC"),
}
_CPU_STEP_PARTS: dict[str, tuple[str, str]] = {
    StepOverhead.busy_us: ("CPU kernels computing", "#54A24B"),
    StepOverhead.idle_us: ("framework overhead (no kernel running)", "#E45756"),
}


def _idle_parts(side: Side) -> list[tuple[str, str, float]]:
    """(display name, colour, mean µs per step) of each part of a step, measured
    (:func:`~traceviz.analysis.timing.step_parts.step_parts`)."""
    parts = _CPU_STEP_PARTS if side.trace.device_kind is DeviceKind.CPU else _STEP_PARTS
    return [(*parts[part], value) for part, value in step_parts(side.trace, side.launch)]


def idle_figure(c: Comparison) -> go.Figure:
    """Where a step's wall time goes (mean per step, measured, ms): device busy, and the idle
    time split into blocked by a sync, waiting for the CPU, waiting on another stream / event,
    launch latency and between kernels
    (:mod:`traceviz.analysis.timing.idle`); on CPU traces, kernels computing and framework
    overhead."""
    title = "Step time breakdown (measured, mean per step, ms)"
    shown: set[str] = set()
    data: list[dict[str, Any]] = []
    for side, _ in _sides(c):
        for part, color, value in _idle_parts(side):
            data.append(
                {
                    "hoverinfo": "text",
                    "hovertext": f"{side.name}: {part} {fmt_us(value)} per step",
                    "legendgroup": part,
                    "marker": {"color": color},
                    "name": part,
                    "orientation": "h",
                    "showlegend": part not in shown,
                    "x": scalars([value / 1e3]),
                    "y": [side.name],
                    "type": "bar",
                }
            )
            shown.add(part)
    layout = {
        "template": template_spec(),
        "barmode": "stack",
        "xaxis": {"title": {"text": "ms per step (measured)"}},
        "yaxis": {"autorange": "reversed"},
        **layout_spec(title, height=260),
    }
    return figure(data, layout)


def per_step_figure(c: Comparison) -> go.Figure:
    """Per step: busy and idle time (stacked, per trace) and launch calls or kernels."""
    cpu = all(side.trace.device_kind is DeviceKind.CPU for side, _ in _sides(c))
    count_col = StepOverhead.kernel_count if cpu else StepOverhead.launch_calls
    count_name = "kernels" if cpu else "launch calls"
    title = f"Per step: busy and idle time (ms) and {count_name} (measured)"
    layout, grid = subplots(
        rows=2, cols=1, shared_xaxes=True, row_heights=(0.65, 0.35), vertical_spacing=0.08
    )
    data: list[dict[str, Any]] = []
    for side, color in _sides(c):
        per = side.launch.per_step
        x = [f"#{i + 1}" for i in range(len(per))]
        busy = per[StepOverhead.busy_us].to_numpy(dtype=float) / 1e3
        idle = per[StepOverhead.idle_us].to_numpy(dtype=float) / 1e3
        steps = [str(s) for s in per[StepOverhead.step].astype(object).fillna("all")]
        extra = "<extra>" + side.name + "</extra>"
        top = {"xaxis": "x", "yaxis": "y"}
        data += [
            {
                "customdata": list(steps),
                "hovertemplate": "step %{customdata}: busy %{y:.3f} ms" + extra,
                "marker": {"color": color},
                "name": f"{side.name} busy",
                "offsetgroup": side.name,
                "x": list(x),
                "y": busy,
                "type": "bar",
                **top,
            },
            {
                "base": busy.astype(object),
                "customdata": list(steps),
                "hovertemplate": "step %{customdata}: idle %{y:.3f} ms" + extra,
                "marker": {"color": color},
                "name": f"{side.name} idle",
                "offsetgroup": side.name,
                "opacity": 0.35,
                "x": list(x),
                "y": idle,
                "type": "bar",
                **top,
            },
            {
                "customdata": steps,
                "hovertemplate": "step %{customdata}: %{y:,} " + count_name + extra,
                "marker": {"color": color},
                "name": f"{side.name} {count_name}",
                "offsetgroup": side.name,
                "showlegend": False,
                "x": x,
                "y": per[count_col].to_numpy(dtype=float),
                "type": "bar",
                "xaxis": "x2",
                "yaxis": "y2",
            },
        ]
    layout["template"] = template_spec()
    layout["yaxis"]["title"] = {"text": "ms"}
    layout["xaxis2"]["title"] = {"text": "step (position in each trace)"}
    layout["yaxis2"]["title"] = {"text": count_name}
    layout["barmode"] = "group"
    layout |= layout_spec(title, height=420)
    return figure(data, layout, grid=grid)
