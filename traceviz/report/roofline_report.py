"""The roofline, the step bridge and the fusion ledger of a report, for every renderer: JSON
sections (``roofline``, ``bridge``, ``fusion_ledger``; docs/compare-json.md) and tables shown at
the end of the text, Markdown and HTML reports (docs/roofline.md); the ledger per source line
only when the eager kernels have source lines.

The analyses are :func:`traceviz.analysis.roofline.per_kernel.side_roofline` (with the report's
``--peaks`` override, :attr:`traceviz.report.bundle.Report.peaks`),
:func:`traceviz.analysis.roofline.bridge.step_bridge` and
:mod:`traceviz.analysis.roofline.ledger`; this module only shapes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from traceviz.analysis.compare import Comparison, Side
from traceviz.analysis.roofline.bridge import BridgeParts, StepBridge, step_bridge
from traceviz.analysis.roofline.ledger import (
    LedgerByLineColumns,
    LedgerColumns,
    fusion_ledger,
    ledger_by_line,
)
from traceviz.analysis.roofline.per_kernel import (
    LATENCY_SHARE,
    LATENCY_US,
    Roofline,
    RooflineByName,
    side_roofline,
)
from traceviz.records import records
from traceviz.report.views import View, fmt_value, missing, short_path
from traceviz.units import fmt_bytes, fmt_pct, fmt_us

__all__ = [
    "bounds_view",
    "bridge_of",
    "kernels_view",
    "ledger_json",
    "ledger_of",
    "peaks_note",
    "roofline_json",
    "roofline_of",
    "roofline_views",
    "rooflines_of",
]


def roofline_of(comparison: Comparison, which: str) -> Roofline | None:
    """Side ``which``'s roofline (None where traceviz does not model its device), with the
    report's ``--peaks`` figures, else (CPU traces) the CPU peaks its run measured."""
    side: Side = comparison.side(which)
    if not side.summary.analysed:
        return None
    host = comparison.run_info.host_peaks if comparison.run_info is not None else None
    return side_roofline(side, override=getattr(comparison, "peaks", None), host=host)


def bridge_of(comparison: Comparison) -> StepBridge | None:
    """The pair's step bridge (None when a side has no step or its device is not modelled)."""
    if not (comparison.a.summary.analysed and comparison.b.summary.analysed):
        return None
    return step_bridge(comparison.a, comparison.b, run_info=comparison.run_info)


def rooflines_of(comparison: Comparison) -> dict[str, Roofline | None]:
    """Both sides' :func:`roofline_of`, for a caller that needs them more than once (each is
    a pass over every kernel of its side)."""
    return {which: roofline_of(comparison, which) for which in ("a", "b")}


def roofline_json(
    comparison: Comparison, *, top: int, rooflines: dict[str, Roofline | None] | None = None
) -> dict[str, Any]:
    """``roofline``: per side, the peaks used and the ``top`` kernel names (or null);
    ``rooflines``: :func:`rooflines_of`, when the caller has them already."""
    rooflines = rooflines_of(comparison) if rooflines is None else rooflines
    return {
        which: roofline.to_json(top=top) if roofline is not None else None
        for which, roofline in rooflines.items()
    }


def ledger_of(
    comparison: Comparison, compiled: Roofline | None, *, by_line: bool = False
) -> pd.DataFrame | None:
    """The fusion ledger of b's fused kernels, or (``by_line``) per source line of a
    (``compiled``: b's roofline); None where a side's device is not modelled."""
    if compiled is None or not comparison.a.summary.analysed:
        return None
    steps = (comparison.a.summary.step_count, comparison.b.summary.step_count)
    build = ledger_by_line if by_line else fusion_ledger
    return build(
        comparison.fusion, eager_traffic=comparison.a.traffic, compiled=compiled, steps=steps
    )


def ledger_json(
    comparison: Comparison, compiled: Roofline | None, *, top: int
) -> dict[str, Any] | None:
    """``fusion_ledger``: ``kernels``, the ``top`` rows of the ledger, and ``by_line``, the
    ``top`` source lines, each most time saved first (or null); ``compiled``: b's roofline."""
    ledger = ledger_of(comparison, compiled)
    if ledger is None:
        return None
    by_line = ledger_of(comparison, compiled, by_line=True)
    lines = None if by_line is None else records(by_line, limit=top)
    return {"kernels": records(ledger, limit=top), "by_line": lines}


