"""The figure builders as they were before :mod:`traceviz.report.figures.fast` (issue 14): each
figure built through plotly's own calls (``make_subplots``, ``add_scatter``, ``update_layout``…).
``tests/test_fast_figures.py`` checks that today's builders make the very same figures."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from traceviz.analysis.backends import BackendRow
from traceviz.analysis.compare import Comparison, Metric
from traceviz.analysis.launch import StepOverhead
from traceviz.analysis.traffic_compare import traffic_gap_note
from traceviz.report.backends_views import op_counts_view
from traceviz.report.figures.backends import (
    LOG_RATIO,
    NO_DATA,
    _above,
    _below,
    _latency_hover,
    _us,
    _view,
    backend_color,
)
from traceviz.report.figures.fusion import _ops_by_kernel, opaque_fusions
from traceviz.report.figures.launch import _CPU_PARTS, _STEP_PARTS, _idle_parts
from traceviz.report.figures.memory import _downsample_max
from traceviz.report.figures.overview import (
    ESTIMATED_PATTERN,
    SAME,
    _ratio_color,
    log_ticks,
    tick_text,
    traffic_partial,
)
from traceviz.report.figures.ranks import (
    PARTS,
    RANK,
    STEP_P50,
    STEPS,
    STRAGGLER,
    STRAGGLER_COLOR,
    _shown,
)
from traceviz.report.figures.ranks import (
    _top as ranks_top,
)
from traceviz.report.figures.style import (
    HEADLINE_METRICS,
    KIND_COLORS,
    LEGEND_PX,
    MAX_MARKS,
    SIDE_COLORS,
    _nan_to_none,
    _records,
    _sides,
    template,
    wrap_title,
)
from traceviz.report.figures.timeline import _aggregate, _timeline_events, _window
from traceviz.report.headline import change_text
from traceviz.report.metric_names import metric_label
from traceviz.report.views import fmt_value
from traceviz.schema import DeviceKind, Memory
from traceviz.units import fmt_bytes, fmt_count, fmt_name, fmt_us


def _layout(fig: go.Figure, title: str, *, height: int = 380, **extra: Any) -> go.Figure:
    """Title (wrapped: plotly never wraps one, and a long one runs off the figure), size,
    template, margins and a legend below the axis title; the height grows with the title's
    lines and the legend's row."""
    lines = wrap_title(title)
    top = 34 + 19 * len(lines)
    fig.update_layout(
        title={"text": "<br>".join(lines), "x": 0.01, "xanchor": "left", "font": {"size": 14}},
        height=height + top - 53 + LEGEND_PX,
        template=template(),
        margin={"l": 60, "r": 20, "t": top, "b": 50 + LEGEND_PX},
        # the legend at the figure's bottom edge, in pixels below the axis title (placed at a
        # fraction of the plot's height, it ran into the axis title of short figures)
        legend={"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom", "x": 0},
        **extra,
    )  # fmt: skip
    return fig


def _empty(title: str, message: str, *, height: int = 260) -> go.Figure:
    fig = go.Figure()
    fig.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return _layout(fig, title, height=height)


def same_figure(got: go.Figure, want: go.Figure, path: str = "fig") -> None:
    """The two figures hold the same properties: the same keys in the same order, values of
    the same types (numpy arrays of the same dtype), equal to the last bit."""
    same_spec(got._data, want._data, f"{path}.data")  # what Panel sends
    same_spec(got._layout, want._layout, f"{path}.layout")
    assert got.to_json() == want.to_json(), path


def same_spec(got: Any, want: Any, path: str) -> None:
    assert type(got) is type(want), (path, type(got), type(want))
    if isinstance(got, dict):
        assert list(got) == list(want), (path, list(got), list(want))
        for key in got:
            same_spec(got[key], want[key], f"{path}.{key}")
    elif isinstance(got, list | tuple):
        assert len(got) == len(want), (path, len(got), len(want))
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            same_spec(g, w, f"{path}[{i}]")
    elif isinstance(got, np.ndarray):
        assert got.dtype == want.dtype and got.shape == want.shape, (path, got.dtype, want.dtype)
        if got.dtype.kind == "O":
            for i, (g, w) in enumerate(zip(got, want, strict=True)):
                same_spec(g, w, f"{path}[{i}]")
        else:
            assert np.array_equal(got, want, equal_nan=got.dtype.kind == "f"), path
    else:
        assert got == want or (got != got and want != want), (path, got, want)


