"""The Overview tab: headline, metric cards (run.json's speedup and correctness too),
findings, the metrics figures and table.
"""

from __future__ import annotations

import html
import math

import panel as pn

from traceviz.analysis.compare import Comparison, Metric
from traceviz.dashboard.tabs.common import STRETCH, html_pane, plot, view_table
from traceviz.report import figures
from traceviz.report.bundle import Report
from traceviz.report.html import finding_html
from traceviz.report.views import (
    fmt_delta,
    fmt_ratio,
    fmt_value,
    headline,
    metrics_view,
)

CARD_METRICS = (
    ("kernel_count", "kernels"),
    ("kernel_time_us", "device time"),
    ("launch_count", "launch calls"),
    ("launch_api_time_us", "launch API time"),
    ("est_bytes", "memory traffic"),
    ("compiled_regions", "compiled regions"),
    ("graph_breaks", "graph breaks"),
)


def _card(c: Comparison, name: str, label: str) -> str:
    try:
        row = c.metric(name)
    except KeyError:
        return ""
    unit = str(row[Metric.unit])
    value = f"{fmt_value(row[Metric.a], unit)} → {fmt_value(row[Metric.b], unit)}"
    change = f"Δ {fmt_delta(row[Metric.delta], unit)} ({fmt_ratio(row[Metric.ratio])})"
    return (
        f"<div class='tv-card'><div>{html.escape(label)} <span class='tv-tag'>"
        f"{html.escape(str(row[Metric.basis]))}</span></div><div class='v'>{html.escape(value)}"
        f"</div><div class='d'>{html.escape(change)}</div></div>"
    )


def _run_cards(c: Comparison) -> str:
    info = c.run_info
    if info is None:
        return ""
    cards = []
    speedup = info.timing.speedup
    if speedup is not None and math.isfinite(speedup):
        cards.append(("speedup", f"{speedup:.2f}×", "median step time, outside the profiler"))
    correctness = info.correctness
    if correctness.checked:
        text = "outputs match" if correctness.passed else "outputs DIFFER"
        err = correctness.max_abs_error
        detail = f"max abs error {err:.3g}" if err is not None else ""
        cards.append(("correctness", text, detail))
    if not info.compile.ok:
        error = info.compile.error
        cards.append(("compile", "FAILED", error.type if error is not None else ""))
    return "".join(
        f"<div class='tv-card'><div>{html.escape(k)} <span class='tv-tag'>run.json</span></div>"
        f"<div class='v'>{html.escape(v)}</div><div class='d'>{html.escape(d)}</div></div>"
        for k, v, d in cards
    )


def findings_html(c: Report) -> str:
    if not c.findings:
        return "<p class='tv-tag'>No findings: no diagnosis rule applied to this pair.</p>"
    return "".join(finding_html(f) for f in c.findings)


def overview(c: Report) -> pn.viewable.Viewable:
    a, b = c.names
    lines = "".join(f"<li>{html.escape(line)}</li>" for line in headline(c))
    cards = "".join(_card(c, name, label) for name, label in CARD_METRICS) + _run_cards(c)
    return pn.Column(
        html_pane(
            f"<ul>{lines}</ul><h4>{html.escape(a)} → {html.escape(b)}</h4>"
            f"<div class='tv-cards'>{cards}</div>"
        ),
        html_pane(f"<h4>Findings</h4>{findings_html(c)}"),
        plot(figures.metrics_figure(c)),
        plot(figures.kinds_figure(c)),
        view_table(metrics_view(c), c.metrics),
        sizing_mode=STRETCH,
        name="overview",
    )
