"""Kernels of several traces, one row per (trace, kernel name), by device time.

:func:`top_kernels` is the table behind the dashboard's kernel explorer: per classified
kernels table (:func:`~traceviz.analysis.kernels.classify`), each distinct kernel name with
its kind, source, calls and exclusive device time (µs, measured), its share of its trace's
device time and the op that launched most of its calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

import numpy as np
import pandas as pd

from traceviz import schema
from traceviz.analysis.kernels import Classified
from traceviz.schema import Float, Kernels, Text, dtypes

__all__ = ["TOP_KERNELS_DTYPES", "TopKernels", "top_kernels"]


Count = Annotated[str, "int64"]  # a column of non-nullable integers (others: traceviz.schema)


class TopKernels:
    """Columns of :func:`top_kernels`: one row per (trace, kernel name)."""

    trace: Text = "trace"  # name of the trace (str)
    kernel: Text = "kernel"  # kernel name (str)
    kind: Text = "kind"  # KernelKind of its first call (str)
    source: Text = "source"  # KernelSource of its first call (str)
    calls: Count = "calls"  # kernels of that name (int64)
    time_us: Float = "time_us"  # their exclusive device time, µs, measured (float64)
    mean_us: Float = "mean_us"  # time_us / calls, µs (float64)
    share_pct: Float = "share_pct"  # % of its trace's exclusive device time, 1 decimal (float64)
    launched_by: Text = "launched_by"  # op that launched most of its calls ("–": none) (str)


TOP_KERNELS_DTYPES: dict[str, str] = dtypes(TopKernels)


def top_kernels(sides: Sequence[tuple[str, pd.DataFrame]]) -> pd.DataFrame:
    """One row per (trace, kernel name) of each ``(name, classified kernels)`` pair, largest
    ``time_us`` first (columns :class:`TopKernels`)."""
    parts = [_one(name, kernels) for name, kernels in sides]
    columns: dict[str, Any] = {
        c: np.concatenate([p[c] for p in parts]) if parts else [] for c in TOP_KERNELS_DTYPES
    }
    table = pd.DataFrame(columns).sort_values(
        TopKernels.time_us, ascending=False, ignore_index=True
    )
    return schema.conform(table, TOP_KERNELS_DTYPES)


def _one(name: str, k: pd.DataFrame) -> dict[str, np.ndarray]:
    """One trace's rows by category codes (text columns made categoricals), as arrays
    (:data:`TOP_KERNELS_DTYPES`' columns): kernel names in order of first appearance, each
    name's kind and source those of its first call with one (pandas' ``first``), each label
    spelled once per category instead of once per row. Calls, device time and the launching
    op that launched most of each name's calls."""
    text = [c for c in _COLUMNS if not isinstance(k[c].dtype, pd.CategoricalDtype)]
    k = k.astype(dict.fromkeys(text, "category"))
    names = k[Kernels.name]
    codes = names.cat.codes.to_numpy()
    rows = np.flatnonzero(codes >= 0)
    named = codes[rows]
    firsts = ~pd.Series(named).duplicated().to_numpy()
    order = named[firsts].astype(np.int64)  # the names' codes, in order of first appearance
    time = k[Kernels.excl_dur_us]
    sums = time.groupby(names, observed=True, sort=False).sum()
    calls = np.bincount(named, minlength=len(names.cat.categories))[order]
    labels = np.asarray(names.cat.categories, dtype=object)
    time_us = sums.to_numpy(dtype=float)
    total = float(np.nansum(time.to_numpy(dtype=float))) or 1.0
    return {
        TopKernels.trace: np.full(order.size, name, dtype=object),
        TopKernels.kernel: np.array([str(v) for v in labels[order]], dtype=object),
        TopKernels.kind: _first_labels(k[Classified.kind], codes, order, rows[firsts]),
        TopKernels.source: _first_labels(k[Classified.source], codes, order, rows[firsts]),
        TopKernels.calls: calls.astype(np.int64),
        TopKernels.time_us: time_us,
        TopKernels.mean_us: time_us / calls,
        TopKernels.share_pct: np.round(100.0 * time_us / total, 1),
        TopKernels.launched_by: _launched_by_codes(names, k[Kernels.op_name], order),
    }


