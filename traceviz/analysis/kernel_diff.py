"""Two traces' device activity side by side, one row per kernel name, launching op or kind.

:func:`kernel_diff` is the table behind the dashboard's "A vs B" kernel table: each side's
classified kernels (:func:`~traceviz.analysis.kernels.classify`, memcpy/memset rows included)
grouped by a key, with the calls and exclusive device time (µs, measured) on both sides and
the change. Every device activity lands in exactly one row, so each side's ``*_time_us``
column adds up to that side's measured exclusive device time.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
import pandas as pd

from traceviz import schema
from traceviz.analysis.kernels import Classified
from traceviz.errors import UsageError
from traceviz.schema import Float, Kernels, Text, dtypes

__all__ = ["GROUPS", "KERNEL_DIFF_DTYPES", "NO_OP", "KernelDiff", "kernel_diff"]

Group = Literal["kernel", "op", "kind"]
#: What a row stands for → the kernels column it groups by.
GROUPS: dict[str, str] = {
    "kernel": Kernels.name,  # the kernel's own name
    "op": Kernels.op_name,  # the CPU op that launched it (aten::mm, a Triton kernel's op...)
    "kind": Classified.kind,  # gemm, pointwise, reduction, memcpy, ...
}
NO_OP = "(no launching op)"


Count = Annotated[str, "int64"]  # a column of non-nullable integers (others: traceviz.schema)


class KernelDiff:
    """Columns of :func:`kernel_diff`: one row per key present on either side."""

    key: Text = "key"  # kernel name, launching op or kind (str)
    a_calls: Count = "a_calls"  # activities of that key on side a (int64; 0: none)
    a_time_us: Float = "a_time_us"  # their exclusive device time, µs, measured (float64)
    b_calls: Count = "b_calls"  # the same on side b (int64)
    b_time_us: Float = "b_time_us"  # µs, measured (float64)
    delta_time_us: Float = "delta_time_us"  # b_time_us − a_time_us, µs (float64)
    ratio: Float = "ratio"  # b_time_us / a_time_us (float64; NaN when a has none)


KERNEL_DIFF_DTYPES: dict[str, str] = dtypes(KernelDiff)


def kernel_diff(a: pd.DataFrame, b: pd.DataFrame, *, by: Group = "kernel") -> pd.DataFrame:
    """Classified kernels of two traces grouped ``by`` kernel name, launching op or kind
    (columns :class:`KernelDiff`), largest absolute change first.

    Raises :class:`UsageError` for an unknown ``by``.
    """
    if by not in GROUPS:
        raise UsageError(f"unknown grouping {by!r}; use one of {', '.join(GROUPS)}")
    sides = [_side(k, GROUPS[by]).add_prefix(f"{name}_") for name, k in (("a", a), ("b", b))]
    table = pd.concat(sides, axis=1).fillna(0)
    table = table.rename_axis(KernelDiff.key).reset_index()
    table[KernelDiff.delta_time_us] = table[KernelDiff.b_time_us] - table[KernelDiff.a_time_us]
    a_time = table[KernelDiff.a_time_us].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(a_time > 0, table[KernelDiff.b_time_us].to_numpy(dtype=float) / a_time,
                         np.nan)  # fmt: skip
    table[KernelDiff.ratio] = ratio
    order = table[KernelDiff.delta_time_us].abs().sort_values(ascending=False, kind="stable")
    table = table.loc[order.index].reset_index(drop=True)
    return schema.conform(table[list(KERNEL_DIFF_DTYPES)], KERNEL_DIFF_DTYPES)


def _side(kernels: pd.DataFrame, column: str) -> pd.DataFrame:
    """``calls`` and ``time_us`` per value of ``column`` (a missing launching op is its own
    key, :data:`NO_OP`, so no activity is dropped)."""
    time = kernels[Kernels.excl_dur_us].astype(float).fillna(0.0).to_numpy()
    values = kernels[column]
    if not isinstance(values.dtype, pd.CategoricalDtype):
        values = values.astype("category")
    # each category spelled once (categories spelled alike share a key), the rows grouped by
    # key number in order of first appearance (calls counted by ``bincount``)
    labels = [str(c) for c in values.cat.categories] + [NO_OP]
    spelled, key_of_label = pd.factorize(pd.Index(labels, dtype=object))
    codes = values.cat.codes.to_numpy().astype(np.int64)
    codes[codes < 0] = len(labels) - 1
    keys = spelled[codes]
    sums = pd.Series(time).groupby(keys, sort=False).sum()  # pandas' sum: the same bits
    order = sums.index.to_numpy()  # key numbers in order of first appearance
    calls = np.bincount(keys, minlength=len(key_of_label))[order].astype(np.int64)
    index = pd.Index(np.asarray(key_of_label, dtype=object)[order], name="key")
    return pd.DataFrame({"calls": calls, "time_us": sums.to_numpy()}, index=index)
