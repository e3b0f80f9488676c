"""The Kernels tab: both traces side by side (:mod:`~traceviz.dashboard.tabs.kernel_diff`),
then both traces' kernels in one Tabulator; selecting one explains it from the fusion map.
"""

from __future__ import annotations

import functools
import html
from typing import Any

import pandas as pd
import panel as pn
import param

from traceviz.analysis.compare import Comparison
from traceviz.analysis.fusion.ops import KernelOps
from traceviz.analysis.top_kernels import top_kernels
from traceviz.dashboard.tabs.common import STRETCH, html_pane, selectable_table, table_csv
from traceviz.dashboard.tabs.kernel_diff import KernelDiffView
from traceviz.dashboard.tabs.memo import per_report
from traceviz.report.views import (
    eager_ops_texts,
)
from traceviz.schema import Kernels
from traceviz.units import fmt_count, fmt_us


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
        self._data = per_report(c, "kernel_table", lambda: kernel_table(c))
        sides = list(c.names)
        self._table = selectable_table(
            self._data,
            names=("kernel", "launched_by"),
            css_classes=["tv-kernels"],
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

    @functools.cached_property
    def _layout(self) -> pn.Column:
        """The view, made once: panel may render a viewer again (a tab shown again), and a box
        made anew each time could be swapped in just after one typed into the old one."""
        # the search box filters as one types (value_input): bound to value it filtered only
        # on Enter or on leaving the box, and a click on a row right after typing explained
        # nothing (the table was being filtered again under it)
        search = pn.widgets.TextInput(
            name="Search kernel name", placeholder="e.g. fused, gemm, add", width=320,
            value=self.search,
        )  # fmt: skip
        search.param.watch(lambda event: setattr(self, "search", event.new or ""), "value_input")
        group = pn.widgets.Checkbox.from_param(self.param.group_by_kind, label="group by kind")
        note = html_pane(
            f"<p class='tv-tag'>{fmt_count(len(self._data))} distinct kernels in both traces; "
            "device time measured.</p>"
        )
        return pn.Column(
            pn.Row(search, group, table_csv(self._table, "kernels.csv")),
            note,
            self._table,
            self._detail,
            sizing_mode=STRETCH,
            name="kernels",
        )

    def __panel__(self) -> pn.viewable.Viewable:
        return self._layout


def kernels(c: Comparison) -> pn.viewable.Viewable:
    """The Kernels tab: both traces side by side, then every kernel of each."""
    return pn.Column(
        KernelDiffView(comparison=c), KernelsView(comparison=c), sizing_mode=STRETCH, name="kernels"
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
