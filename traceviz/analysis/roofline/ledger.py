"""The fusion ledger: per fused kernel of b, what the eager kernels it replaced moved and took,
what it moves and takes, and the time its device's memory roof allows it.

Per fused kernel name of b (a row of ``FusionMap.kernels`` with ``is_fusion``), per profiled
step (:class:`LedgerColumns`):

- the eager kernels credited to it (``FusionMap.credits``: each eager kernel is credited to at
  most one compiled kernel, so the ledger's eager columns never count an eager kernel twice):
  their number, bytes (the memory-traffic figures; rows without one are counted in
  ``eager_unsized``) and device time;
- the fused kernel's own executions, bytes and device time, and the time saved (eager time −
  fused time);
- ``roof_us``: the time the fused kernel's bytes take at the device's peak bandwidth (the
  roofline's prediction for a memory-bound kernel; NaN without peaks), and
  ``pct_of_memory_roof`` (roof time ÷ measured time, %), with the roofline's ``bound`` for it:
  ``latency`` says why a fused kernel is far from its roof (too short to reach it).

Eager figures are divided by a's profiled steps, fused ones by b's.

:func:`ledger_by_line` is the same ledger per user source line (:class:`LedgerByLineColumns`),
where the fusion map knows the eager kernels' lines (``FusionMap.eager_lines``):

- each credited eager kernel counts on **its own line** (count, bytes, time): each at most
  once, so the lines' eager columns add up to at most the ledger's;
- a fused kernel's own bytes, time and roof time are split over the lines of the eager
  kernels credited to it **in proportion to the eager time credited from each line**, out of
  all the eager time credited to it (by count when that time is 0): the share of eager kernels
  without a line is credited to no line, so the lines' fused columns add up to at most the
  ledger's, never more than the fused kernel measured.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
import pandas as pd

from traceviz import schema
from traceviz.analysis.fusion.fusion_map import FusionMap
from traceviz.analysis.fusion.match import Credits
from traceviz.analysis.roofline.per_kernel import Roofline, RooflineByName
from traceviz.analysis.traffic.memory import KernelTraffic, MemoryTraffic
from traceviz.schema import Float, Text, dtypes

__all__ = [
    "LEDGER_BY_LINE_DTYPES",
    "LEDGER_DTYPES",
    "LedgerByLineColumns",
    "LedgerColumns",
    "fusion_ledger",
    "ledger_by_line",
]


class LedgerColumns:
    """Columns of :func:`fusion_ledger`'s table, one row per fused kernel name of b."""

    kernel: Text = "kernel"  # the fused kernel's name (object)
    eager_kernels: Float = "eager_kernels"  # eager kernel executions credited to it, per step
    eager_unsized: Float = "eager_unsized"  # of them, executions without a byte figure, per step
    eager_bytes: Float = "eager_bytes"  # their bytes read + written, per step (float64)
    eager_time_us: Float = "eager_time_us"  # their device time, µs per step
    fused_calls: Float = "fused_calls"  # the fused kernel's executions, per step
    fused_bytes: Float = "fused_bytes"  # its bytes, per step (float64; NaN: unknown)
    fused_time_us: Float = "fused_time_us"  # its device time, µs per step
    saved_us: Float = "saved_us"  # eager_time_us − fused_time_us, µs per step
    roof_us: Float = "roof_us"  # fused_bytes at the device's peak bandwidth, µs per step (NaN)
    pct_of_memory_roof: Float = "pct_of_memory_roof"  # roof_us / fused_time_us, % (NaN)
    bound: Text = "bound"  # the roofline's bound of the fused kernel (object)


LEDGER_DTYPES: dict[str, str] = dtypes(LedgerColumns)


def fusion_ledger(
    fusion: FusionMap,
    *,
    eager_traffic: MemoryTraffic,
    compiled: Roofline,
    steps: tuple[int, int],
) -> pd.DataFrame:
    """The ledger (:class:`LedgerColumns`), the most time saved first. ``eager_traffic`` is a's
    memory traffic (bytes per eager kernel row), ``compiled`` b's roofline, ``steps`` the
    profiled steps of a and b (each counted as at least 1)."""
    c = LedgerColumns
    fused = fusion.kernels[fusion.kernels["is_fusion"].astype(bool)]
    if fused.empty:
        return schema.empty_table(LEDGER_DTYPES)
    steps_a, steps_b = (max(int(s), 1) for s in steps)
    eager = _eager_by_kernel(fusion.credits, eager_traffic)
    by_name = compiled.by_name.set_index(RooflineByName.name)
    peaks = compiled.peaks.peaks
    rows = []
    for name in fused["kernel"].astype(str).unique():
        own = by_name.loc[name] if name in by_name.index else None
        credited = eager.loc[name] if name in eager.index else _NONE_CREDITED
        fused_bytes = float(own[RooflineByName.bytes]) / steps_b if own is not None else np.nan
        fused_time = float(own[RooflineByName.time_us]) / steps_b if own is not None else np.nan
        calls = float(own[RooflineByName.count]) / steps_b if own is not None else 0.0
        roof = fused_bytes / (peaks.hbm_tbps * 1e6) if peaks is not None else np.nan
        eager_time = float(credited["time"]) / steps_a
        rows.append(
            {
                c.kernel: name,
                c.eager_kernels: float(credited["count"]) / steps_a,
                c.eager_unsized: float(credited["unsized"]) / steps_a,
                c.eager_bytes: float(credited["bytes"]) / steps_a,
                c.eager_time_us: eager_time,
                c.fused_calls: calls,
                c.fused_bytes: fused_bytes,
                c.fused_time_us: fused_time,
                c.saved_us: eager_time - fused_time,
                c.roof_us: roof,
                c.pct_of_memory_roof: roof / fused_time * 100 if fused_time > 0 else np.nan,
                c.bound: str(own[RooflineByName.bound]) if own is not None else None,
            }
        )
    table = pd.DataFrame(rows).sort_values(c.saved_us, ascending=False, kind="stable")
    return schema.conform(table.reset_index(drop=True), LEDGER_DTYPES)


