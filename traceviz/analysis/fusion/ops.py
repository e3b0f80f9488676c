"""The fusion map's structured credits per (compiled kernel, eager op).

:func:`kernel_ops` sums the matched rows of the credits table
(:class:`~traceviz.analysis.fusion.match.Credits`, one row per eager kernel instance) per
compiled kernel and eager op, so figures and views read counts and µs from columns instead of
parsing display text. Its rows add up to exactly the matched credits, so at most what the
eager trace measured.
"""

from __future__ import annotations

import pandas as pd

from traceviz import schema
from traceviz.analysis.fusion.match import Credits, Outcome

__all__ = ["KERNEL_OPS_DTYPES", "KernelOps", "kernel_ops"]


class KernelOps:
    """Columns of :func:`kernel_ops`: one row per (compiled kernel, eager op) credit."""

    kernel = "kernel"  # compiled kernel name credited (object)
    op = "op"  # eager op (or eager kernel name when it has no op) it replaced (object)
    kernels = "kernels"  # eager kernel instances of that op credited to it (Int64)
    time_us = "time_us"  # their device time, µs, exclusive, measured (float64)


KERNEL_OPS_DTYPES: dict[str, str] = {
    KernelOps.kernel: "object",
    KernelOps.op: "object",
    KernelOps.kernels: schema.I64,
    KernelOps.time_us: schema.F64,
}


def kernel_ops(credits: pd.DataFrame) -> pd.DataFrame:
    """Matched credits summed per (compiled ``kernel``, eager ``op``): ``kernels`` (count)
    and ``time_us`` (µs, measured); largest ``time_us`` first, ties by op name."""
    matched = credits[credits[Credits.outcome] == Outcome.MATCHED.value]
    # two plain aggregations: a named ``agg(**…)`` is much slower in pandas 3
    grouped = matched.groupby([Credits.kernel, Credits.op], sort=False)[Credits.time_us]
    per_op = pd.DataFrame({KernelOps.kernels: grouped.size(), KernelOps.time_us: grouped.sum()})
    per_op = per_op.reset_index().sort_values(
        [KernelOps.time_us, KernelOps.op], ascending=[False, True], kind="stable"
    )
    table = per_op.rename(columns={Credits.kernel: KernelOps.kernel, Credits.op: KernelOps.op})
    table = table.loc[:, list(KERNEL_OPS_DTYPES)].reset_index(drop=True)
    return schema.conform(table, KERNEL_OPS_DTYPES)
