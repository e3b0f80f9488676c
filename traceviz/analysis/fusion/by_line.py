"""The fusion map's tables per source line and per compiled kernel from the credits, and the
grouping helpers they share.

:func:`lines_table_rows` builds :func:`traceviz.analysis.fusion.lines.lines_table`'s credited
columns (:class:`~traceviz.analysis.fusion.lines.ByLine`) from the located credits (one row per
eager kernel instance with a source line): rows are numbered per key once (:func:`first_seen`,
pandas' factorize of each column), summed by one groupby on those codes (:func:`group_sums`),
and the per-line text is built with dicts over the distinct keys, never the rows.
:func:`uncredited_shares` and :func:`add_uncredited` add the compiled kernels the compiler's
provenance ties to a line but no eager kernel was credited to. :func:`kernel_table_rows`
builds the ``kernels`` table (one row per compiled kernel name) the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from traceviz import schema
from traceviz.analysis.fusion.match import (
    COMPILER_BASIS,
    NAME_MATCH_BASIS,
    Credits,
    Outcome,
    is_layout_kernel,
)
from traceviz.analysis.fusion.op_keys import name_keys
from traceviz.analysis.inductor_names import fused_kernel_ops
from traceviz.schema import ActivityKind, Kernels

__all__ = [
    "add_uncredited",
    "first_seen",
    "group_sums",
    "kernel_table_rows",
    "largest_first",
    "lines_table_rows",
    "uncredited_shares",
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
    return _frame(largest_first(rows, key=lambda r: r[4], name=lambda r: (r[0], r[1])), dtypes)


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


def uncredited_shares(
    credits: pd.DataFrame,
    classified: pd.DataFrame,
    held: pd.DataFrame,
    rows: list[tuple[Any, Any]],
) -> dict[tuple[Any, Any], list[tuple[str, float]]]:
    """Per line of ``rows`` (``(file, line)`` as the compile log spells the file): the
    compiled kernels ``held`` (the provenance's ``kernel``, ``file``, ``line`` rows) ties to it
    that no matched credit names, each with its share, µs (its measured time in ``classified``
    over the number of ``rows`` lines it is tied to), largest first. A compiled kernel the
    compiler added beside the work it replaced (a library GEMM's split-K reduction, a second
    cutlass GEMM of one ``addmm``) gets no credit, but its provenance ties it to its lines: it
    is split evenly over the table's lines it names, so counted at most once over all lines,
    and on none when it names no line of the table."""
    if held.empty or not rows:
        return {}
    matched = credits[credits[Credits.outcome] == Outcome.MATCHED.value]
    credited = {str(k) for k in matched[Credits.kernel].dropna().astype(str)}
    measured = _measured(classified)
    wanted = set(rows)
    lines_of: dict[str, list[tuple[Any, Any]]] = {}
    for kernel, file, line in zip(held["kernel"], held["file"], held["line"], strict=True):
        name = str(kernel)
        if name in credited or name not in measured:
            continue
        try:
            key = (file, int(line))
        except (TypeError, ValueError):  # a provenance row without a line number
            continue
        if key in wanted and key not in lines_of.setdefault(name, []):
            lines_of[name].append(key)
    out: dict[tuple[Any, Any], list[tuple[str, float]]] = {}
    for name, keys in lines_of.items():
        for key in keys:
            out.setdefault(key, []).append((name, measured[name] / len(keys)))
    return {
        key: largest_first(shares, key=lambda s: s[1], name=lambda s: s[0])
        for key, shares in out.items()
    }


def add_uncredited(
    table: pd.DataFrame, spelled: pd.Series, shares: dict[tuple[Any, Any], list[tuple[str, float]]]
) -> pd.DataFrame:
    """``table`` (the ByLine columns of the credited kernels) with the uncredited kernels of
    ``shares`` (:func:`uncredited_shares`; keyed by ``spelled``, the table's files as the
    compile log spells them): their names appended to ``compiled_kernels``, their shares
    added to ``compiled_time_us``, and the ``uncredited_kernels`` column ("" for none)."""
    table = table.copy()
    names = table["compiled_kernels"].astype(object).tolist()
    times = table["compiled_time_us"].to_numpy(dtype=float).copy()
    uncredited = []
    for i, (file, line) in enumerate(zip(spelled, table["line"], strict=True)):
        mine = shares.get((file, int(line)), [])
        uncredited.append(", ".join(n for n, _ in mine))
        if mine:
            names[i] = ", ".join([n for n in [str(names[i])] if n] + [n for n, _ in mine])
            for _, share in mine:
                times[i] += share
    table["compiled_kernels"] = names
    table["compiled_time_us"] = times
    table["uncredited_kernels"] = uncredited
    return table


_CLASSIFIED_SOURCE = "source"  # Classified.source (kernels.py): the kernel's KernelSource


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
    ids, keys = first_seen(names)
    calls = np.bincount(ids[ids >= 0], minlength=len(keys)).tolist()
    kernels = [str(k[0]) for k in keys]
    measured = _measured(classified)
    sums = [measured[k[0]] for k in keys]
    source_of = {name: found[0] for name, found in _counted(names, sources).items()}
    own_ops = _counted(names, op_names)
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


def _credited(credits: pd.DataFrame, ops: pd.DataFrame) -> dict[str, tuple[str, int, float, float]]:
    """Per compiled kernel credited: ``eager_ops`` text, eager kernels, their time and the
    time-weighted confidence (a kernel of no time weighs 1e-9 µs)."""
    at = np.flatnonzero((credits[Credits.outcome] == Outcome.MATCHED.value).to_numpy(dtype=bool))
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