def roofline_views(comparison: Comparison, *, top: int = 10) -> list[View]:
    """The step bridge, the roofline tables and the ledger by source line (empty ones left
    out)."""
    rooflines = rooflines_of(comparison)  # once each
    views = [
        _bridge_view(comparison),
        kernels_view(
            [(comparison.side(w).name, r) for w, r in rooflines.items() if r is not None], top=top
        ),
        _ledger_view(comparison, rooflines["b"], top=top),
        _by_line_view(comparison, rooflines["b"], top=top),
    ]
    return [v for v in views if v is not None and (v.rows or v.note)]


def _bridge_view(comparison: Comparison) -> View | None:
    bridge = bridge_of(comparison)
    if bridge is None:
        return None
    a, b = bridge.names
    rows = [
        [
            str(row[BridgeParts.label]),
            signed_us(row[BridgeParts.a_us], plus=""),
            signed_us(row[BridgeParts.b_us], plus=""),
            signed_us(row[BridgeParts.delta_us]),
        ]
        for _, row in bridge.parts.iterrows()
    ]
    share = bridge.remainder_share
    remainder = signed_us(bridge.remainder_us)
    rows.append(["remainder (kernels overlapping on streams)", "", "", remainder])
    rows.append([f"= step difference ({bridge.basis})", fmt_us(bridge.step_a_us),
                 fmt_us(bridge.step_b_us), signed_us(bridge.difference_us)])  # fmt: skip
    note = (
        f"µs per step; Δ = {a} − {b} (positive: {b} spends less). Remainder "
        f"{'–' if share is None else fmt_pct(100 * share)} of the difference."
    )
    return View(
        title=f"Step bridge: why {b} differs from {a}",
        columns=["part", a, b, "Δ"],
        rows=rows,
        note=note,
    )


def kernels_view(named: Sequence[tuple[str | None, Roofline]], *, top: int) -> View | None:
    """The ``top`` kernel names by device time of each roofline (:class:`RooflineByName`: count,
    time, TB/s, TFLOP/s, FLOP/byte, % of roof, bound), with the peaks each used in the note;
    ``named`` pairs a side's label with its roofline (label None: one trace, no side column)."""
    rows: list[list[str]] = []
    notes = _peaks_notes(named)
    for label, roofline in named:
        for _, row in roofline.by_name.head(top).iterrows():
            cells = _roofline_row(label or "", row)
            rows.append(cells if label is not None else cells[1:])
    if not rows:
        return None
    columns = ["side", "kernel", "kind", "count", "time", "TB/s", "TFLOP/s", "FLOP/B",
               "% of roof", "bound"]  # fmt: skip
    one = all(label is None for label, _ in named)
    return View(
        title="Roofline: kernels by device time",
        columns=columns[1:] if one else columns,
        rows=rows,
        note="; ".join(notes),
        names=(0,) if one else (1,),
    )


def _peaks_notes(named: Sequence[tuple[str | None, Roofline]]) -> list[str]:
    """One :func:`peaks_note` per roofline, or one for both sides when they used the same
    peaks (a run's two sides on one device: the same text twice says nothing more)."""
    alike = {peaks_note(None, roofline) for _, roofline in named}
    if len(named) > 1 and len(alike) == 1:
        return [f"both sides: {alike.pop()}"]
    return [peaks_note(label, roofline) for label, roofline in named]


def peaks_note(label: str | None, roofline: Roofline) -> str:
    """The peaks a roofline used and their basis: ``"<label>: <device> (<basis>: <source>)"``."""
    peaks = roofline.peaks
    prefix = f"{label}: " if label is not None else ""
    if peaks.peaks is None:
        return f"{prefix}no peaks for {peaks.device_name or 'this device'} (no-peak)"
    return f"{prefix}{peaks.peaks.name} ({peaks.basis.value}: {peaks.peaks.source})"


def bounds_view(roofline: Roofline) -> View | None:
    """Device time per bound (``Roofline.time_by_bound``), most first, with its share of the
    time of every kernel, memcpy and memset."""
    total = sum(roofline.time_by_bound.values())
    if total <= 0:
        return None
    ordered = sorted(roofline.time_by_bound.items(), key=lambda item: -item[1])
    latency = f"latency: < {LATENCY_US:g} µs or < {LATENCY_SHARE:.0%} of roof"
    return View(
        title="Roofline: time by bound",
        columns=["bound", "device time", "share"],
        rows=[
            [latency if bound == "latency" else bound, fmt_us(time), fmt_pct(100 * time / total)]
            for bound, time in ordered
        ],
    )