_COLUMNS = (Kernels.name, Classified.kind, Classified.source, Kernels.op_name)


def _first_labels(
    values: pd.Series, name_codes: np.ndarray, order: np.ndarray, first_rows: np.ndarray
) -> np.ndarray:
    """Per name code of ``order``, ``str`` of ``values`` at the name's first call that has
    one (``first_rows``: each name's first call; a missing value there asks pandas' first;
    a name with none stays missing, as a categorical's ``astype(str)`` leaves it)."""
    codes = values.cat.codes.to_numpy()
    at = codes[first_rows]
    if bool((at < 0).any()):  # a first call without a value: the first call with one
        frame = pd.DataFrame({"n": name_codes, "v": values}).loc[name_codes >= 0]
        found = frame.groupby("n", sort=False)["v"].first()
        firsts = [v if pd.isna(v) else str(v) for v in found.reindex(order).to_numpy()]
        return np.array(firsts, dtype=object)  # none at all: missing, as pandas' first
    spelled = np.array([str(v) for v in values.cat.categories], dtype=object)
    return spelled[at]


def _launched_by_codes(names: pd.Series, ops: pd.Series, order: np.ndarray) -> np.ndarray:
    """Per name code of ``order``, the op that launched most of its calls (categorical names
    and ops)."""
    name_codes = names.cat.codes.to_numpy().astype(np.int64)
    op_codes = ops.cat.codes.to_numpy().astype(np.int64)
    n_ops = max(len(ops.cat.categories), 1)
    both = (name_codes >= 0) & (op_codes >= 0)
    pairs, counts = _pair_counts(name_codes[both] * n_ops + op_codes[both])
    best, tied = _most_common_pairs(pairs, counts, n_ops)
    op_labels = np.asarray(ops.cat.categories, dtype=object)  # one conversion, not one per name
    values = [
        str(op_labels[best[c]]) if c in best else (
            _most_common(ops[name_codes == c]) if c in tied else NO_OP_LABEL
        )
        for c in order.tolist()
    ]  # fmt: skip
    return np.array(values, dtype=object)


def _most_common_pairs(
    pairs: np.ndarray, counts: np.ndarray, n_ops: int
) -> tuple[dict[int, int], set[int]]:
    """Per name code (``pairs`` numbered ``name * n_ops + op``, with their ``counts``): the
    op code it was launched by most (names whose most frequent op is tied: the second)."""
    pair_name, pair_op = pairs // n_ops, pairs % n_ops
    by_count = np.lexsort((-counts, pair_name))  # per name, the most frequent op first
    pair_name, pair_op, counts = pair_name[by_count], pair_op[by_count], counts[by_count]
    first = np.flatnonzero(np.r_[True, pair_name[1:] != pair_name[:-1]]) if pairs.size else pairs
    tie = np.zeros(first.size, dtype=bool)
    runner_up = first + 1
    has_next = runner_up < pair_name.size
    tie[has_next] = (pair_name[runner_up[has_next]] == pair_name[first[has_next]]) & (
        counts[runner_up[has_next]] == counts[first[has_next]]
    )
    names, ops = pair_name[first].tolist(), pair_op[first].tolist()
    best = {n: o for n, o, t in zip(names, ops, tie.tolist(), strict=True) if not t}
    tied = {n for n, t in zip(names, tie.tolist(), strict=True) if t}
    return best, tied


def _pair_counts(pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(pairs, return_counts=True)`` of non-negative (name, op) pair numbers: by
    one ``bincount`` while the largest is small beside the rows (no sort), else ``np.unique``."""
    if pairs.size == 0 or int(pairs.max()) >= 8 * pairs.size + (1 << 16):
        return np.unique(pairs, return_counts=True)
    every = np.bincount(pairs)
    present = np.flatnonzero(every)
    return present.astype(pairs.dtype, copy=False), every[present]


#: ``launched_by`` of a kernel name none of whose calls has a launching op.
NO_OP_LABEL = "–"


def _most_common(values: pd.Series) -> str:
    """The most frequent value (pandas' order among ties), :data:`NO_OP_LABEL` when none: a
    categorical's unused categories (count 0) are no answer."""
    counts = values.value_counts(dropna=True)
    counts = counts[counts > 0]
    return str(counts.index[0]) if len(counts) else NO_OP_LABEL