#: A fused kernel no eager kernel is credited to.
_NONE_CREDITED = pd.Series({"count": 0.0, "unsized": 0.0, "bytes": 0.0, "time": 0.0})


def _eager_by_kernel(credits: pd.DataFrame, traffic: MemoryTraffic) -> pd.DataFrame:
    """Per compiled kernel name: the credited eager executions (``count``), those without a
    byte figure (``unsized``), their bytes and time (µs)."""
    matched = credits[credits[Credits.kernel].notna()]
    rows = matched[Credits.eager_row].to_numpy(dtype=np.int64)
    est = traffic.per_kernel[KernelTraffic.est_bytes].to_numpy(dtype=float, na_value=np.nan)
    nbytes = est[rows] if len(est) else np.zeros(len(rows))
    frame = pd.DataFrame(
        {
            "kernel": matched[Credits.kernel].astype(str).to_numpy(),
            "count": 1.0,
            "unsized": np.isnan(nbytes).astype(float),
            "bytes": np.nan_to_num(nbytes),
            "time": matched[Credits.time_us].to_numpy(dtype=float),
        }
    )
    return frame.groupby("kernel").sum()


# --- per source line ---------------------------------------------------------------------


Count = Annotated[str, "int64"]  # a column of non-nullable integers (others: traceviz.schema)


class LedgerByLineColumns:
    """Columns of :func:`ledger_by_line`'s table, one row per user source line of a, per
    profiled step (split rules: module docstring)."""

    file: Text = "file"  # source file as Python recorded it (object)
    line: Count = "line"  # 1-based line number (int64)
    code: Text = "code"  # the line's text ("" when not recorded) (object)
    kernels: Text = "kernels"  # the fused kernels its eager kernels were credited to, by time
    eager_kernels: Float = "eager_kernels"  # its eager kernel executions credited to them, per step
    eager_unsized: Float = "eager_unsized"  # of them, executions without a byte figure, per step
    eager_bytes: Float = "eager_bytes"  # their bytes read + written, per step (float64)
    eager_time_us: Float = "eager_time_us"  # their device time, µs per step
    # the fused kernels' bytes, this line's share, per step (NaN)
    fused_bytes: Float = "fused_bytes"
    fused_time_us: Float = "fused_time_us"  # their device time, this line's share, µs per step
    saved_us: Float = "saved_us"  # eager_time_us − fused_time_us, µs per step
    roof_us: Float = "roof_us"  # fused_bytes at the device's peak bandwidth, µs per step (NaN)


LEDGER_BY_LINE_DTYPES: dict[str, str] = dtypes(LedgerByLineColumns)


def ledger_by_line(
    fusion: FusionMap,
    *,
    eager_traffic: MemoryTraffic,
    compiled: Roofline,
    steps: tuple[int, int],
) -> pd.DataFrame:
    """The ledger per source line of a (:class:`LedgerByLineColumns`), the most time saved
    first; empty when no credited eager kernel has a line. Arguments as :func:`fusion_ledger`'s."""
    cells = _line_cells(fusion, eager_traffic)
    if cells.empty:
        return schema.empty_table(LEDGER_BY_LINE_DTYPES)
    steps_a, steps_b = (max(int(s), 1) for s in steps)
    own = _fused_per_step(compiled, steps_b).reindex(cells["kernel"].to_numpy())
    share = cells["share"].to_numpy(dtype=float)
    cells = cells.assign(
        fused_bytes=own["bytes"].to_numpy(dtype=float) * share,
        fused_time=np.nan_to_num(own["time"].to_numpy(dtype=float)) * share,
        roof=own["roof"].to_numpy(dtype=float) * share,
    )
    c = LedgerByLineColumns
    grouped = cells.groupby(["file", "line"], sort=False)
    sums = grouped[["count", "unsized", "bytes", "time", "fused_time"]].sum()
    # a line's fused bytes (and roof time) are unknown when one of its fused kernels' are
    unknown = grouped[["fused_bytes", "roof"]].agg(_sum_if_all_known)
    table = pd.DataFrame(
        {
            c.file: [f for f, _ in sums.index],
            c.line: [int(n) for _, n in sums.index],
            c.code: grouped["code"].first().to_numpy(dtype=object),
            c.kernels: _kernels_by_time(cells).reindex(sums.index).to_numpy(dtype=object),
            c.eager_kernels: sums["count"].to_numpy(dtype=float) / steps_a,
            c.eager_unsized: sums["unsized"].to_numpy(dtype=float) / steps_a,
            c.eager_bytes: sums["bytes"].to_numpy(dtype=float) / steps_a,
            c.eager_time_us: sums["time"].to_numpy(dtype=float) / steps_a,
            c.fused_bytes: unknown["fused_bytes"].to_numpy(dtype=float),
            c.fused_time_us: sums["fused_time"].to_numpy(dtype=float),
            c.roof_us: unknown["roof"].to_numpy(dtype=float),
        }
    )
    table[c.saved_us] = table[c.eager_time_us] - table[c.fused_time_us]
    table = table.sort_values(c.saved_us, ascending=False, kind="stable").reset_index(drop=True)
    return schema.conform(table[list(LEDGER_BY_LINE_DTYPES)], LEDGER_BY_LINE_DTYPES)


