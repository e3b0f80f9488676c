"""The fusion ledger per source line in a report: the JSON rows (``fusion_ledger.by_line``,
docs/compare-json.md) and a table after the ledger in the text, Markdown and HTML reports,
shown only when the eager kernels have source lines (docs/roofline.md).

The analysis is :func:`traceviz.analysis.roofline.ledger.ledger_by_line`; this module only
shapes it.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from traceviz.analysis.compare import Comparison
from traceviz.analysis.roofline.ledger import LedgerByLineColumns, ledger_by_line
from traceviz.analysis.roofline.per_kernel import Roofline
from traceviz.records import records
from traceviz.report.views import View, short_path
from traceviz.units import fmt_bytes, fmt_us

__all__ = ["by_line_json", "by_line_of", "by_line_view"]


def by_line_of(comparison: Comparison, compiled: Roofline | None) -> pd.DataFrame | None:
    """The ledger per source line of a (``compiled``: b's roofline), or None where a side's
    device is not modelled."""
    if compiled is None or not comparison.a.summary.analysed:
        return None
    steps = (comparison.a.summary.step_count, comparison.b.summary.step_count)
    return ledger_by_line(
        comparison.fusion, eager_traffic=comparison.a.traffic, compiled=compiled, steps=steps
    )


def by_line_json(table: pd.DataFrame | None, *, top: int) -> list[dict[str, Any]] | None:
    """``fusion_ledger.by_line``: the ``top`` lines that save the most time (or null)."""
    return None if table is None else records(table, limit=top)


def by_line_view(comparison: Comparison, compiled: Roofline | None, *, top: int) -> View | None:
    """The ledger per source line, the most time saved first (None without lines)."""
    table = by_line_of(comparison, compiled)
    if table is None or table.empty:
        return None
    c = LedgerByLineColumns
    a, b = comparison.names
    rows = [
        [
            f"{short_path(str(row[c.file]))}:{row[c.line]}",
            str(row[c.kernels]),
            f"{row[c.eager_kernels]:g}",
            fmt_bytes(row[c.eager_bytes]),
            fmt_us(row[c.eager_time_us]),
            _or_dash(row[c.fused_bytes], fmt_bytes),
            fmt_us(row[c.fused_time_us]),
            _signed_us(row[c.saved_us]),
            _or_dash(row[c.roof_us], fmt_us),
        ]
        for _, row in table.head(top).iterrows()
    ]
    return View(
        title=f"Fusion ledger by source line: {a}'s lines against {b}'s fused kernels",
        columns=[
            "line",
            f"{b} kernels",
            f"{a} kernels",
            f"{a} bytes",
            f"{a} time",
            "bytes",
            "time",
            "saved",
            "roof time",
        ],
        rows=rows,
        note=f"per step; each {a} kernel on its own line; a fused kernel's bytes, time and roof "
        f"time split over the lines by the {a} time credited from each",
        names=(0,),
        texts=(1,),
    )


def _or_dash(value: Any, fmt: Any) -> str:
    missing = value is None or (isinstance(value, float) and math.isnan(value))
    return "–" if missing else str(fmt(value))


def _signed_us(value: float) -> str:
    """µs with its sign (positive: the fused kernels take less than the eager ones did)."""
    sign = "+" if value > 0 else "−" if value < 0 else ""
    return sign + fmt_us(abs(value))
