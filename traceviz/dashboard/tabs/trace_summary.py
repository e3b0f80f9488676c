"""One trace's summary views (what ``traceviz summary`` prints, interactive): headline cards,
the findings collapsed to one line each, then tables — top kernels, device activities, launch
calls by class, compiled regions by kind — each with a CSV download.

Used by the ranks dashboard for the rank selected in the Ranks view
(:mod:`traceviz.dashboard.ranks_app`), and usable on any :class:`~traceviz.trace.Trace`.
Every figure is measured (:class:`~traceviz.analysis.summary.TraceSummary`); on a device
traceviz does not model, the device cards say n/a.
"""

from __future__ import annotations

import html

import pandas as pd
import panel as pn

from traceviz.analysis.summary import TraceSummary, summarize
from traceviz.dashboard.tabs.common import STRETCH, html_pane, selectable_table, slug, table_csv
from traceviz.dashboard.tabs.findings import findings_pane
from traceviz.diagnose import diagnose_trace
from traceviz.trace import Trace
from traceviz.units import fmt_bytes, fmt_count, fmt_us

TOP = 20  # kernels listed


def summary_cards(s: TraceSummary) -> list[tuple[str, str]]:
    """(label, value) of the headline cards; device figures are ``n/a`` when not analysed."""
    na = not s.analysed
    step = fmt_us(s.step_mean_us) if s.step_mean_us is not None else "n/a"
    peak = fmt_bytes(s.peak_allocated_bytes) if s.peak_allocated_bytes is not None else "n/a"
    return [
        ("device", f"{s.device} ({', '.join(s.device_names)})" if s.device_names else s.device),
        ("steps", f"{fmt_count(s.step_count)}, mean {step}"),
        ("kernels", "n/a" if na else fmt_count(s.kernel_count)),
        ("kernel time", "n/a" if na else fmt_us(s.kernel_time_us)),
        ("launch calls", "n/a" if na else fmt_count(s.launch_count)),
        ("launch API time", "n/a" if na else fmt_us(s.launch_api_time_us)),
        ("compiled region calls", fmt_count(s.compiled_region_calls)),
        ("peak allocated", peak),
        ("trace span", fmt_us(s.span_us)),
    ]


def _cards(s: TraceSummary, title: str) -> str:
    cards = "".join(
        f"<div class='tv-card' data-card='{html.escape(label)}'><div>{html.escape(label)} "
        f"<span class='tv-tag'>{html.escape(s.basis)}</span></div>"
        f"<div class='v'>{html.escape(value)}</div></div>"
        for label, value in summary_cards(s)
    )
    return (
        f"<h3>{html.escape(title)}</h3><p class='tv-tag'>{html.escape(s.source)}</p>"
        f"<div class='tv-cards'>{cards}</div>"
    )


def _table(
    title: str, frame: pd.DataFrame, names: tuple[str, ...] = ()
) -> list[pn.viewable.Viewable]:
    """A titled table and its CSV download (the table's rows as shown, filters applied)."""
    if frame.empty:
        return [html_pane(f"<h4>{html.escape(title)}</h4><p class='tv-tag'>none</p>")]
    data = frame.reset_index(drop=True)
    cats = [c for c in data.columns if isinstance(data[c].dtype, pd.CategoricalDtype)]
    data = data.assign(**{c: data[c].astype(str) for c in cats})
    floats = [c for c in data.columns if pd.api.types.is_float_dtype(data[c])]
    money = {"type": "money", "precision": 1, "symbol": ""}  # µs and % to one decimal
    grid = selectable_table(data, names=names, formatters=dict.fromkeys(floats, money))
    return [
        html_pane(f"<h4>{html.escape(title)}</h4>"),
        grid,
        table_csv(grid, f"{slug(title)}.csv"),
    ]


def trace_summary(trace: Trace, *, title: str = "", top: int = TOP) -> pn.viewable.Viewable:
    """The summary views of one trace (see the module docstring)."""
    s = summarize(trace, top=top)
    findings = diagnose_trace(trace, name=title or None)
    parts: list[pn.viewable.Viewable] = [
        html_pane(_cards(s, title or s.source)),
        findings_pane(findings, empty="No findings: no diagnosis rule applied to this trace."),
    ]
    parts += _table(f"Top {top} kernels by device time (measured)", s.top_kernels, ("name",))
    parts += _table("Device activity", s.activities)
    parts += _table("Launch calls by class", s.launch_classes)
    parts += _table("Compiled regions by kind", s.region_kinds)
    return pn.Column(*parts, sizing_mode=STRETCH, name="trace-summary")
