"""The timeline: both traces' device and CPU lanes of one step (or the whole trace), binned
into time bins beyond ``max_marks`` marks."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from traceviz.analysis.compare import Comparison, Side
from traceviz.analysis.timeline_events import window_events
from traceviz.report.figures.fast import figure, subplots
from traceviz.report.figures.style import (
    KIND_COLORS,
    MAX_MARKS,
    TIMELINE_LAUNCH_CLASSES,
    _sides,
    layout_spec,
    template_spec,
)
from traceviz.schema import (
    Steps,
)
from traceviz.units import fmt_count, fmt_name, fmt_us


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
    """:func:`~traceviz.analysis.timeline_events.window_events` plus x0/x1, ms from ``start``."""
    events = window_events(side, start, end, TIMELINE_LAUNCH_CLASSES)
    events["x0"] = (events["ts"] - start) / 1e3
    events["x1"] = events["x0"] + np.maximum(events["dur"].to_numpy(), 0.0) / 1e3
    return events


def _hover_single(events: pd.DataFrame) -> np.ndarray:
    """Per event, its hover text (name, kind, duration, launching op), an object array; a
    missing name, kind or op gives a missing text (as pandas' string sums do)."""
    if any(events[c].isna().any() for c in ("name", "kind", "op")):
        sums = "<b>" + events["name"].map(lambda n: fmt_name(n, 90)) + "</b><br>"
        sums = sums + events["kind"] + " · " + events["dur"].map(fmt_us)
        return (sums + "<br>launched by " + events["op"]).to_numpy()
    # names and durations repeat (a step runs the same kernels): each formatted once
    names, durs = events["name"].tolist(), events["dur"].tolist()
    cut = {name: fmt_name(name, 90) for name in set(names)}
    took = {dur: fmt_us(dur) for dur in set(durs)}
    text = np.empty(len(events), dtype=object)
    text[:] = [
        f"<b>{cut[name]}</b><br>{kind} · {took[dur]}<br>launched by {op}"
        for name, kind, dur, op in zip(
            names, events["kind"].tolist(), durs, events["op"].tolist(), strict=True
        )
    ]
    return text


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


def _segments(
    x0: np.ndarray, x1: np.ndarray, lane: np.ndarray, hover: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Marks as one line trace: x0→x1 at y = lane, a gap (NaN/None) after each; hover on both
    ends."""
    n = len(x0)
    x = np.empty(3 * n, dtype=float)
    x[0::3], x[1::3], x[2::3] = x0, x1, np.nan
    y = np.empty(3 * n, dtype=object)
    y[0::3] = y[1::3] = lane
    y[2::3] = None
    text = np.empty(3 * n, dtype=object)
    text[0::3] = text[1::3] = hover
    text[2::3] = ""
    return x, y, text


def _by_kind(kinds: pd.Series) -> list[tuple[Any, np.ndarray]]:
    """(kind, row positions in order) per kind, kinds sorted, missing kinds left out: what
    ``groupby("kind", sort=True)`` iterates over, without building each group's frame."""
    codes, uniques = pd.factorize(kinds, sort=True)
    order = np.argsort(codes, kind="stable")
    ends = np.searchsorted(codes[order], np.arange(len(uniques) + 1), side="left")
    return [(uniques[i], order[ends[i] : ends[i + 1]]) for i in range(len(uniques))]


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
    layout, grid = subplots(
        rows=2, cols=1, shared_xaxes=True, subplot_titles=("a", "b"), vertical_spacing=0.12
    )
    for note, label in zip(layout["annotations"], titles, strict=True):
        note["text"] = label
    data: list[dict[str, Any]] = []
    marks_drawn, shown = 0, set()
    for row, frame in enumerate(events, start=1):
        if frame.empty:
            continue
        if aggregated:
            marks = _aggregate(frame, max(1, max_marks // max(lanes, 1)), span_ms)
            hover = marks["hover"].to_numpy()
        else:
            marks, hover = frame, _hover_single(frame)
        marks_drawn += len(marks)
        axes = {"xaxis": "x", "yaxis": "y"} if row == 1 else {"xaxis": "x2", "yaxis": "y2"}
        x0, x1, lane = (marks[c].to_numpy() for c in ("x0", "x1", "lane"))
        for kind, rows in _by_kind(marks["kind"]):
            x, y, text = _segments(x0[rows], x1[rows], lane[rows], hover[rows])
            data.append(
                {
                    "hovertemplate": "%{text}<extra></extra>",
                    "legendgroup": str(kind),
                    "line": {"color": KIND_COLORS.get(str(kind), "#888"), "width": 12},
                    "mode": "lines",
                    "name": str(kind),
                    "showlegend": kind not in shown,
                    "text": text,
                    "x": x,
                    "y": y,
                    "type": "scatter",
                    **axes,
                }
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
        layout["annotations"].append(
            {"showarrow": False, "text": "no activity in this window", "x": 0.5,
             "xref": "paper", "y": 0.5, "yref": "paper"}
        )  # fmt: skip
    layout["template"] = template_spec()
    layout["xaxis2"]["title"] = {"text": "time since window start (ms)"}
    for axis in ("yaxis", "yaxis2"):
        layout[axis] |= {"type": "category", "autorange": "reversed"}
    layout |= layout_spec(title, height=260 + 34 * max(lanes, 2))
    layout["hovermode"] = "closest"
    layout["meta"] = {"marks": marks_drawn, "events": total, "aggregated": aggregated}
    return figure(data, layout, grid=grid)


def timeline_marks(fig: go.Figure) -> int:
    """How many marks a :func:`timeline_figure` draws."""
    return int((fig.layout.meta or {}).get("marks", 0))
