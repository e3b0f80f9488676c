"""The dashboard's views of one comparison, as Panel components.

Figures come from :mod:`traceviz.report.figures` and tables from :mod:`traceviz.report.views`
(the ones the CLI and the HTML report show); this module only lays them out and adds the
interactive parts (kernel table, step choice, click-to-explain).
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from typing import Any

import pandas as pd
import panel as pn
import param

from traceviz.analysis.compare import Comparison, Metric
from traceviz.analysis.fusion_ops import KernelOps
from traceviz.analysis.top_kernels import top_kernels
from traceviz.records import records
from traceviz.report import figures
from traceviz.report.bundle import Report
from traceviz.report.html import finding_html
from traceviz.report.snippet import view_html
from traceviz.report.views import (
    eager_only_view,
    eager_ops_texts,
    fmt_delta,
    fmt_ratio,
    fmt_value,
    fusion_view,
    headline,
    metrics_view,
    regions_view,
)
from traceviz.schema import Kernels
from traceviz.units import fmt_count, fmt_us

STRETCH = "stretch_width"
CARD_METRICS = (
    ("kernel_count", "kernels"),
    ("kernel_time_us", "device time"),
    ("launch_count", "launch calls"),
    ("launch_api_time_us", "launch API time"),
    ("est_bytes", "memory traffic"),
    ("compiled_regions", "compiled regions"),
    ("graph_breaks", "graph breaks"),
)
_CSS = """
.tv-cards { display: flex; flex-wrap: wrap; gap: 10px; }
.tv-card { border: 1px solid #ddd; border-radius: 6px; padding: 8px 12px; min-width: 150px; }
.tv-card .v { font-size: 1.15em; font-weight: 600; } .tv-card .d { color: #555; font-size: .85em; }
.tv-tag { font-size: .75em; color: #777; } table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 2px 8px; text-align: left; } th { background: #f5f5f5; }
.finding { margin: 6px 0; padding: 4px 10px; border-left: 4px solid #888; }
.sev-error { border-color: #d62728; } .sev-warning { border-color: #ff7f0e; }
.sev-info { border-color: #1f77b4; }
"""


def plot(fig: Any) -> pn.pane.Plotly:
    """A figure from :mod:`traceviz.report.figures` as a Panel pane."""
    height = int(fig.layout.height or 380)
    return pn.pane.Plotly(
        fig, sizing_mode=STRETCH, height=height, config={"displaylogo": False, "responsive": True}
    )


def html_pane(text: str) -> pn.pane.HTML:
    return pn.pane.HTML(text, sizing_mode=STRETCH, stylesheets=[_CSS])


# --- overview ------------------------------------------------------------------------------


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
        html_pane(view_html(metrics_view(c))),
        sizing_mode=STRETCH,
        name="overview",
    )


# --- kernels -------------------------------------------------------------------------------


def kernel_table(c: Comparison) -> pd.DataFrame:
    """Both sides' kernels, one row per (trace, kernel name): columns
    :class:`~traceviz.analysis.top_kernels.TopKernels`."""
    return top_kernels([(side.name, side.kernels) for side in (c.a, c.b)])


def _contains(df: pd.DataFrame, pattern: str) -> pd.DataFrame:
    if not pattern:
        return df
    return df[df["kernel"].str.contains(pattern, case=False, regex=False)]


class KernelsView(pn.viewable.Viewer):
    """Both kernel tables in one Tabulator: filter, sort, paginate, search, group by kind;
    selecting a row explains it (a compiled kernel: the eager ops it replaced)."""

    comparison = param.ClassSelector(class_=Comparison)
    search = param.String(default="", doc="substring of the kernel name")
    group_by_kind = param.Boolean(default=False)

    def __init__(self, comparison: Comparison, **params: Any) -> None:
        super().__init__(comparison=comparison, **params)
        self._c = c = comparison
        self._data = kernel_table(c)
        sides = list(c.names)
        self._table = pn.widgets.Tabulator(
            self._data,
            pagination="remote",
            page_size=15,
            show_index=False,
            disabled=True,
            selectable=1,
            sizing_mode=STRETCH,
            layout="fit_data_stretch",
            header_filters={
                "trace": {"type": "list", "values": sides, "clearable": True},
                "kind": {"type": "input", "func": "like", "placeholder": "kind"},
                "source": {"type": "input", "func": "like", "placeholder": "source"},
                "kernel": {"type": "input", "func": "like", "placeholder": "name contains"},
            },
            formatters={
                "time_us": {"type": "money", "precision": 1, "symbol": ""},
                "mean_us": {"type": "money", "precision": 2, "symbol": ""},
                "share_pct": {"type": "progress", "max": 100, "legend": True},
            },
            titles={
                "time_us": "device time (µs)",
                "mean_us": "mean (µs)",
                "share_pct": "% of its trace",
                "launched_by": "launched by (op)",
            },
        )
        self._table.add_filter(pn.bind(_contains, pattern=self.param.search))
        self._detail = html_pane(
            "<p class='tv-tag'>Select a kernel to see what it replaced or became.</p>"
        )
        self._table.param.watch(self._explain, "selection")
        self.param.watch(self._group, "group_by_kind")

    def _group(self, event: param.parameterized.Event) -> None:
        self._table.groupby = ["kind"] if event.new else []

    def _explain(self, event: param.parameterized.Event) -> None:
        if not event.new:
            return
        row = self._data.iloc[event.new[0]]
        self._detail.object = explain_kernel(self._c, str(row["trace"]), str(row["kernel"]))

    def __panel__(self) -> pn.viewable.Viewable:
        search = pn.widgets.TextInput.from_param(
            self.param.search,
            label="Search kernel name",
            placeholder="e.g. fused, gemm, add",
            width=320,
        )
        group = pn.widgets.Checkbox.from_param(self.param.group_by_kind, label="group by kind")
        note = html_pane(
            f"<p class='tv-tag'>{fmt_count(len(self._data))} distinct kernels in both traces; "
            "device time measured.</p>"
        )
        return pn.Column(
            pn.Row(search, group),
            note,
            self._table,
            self._detail,
            sizing_mode=STRETCH,
            name="kernels",
        )


def explain_kernel(c: Comparison, trace: str, kernel: str) -> str:
    """HTML: for a compiled (b) kernel, the eager ops it replaced; for an eager (a) kernel,
    the compiled kernels its op went into."""
    a, b = c.names
    fusion = c.fusion.kernels
    name = html.escape(kernel)
    if trace == b:
        rows = fusion[fusion["kernel"] == kernel]
        if rows.empty:
            return f"<p><b>{name}</b>: not in the fusion map.</p>"
        r = rows.iloc[0]
        fused = html.escape(str(r["fused_ops"]) or "–")
        texts = eager_ops_texts(c.fusion.ops[c.fusion.ops[KernelOps.kernel] == kernel])
        eager = html.escape(texts.get(kernel) or f"no {a} op matched")
        return (
            f"<p><b>{name}</b> ({html.escape(str(r['source']))}"
            f"{', a fusion' if bool(r['is_fusion']) else ', not a fusion'}): "
            f"{fmt_count(r['calls'])} calls, {fmt_us(r['time_us'])} in {html.escape(b)}.</p>"
            f"<p>ops in its name: {fused}</p><p>{html.escape(a)} ops it replaced: {eager} — "
            f"{fmt_count(r['eager_kernels'])} {html.escape(a)} kernels, "
            f"{fmt_us(r['eager_time_us'])} (measured)</p>"
        )
    side = c.a if trace == a else c.b
    ops = side.kernels.loc[side.kernels[Kernels.name] == kernel, Kernels.op_name].dropna()
    op = str(ops.iloc[0]) if len(ops) else kernel
    credited = c.fusion.ops.loc[c.fusion.ops[KernelOps.op] == op, KernelOps.kernel]
    into = fusion[fusion["kernel"].isin(set(credited))]
    if into.empty:
        return (
            f"<p><b>{name}</b> (op {html.escape(op)}): no {html.escape(b)} kernel replaced it.</p>"
        )
    items = "".join(
        f"<li>{html.escape(str(k))}: {fmt_count(n)} calls, {fmt_us(t)}</li>"
        for k, n, t in zip(into["kernel"], into["calls"], into["time_us"], strict=True)
    )
    went = f"(op {html.escape(op)}) went into these {html.escape(b)} kernels"
    return f"<p><b>{name}</b> {went}:</p><ul>{items}</ul>"


# --- the other views -----------------------------------------------------------------------


class TimelineView(pn.viewable.Viewer):
    """The timeline of one step (or the whole trace) of both traces, aligned."""

    comparison = param.ClassSelector(class_=Report)
    step: Any = param.Selector(default=0, objects=[0], doc="position of the step (-1: all)")
    max_marks = param.Integer(default=figures.MAX_MARKS, bounds=(100, 200_000))

    def __init__(self, comparison: Report, **params: Any) -> None:
        super().__init__(comparison=comparison, **params)
        self._c = comparison
        labels = figures.step_labels(comparison)
        options = {label: i for i, label in enumerate(labels)}
        options["whole trace"] = -1
        self.param.step.objects = list(options.values())
        self.param.step.names = options
        if not labels:
            self.step = -1
        self._pane = plot(self._figure())
        self.param.watch(self._update, ["step", "max_marks"])

    def _figure(self) -> Any:
        step = None if self.step == -1 else self.step
        return figures.timeline_figure(self._c, step=step, max_marks=self.max_marks)

    def _update(self, _: param.parameterized.Event) -> None:
        fig = self._figure()
        self._pane.height = int(fig.layout.height or 380)
        self._pane.object = fig

    def __panel__(self) -> pn.viewable.Viewable:
        select = pn.widgets.Select.from_param(self.param.step, label="window", width=220)
        from traceviz.dashboard.download import perfetto_download

        top = pn.Row(select, perfetto_download(self._c))
        return pn.Column(top, self._pane, sizing_mode=STRETCH, name="timeline")


def fusion(c: Comparison, *, top: int = 20) -> pn.viewable.Viewable:
    parts: list[Any] = [plot(figures.fusion_figure(c, top=top))]
    for view in (fusion_view(c, top=top), eager_only_view(c, top=top)):
        if view.rows or view.note:
            parts.append(html_pane(view_html(view)))
    if len(c.fusion.by_line):
        parts.append(LinesView(comparison=c))
    return pn.Column(*parts, sizing_mode=STRETCH, name="fusion")


def explain_line(c: Comparison, row: pd.Series) -> str:
    """HTML: one source line's eager kernels (by op) and the compiled kernels that hold them."""
    a, b = c.names
    spot = html.escape(f"{row['file']}:{row['line']}")
    code = html.escape(str(row["code"] or ""))
    compiled = [k for k in str(row["compiled_kernels"]).split(", ") if k]
    known = {str(r["kernel"]): r for r in records(c.fusion.kernels)}
    items = "".join(
        f"<li>{html.escape(k)}: {fmt_count(known[k]['calls'])} calls, "
        f"{fmt_us(known[k]['time_us'])} in all (basis {html.escape(str(known[k]['basis']))})</li>"
        if k in known
        else f"<li>{html.escape(k)}</li>"
        for k in compiled
    )
    fused = html.escape(str(row["fused_with"] or "")) or "no other line"
    return (
        f"<p><b>{spot}</b> <code>{code}</code></p>"
        f"<p>{html.escape(a)}: {fmt_count(row['eager_kernels'])} kernels, "
        f"{fmt_us(row['eager_time_us'])} — {html.escape(str(row['eager_ops']) or '–')}</p>"
        f"<p>{html.escape(b)}: {fmt_us(row['compiled_time_us'])} (this line's share)</p>"
        f"<ul>{items or '<li>none</li>'}</ul><p>fused with: {fused}</p>"
    )


class LinesView(pn.viewable.Viewer):
    """The fusion map per source line in a Tabulator; selecting a line shows its kernels on
    both sides."""

    comparison = param.ClassSelector(class_=Comparison)

    def __init__(self, comparison: Comparison, **params: Any) -> None:
        super().__init__(comparison=comparison, **params)
        self._c = comparison
        self._data = comparison.fusion.by_line.reset_index(drop=True)
        shown = self._data.drop(columns=["eager_ops"])
        self._table = pn.widgets.Tabulator(
            shown,
            pagination="remote",
            page_size=15,
            show_index=False,
            disabled=True,
            selectable=1,
            sizing_mode=STRETCH,
            layout="fit_data_stretch",
            formatters={
                "eager_time_us": {"type": "money", "precision": 1, "symbol": ""},
                "compiled_time_us": {"type": "money", "precision": 1, "symbol": ""},
            },
        )
        self._detail = html_pane(
            "<p class='tv-tag'>Select a source line to see its kernels on both sides.</p>"
        )
        self._table.param.watch(self._explain, "selection")

    def _explain(self, event: param.parameterized.Event) -> None:
        if event.new:
            self._detail.object = explain_line(self._c, self._data.iloc[event.new[0]])

    def __panel__(self) -> pn.viewable.Viewable:
        title = html_pane("<h4>Fusion by source line (device time measured)</h4>")
        return pn.Column(title, self._table, self._detail, sizing_mode=STRETCH, name="lines")


def launch(c: Comparison) -> pn.viewable.Viewable:
    names = (
        "launch_count",
        "launch_api_time_us",
        "launch_delay_p50_us",
        "short_kernels",
        "device_idle_us",
        "cpu_wait_us",
    )
    view = metrics_view(c)
    rows = [r for r in view.rows if r[0] in names]
    table = view_html(type(view)("Launch overhead (measured)", view.columns, rows))
    return pn.Column(
        plot(figures.launch_delay_figure(c)),
        plot(figures.idle_figure(c)),
        plot(figures.per_step_figure(c)),
        html_pane(table),
        sizing_mode=STRETCH,
        name="launch",
    )


def memory(c: Comparison) -> pn.viewable.Viewable:
    names = (
        "est_bytes",
        "unestimated_time_share",
        "peak_allocated_bytes",
        "memcpy_bytes",
        "est_bytes_saved",
    )
    view = metrics_view(c)
    rows = [r for r in view.rows if r[0] in names]
    table = view_html(type(view)("Memory", view.columns, rows))
    return pn.Column(
        plot(figures.memory_kind_figure(c)),
        plot(figures.allocated_figure(c)),
        html_pane(table),
        sizing_mode=STRETCH,
        name="memory",
    )


def regions(c: Comparison) -> pn.viewable.Viewable:
    parts: list[Any] = [plot(figures.regions_figure(c))]
    view = regions_view(c)
    if view.rows or view.note:
        parts.append(html_pane(view_html(view)))
    breaks = c.run_info.dynamo.graph_breaks if c.run_info is not None else []
    if breaks:
        items = "".join(
            f"<li><b>{html.escape(g.reason)}</b> at "
            f"{html.escape(str(g.file))}:{html.escape(str(g.line))}</li>"
            for g in breaks
        )
        parts.append(
            html_pane(f"<h4>Graph breaks reported by Dynamo (run.json)</h4><ul>{items}</ul>")
        )
    return pn.Column(*parts, sizing_mode=STRETCH, name="regions")


#: Tab title → builder, in the order the dashboard shows them.
Component = pn.viewable.Viewable | pn.viewable.Viewer
VIEWS: dict[str, Callable[[Report], Component]] = {
    "Overview": overview,
    "Kernels": lambda c: KernelsView(comparison=c),
    "Timeline": lambda c: TimelineView(comparison=c),
    "Fusion": fusion,
    "Launch overhead": launch,
    "Memory": memory,
    "Regions": regions,
}
