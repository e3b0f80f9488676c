"""Memory: traffic by kernel kind, and allocated memory over time."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from traceviz.analysis.compare import Comparison
from traceviz.analysis.traffic.coverage import traffic_gap_note
from traceviz.report.figures.fast import figure
from traceviz.report.figures.style import (
    _nan_to_none,
    _records,
    _sides,
    empty_spec,
    layout_spec,
    template_spec,
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
        return figure([], empty_spec(title, "no kernels in either trace"))
    data: list[dict[str, Any]] = []
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
        data.append(
            {
                "hoverinfo": "text",
                "hovertext": hover,
                "marker": {"color": color},
                "name": side.name,
                "x": _objects(t["kind"].astype(str).to_numpy()),
                "y": est.copy(),
                "type": "bar",
            }
        )
    layout = {
        "template": template_spec(),
        "barmode": "group",
        "yaxis": {
            "title": {"text": "bytes (estimated)"},
            "tickformat": "~s",
            "ticksuffix": "B",
        },
        **layout_spec(title),
    }
    return figure(data, layout)


def _objects(values: np.ndarray) -> np.ndarray:
    """A non-numeric array as plotly stores it: of dtype object."""
    return values.copy() if values.dtype.kind in "uifOM" else values.astype(object)


def _downsample_max(x: np.ndarray, y: np.ndarray, max_points: int) -> tuple[np.ndarray, np.ndarray]:
    """Keep each bin's min and max so peaks survive; a bin whose values are all missing (NaN)
    keeps its first point, so the gap is still drawn."""
    if len(x) <= max_points:
        return x, y
    bins = max_points // 2
    edges = np.linspace(x[0], x[-1], bins + 1)
    idx = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, bins - 1)
    frame = pd.DataFrame({"bin": idx, "y": y})
    known = frame[frame["y"].notna()].groupby("bin")["y"]
    keep = np.union1d(known.idxmax(), known.idxmin())
    blank = ~np.isin(idx, frame.loc[keep, "bin"].to_numpy())
    if blank.any():  # pandas' idxmax raises on a group of NaN only
        keep = np.union1d(keep, frame[blank].groupby("bin").head(1).index)
    return x[keep], y[keep]


def allocated_figure(c: Comparison, *, max_points: int = 4000) -> go.Figure:
    """Allocated memory over time from the ``[memory]`` events (measured, bytes)."""
    title = "Allocated memory over time (measured from [memory] events; ms since trace start)"
    data: list[dict[str, Any]] = []
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
            data.append(
                {
                    "hovertemplate": "%{x:.3f} ms: %{y:.4s}B<extra>" + side.name + "</extra>",
                    "line": {"color": color, "shape": "hv"},
                    "mode": "lines",
                    "name": f"{side.name} {dtype}:{device}",
                    "x": x.copy(),
                    "y": y.copy(),
                    "type": "scatter",
                }
            )
    if not data:
        why = "no [memory] events: profile with profile_memory=True to see them"
        return figure([], empty_spec(title, why))
    layout = {
        "template": template_spec(),
        "xaxis": {"title": {"text": "ms since trace start"}},
        "yaxis": {
            "title": {"text": "allocated (bytes)"},
            "tickformat": "~s",
            "ticksuffix": "B",
        },
        **layout_spec(title),
    }
    return figure(data, layout)
