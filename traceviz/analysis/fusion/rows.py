"""The fusion map's ``kernels`` table: one row per compiled kernel name.

:func:`kernel_table_rows` numbers the kernel rows per name once
(:func:`~traceviz.analysis.fusion.by_line.first_seen`, a categorical by its codes), sums them
by one groupby on those codes (:func:`~traceviz.analysis.fusion.by_line.group_sums`) and builds
each row with dicts over the distinct names, never the rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from traceviz import schema
from traceviz.analysis.fusion.by_line import first_seen, group_sums, largest_first
from traceviz.analysis.fusion.match import (
    COMPILER_BASIS,
    NAME_MATCH_BASIS,
    Credits,
    Outcome,
    is_layout_kernel,
)
from traceviz.analysis.fusion.op_keys import name_keys
from traceviz.analysis.inductor_names import fused_kernel_ops
from traceviz.schema import Kernels

__all__ = ["kernel_table_rows"]

_CLASSIFIED_SOURCE = "source"  # Classified.source (kernels.py): the kernel's KernelSource


def _frame(rows: list[tuple[Any, ...]], dtypes: dict[str, str]) -> pd.DataFrame:
    """``rows`` as a table of the ``dtypes`` columns (text built as object, then conform)."""
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(dtypes)
    table = pd.DataFrame(
        {
            name: pd.Series(list(values), dtype=dtype if dtype != schema.CAT else object)
            for (name, dtype), values in zip(dtypes.items(), columns, strict=True)
        }
    )
    return schema.conform(table, dtypes)


def _matched(credits: pd.DataFrame) -> np.ndarray:
    return (credits[Credits.outcome] == Outcome.MATCHED.value).to_numpy(dtype=bool)


def kernel_table_rows(
    classified: pd.DataFrame,
    credits: pd.DataFrame,
    ops: pd.DataFrame,
    recorded: set[str],
    dtypes: dict[str, str],
    *,
    name_basis: str = NAME_MATCH_BASIS,
) -> pd.DataFrame:
    """The fusion map's ``kernels``: one row per compiled kernel name (its kernel rows of
    ``classified``), with what the credits gave it; ``ops`` is
    :func:`~traceviz.analysis.fusion.ops.kernel_ops` of ``credits``, ``recorded`` the names
    the compile log explains (basis ``compiler``; the others ``name_basis``)."""
    is_kernel = classified[Kernels.activity] == schema.ActivityKind.KERNEL.value
    at = np.flatnonzero(is_kernel.to_numpy(dtype=bool))
    names = classified[Kernels.name].iloc[at]
    op_names = classified[Kernels.op_name].iloc[at]
    sources = classified[_CLASSIFIED_SOURCE].iloc[at]
    excl = classified[Kernels.excl_dur_us].to_numpy(dtype=float, na_value=np.nan)[at]
    dur = classified[Kernels.dur_us].to_numpy(dtype=float, na_value=np.nan)[at]
    ids, keys = first_seen(names)
    sums = group_sums(ids, np.where(np.isnan(excl), dur, excl), len(keys))
    calls = np.bincount(ids[ids >= 0], minlength=len(keys)).tolist()
    kernels = [str(k[0]) for k in keys]
    source_of = _most_common(names, sources)
    own_ops = _most_common_all(names, op_names)
    decoded = [fused_kernel_ops(name) for name in kernels]
    extern_keys = {
        key
        for name, d in zip(kernels, decoded, strict=True)
        if d is None
        for key in dict.fromkeys(k for op in (own_ops.get(name) or [name]) for k in name_keys(op))
    }
    credited = _credited(credits, ops)
    rows = []
    for name, d, n, t in zip(kernels, decoded, calls, sums, strict=True):
        text, eager_n, eager_t, confidence = credited.get(name, ("", 0, 0.0, np.nan))
        rows.append(
            (
                name,
                source_of.get(name),
                d is not None,
                ", ".join(d.ops) if d else "",
                ", ".join(own_ops.get(name, [])),
                n,
                t,
                text,
                eager_n,
                eager_t,
                is_layout_kernel(name, extern_keys),
                confidence,
                COMPILER_BASIS if name in recorded else name_basis,
            )
        )
    return _frame(largest_first(rows, key=lambda r: r[6], name=lambda r: r[0]), dtypes)


def _counted(names: pd.Series, values: pd.Series) -> dict[str, list[str]]:
    """Per name, its distinct values, most rows first, ties by first appearance (pandas'
    ``groupby([name, value], sort=False).size()`` sorted by count, stable)."""
    ids, keys = first_seen(names, values)
    counts = np.bincount(ids[ids >= 0], minlength=len(keys)).tolist()
    order = sorted(range(len(keys)), key=lambda g: -counts[g])
    out: dict[str, list[str]] = {}
    for g in order:
        out.setdefault(str(keys[g][0]), []).append(str(keys[g][1]))
    return out


def _most_common(names: pd.Series, values: pd.Series) -> dict[str, str]:
    return {name: found[0] for name, found in _counted(names, values).items()}


def _most_common_all(names: pd.Series, values: pd.Series) -> dict[str, list[str]]:
    return _counted(names, values)


def _credited(credits: pd.DataFrame, ops: pd.DataFrame) -> dict[str, tuple[str, int, float, float]]:
    """Per compiled kernel credited: ``eager_ops`` text, eager kernels, their time and the
    time-weighted confidence (a kernel of no time weighs 1e-9 µs)."""
    at = np.flatnonzero(_matched(credits))
    kernel = credits[Credits.kernel].to_numpy(dtype=object)[at]
    time = credits[Credits.time_us].to_numpy(dtype=float)[at]
    weight = np.where(time > 0, time, 1e-9)
    confidence = credits[Credits.confidence].to_numpy(dtype=float)[at]
    ids, uniques = pd.factorize(pd.Series(kernel, dtype=object), sort=True)
    weighted = group_sums(ids, confidence * weight, len(uniques))
    total = group_sums(ids, weight, len(uniques))
    share = {str(k): w / t for k, w, t in zip(uniques.tolist(), weighted, total, strict=True)}
    op_kernels = ops.iloc[:, 0].tolist()
    op_names = ops.iloc[:, 1].tolist()
    op_counts = ops.iloc[:, 2].tolist()
    op_ids, op_keys = first_seen(op_kernels)
    op_time = group_sums(op_ids, ops.iloc[:, 3].to_numpy(dtype=float), len(op_keys))
    texts: list[list[str]] = [[] for _ in op_keys]
    counts = [0] * len(op_keys)
    for g, op, n in zip(op_ids, op_names, op_counts, strict=True):
        if g >= 0:
            texts[g].append(f"{op} ({n})")
            counts[g] += n
    return {
        str(k[0]): (", ".join(text), n, t, share.get(str(k[0]), np.nan))
        for k, text, n, t in zip(op_keys, texts, counts, op_time, strict=True)
    }
