"""traceviz.analysis.top_kernels as it was before issue 14's views work (pandas' groupby per
name, its frames concatenated), kept as the reference the fast form is tested against
(tests/test_views_fast.py). One change: a name none of whose calls has a launching op says
"–" (the categorical path answered with an unused op category).

Kernels of several traces, one row per (trace, kernel name), by device time.

:func:`top_kernels` is the table behind the dashboard's kernel explorer: per classified
kernels table (:func:`~traceviz.analysis.kernels.classify`), each distinct kernel name with
its kind, source, calls and exclusive device time (µs, measured), its share of its trace's
device time and the op that launched most of its calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from traceviz import schema
from traceviz.analysis.kernels import Classified
from traceviz.analysis.top_kernels import TOP_KERNELS_DTYPES, TopKernels
from traceviz.schema import Kernels

if TYPE_CHECKING:
    from pandas.api.typing import DataFrameGroupBy


def top_kernels(sides: Sequence[tuple[str, pd.DataFrame]]) -> pd.DataFrame:
    """One row per (trace, kernel name) of each ``(name, classified kernels)`` pair, largest
    ``time_us`` first (columns :class:`TopKernels`)."""
    parts = [_one(name, kernels) for name, kernels in sides]
    if not parts:
        return schema.conform(pd.DataFrame({c: [] for c in TOP_KERNELS_DTYPES}),
                              TOP_KERNELS_DTYPES)  # fmt: skip
    table = pd.concat(parts, ignore_index=True)
    table = table.sort_values(TopKernels.time_us, ascending=False, ignore_index=True)
    return schema.conform(table, TOP_KERNELS_DTYPES)


def _one(name: str, k: pd.DataFrame) -> pd.DataFrame:
    grouped = k.groupby(Kernels.name, observed=True, sort=False)
    total = float(np.nansum(k[Kernels.excl_dur_us].to_numpy(dtype=float))) or 1.0
    table = pd.DataFrame(
        {
            TopKernels.kind: grouped[Classified.kind].first().astype(str),
            TopKernels.source: grouped[Classified.source].first().astype(str),
            TopKernels.calls: grouped.size(),
            TopKernels.time_us: grouped[Kernels.excl_dur_us].sum(),
            TopKernels.launched_by: _launched_by(k, grouped),
        }
    )
    table[TopKernels.mean_us] = table[TopKernels.time_us] / table[TopKernels.calls]
    table[TopKernels.share_pct] = (100.0 * table[TopKernels.time_us] / total).round(1)
    table.index = table.index.astype(str)
    return table.rename_axis(TopKernels.kernel).reset_index().assign(**{TopKernels.trace: name})


def _launched_by(k: pd.DataFrame, grouped: DataFrameGroupBy) -> pd.Series:
    """Per kernel name (``grouped``'s order), the op that launched most of its calls: counted
    on the category codes of both columns at once; a name whose most frequent op is tied with
    another, or which has none, asks :func:`_most_common` (its tie order is pandas')."""
    names, ops = k[Kernels.name], k[Kernels.op_name]
    categorical = (isinstance(c.dtype, pd.CategoricalDtype) for c in (names, ops))
    if not all(categorical):
        return grouped[Kernels.op_name].agg(_most_common)
    order = grouped.size().index
    name_codes = names.cat.codes.to_numpy().astype(np.int64)
    op_codes = ops.cat.codes.to_numpy().astype(np.int64)
    n_ops = max(len(ops.cat.categories), 1)
    both = (name_codes >= 0) & (op_codes >= 0)
    pairs, counts = np.unique(name_codes[both] * n_ops + op_codes[both], return_counts=True)
    pair_name, pair_op = pairs // n_ops, pairs % n_ops
    by_count = np.lexsort((-counts, pair_name))  # per name, the most frequent op first
    pair_name, pair_op, counts = pair_name[by_count], pair_op[by_count], counts[by_count]
    first = np.flatnonzero(np.r_[True, pair_name[1:] != pair_name[:-1]]) if pairs.size else pairs
    tied = np.zeros(first.size, dtype=bool)
    runner_up = first + 1
    has_next = runner_up < pair_name.size
    tied[has_next] = (pair_name[runner_up[has_next]] == pair_name[first[has_next]]) & (
        counts[runner_up[has_next]] == counts[first[has_next]]
    )
    op_labels = ops.cat.categories
    best = {
        int(n): str(op_labels[o])
        for n, o, t in zip(pair_name[first], pair_op[first], tied, strict=True)
        if not t
    }
    wanted = pd.Categorical(order, categories=names.cat.categories).codes
    values = [best[c] if c in best else _most_common(ops[name_codes == c]) for c in wanted.tolist()]
    return pd.Series(values, index=order, dtype=object)


def _most_common(values: pd.Series) -> str:
    counts = values.value_counts(dropna=True)
    counts = counts[counts > 0]
    return str(counts.index[0]) if len(counts) else "–"
