"""The one figure layer: every plot of a comparison, built from result objects.

The HTML report, the dashboard and the notebook widgets all call these builders; nothing else
in traceviz makes a figure, and nothing here shows one (no ``fig.show()``). Each builder takes
a :class:`~traceviz.analysis.compare.Comparison` and keyword-only options and returns a new
``plotly.graph_objects.Figure`` whose title says what is drawn, in which unit, and whether it
is measured (read from the traces) or estimated (modelled).

Big traces stay responsive: the timeline draws at most ``max_marks`` marks, merging the events
of each lane into time bins beyond that (the figure's ``layout.meta`` says how many marks and
events it holds); histograms and memory curves are binned here, not in the browser.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from traceviz.analysis.blocking import BlockingColumns
from traceviz.analysis.compare import Comparison, Metric, Side
from traceviz.analysis.idle import IdleParts
from traceviz.analysis.kernels import Classified
from traceviz.analysis.launch import StepOverhead
from traceviz.report.views import fmt_value
from traceviz.schema import (
    DeviceKind,
    Kernels,
    LaunchClass,
    Launches,
    Memory,
    RegionKind,
    Regions,
    Steps,
)
from traceviz.units import fmt_bytes, fmt_count, fmt_name, fmt_us

SIDE_COLORS = ("#4C78A8", "#F58518")  # a, b
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


def _layout(fig: go.Figure, title: str, *, height: int = 380, **extra: Any) -> go.Figure:
    fig.update_layout(
        title={"text": title, "x": 0.01, "xanchor": "left", "font": {"size": 14}},
        height=height,
        template="plotly_white",
        margin={"l": 60, "r": 20, "t": 70, "b": 50},
        legend={"orientation": "h", "y": -0.18},
        **extra,
    )
    return fig


def _empty(title: str, message: str, *, height: int = 260) -> go.Figure:
    fig = go.Figure()
    fig.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return _layout(fig, title, height=height)


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


# --- overview ------------------------------------------------------------------------------


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


# --- timeline ------------------------------------------------------------------------------


def step_labels(c: Comparison) -> list[str]:
    """Choices for :func:`timeline_figure`'s ``step`` (by position in each trace's steps)."""
    count = max(len(c.a.trace.steps), len(c.b.trace.steps))
    return [f"step {i + 1} of {count}" for i in range(count)]


def _window(side: Side, step: int | None) -> tuple[float, float, str]:
    steps = side.trace.steps
    if step is None or steps.empty:
        meta = side.trace.meta
        start = meta.time_origin_us or 0.0
        return start, meta.time_end_us or start, "whole trace"
    i = min(max(step, 0), len(steps) - 1)
    start = float(steps[Steps.ts_us].iloc[i])
    end = start + float(steps[Steps.dur_us].iloc[i])
    return start, end, f"ProfilerStep#{steps[Steps.step].iloc[i]}"


def _timeline_events(side: Side, start: float, end: float) -> pd.DataFrame:
    """Device activities, launch calls, compiled regions (one lane per Dynamo frame X/Y) and
    compiled-graph calls (a gap between two graph calls of a step is a graph break) starting
    in [start, end): lane, x0/x1 in ms from ``start``, kind, name, dur, op."""
    k = side.kernels
    ts = k[Kernels.ts_us].to_numpy(dtype=float)
    pick = (ts >= start) & (ts < end)
    k = k[pick]
    if side.trace.device_kind is DeviceKind.CPU:
        lanes = "CPU ops " + k[Kernels.thread].astype(str)
    else:
        lanes = (
            "device " + k[Kernels.device].astype(str) + " stream " + k[Kernels.stream].astype(str)
        )
    kernels = pd.DataFrame(
        {
            "lane": lanes.to_numpy(),
            "ts": k[Kernels.ts_us].to_numpy(dtype=float),
            "dur": k[Kernels.dur_us].to_numpy(dtype=float, na_value=0.0),
            "kind": k[Classified.kind].astype(str).to_numpy(),
            "name": k[Kernels.name].astype(str).to_numpy(),
            "op": k[Kernels.op_name].astype(object).fillna("–").astype(str).to_numpy(),
        }
    )
    launches = side.trace.launches
    lts = launches[Launches.ts_us].to_numpy(dtype=float)
    blocking = np.zeros(len(launches), dtype=bool)
    blocking[side.launch.blocking.calls[BlockingColumns.launch_row].to_numpy(dtype=np.int64)] = True
    pick = (lts >= start) & (lts < end)
    pick &= launches[Launches.launch_class].isin(TIMELINE_LAUNCH_CLASSES).to_numpy() | blocking
    lau = launches[pick]
    calls = pd.DataFrame(
        {
            "lane": ("CPU launches " + lau[Launches.thread].astype(str)).to_numpy(),
            "ts": lau[Launches.ts_us].to_numpy(dtype=float),
            "dur": lau[Launches.dur_us].to_numpy(dtype=float, na_value=0.0),
            "kind": np.where(blocking[pick], "blocking call", "launch call"),
            "name": lau[Launches.name].astype(str).to_numpy(),
            "op": "–",
        }
    )
    regions = side.trace.regions
    rts = regions[Regions.ts_us].to_numpy(dtype=float)
    kind = regions[Regions.kind].astype(str).to_numpy()
    shown = (kind == RegionKind.COMPILED_REGION.value) | (kind == RegionKind.FX_GRAPH_CALL.value)
    reg = regions[(rts >= start) & (rts < end) & shown]
    is_graph = (reg[Regions.kind].astype(str) == RegionKind.FX_GRAPH_CALL.value).to_numpy()
    frame = (
        "region " + reg[Regions.frame_id].astype(str) + "/" + reg[Regions.recompile_id].astype(str)
    ).to_numpy()
    spans = pd.DataFrame(
        {
            "lane": np.where(is_graph, "compiled graph calls", frame),
            "ts": reg[Regions.ts_us].to_numpy(dtype=float),
            "dur": reg[Regions.dur_us].to_numpy(dtype=float, na_value=0.0),
            "kind": np.where(is_graph, "compiled graph", "compiled region"),
            "name": reg[Regions.name].astype(str).to_numpy(),
            "op": "–",
        }
    )
    events = pd.concat([kernels, calls, spans], ignore_index=True)
    events["x0"] = (events["ts"] - start) / 1e3
    events["x1"] = events["x0"] + np.maximum(events["dur"].to_numpy(), 0.0) / 1e3
    return events


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


def _aggregate(events: pd.DataFrame, bins_per_lane: int, span_ms: float) -> pd.DataFrame:
    """Merge each lane's events into ``bins_per_lane`` time bins: one mark per non-empty bin,
    from its first start to its last end, named after its longest event."""
    width = max(span_ms, 1e-9) / bins_per_lane
    events = events.assign(bin=np.floor(events["x0"].to_numpy() / width).astype(np.int64))
    longest = events.sort_values("dur").groupby(["lane", "bin"], sort=False).tail(1)
    longest = longest.set_index(["lane", "bin"])
    grouped = events.groupby(["lane", "bin"], sort=False)
    marks = grouped.agg(
        x0=("x0", "min"), x1=("x1", "max"), count=("dur", "size"), busy=("dur", "sum")
    )
    marks["kind"] = longest["kind"].reindex(marks.index).to_numpy()
    marks["name"] = longest["name"].reindex(marks.index).to_numpy()
    marks = marks.reset_index()
    marks["hover"] = (
        marks["count"].map(fmt_count)
        + " events in "
        + marks["x0"].map(lambda v: f"{v:.3f}")
        + "–"
        + marks["x1"].map(lambda v: f"{v:.3f}")
        + " ms, "
        + marks["busy"].map(fmt_us)
        + " summed<br>longest: <b>"
        + marks["name"].map(lambda n: fmt_name(n, 90))
        + "</b> ("
        + marks["kind"]
        + ")"
    )
    return marks


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


def timeline_marks(fig: go.Figure) -> int:
    """How many marks a :func:`timeline_figure` draws."""
    return int((fig.layout.meta or {}).get("marks", 0))


# --- fusion --------------------------------------------------------------------------------


_OP_COUNT = re.compile(r"(.+?) \((\d+)\)(?:, |$)")


def _ops_list(value: Any) -> list[tuple[str, int]]:
    """``"aten::add (3), aten::mul (3)"`` (FusionKernels.eager_ops) → [(op, kernels), ...];
    a plain comma-separated list counts 1 per op."""
    if not isinstance(value, str) or not value.strip():
        return []
    found = _OP_COUNT.findall(value)
    if found:
        return [(op, int(n)) for op, n in found]
    return [(part.strip(), 1) for part in value.split(",") if part.strip()]


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

    def node(key: tuple[str, str], text: str, color: str) -> int:
        if key not in index:
            index[key] = len(labels)
            labels.append(fmt_name(key[1], 48))
            hover.append(text)
            colors.append(color)
        return index[key]

    src, dst, values, link_hover = [], [], [], []
    for r in _records(matched):
        ops = _ops_list(r["eager_ops"])
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


# --- launch overhead -----------------------------------------------------------------------


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


def _idle_parts(side: Side) -> list[tuple[str, float]]:
    """(display name, mean µs per step) of each part of a step, measured."""
    if side.trace.device_kind is DeviceKind.CPU:
        per = side.launch.per_step
        n = max(len(per), 1)
        busy = float(per[StepOverhead.busy_us].sum()) / n
        idle = float(per[StepOverhead.idle_us].sum()) / n
        return [("CPU kernels computing", busy), ("framework overhead (no kernel running)", idle)]
    split = side.launch.idle
    n = max(len(split.per_step), 1)
    return [(label, split.total(column) / n) for column, (label, _) in _STEP_PARTS.items()]


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


# --- memory --------------------------------------------------------------------------------


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


def _downsample_max(x: np.ndarray, y: np.ndarray, max_points: int) -> tuple[np.ndarray, np.ndarray]:
    """Keep each bin's min and max so peaks survive."""
    if len(x) <= max_points:
        return x, y
    bins = max_points // 2
    edges = np.linspace(x[0], x[-1], bins + 1)
    idx = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, bins - 1)
    frame = pd.DataFrame({"bin": idx, "x": x, "y": y})
    keep = np.union1d(frame.groupby("bin")["y"].idxmax(), frame.groupby("bin")["y"].idxmin())
    return x[keep], y[keep]


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


