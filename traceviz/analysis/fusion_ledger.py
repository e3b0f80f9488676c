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
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from traceviz import schema
from traceviz.analysis.fusion import FusionMap
from traceviz.analysis.fusion_match import Credits
from traceviz.analysis.memory import KernelTraffic, MemoryTraffic
from traceviz.analysis.roofline import Roofline, RooflineByName

__all__ = ["LEDGER_DTYPES", "LedgerColumns", "fusion_ledger"]


class LedgerColumns:
    """Columns of :func:`fusion_ledger`'s table, one row per fused kernel name of b."""

    kernel = "kernel"  # the fused kernel's name (object)
    eager_kernels = "eager_kernels"  # eager kernel executions credited to it, per step
    eager_unsized = "eager_unsized"  # of them, executions without a byte figure, per step
    eager_bytes = "eager_bytes"  # their bytes read + written, per step (float64)
    eager_time_us = "eager_time_us"  # their device time, µs per step
    fused_calls = "fused_calls"  # the fused kernel's executions, per step
    fused_bytes = "fused_bytes"  # its bytes, per step (float64; NaN: unknown)
    fused_time_us = "fused_time_us"  # its device time, µs per step
    saved_us = "saved_us"  # eager_time_us − fused_time_us, µs per step
    roof_us = "roof_us"  # fused_bytes at the device's peak bandwidth, µs per step (NaN)
    pct_of_memory_roof = "pct_of_memory_roof"  # roof_us / fused_time_us, % (NaN)
    bound = "bound"  # the roofline's bound of the fused kernel (object)


LEDGER_DTYPES: dict[str, str] = {
    LedgerColumns.kernel: "object",
    LedgerColumns.eager_kernels: schema.F64,
    LedgerColumns.eager_unsized: schema.F64,
    LedgerColumns.eager_bytes: schema.F64,
    LedgerColumns.eager_time_us: schema.F64,
    LedgerColumns.fused_calls: schema.F64,
    LedgerColumns.fused_bytes: schema.F64,
    LedgerColumns.fused_time_us: schema.F64,
    LedgerColumns.saved_us: schema.F64,
    LedgerColumns.roof_us: schema.F64,
    LedgerColumns.pct_of_memory_roof: schema.F64,
    LedgerColumns.bound: "object",
}


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
