"""The Kernels tab's side-by-side table: calls and device time of both traces per kernel
name, launching op or kind (:func:`~traceviz.analysis.kernel_diff.kernel_diff`), sortable,
filterable and downloadable."""

from __future__ import annotations

import html
from typing import Any

import pandas as pd
import panel as pn
import param
from bokeh.models.widgets.tables import HTMLTemplateFormatter, NumberFormatter

from traceviz.analysis.compare import Comparison
from traceviz.analysis.kernel_diff import KernelDiff, kernel_diff
from traceviz.dashboard.tabs.common import STRETCH, html_pane, selectable_table, table_csv
from traceviz.dashboard.tabs.memo import per_report
from traceviz.units import fmt_us

#: Button label → :data:`~traceviz.analysis.kernel_diff.GROUPS` key.
GROUP_LABELS = {"kernel name": "kernel", "launching op": "op", "kind": "kind"}


#: The B ÷ A column read one way, as :func:`traceviz.report.headline.change_text` writes it
#: ("2.50× less", "1.30× more", "none left", "–"), the number kept for sorting.
ONE_WAY_RATIO = HTMLTemplateFormatter(
    template="<% if (value == null || isNaN(value)) { %>–<% } else if (value == 0) { %>none left"
    "<% } else if (value < 1) { %><%= (1 / value).toFixed(2) %>× less<% } else if (value > 1) "
    "{ %><%= value.toFixed(2) %>× more<% } else { %>same<% } %>"
)


class KernelDiffView(pn.viewable.Viewer):
    """Both traces in one table, one row per kernel name (or launching op, or kind): calls and
    exclusive device time on each side and the change, largest change first."""

    comparison = param.ClassSelector(class_=Comparison)
    group: Any = param.Selector(default="kernel", objects=list(GROUP_LABELS.values()))

    def __init__(self, comparison: Comparison, **params: Any) -> None:
        super().__init__(comparison=comparison, **params)
        self._c = comparison
        self._table = selectable_table(
            self._data(),
            names=(KernelDiff.key,),
            header_filters={KernelDiff.key: {"type": "input", "func": "like",
                                             "placeholder": "contains"}},
            formatters={
                KernelDiff.a_time_us: NumberFormatter(format="0,0.0"),
                KernelDiff.b_time_us: NumberFormatter(format="0,0.0"),
                KernelDiff.delta_time_us: NumberFormatter(format="+0,0.0"),
                KernelDiff.ratio: ONE_WAY_RATIO,
            },
            header_tooltips=self._tooltips(),
            titles=self._titles(),
            css_classes=["tv-kernel-diff"],
        )  # fmt: skip
        self.param.watch(self._regroup, "group")

    def _data(self) -> pd.DataFrame:
        c, group = self._c, self.group
        return per_report(
            c, ("kernel_diff", group), lambda: kernel_diff(c.a.kernels, c.b.kernels, by=group)
        )

    def _titles(self) -> dict[str, str]:
        """Short headers (A, B: the names are long on real traces; see :meth:`_tooltips`)."""
        key = next(label for label, g in GROUP_LABELS.items() if g == self.group)
        return {
            KernelDiff.key: key,
            KernelDiff.a_calls: "A calls",
            KernelDiff.a_time_us: "A µs",
            KernelDiff.b_calls: "B calls",
            KernelDiff.b_time_us: "B µs",
            KernelDiff.delta_time_us: "Δ µs (B − A)",
            KernelDiff.ratio: "B vs A",
        }

    def _tooltips(self) -> dict[str, str]:
        a, b = self._c.names
        return {
            KernelDiff.a_calls: f"calls in {a}",
            KernelDiff.a_time_us: f"exclusive device time in {a}, µs (measured)",
            KernelDiff.b_calls: f"calls in {b}",
            KernelDiff.b_time_us: f"exclusive device time in {b}, µs (measured)",
            KernelDiff.delta_time_us: f"{b} µs − {a} µs",
            KernelDiff.ratio: f"{b}'s time against {a}'s: '2.5× less', '1.3× more', 'none "
            f"left' (– when {a} has none); sorts by {b} µs ÷ {a} µs",
        }

    def _regroup(self, _: param.parameterized.Event) -> None:
        self._table.titles = self._titles()
        self._table.value = self._data()

    def __panel__(self) -> pn.viewable.Viewable:
        a, b = self._c.names
        data = self._table.value
        totals = (data[KernelDiff.a_time_us].sum(), data[KernelDiff.b_time_us].sum())
        group = pn.widgets.RadioButtonGroup.from_param(self.param.group, options=GROUP_LABELS)
        note = html_pane(
            f"<h4>A ({html.escape(a)}) vs B ({html.escape(b)}), side by side</h4>"
            "<p class='tv-tag'>Exclusive device time "
            f"(measured) and calls on both sides, largest change first; every kernel, memcpy "
            f"and memset is in one row, so the columns add up to {fmt_us(totals[0])} and "
            f"{fmt_us(totals[1])}. Click a header to sort, type in the first one to filter.</p>"
        )
        return pn.Column(
            note,
            pn.Row(group, table_csv(self._table, f"{a}-vs-{b}-kernels.csv")),
            self._table,
            sizing_mode=STRETCH,
            name="kernel-diff",
        )
