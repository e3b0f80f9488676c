"""Memory: traffic by kernel kind, and allocated memory over time."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from traceviz.analysis.compare import Comparison
from traceviz.analysis.traffic_compare import traffic_gap_note
from traceviz.report.figures.style import (
    _empty,
    _layout,
    _nan_to_none,
    _records,
    _sides,
)
from traceviz.schema import (
    DeviceKind,
    Memory,
)
from traceviz.units import fmt_bytes, fmt_count, fmt_us


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