def _hover_single(events: pd.DataFrame) -> pd.Series:
    durs = events["dur"].map(fmt_us)
    names = events["name"].map(lambda n: fmt_name(n, 90))
    return (
        "<b>"
        + names
        + "</b><br>"
        + events["kind"]
        + " · "
        + durs
        + "<br>launched by "
        + events["op"]
    )


def _segments(marks: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = len(marks)
    x = np.empty(3 * n, dtype=float)
    x[0::3], x[1::3], x[2::3] = marks["x0"], marks["x1"], np.nan
    y = np.empty(3 * n, dtype=object)
    y[0::3] = y[1::3] = marks["lane"].to_numpy()
    y[2::3] = None
    text = np.empty(3 * n, dtype=object)
    text[0::3] = text[1::3] = marks["hover"].to_numpy()
    text[2::3] = ""
    return x, y, text


def timeline_figure(
    c: Comparison, *, step: int | None = 0, max_marks: int = MAX_MARKS
) -> go.Figure:
    """Device activity (and CPU launch calls; blocking calls in their own colour) of both
    traces on aligned time axes.

    ``step`` is a position in each trace's ``ProfilerStep`` list (0 = first; None = the whole
    trace); x is ms since the window's start in each trace. Beyond ``max_marks`` events the
    lanes are binned (each mark = the events of one bin). ``layout.meta`` holds ``marks``,
    ``events`` and ``aggregated``.
    """
    windows = [_window(side, step) for side, _ in _sides(c)]
    events = [
        _timeline_events(side, w[0], w[1]) for (side, _), w in zip(_sides(c), windows, strict=True)
    ]
    total = sum(len(e) for e in events)
    lanes = sum(e["lane"].nunique() for e in events)
    aggregated = total > max_marks
    span_ms = max((w[1] - w[0]) / 1e3 for w in windows)
    titles = [f"{side.name}: {w[2]}" for (side, _), w in zip(_sides(c), windows, strict=True)]
    fig = make_subplots(
        rows=2, cols=1, shared_xaxes=True, subplot_titles=titles, vertical_spacing=0.12
    )
    marks_drawn, shown = 0, set()
    for row, frame in enumerate(events, start=1):
        if frame.empty:
            continue
        if aggregated:
            marks = _aggregate(frame, max(1, max_marks // max(lanes, 1)), span_ms)
        else:
            marks = frame.assign(hover=_hover_single(frame))
        marks_drawn += len(marks)
        for kind, part in marks.groupby("kind", sort=True):
            x, y, text = _segments(part)
            fig.add_scatter(
                x=x,
                y=y,
                text=text,
                mode="lines",
                name=str(kind),
                legendgroup=str(kind),
                showlegend=kind not in shown,
                line={"width": 12, "color": KIND_COLORS.get(str(kind), "#888")},
                hovertemplate="%{text}<extra></extra>",
                row=row,
                col=1,
            )
            shown.add(kind)
    how = (
        f"aggregated: {fmt_count(total)} events merged into {fmt_count(marks_drawn)} marks "
        f"({span_ms / max(1, max_marks // max(lanes, 1)):.3g} ms bins)"
        if aggregated
        else f"{fmt_count(total)} events"
    )
    title = (
        "Timeline: device activity, CPU launch calls and compiled regions "
        f"(measured; ms since window start; {how})"
    )
    if total == 0:
        fig.add_annotation(
            text="no activity in this window",
            showarrow=False,
            x=0.5,
            y=0.5,
            xref="paper",
            yref="paper",
        )
    fig.update_xaxes(title_text="time since window start (ms)", row=2, col=1)
    fig.update_yaxes(type="category", autorange="reversed")
    fig = _layout(fig, title, height=260 + 34 * max(lanes, 2), hovermode="closest")
    fig.update_layout(meta={"marks": marks_drawn, "events": total, "aggregated": aggregated})
    return fig


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


def metrics_figure(c: Comparison, *, names: Sequence[str] = HEADLINE_METRICS) -> go.Figure:
    """b ÷ a of the headline metrics as bars on a log axis (1 = unchanged): green where b is
    lower (better: every headline metric counts a cost), red where higher; estimated metrics
    hatched; ticks as ×0.5, ×1, ×2."""
    a, b = c.names
    title = (
        f"{b} against {a} for headline metrics (measured; hatched: estimated; green: {b} "
        f"lower, red: {b} higher; log scale; hover for values)"
    )
    rows = c.metrics[c.metrics[Metric.name].isin(names)]
    rows = rows[np.isfinite(rows[Metric.ratio].astype(float)) & (rows[Metric.ratio] > 0)]
    if rows.empty:
        return _empty(title, "no metric is defined on both traces")
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
    fig = go.Figure(
        go.Bar(
            x=ratios,
            y=labels,
            orientation="h",
            marker={"color": colors, "pattern": {**ESTIMATED_PATTERN, "shape": shapes}},
            text=[change_text(v) for v in ratios],
            textposition="outside",
            cliponaxis=False,
            hovertext=hover,
            hoverinfo="text",
            showlegend=False,
        )
    )
    fig.add_vline(x=1, line_dash="dot", line_color="#444")
    ticks = log_ticks(min(ratios), max(ratios))
    fig.update_xaxes(
        type="log",
        tickvals=ticks,
        ticktext=[tick_text(t) for t in ticks],
        range=[math.log10(min(ticks)), math.log10(max(ticks))],
        title_text=f"{b} against {a}  (left of 'same': {b} lower · right: {b} higher)",
    )
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
    fig = _layout(fig, title, height=max(260, 90 + 20 * len(order)))
    # the legend to the right, its top at the plot's top
    legend = {"orientation": "v", "x": 1.01, "xanchor": "left", "y": 1, "yanchor": "top",
              "yref": "paper", "title": {"text": "kind"}}  # fmt: skip
    fig.update_layout(legend=legend, margin_b=50)
    return fig


def memory_kind_figure(c: Comparison) -> go.Figure:
    """Bytes moved per kernel kind (memcpy/memset measured, kernels estimated from shapes)."""
    shares = []
    for side, _ in _sides(c):
        share = side.traffic.unestimated_time_share
        shares.append(f"{side.name} {share:.0%}" if share is not None else f"{side.name} –")
    title = (
        "Memory traffic by kernel kind (bytes read + written; kernels estimated from shapes, "
        f"memcpy/memset measured). Device time with no estimate: {', '.join(shares)}"
    )
    why = traffic_gap_note(c.a.traffic, c.b.traffic, c.names)
    if why is not None:  # the bars side by side would read as a saving that is not there
        title += f". Totals not comparable, {why}"
    if all(side.traffic.by_kind.empty for side, _ in _sides(c)):
        return _empty(title, "no kernels in either trace")
    fig = go.Figure()
    for side, color in _sides(c):
        t = side.traffic.by_kind
        est = t["est_bytes"].to_numpy(dtype=float, na_value=0.0)
        hover = [
            f"{side.name} · {r['kind']}: {fmt_bytes(_nan_to_none(r['est_bytes']))} "
            f"(measured {fmt_bytes(_nan_to_none(r['measured_bytes']))}, estimated "
            f"{fmt_bytes(_nan_to_none(r['estimated_bytes']))})<br>{fmt_count(r['count'])} kernels, "
            f"{fmt_us(r['time_us'])}; no estimate for {fmt_us(r['unestimated_time_us'])}"
            for r in _records(t)
        ]
        fig.add_bar(
            x=t["kind"].astype(str),
            y=est,
            name=side.name,
            marker_color=color,
            hovertext=hover,
            hoverinfo="text",
        )
    fig.update_layout(barmode="group")
    fig.update_yaxes(title_text="bytes (estimated)", tickformat="~s", ticksuffix="B")
    return _layout(fig, title)


def allocated_figure(c: Comparison, *, max_points: int = 4000) -> go.Figure:
    """Allocated memory over time from the ``[memory]`` events (measured, bytes)."""
    title = "Allocated memory over time (measured from [memory] events; ms since trace start)"
    fig = go.Figure()
    for side, color in _sides(c):
        mem = side.trace.memory
        is_cpu = (mem[Memory.device_type].astype(str) == "cpu").to_numpy()
        own = mem[is_cpu] if side.trace.device_kind is DeviceKind.CPU else mem[~is_cpu]
        origin = side.trace.meta.time_origin_us or 0.0
        for (dtype, device), events in own.groupby(
            [Memory.device_type, Memory.device], observed=True
        ):
            events = events.sort_values(Memory.ts_us)
            x = (events[Memory.ts_us].to_numpy(dtype=float) - origin) / 1e3
            y = events[Memory.total_allocated_bytes].to_numpy(dtype=float, na_value=np.nan)
            x, y = _downsample_max(x, y, max_points)
            fig.add_scatter(
                x=x,
                y=y,
                mode="lines",
                line_shape="hv",
                line={"color": color},
                name=f"{side.name} {dtype}:{device}",
                hovertemplate="%{x:.3f} ms: %{y:.4s}B<extra>" + side.name + "</extra>",
            )
    if not fig.data:
        return _empty(title, "no [memory] events: profile with profile_memory=True to see them")
    fig.update_xaxes(title_text="ms since trace start")
    fig.update_yaxes(title_text="allocated (bytes)", tickformat="~s", ticksuffix="B")
    return _layout(fig, title)


def regions_figure(c: Comparison) -> go.Figure:
    """Device time inside compiled regions, in graph-break gaps and outside (measured), and
    device time per compiled frame."""
    notes = [
        f"{s.name}: {s.regions.graph_breaks} graph break(s), {s.regions.recompiles} recompile(s)"
        for s, _ in _sides(c)
    ]
    title = f"Compiled regions (measured, ms) — {'; '.join(notes)}"
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.45, 0.55],
        subplot_titles=("device time by where it was issued", "device time per compiled frame X/Y"),
    )
    parts = (
        ("inside compiled regions", "#54A24B"),
        ("between regions of a step (graph-break gaps)", "#E45756"),
        ("outside compiled regions (other)", "#BAB0AC"),
    )
    for side, _ in _sides(c):
        r = side.regions
        # a partition of the kernel time: gap kernels may sit inside a (nesting) region
        values = (r.code_time_us, r.between_time_us, r.other_time_us)
        for (part, color), value in zip(parts, values, strict=True):
            fig.add_bar(
                x=[side.name],
                y=[value / 1e3],
                name=part,
                legendgroup=part,
                marker_color=color,
                showlegend=side is c.a,
                row=1,
                col=1,
                hovertext=f"{side.name}: {part} {fmt_us(value)}",
                hoverinfo="text",
            )
    frames = c.regions
    for which, color in (("a", SIDE_COLORS[0]), ("b", SIDE_COLORS[1])):
        rows = frames[frames["side"] == which]
        if rows.empty:
            continue
        label = c.names[0 if which == "a" else 1]
        # a row of compiled graphs run outside every frame is named by its kind (backward, ...)
        names = [
            str(r["kind"]) if r.get("kind") not in (None, "frame") else
            f"{int(r['frame_id'])}/{int(r['recompile_id'])}"
            for r in _records(rows)
        ]  # fmt: skip
        x = [f"{label} {name}" for name in names]
        hover = [
            f"{label} {'frame ' if name[0].isdigit() else ''}{name}: "
            f"{fmt_count(r['calls'])} calls, "
            f"{fmt_count(r['kernel_count'])} kernels, {fmt_us(r['kernel_time_us'])} device, "
            f"{fmt_us(r['wall_us'])} wall"
            for r, name in zip(_records(rows), names, strict=True)
        ]
        fig.add_bar(
            x=x,
            y=rows["kernel_time_us"].to_numpy(dtype=float) / 1e3,
            name=f"{label} frames",
            marker_color=color,
            hovertext=hover,
            hoverinfo="text",
            row=1,
            col=2,
        )
    if frames.empty:
        fig.add_annotation(
            text="no Torch-Compiled Region in either trace",
            showarrow=False,
            x=0.8,
            y=0.5,
            xref="paper",
            yref="paper",
        )
    fig.update_layout(barmode="stack")
    fig.update_yaxes(title_text="device time (ms)", row=1, col=1)
    return _layout(fig, title, height=380)


def fusion_figure(c: Comparison, *, top: int = 15) -> go.Figure:
    """Sankey: a's ops → the b kernels that replaced them; link width = a's device time."""
    a, b = c.names
    title = (
        f"Fusion: {a} ops → the {b} kernels that replaced them (link width: {a} device time, "
        f"measured, split over a kernel's ops by their kernel counts; top {top} {b} kernels)"
    )
    fusion = c.fusion
    if fusion.comparability.withheld:
        return _empty(title, f"no fusion map: {a} and {b} are not one workload (see findings)")
    opaque = opaque_fusions(fusion.kernels)
    if opaque is not None:
        return _empty(title, opaque, height=300)
    kernels = fusion.kernels.sort_values("eager_time_us", ascending=False)
    matched = kernels[kernels["eager_time_us"].fillna(0) > 0].head(top)
    only = fusion.eager_only.sort_values("time_us", ascending=False).head(top)
    only = only[only["time_us"].fillna(0) > 0]
    if matched.empty and only.empty:
        return _empty(title, f"no {b} kernel could be matched to {a} ops")
    labels: list[str] = []
    hover: list[str] = []
    colors: list[str] = []
    index: dict[tuple[str, str], int] = {}

    shown: dict[str, int] = {}

    def node(key: tuple[str, str], text: str, color: str) -> int:
        if key not in index:
            index[key] = len(labels)
            label = fmt_name(key[1], 48)
            shown[label] = shown.get(label, 0) + 1
            if shown[label] > 1:  # two names cut to one label: number them (hover: full name)
                label = f"{label} #{shown[label]}"
            labels.append(label)
            hover.append(text)
            colors.append(color)
        return index[key]

    credited = _ops_by_kernel(fusion.ops)
    src, dst, values, link_hover = [], [], [], []
    for r in _records(matched):
        ops = credited.get(str(r["kernel"]), [])
        total = sum(n for _, n in ops) or 1
        target = node(
            ("b", str(r["kernel"])),
            f"{b} kernel {r['kernel']}<br>{fmt_count(r['calls'])} calls, "
            f"{fmt_us(r['time_us'])} ({b}, measured)",
            SIDE_COLORS[1],
        )
        for op, n in ops:
            value = float(r["eager_time_us"]) * n / total
            src.append(node(("a", op), f"{a} op {op}", SIDE_COLORS[0]))
            dst.append(target)
            values.append(value)
            link_hover.append(
                f"{op} → {fmt_name(str(r['kernel']), 60)}<br>{a}: {fmt_count(n)} "
                f"kernels, ≈ {fmt_us(value)}"
            )
    if not only.empty:
        sink = node(
            ("b", f"(no counterpart in {b})"), f"{a} ops with no {b} counterpart", "#BAB0AC"
        )
        for r in _records(only):
            src.append(node(("a", str(r["op"])), f"{a} op {r['op']}", SIDE_COLORS[0]))
            dst.append(sink)
            values.append(float(r["time_us"]))
            link_hover.append(
                f"{r['op']}: {fmt_count(r['kernels'])} kernels, {fmt_us(r['time_us'])}"
            )
    fig = go.Figure(
        go.Sankey(
            arrangement="snap",
            node={
                "label": labels,
                "color": colors,
                "customdata": hover,
                "hovertemplate": "%{customdata}<extra></extra>",
                "pad": 12,
            },
            link={
                "source": src,
                "target": dst,
                "value": values,
                "customdata": link_hover,
                "hovertemplate": "%{customdata}<extra></extra>",
            },
        )
    )
    return _layout(fig, title, height=max(360, 24 * len(labels) // 2 + 160))


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


def ranks_figure(per_rank: pd.DataFrame, *, title: str = "Ranks") -> go.Figure:
    """Per-rank stacked bars of compute, collective transfer and waiting per step (µs, measured)
    with each rank's median step as a marker; stragglers outlined."""
    if per_rank.empty:
        return _empty(title, "no ranks")
    table = _shown(per_rank)
    steps = pd.to_numeric(table[STEPS], errors="coerce").to_numpy(dtype=float)
    per_step = np.where(steps > 0, steps, 1.0)
    x = [str(int(r)) for r in table[RANK]]
    late = table[STRAGGLER].fillna(False).astype(bool).to_numpy() if STRAGGLER in table else None
    outline = [STRAGGLER_COLOR if s else "rgba(0,0,0,0)" for s in (late if late is not None
               else np.zeros(len(table), dtype=bool))]  # fmt: skip
    fig = go.Figure()
    stack = np.zeros(len(table))
    for column, label, color in PARTS:
        if column not in table:
            continue
        values = pd.to_numeric(table[column], errors="coerce")
        if values.isna().all():
            continue
        stack += values.fillna(0.0).to_numpy(dtype=float) / per_step / 1e3
        fig.add_bar(
            x=x,
            y=values.fillna(0.0).to_numpy(dtype=float) / per_step / 1e3,
            name=label,
            marker={"color": color, "line": {"color": outline, "width": 2}},
            hovertemplate=f"rank %{{x}}<br>{label}: %{{y:.3f}} ms per step<extra></extra>",
        )
    median = pd.to_numeric(table[STEP_P50], errors="coerce").to_numpy(dtype=float) / 1e3
    fig.add_scatter(
        x=x,
        y=median,
        mode="markers",
        name="median step",
        marker={"symbol": "line-ew-open", "size": 14, "color": "#2F2F2F"},
        hovertemplate="rank %{x}<br>median step: %{y:.3f} ms<extra></extra>",
    )
    flagged = [x[i] for i in np.flatnonzero(late)] if late is not None else []
    note = f"stragglers: {', '.join(flagged)}" if flagged else "no straggler"
    shown = "" if len(table) == len(per_rank) else f"; {len(table)} of {len(per_rank)} ranks"
    fig.update_layout(barmode="stack", xaxis={"type": "category", "title": "rank"})
    fig.update_yaxes(title_text="ms per step", range=[0, ranks_top(stack, median)])
    return _layout(fig, f"{title} — device time per step (measured), {note}{shown}", height=400)