def _sum_if_all_known(values: pd.Series) -> float:
    """The sum of ``values``, NaN when one of them is NaN (a part unknown: the sum too)."""
    return float(values.sum()) if bool(values.notna().all()) else np.nan


def _line_cells(fusion: FusionMap, traffic: MemoryTraffic) -> pd.DataFrame:
    """One row per (line, fused kernel) of the eager kernels credited to a fused kernel that
    have a line: ``file``, ``line``, ``code``, ``kernel``, ``count``, ``unsized``, ``bytes``,
    ``time`` (µs; whole trace) and ``share``, the line's share of the fused kernel (its
    credited eager time over all the eager time credited to the kernel; by count when 0)."""
    lines = fusion.eager_lines
    if lines.empty:
        return pd.DataFrame()
    fused = set(fusion.kernels.loc[fusion.kernels["is_fusion"].astype(bool), "kernel"].astype(str))
    credits = fusion.credits
    credited = credits[credits[Credits.kernel].notna()]
    credited = credited[credited[Credits.kernel].astype(str).isin(fused)]
    if credited.empty:
        return pd.DataFrame()
    rows = credited[Credits.eager_row].to_numpy(dtype=np.int64)
    est = traffic.per_kernel[KernelTraffic.est_bytes].to_numpy(dtype=float, na_value=np.nan)
    nbytes = est[rows] if len(est) else np.full(len(rows), np.nan)
    frame = pd.DataFrame(
        {
            "eager_row": rows,
            "kernel": credited[Credits.kernel].astype(str).to_numpy(),
            "count": 1.0,
            "unsized": np.isnan(nbytes).astype(float),
            "bytes": np.nan_to_num(nbytes),
            "time": np.nan_to_num(credited[Credits.time_us].to_numpy(dtype=float)),
        }
    )
    totals = frame.groupby("kernel")[["count", "time"]].sum()
    located = frame.merge(
        lines.astype({"eager_row": np.int64}), on="eager_row", how="inner", validate="one_to_one"
    )
    if located.empty:
        return pd.DataFrame()
    cells = located.groupby(["file", "line", "kernel"], sort=False).agg(
        code=("code", "first"),
        count=("count", "sum"),
        unsized=("unsized", "sum"),
        bytes=("bytes", "sum"),
        time=("time", "sum"),
    )
    cells = cells.reset_index()
    total = totals.reindex(cells["kernel"].to_numpy())
    by_time = total["time"].to_numpy(dtype=float) > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        cells["share"] = np.where(
            by_time,
            cells["time"].to_numpy(dtype=float) / total["time"].to_numpy(dtype=float),
            cells["count"].to_numpy(dtype=float) / total["count"].to_numpy(dtype=float),
        )
    return cells


def _fused_per_step(compiled: Roofline, steps_b: int) -> pd.DataFrame:
    """Per compiled kernel name: its ``bytes`` (NaN: unknown), device ``time`` (µs) and
    ``roof`` time (µs; NaN without peaks or bytes), per step of b."""
    by_name = compiled.by_name.set_index(RooflineByName.name)
    nbytes = by_name[RooflineByName.bytes].to_numpy(dtype=float) / steps_b
    peaks = compiled.peaks.peaks
    roof = nbytes / (peaks.hbm_tbps * 1e6) if peaks is not None else np.full(len(nbytes), np.nan)
    return pd.DataFrame(
        {
            "bytes": nbytes,
            "time": by_name[RooflineByName.time_us].to_numpy(dtype=float) / steps_b,
            "roof": roof,
        },
        index=by_name.index.astype(str),
    )


def _kernels_by_time(cells: pd.DataFrame) -> pd.Series:
    """Per (file, line): its fused kernels, comma-joined, the most eager time first."""
    ordered = cells.sort_values(["time", "kernel"], ascending=[False, True], kind="stable")
    return ordered.groupby(["file", "line"], sort=False)["kernel"].agg(", ".join)
