"""The fusion map per source line from the located credits, and the grouping helpers the
fusion tables share.

:func:`lines_table_rows` builds :func:`traceviz.analysis.fusion.lines.lines_table`'s credited
columns (:class:`~traceviz.analysis.fusion.lines.ByLine`) from the located credits (one row per
eager kernel instance with a source line): rows are numbered per key once (:func:`first_seen`,
pandas' factorize of each column), summed by one groupby on those codes (:func:`group_sums`),
and the per-line text is built with dicts over the distinct keys, never the rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from traceviz import schema
from traceviz.analysis.fusion.match import Credits, Outcome
from traceviz.schema import ActivityKind, Kernels

__all__ = [
    "first_seen",
    "group_sums",
    "largest_first",
    "lines_table_rows",
]


def group_sums(ids: npt.ArrayLike, values: npt.ArrayLike, groups: int) -> list[float]:
    """Per group 0..groups-1, the sum of the float64 ``values`` whose rows are numbered ``ids``
    (-1: a row with a missing key, left out): pandas' groupby sum (its compensated sum, NaN
    skipped; 0.0 for a group with none), one groupby on integer codes."""
    codes = np.asarray(ids, dtype=np.intp)
    data = np.asarray(values, dtype=np.float64)
    keep = codes >= 0
    sums = pd.Series(data[keep]).groupby(codes[keep]).sum()
    return sums.reindex(range(groups), fill_value=0.0).tolist()


def first_seen(*columns: Any) -> tuple[npt.NDArray[np.intp], list[tuple[Any, ...]]]:
    """pandas' numbering of ``groupby(columns, sort=False)``: per row the code of its key (one
    value per column: a Series, a Categorical, an array or a list) in order of first
    appearance, -1 for a row with a missing part (None, NaN, NA: groupby drops it); and the
    keys. Each column is factorized as it is (a categorical by its codes), then the codes."""
    n = len(columns[0])
    combined = np.zeros(n, dtype=np.int64)
    missing = np.zeros(n, dtype=bool)
    parts = []
    for column in columns:
        as_array = np.asarray(column, dtype=object) if isinstance(column, list) else column
        codes, uniques = pd.factorize(as_array)
        codes = np.asarray(codes, dtype=np.int64)
        parts.append((codes, np.asarray(uniques, dtype=object)))
        missing |= codes < 0
        combined = pd.factorize(combined * (len(uniques) + 1) + codes)[0]
    ids = np.full(n, -1, dtype=np.intp)
    kept = np.flatnonzero(~missing)
    ids[kept] = pd.factorize(combined[kept])[0]
    first = kept[np.unique(ids[kept], return_index=True)[1]]
    return ids, list(zip(*(uniques[codes[first]] for codes, uniques in parts), strict=True))


def largest_first(
    items: list[Any], key: Callable[[Any], float], name: Callable[[Any], Any]
) -> list[Any]:
    """``items`` by ``key`` largest first (NaN last), ties by ``name``: the order of pandas'
    ``sort_values([key, name], ascending=[False, True])``."""
    return sorted(items, key=lambda it: (math.isnan(key(it)), -key(it), name(it)))


def lines_table_rows(
    located: pd.DataFrame,
    classified: pd.DataFrame,
    generated: Callable[[str], bool],
    dtypes: dict[str, str],
) -> pd.DataFrame:
    """The per-line table (columns and order of ``dtypes``, the ByLine columns) of
    ``located`` (the credits joined to their eager lines: ``file``, ``line``, ``code`` and the
    Credits columns) and ``classified`` (the compiled kernels, for their measured time);
    ``generated`` tells an Inductor-generated kernel name (for ``fused_with``)."""
    files = located["file"].to_numpy(dtype=object)
    numbers = located["line"].to_numpy(dtype=object)
    codes = located["code"].to_numpy(dtype=object)
    ops = located[Credits.op].to_numpy(dtype=object)
    times = located[Credits.time_us].to_numpy(dtype=float)
    matched = (located[Credits.outcome] == Outcome.MATCHED.value).to_numpy(dtype=bool)
    kernels = located[Credits.kernel].to_numpy(dtype=object)

    line_ids, line_keys = first_seen(files, numbers)
    eager_time = group_sums(line_ids, times, len(line_keys))
    count = np.bincount(line_ids[line_ids >= 0], minlength=len(line_keys)).tolist()
    code: list[Any] = [None] * len(line_keys)
    coded = np.flatnonzero((line_ids >= 0) & ~pd.isna(codes))  # groupby's first(): NA skipped
    groups, first = np.unique(line_ids[coded], return_index=True)
    for g, row in zip(groups.tolist(), coded[first].tolist(), strict=True):
        code[g] = codes[row]
    ops_text = _ops_text(files, numbers, ops, times, line_keys)
    share = _share(files, numbers, kernels, times, matched, classified)
    compiled_time = _per_line_share(share, line_keys)
    spots = _fused_with(share, generated)
    by_time: dict[tuple[Any, ...], list[str]] = {}
    for f, n, kernel, _ in largest_first(share, key=lambda s: s[3], name=lambda s: s[2]):
        by_time.setdefault((f, n), []).append(str(kernel))
    rows = [
        (
            key[0],
            key[1],
            "" if code[g] is None else str(code[g]),
            count[g],
            eager_time[g],
            ops_text.get(key, np.nan),
            ", ".join(by_time.get(key, [])),
            compiled_time.get(key, 0.0),
            spots.get(key, ""),
        )
        for g, key in enumerate(line_keys)
    ]
    rows = largest_first(rows, key=lambda r: r[4], name=lambda r: (r[0], r[1]))
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(dtypes)
    table = pd.DataFrame(
        {
            name: pd.Series(list(values), dtype=dtype)
            for (name, dtype), values in zip(dtypes.items(), columns, strict=True)
        }
    )
    return schema.conform(table, dtypes)


def _ops_text(
    files: npt.NDArray[np.object_],
    numbers: npt.NDArray[np.object_],
    ops: npt.NDArray[np.object_],
    times: npt.NDArray[np.float64],
    line_keys: Sequence[tuple[Any, ...]],
) -> dict[tuple[Any, ...], str]:
    """Per line with an op: ``"op (kernels), ..."`` of its rows, by time, largest first."""
    ids, keys = first_seen(files, numbers, ops)
    sums = group_sums(ids, times, len(keys))
    sizes = np.bincount(ids[ids >= 0], minlength=len(keys)).tolist()
    per_line: dict[tuple[Any, ...], list[tuple[Any, int, float]]] = {}
    for (f, n, op), size, total in zip(keys, sizes, sums, strict=True):
        per_line.setdefault((f, n), []).append((op, size, total))
    return {
        line: ", ".join(f"{op} ({size})" for op, size, _ in largest_first(
            entries, key=lambda e: e[2], name=lambda e: e[0]
        ))
        for line, entries in per_line.items()
    }  # fmt: skip


def _share(
    files: npt.NDArray[np.object_],
    numbers: npt.NDArray[np.object_],
    kernels: npt.NDArray[np.object_],
    times: npt.NDArray[np.float64],
    matched: npt.NDArray[np.bool_],
    classified: pd.DataFrame,
) -> list[tuple[Any, Any, Any, float]]:
    """Per (line, compiled kernel) of the matched rows, in order of first appearance: the
    kernel's measured time times the share of its credited eager time that came from the line
    (evenly when it got none)."""
    rows = np.flatnonzero(matched)
    ids, cells = first_seen(files[rows], numbers[rows], kernels[rows])
    sums = group_sums(ids, times[rows], len(cells))
    cell_kernels = [kernel for _, _, kernel in cells]
    kernel_ids, kernel_names = pd.factorize(pd.Series(cell_kernels, dtype=object), sort=True)
    totals = group_sums(kernel_ids, sums, len(kernel_names))
    lines = np.bincount(kernel_ids, minlength=len(kernel_names)).tolist()
    measured = _measured(classified)
    out = []
    for (f, n, kernel), own, k in zip(cells, sums, kernel_ids.tolist(), strict=True):
        total = totals[k]
        fraction = own / total if total > 0 else 1 / lines[k]
        time = measured.get(kernel, math.nan)
        out.append((f, n, kernel, (0.0 if time != time else time) * fraction))
    return out


def _measured(classified: pd.DataFrame) -> dict[Any, float]:
    """Per kernel name: its kernel rows' summed exclusive device time (``dur_us`` where
    missing), summed as ``groupby(name).sum()`` sums it."""
    rows = (classified[Kernels.activity] == ActivityKind.KERNEL.value).to_numpy(dtype=bool)
    names = classified[Kernels.name].to_numpy(dtype=object)[rows]
    excl = classified[Kernels.excl_dur_us].to_numpy(dtype=float, na_value=np.nan)[rows]
    dur = classified[Kernels.dur_us].to_numpy(dtype=float, na_value=np.nan)[rows]
    ids, uniques = pd.factorize(pd.Series(names, dtype=object), sort=True)
    sums = group_sums(ids, np.where(np.isnan(excl), dur, excl), len(uniques))
    return dict(zip(uniques.tolist(), sums, strict=True))


def _per_line_share(
    share: list[tuple[Any, Any, Any, float]], line_keys: Sequence[tuple[Any, ...]]
) -> dict[tuple[Any, ...], float]:
    """Per line with a share: the sum of its kernels' shares (µs)."""
    ids, keys = first_seen([f for f, _, _, _ in share], [n for _, n, _, _ in share])
    sums = group_sums(ids, [s for _, _, _, s in share], len(keys))
    return dict(zip(keys, sums, strict=True))


def _fused_with(
    share: list[tuple[Any, Any, Any, float]], generated: Callable[[str], bool]
) -> dict[tuple[Any, ...], str]:
    """Per line: the other lines whose credits went to an Inductor-generated kernel it shares
    (``"file:line, ..."``, sorted)."""
    spots_of: dict[str, list[str]] = {}
    kernels_of: dict[str, list[str]] = {}
    for f, n, kernel, _ in share:
        if generated(str(kernel)):
            spot = f"{f}:{int(n)}"
            spots_of.setdefault(str(kernel), []).append(spot)
            kernels_of.setdefault(spot, []).append(str(kernel))
    out = {}
    for f, n, _, _ in share:
        spot = f"{f}:{int(n)}"
        others = {o for k in kernels_of.get(spot, []) for o in spots_of[k] if o != spot}
        out[(f, n)] = ", ".join(sorted(others))
    return out
