"""The Overview tab: headline, metric cards (run.json's speedup and correctness too), the
metrics figures, the findings (one line each, expanded on a click) and the metrics table.
"""

from __future__ import annotations

import dataclasses
import html
import math

import panel as pn

from traceviz.analysis.compare import Comparison, Metric
from traceviz.dashboard.tabs.common import STRETCH, html_pane, plot, short_path, view_table
from traceviz.dashboard.tabs.findings import FINDINGS_CSS, findings_pane
from traceviz.report import figures
from traceviz.report.bundle import Report
from traceviz.report.figures.overview import traffic_partial
from traceviz.report.figures.roofline import bridge_figure, roofline_figure
from traceviz.report.headline import change_text, headline
from traceviz.report.headline_html import HEADLINE_CSS, headline_html
from traceviz.report.views import View, fmt_delta, fmt_value, metrics_view
from traceviz.units import fmt_pct

CARD_METRICS = (
    ("kernel_count", "kernels"),
    ("kernel_time_us", "device time"),
    ("launch_count", "launch calls"),
    ("launch_api_time_us", "launch API time"),
    ("est_bytes", "memory traffic"),
    ("compiled_regions", "compiled regions"),
    ("graph_breaks", "graph breaks"),
)


#: Metrics that add up over steps: shown per step first when the step counts differ.
PER_STEP = frozenset(
    {"kernel_count", "kernel_time_us", "launch_count", "launch_api_time_us", "est_bytes",
     "compiled_regions"}
)  # fmt: skip


def _card(c: Comparison, name: str, label: str) -> str:
    try:
        row = c.metric(name)
    except KeyError:
        return ""
    unit, basis = str(row[Metric.unit]), str(row[Metric.basis])
    va, vb = float(row[Metric.a]), float(row[Metric.b])
    total = f"{fmt_value(va, unit)} → {fmt_value(vb, unit)}"
    change = f"Δ {fmt_delta(row[Metric.delta], unit)} ({change_text(row[Metric.ratio])})"
    na, nb = c.a.summary.step_count, c.b.summary.step_count
    steps = (na, nb) if name in PER_STEP and na and nb and na != nb else None
    lines = [total, change]
    if steps is not None:
        pa, pb = va / steps[0], vb / steps[1]
        ratio = pb / pa if pa else math.nan
        lines = [
            f"{fmt_value(pa, unit)} → {fmt_value(pb, unit)} per step",
            f"Δ {fmt_delta(pb - pa, unit)} ({change_text(ratio)}) per step; "
            f"total ({steps[0]} vs {steps[1]} steps): {total} ({change_text(row[Metric.ratio])})",
        ]
    extra, tags = "", [basis]
    if name == "est_bytes":
        lines, extra, partial = _traffic_lines(c, lines, steps)
        if partial:
            tags.append("partial")
    tag = " ".join(
        f"<span class='{'tv-partial' if t == 'partial' else 'tv-tag'}'>{html.escape(t)}</span>"
        for t in tags
    )
    return (
        f"<div class='tv-card' data-metric='{html.escape(name)}'><div>{html.escape(label)} "
        f"{tag}</div><div class='v'>{html.escape(lines[0])}</div>"
        f"<div class='d'>{html.escape(lines[1])}</div>{extra}</div>"
    )


def _traffic_lines(
    c: Comparison, lines: list[str], steps: tuple[int, int] | None
) -> tuple[list[str], str, bool]:
    """The memory card's lines, its segments (each side's kernel time with and without a
    traffic estimate) and whether it is partial. Unestimated kernels are not counted as
    moving nothing: their bytes are unknown, so an estimate that leaves any out is a lower
    bound (≥), and with a large part unknown there is no ratio."""
    shares = [s.traffic.unestimated_time_share for s in (c.a, c.b)]
    partial = traffic_partial(c)
    row = c.metric("est_bytes")
    values = [float(row[Metric.a]), float(row[Metric.b])]
    if steps is not None:
        values = [v / n for v, n in zip(values, steps, strict=True)]
    bound = [
        ("≥ " if x else "") + fmt_value(v, "bytes") for v, x in zip(values, shares, strict=True)
    ]
    first = f"{bound[0]} → {bound[1]}" + (" per step" if steps is not None else "")
    if partial:
        unknown = " and ".join(
            f"{fmt_pct(100 * x) if x is not None else '–'} of {n}'s"
            for x, n in zip(shares, c.names, strict=True)
        )
        second = f"no ratio: {unknown} kernel time has no estimate"
    else:
        second = lines[1]
    segments = "".join(_segment(name, share) for name, share in zip(c.names, shares, strict=True))
    return [first, second], segments, partial