# --- regions -------------------------------------------------------------------------------


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
        x = [
            f"{label} {int(f)}/{int(r)}"
            for f, r in zip(rows["frame_id"], rows["recompile_id"], strict=True)
        ]
        hover = [
            f"{label} frame {int(r['frame_id'])}/{int(r['recompile_id'])}: "
            f"{fmt_count(r['calls'])} calls, "
            f"{fmt_count(r['kernel_count'])} kernels, {fmt_us(r['kernel_time_us'])} device, "
            f"{fmt_us(r['wall_us'])} wall"
            for r in _records(rows)
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


# --- everything, by view -------------------------------------------------------------------

FigureBuilder = Callable[[Comparison], go.Figure]

#: The figures of each view, in order (the dashboard's tabs and the report's sections).
VIEW_FIGURES: dict[str, list[FigureBuilder]] = {
    "Overview": [metrics_figure, kinds_figure],
    "Timeline": [timeline_figure],
    "Fusion": [fusion_figure],
    "Launch overhead": [launch_delay_figure, idle_figure, per_step_figure],
    "Memory": [memory_kind_figure, allocated_figure],
    "Regions": [regions_figure],
}


def all_figures(c: Comparison) -> dict[str, list[go.Figure]]:
    """Every figure of :data:`VIEW_FIGURES`, built with default options."""
    return {view: [build(c) for build in builders] for view, builders in VIEW_FIGURES.items()}
