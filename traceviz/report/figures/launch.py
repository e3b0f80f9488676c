"""Launch overhead: launch delays, where the step's idle time goes, per-step breakdown."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from traceviz.analysis.compare import Comparison, Side
from traceviz.analysis.idle import IdleParts
from traceviz.analysis.launch import StepOverhead
from traceviz.analysis.step_parts import step_parts
from traceviz.report.figures.style import (
    _empty,
    _layout,
    _sides,
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
        return _empty(
            title,
            "no launch delays: no kernel was launched by a runtime call "
            "(CPU-only traces run their kernels in the op itself)",
        )
    lo = max(min(p.min() for p in present if p.size), 0.01)
    hi = max(max(p.max() for p in present if p.size), lo * 10)
    edges = np.geomspace(lo, hi, bins + 1)
    fig = go.Figure()
    for side, color, d in delays:
        if not d.size:
            continue
        counts, _ = np.histogram(np.clip(d, lo, hi), bins=edges)
        share = 100.0 * counts / d.size
        p50 = side.launch.delay_p50_us
        fig.add_scatter(
            x=edges,
            y=np.append(share, share[-1]),
            mode="lines",
            line_shape="hv",
            name=f"{side.name} (p50 {fmt_us(p50)}, {fmt_count(d.size)} kernels)",
            line={"color": color},
            fill="tozeroy",
            hovertemplate="≥ %{x:.3g} µs: %{y:.2f}% of kernels<extra>" + side.name + "</extra>",
        )
    fig.update_xaxes(type="log", title_text="launch delay (µs, log; ≤ 0 counted in the first bin)")
    fig.update_yaxes(title_text="% of kernels")
    return _layout(fig, title)


#: Display name and colour of each part of a step (the idle parts from analysis.idle).
_STEP_PARTS: dict[str, tuple[str, str]] = {
    IdleParts.busy_us: ("device busy", "#54A24B"),
    IdleParts.blocked_us: ("device idle, CPU blocked in a sync", "#B279A2"),
    IdleParts.cpu_wait_us: ("device idle, waiting for the CPU", "#E45756"),
    IdleParts.launch_latency_us: ("device idle, launch latency", "#F58518"),
    IdleParts.between_us: ("device idle, between issued kernels", "#BAB0AC"),
}
_CPU_PARTS = {
    "CPU kernels computing": "#54A24B",
    "framework overhead (no kernel running)": "#E45756",
}


_GPU_LABELS = {column: label for column, (label, _) in _STEP_PARTS.items()}
_CPU_LABELS = {
    StepOverhead.busy_us: "CPU kernels computing",
    StepOverhead.idle_us: "framework overhead (no kernel running)",
}


def _idle_parts(side: Side) -> list[tuple[str, float]]:
    """(display name, mean µs per step) of each part of a step, measured
    (:func:`~traceviz.analysis.step_parts.step_parts`)."""
    labels = _CPU_LABELS if side.trace.device_kind is DeviceKind.CPU else _GPU_LABELS
    return [(labels[part], value) for part, value in step_parts(side.trace, side.launch)]


def idle_figure(c: Comparison) -> go.Figure:
    """Where a step's wall time goes (mean per step, measured, ms): device busy, and the idle
    time split into blocked by a sync, waiting for the CPU, launch latency and between kernels
    (:mod:`traceviz.analysis.idle`); on CPU traces, kernels computing and framework overhead."""
    title = "Step time breakdown (measured, mean per step, ms)"
    fig = go.Figure()
    colors = {label: color for label, color in _STEP_PARTS.values()} | _CPU_PARTS
    shown: set[str] = set()
    for side, _ in _sides(c):
        for part, value in _idle_parts(side):
            fig.add_bar(
                x=[value / 1e3],
                y=[side.name],
                orientation="h",
                name=part,
                legendgroup=part,
                showlegend=part not in shown,
                marker_color=colors.get(part, "#888"),
                hovertext=f"{side.name}: {part} {fmt_us(value)} per step",
                hoverinfo="text",
            )
            shown.add(part)
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title_text="ms per step (measured)")
    fig.update_yaxes(autorange="reversed")
    return _layout(fig, title, height=260)


def per_step_figure(c: Comparison) -> go.Figure:
    """Per step: busy and idle time (stacked, per trace) and launch calls or kernels."""
    cpu = all(side.trace.device_kind is DeviceKind.CPU for side, _ in _sides(c))
    count_col = StepOverhead.kernel_count if cpu else StepOverhead.launch_calls
    count_name = "kernels" if cpu else "launch calls"
    title = f"Per step: busy and idle time (ms) and {count_name} (measured)"
    fig = make_subplots(
        rows=2, cols=1, shared_xaxes=True, row_heights=[0.65, 0.35], vertical_spacing=0.08
    )
    for side, color in _sides(c):
        per = side.launch.per_step
        x = [f"#{i + 1}" for i in range(len(per))]
        busy = per[StepOverhead.busy_us].to_numpy(dtype=float) / 1e3
        idle = per[StepOverhead.idle_us].to_numpy(dtype=float) / 1e3
        steps = [str(s) for s in per[StepOverhead.step].astype(object).fillna("all")]
        common = {"x": x, "offsetgroup": side.name, "customdata": steps}
        fig.add_bar(
            y=busy,
            name=f"{side.name} busy",
            marker_color=color,
            row=1,
            col=1,
            hovertemplate="step %{customdata}: busy %{y:.3f} ms<extra>" + side.name + "</extra>",
            **common,
        )
        fig.add_bar(
            y=idle,
            base=busy,
            name=f"{side.name} idle",
            marker_color=color,
            opacity=0.35,
            hovertemplate="step %{customdata}: idle %{y:.3f} ms<extra>" + side.name + "</extra>",
            row=1,
            col=1,
            **common,
        )
        fig.add_bar(
            y=per[count_col].to_numpy(dtype=float),
            name=f"{side.name} {count_name}",
            marker_color=color,
            showlegend=False,
            row=2,
            col=1,
            hovertemplate="step %{customdata}: %{y:,} "
            + count_name
            + "<extra>"
            + side.name
            + "</extra>",
            **common,
        )
    fig.update_layout(barmode="group")
    fig.update_yaxes(title_text="ms", row=1, col=1)
    fig.update_yaxes(title_text=count_name, row=2, col=1)
    fig.update_xaxes(title_text="step (position in each trace)", row=2, col=1)
    return _layout(fig, title, height=420)
