"""The Fusion tab: the fusion figure and tables, and the fusion map per source line
(click a line to explain it).
"""

from __future__ import annotations

import html
from typing import Any

import pandas as pd
import panel as pn
import param

from traceviz import source_files
from traceviz.analysis.compare import Comparison
from traceviz.analysis.fusion.lines import split_kernel_names
from traceviz.dashboard.tabs.common import (
    STRETCH,
    html_pane,
    plot,
    selectable_table,
    short_path,
    table_csv,
    view_table,
)
from traceviz.records import records
from traceviz.report import figures
from traceviz.report.views import (
    eager_only_view,
    fusion_view,
)
from traceviz.units import fmt_count, fmt_us


def fusion(c: Comparison, *, top: int = 20) -> pn.viewable.Viewable:
    parts: list[Any] = [plot(figures.fusion_figure(c, top=top))]
    for view in (fusion_view(c, top=top), eager_only_view(c, top=top)):
        if view.rows or view.note:
            parts.append(view_table(view))
    if len(c.fusion.by_line):
        parts.append(LinesView(comparison=c))
    return pn.Column(*parts, sizing_mode=STRETCH, name="fusion")


def explain_line(c: Comparison, row: pd.Series) -> str:
    """HTML: one source line's eager kernels (by op) and the compiled kernels that hold them."""
    a, b = c.names
    spot = html.escape(f"{row['file']}:{row['line']}")
    code = html.escape(str(row["code"] or ""))
    compiled = split_kernel_names(row["compiled_kernels"])
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


def lines_shown(by_line: pd.DataFrame) -> pd.DataFrame:
    """The fusion-by-line rows as the table shows them: paths as a user reads them (relative
    to the working directory, :func:`traceviz.source_files.shown`), without the ``code``
    column when no line's source is on this machine (it would be empty), and without
    ``eager_ops`` (the explanation below the table lists them)."""
    shown = by_line.drop(columns=["eager_ops"])
    files = shown["file"].astype(str)
    on_disk = {f: source_files.locate(f) is not None for f in files.unique()}
    shown = shown.assign(file=files.map(_short_file))
    if "code" in shown and not any(on_disk.values()):
        shown = shown.drop(columns=["code"])
    return shown


def _short_file(file: str) -> str:
    """A recorded path as a user reads it, its last three parts when still absolute."""
    text = source_files.shown(file)
    return short_path(text) if text.startswith("/") else text


class LinesView(pn.viewable.Viewer):
    """The fusion map per source line in a Tabulator; selecting a line shows its kernels on
    both sides."""

    comparison = param.ClassSelector(class_=Comparison)

    def __init__(self, comparison: Comparison, **params: Any) -> None:
        super().__init__(comparison=comparison, **params)
        self._c = comparison
        self._data = comparison.fusion.by_line.reset_index(drop=True)
        shown = lines_shown(self._data)
        self._table = selectable_table(
            shown,
            names=("compiled_kernels",),
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
        download = table_csv(self._table, "fusion-by-line.csv")
        return pn.Column(
            title, download, self._table, self._detail, sizing_mode=STRETCH, name="lines"
        )