def _segment(name: str, share: float | None) -> str:
    """One side's kernel time as two segments: with a traffic estimate, and without."""
    if share is None:
        return ""
    est, unk = 100 * (1 - share), 100 * share
    title = f"{name}: {fmt_pct(est)} of kernel time estimated, {fmt_pct(unk)} with no estimate"
    return (
        f"<div class='tv-seg' title='{html.escape(title)}'>"
        f"<span class='est' style='width:{est:.1f}%'></span>"
        f"<span class='unk' style='width:{unk:.1f}%'></span></div>"
        f"<div class='tv-tag'>{html.escape(name)}: no estimate for {fmt_pct(unk)} of kernel "
        "time</div>"
    )


def _run_cards(c: Comparison) -> str:
    info = c.run_info
    if info is None:
        return ""
    cards = []
    speedup = info.timing.speedup
    if speedup is not None and math.isfinite(speedup):
        cards.append(
            ("speedup", f"{speedup:.2f}× faster" if speedup >= 1 else f"{1 / speedup:.2f}× slower",
             "median step time, outside the profiler")
        )  # fmt: skip
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


NO_FINDINGS = "No findings: no diagnosis rule applied to this pair."


def one_way_ratios(view: View, c: Comparison) -> View:
    """The metrics table with its ratio column read one way (``"2.63× less"``, ``"1.58×
    more"``: :func:`~traceviz.report.headline.change_text`), never a ``0.38×``; its CSV
    keeps the numbers."""
    at = view.columns.index("ratio")
    words = [change_text(float(r)) for r in c.metrics[Metric.ratio]]
    rows = [[*row[:at], w, *row[at + 1 :]] for row, w in zip(view.rows, words, strict=True)]
    columns = [*view.columns[:at], f"{c.names[1]} vs {c.names[0]}", *view.columns[at + 1 :]]
    return dataclasses.replace(view, columns=columns, rows=rows)


def compared_html(c: Report) -> str:
    """What was compared, one muted line: each side's source and device kind."""
    sides = " · ".join(
        f"{html.escape(name)}: {html.escape(short_path(str(side.trace.meta.source)))} "
        f"({html.escape(side.trace.device_kind.value)})"
        for name, side in zip(c.names, (c.a, c.b), strict=True)
    )
    return f"<div class='tv-tag' title='{html.escape(str(c.a.trace.meta.source))}'>{sides}</div>"


def first_screen(c: Report) -> pn.pane.HTML:
    """The verdict sentence, the profiled-vs-timed note and the top findings
    (:mod:`traceviz.report.headline`), then what was compared."""
    return html_pane(headline_html(headline(c)) + compared_html(c), HEADLINE_CSS, FINDINGS_CSS)


def overview(c: Report) -> pn.viewable.Viewable:
    a, b = c.names
    cards = "".join(_card(c, name, label) for name, label in CARD_METRICS) + _run_cards(c)
    return pn.Column(
        first_screen(c),
        html_pane(
            f"<h4>{html.escape(a)} → {html.escape(b)}</h4><div class='tv-cards'>{cards}</div>"
        ),
        plot(figures.metrics_figure(c)),
        plot(figures.kinds_figure(c)),
        plot(bridge_figure(c)),  # the step bridge and the roofline (docs/roofline.md)
        plot(roofline_figure(c)),
        findings_pane(c.findings, empty=NO_FINDINGS),
        view_table(one_way_ratios(metrics_view(c), c), c.metrics),
        sizing_mode=STRETCH,
        name="overview",
    )
