"""The fusion map per source line for a run of ordinary size, without pandas' groupbys.

:func:`lines_table_rows` builds the same table as the grouped form
(:func:`traceviz.analysis.fusion_lines.lines_table`, :class:`~traceviz.analysis.fusion_lines.
ByLine`) from the located credits (one row per eager kernel instance with a source line) with
dicts and lists. Every sum is the one pandas' groupby gives (:func:`group_sums`: the same group
numbering, then the same arithmetic), so the two forms agree to the last bit (the tests compare
both on every sample and corpus trace); the helpers here serve
:mod:`traceviz.analysis.fusion_rows` too.

Why both stay (issue 26, measured in one script, a busy 2-core machine): on the sample runs
this form takes 2-3 ms, the grouped one 16-21 ms, 2.1-3.2% of each run's whole ``traceviz
compare`` (H200 gpt2: 2.8 vs 20.6 ms of 0.79 s); at 2,550 located rows (gpt2 replicated 10
times) still 11 vs 25 ms. At 25,500 (replicated 100 times) the grouped form wins, 110 vs
227 ms, and keeps scaling with pandas' vectorised groupbys: beyond :data:`SMALL_ROWS` it is used.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from traceviz import schema
from traceviz.analysis.fusion_match import Credits, Outcome
from traceviz.schema import ActivityKind, Kernels

__all__ = [
    "SMALL_ROWS",
    "first_seen",
    "group_key",
    "group_sums",
    "kahan_sum",
    "largest_first",
    "lines_table_rows",
]

#: Located credits up to which the per-row form is used (beyond it, the grouped form).
SMALL_ROWS = 5_000


def group_sums(ids: npt.ArrayLike, values: npt.ArrayLike, groups: int) -> list[float]:
    """Per group 0..groups-1, the sum pandas' ``groupby(...).sum()`` gives for float64
    ``values`` whose rows pandas numbered ``ids`` (-1: a dropped missing key). pandas 3 takes
    ``np.add.reduceat`` over the segments when the ids never decrease and no value is NaN,
    else its compensated (Kahan) loop that skips NaN (:func:`kahan_sum`); so does this."""
    codes = np.asarray(ids, dtype=np.intp)
    data = np.asarray(values, dtype=np.float64)
    if not groups:
        return []
    monotonic = bool(np.all(codes[1:] >= codes[:-1]))
    if monotonic and not np.isnan(data).any():
        dropped = int((codes < 0).sum())
        codes, data = codes[dropped:], data[dropped:]
        if codes.size:
            out = np.zeros(groups)
            starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
            out[codes[starts]] = np.add.reduceat(data, starts)
            return [float(v) for v in out]
    members: list[list[float]] = [[] for _ in range(groups)]
    for code, value in zip(codes.tolist(), data.tolist(), strict=True):
        if code >= 0:
            members[code].append(value)
    return [kahan_sum(m) for m in members]


def kahan_sum(values: Iterable[float]) -> float:
    """pandas' compensated groupby sum of one group (``group_sum``): Kahan summation in the
    given order, NaN skipped, 0.0 for none; a non-finite compensation is reset to 0."""
    total = 0.0
    compensation = 0.0
    for value in values:
        if value != value:  # NaN: skipped, as groupby's sum skips it
            continue
        y = value - compensation
        t = total + y
        compensation = t - total - y
        if not math.isfinite(compensation):  # an infinity: keep it, not NaN
            compensation = 0.0
        total = t
    return total


def first_seen(keys: Iterable[Hashable | None]) -> tuple[list[int], list[Any]]:
    """pandas' numbering of ``groupby(sort=False)``: per row the code of its key in order of
    first appearance (-1 for None: a row with a missing key part), and the keys."""
    codes: dict[Any, int] = {}
    ids = [-1 if key is None else codes.setdefault(key, len(codes)) for key in keys]
    return ids, list(codes)


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def group_key(*parts: Any) -> tuple[Any, ...] | None:
    """A group key, None when a part is missing (pandas' groupby drops such rows)."""
    return None if any(_missing(p) for p in parts) else parts


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
    files = located["file"].tolist()
    numbers = located["line"].tolist()
    codes = located["code"].tolist()
    ops = located[Credits.op].tolist()
    times = located[Credits.time_us].to_numpy(dtype=float)
    matched = (located[Credits.outcome] == Outcome.MATCHED.value).to_numpy(dtype=bool)
    kernels = located[Credits.kernel].tolist()

    line_ids, line_keys = first_seen(group_key(f, n) for f, n in zip(files, numbers, strict=True))
    eager_time = group_sums(line_ids, times, len(line_keys))
    count = [0] * len(line_keys)
    code: list[Any] = [None] * len(line_keys)
    for i, g in enumerate(line_ids):
        if g >= 0:
            count[g] += 1
            if code[g] is None and not _missing(codes[i]):
                code[g] = codes[i]
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
    files: list[Any],
    numbers: list[Any],
    ops: list[Any],
    times: npt.NDArray[np.float64],
    line_keys: Sequence[tuple[Any, ...]],
) -> dict[tuple[Any, ...], str]:
    """Per line with an op: ``"op (kernels), ..."`` of its rows, by time, largest first."""
    ids, keys = first_seen(group_key(f, n, o) for f, n, o in zip(files, numbers, ops, strict=True))
    sums = group_sums(ids, times, len(keys))
    sizes = np.bincount([g for g in ids if g >= 0], minlength=len(keys)).tolist()
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
    files: list[Any],
    numbers: list[Any],
    kernels: list[Any],
    times: npt.NDArray[np.float64],
    matched: npt.NDArray[np.bool_],
    classified: pd.DataFrame,
) -> list[tuple[Any, Any, Any, float]]:
    """Per (line, compiled kernel) of the matched rows, in order of first appearance: the
    kernel's measured time times the share of its credited eager time that came from the line
    (evenly when it got none)."""
    rows = np.flatnonzero(matched).tolist()
    ids, cells = first_seen(group_key(files[i], numbers[i], kernels[i]) for i in rows)
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
    ids, keys = first_seen((f, n) for f, n, _, _ in share)
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