def _ledger_view(comparison: Comparison, compiled: Roofline | None, *, top: int) -> View | None:
    """The fusion ledger (:mod:`traceviz.analysis.roofline.ledger`), the most time saved first;
    ``compiled`` is b's roofline."""
    ledger = ledger_of(comparison, compiled)
    if ledger is None:
        return None
    c = LedgerColumns
    rows = [
        [
            str(row[c.kernel]),
            _count(row[c.eager_kernels], row[c.eager_unsized]),
            *_saving_cells(row, c),
            "–" if missing(row[c.pct_of_memory_roof]) else fmt_pct(row[c.pct_of_memory_roof]),
            str(row[c.bound]),
        ]
        for _, row in ledger.head(top).iterrows()
    ]
    a, b = comparison.names
    return View(
        title=f"Fusion ledger: {b}'s fused kernels against the {a} kernels they replaced",
        columns=[
            f"{b} kernel",
            f"{a} kernels",
            *_saving_columns(a),
            "% of memory roof",
            "bound",
        ],
        rows=rows,
        note="per step; bytes estimated, times measured; roof time: the fused kernel's bytes at "
        "the device's peak bandwidth (latency: too short to reach it)",
        names=(0,),
    )


def _by_line_view(comparison: Comparison, compiled: Roofline | None, *, top: int) -> View | None:
    """The ledger per source line, the most time saved first (None without lines)."""
    table = ledger_of(comparison, compiled, by_line=True)
    if table is None or table.empty:
        return None
    c = LedgerByLineColumns
    a, b = comparison.names
    rows = [
        [
            f"{short_path(str(row[c.file]))}:{row[c.line]}",
            str(row[c.kernels]),
            f"{row[c.eager_kernels]:g}",
            *_saving_cells(row, c),
        ]
        for _, row in table.head(top).iterrows()
    ]
    return View(
        title=f"Fusion ledger by source line: {a}'s lines against {b}'s fused kernels",
        columns=[
            "line",
            f"{b} kernels",
            f"{a} kernels",
            *_saving_columns(a),
        ],
        rows=rows,
        note=f"per step; each {a} kernel on its own line; a fused kernel's bytes, time and roof "
        f"time split over the lines by the {a} time credited from each",
        names=(0,),
        texts=(1,),
    )


def _saving_columns(a: str) -> list[str]:
    return [f"{a} bytes", f"{a} time", "bytes", "time", "saved", "roof time"]


def _saving_cells(row: Any, c: type[LedgerColumns] | type[LedgerByLineColumns]) -> list[str]:
    """A ledger row's bytes and time of a's kernels, then of the fused kernel(s), the time
    saved and the roof time (the columns of :func:`_saving_columns`)."""
    return [
        fmt_bytes(row[c.eager_bytes]),
        fmt_us(row[c.eager_time_us]),
        fmt_value(row[c.fused_bytes], "bytes"),
        fmt_us(row[c.fused_time_us]),
        signed_us(row[c.saved_us]),
        fmt_value(row[c.roof_us], "us"),
    ]


def _roofline_row(side: str, row: Any) -> list[str]:
    b = RooflineByName
    return [
        side,
        str(row[b.name]),
        str(row[b.kind]),
        str(int(row[b.count])),
        fmt_us(row[b.time_us]),
        _number(row[b.achieved_tbps], 3),
        _number(row[b.achieved_tflops], 2),
        _number(row[b.intensity], 1),
        "–" if missing(row[b.pct_of_roof]) else fmt_pct(row[b.pct_of_roof]),
        str(row[b.bound]),
    ]


def _count(kernels: float, unsized: float) -> str:
    """Eager kernels per step, and how many of them have no byte figure."""
    return f"{kernels:g}" + (f" ({unsized:g} unsized)" if unsized else "")


def _number(value: Any, digits: int) -> str:
    return "–" if missing(value) else f"{float(value):.{digits}f}"


#: Below this (µs, 10 ns: finer than trace clocks resolve) a figure is shown as 0: the rounding
#: of sums of large clock values (the remainder of an exact split).
_NOISE_US = 0.01


def signed_us(value: float, plus: str = "+") -> str:
    """µs with a real minus sign (the bridge's profiler part is negative: profiled steps are
    longer; a ledger's saving is negative where the fused kernels take longer)."""
    sign = plus if value > _NOISE_US else "−" if value < -_NOISE_US else ""
    return sign + fmt_us(abs(value) if abs(value) >= _NOISE_US else 0.0)
