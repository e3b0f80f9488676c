"""The Backends tab (runs with ONNX Runtime backends only): eager, torch.compile and each ORT
level side by side — step time with its spread, kernels per step, op counts per level — and
the cross-backend fusion table (each ORT fused node, the exported nodes and aten ops it
replaced, its time, the Inductor kernels that fused the same ops), filterable by level. Every
table has a CSV download (the fusion table's: the rows its filter shows)."""

from __future__ import annotations

import panel as pn

from traceviz.analysis.backends import BackendsView, has_backends
from traceviz.analysis.onnx.fusion import CrossFusion
from traceviz.dashboard.tabs.common import STRETCH, html_pane, plot, table_csv, view_table
from traceviz.report.backends_views import backends_views
from traceviz.report.bundle import Report
from traceviz.report.figures.backends import BACKEND_FIGURES

__all__ = ["backends", "fusion_table", "has_backends"]

#: Cross-fusion columns the tab's table shows, in order.
FUSION_COLUMNS = (
    CrossFusion.level, CrossFusion.op, CrossFusion.node, CrossFusion.exported_count,
    CrossFusion.aten_ops, CrossFusion.time_us, CrossFusion.inductor_kernels, CrossFusion.match,
    CrossFusion.exported_nodes,
)  # fmt: skip


def backends(report: Report) -> pn.viewable.Viewable:
    """The tab: figures, the side-by-side and per-level tables, the fusion table."""
    view = report.backends
    if view is None:
        return html_pane("<p>This run has no ONNX Runtime backends.</p>")
    parts: list[pn.viewable.Viewable] = [plot(build(report)) for build in BACKEND_FIGURES]
    tables = backends_views(report, top=20)
    parts += [view_table(t) for t in tables[:2]]  # side by side, per level
    parts.append(html_pane("<h3>ONNX Runtime fusion vs Inductor, every level</h3>"))
    fused = fusion_table(view)
    parts += [fused, table_csv(fused, "ort-fusion.csv")]  # the rows the level filter shows
    parts += [view_table(t) for t in tables[3:]]  # op counts, folded
    return pn.Column(*parts, sizing_mode=STRETCH, name="backends")


def fusion_table(view: BackendsView) -> pn.widgets.Tabulator:
    """Every level's fused nodes, longest ORT time first, with a level filter."""
    data = view.fusion.loc[:, list(FUSION_COLUMNS)].sort_values(
        [CrossFusion.level, CrossFusion.time_us], ascending=[True, False], kind="stable"
    )
    return pn.widgets.Tabulator(
        data.reset_index(drop=True),
        pagination="remote",
        page_size=15,
        show_index=False,
        disabled=True,
        sizing_mode=STRETCH,
        layout="fit_data_stretch",
        header_filters={CrossFusion.level: {"type": "input", "func": "like"}},
        formatters={CrossFusion.time_us: {"type": "money", "precision": 1, "symbol": ""}},
        titles={CrossFusion.time_us: "time/run (µs)", CrossFusion.exported_count: "exported"},
    )
