"""The compiler's credits through source lines: the body of
:func:`traceviz.analysis.fusion.lines.compiler_credits` after the two sides are read.

:func:`line_pairs` finds which compiled kernels hold each eager instance's source line;
:func:`line_credits` drops the pairs a heavy op or a layout kernel rules out, keeps each
instance's best op match, then picks the nearest kernel. Both walk dicts of the (eager
instance, compiled kernel) pairs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from traceviz.analysis.fusion.match import (
    COMPOSITES,
    HEAVY_KEYS,
    KernelSide,
    instances_by_name,
    layout_kernels,
    nearest_kernel,
    own_key,
)
from traceviz.analysis.fusion.op_keys import name_keys

__all__ = ["line_credits", "line_pairs"]


def line_pairs(eager_lines: pd.DataFrame, held: pd.DataFrame) -> list[tuple[int, str]]:
    """(i, kernel) for each eager instance and each compiled kernel holding its line: on
    (file, line) for an exact eager line, then on (file, function) for a line that only names
    its function (a ``with_stack`` frame gives the function's first line, not the call's); each
    pair once. ``eager_lines`` has ``i``,
    ``file`` (as the log spells it), ``line``, optionally ``exact`` and ``function``."""
    on_line: dict[tuple[Any, Any], list[str]] = {}
    for key in dict.fromkeys(zip(held["kernel"], held["file"], held["line"], strict=True)):
        on_line.setdefault((key[1], key[2]), []).append(key[0])
    rows = list(
        zip(eager_lines["i"].tolist(), eager_lines["file"], eager_lines["line"], strict=True)
    )
    exact = (
        eager_lines["exact"].fillna(True).astype(bool).tolist()
        if "exact" in eager_lines
        else [True] * len(rows)
    )
    pairs = [
        (i, k)
        for (i, f, n), ok in zip(rows, exact, strict=True)
        if ok
        for k in on_line.get((f, n), [])
    ]
    if "exact" in eager_lines and "function" in held and not all(exact):
        on_function: dict[tuple[Any, Any], list[str]] = {}
        keys = zip(held["kernel"], held["file"], held["function"], strict=True)
        for key in dict.fromkeys(keys):
            on_function.setdefault((key[1], key[2]), []).append(key[0])
        functions = eager_lines["function"].tolist()
        pairs += [
            (i, k)
            for (i, f, _), ok, fn in zip(rows, exact, functions, strict=True)
            if not ok
            for k in on_function.get((f, fn), [])
        ]
    return list(dict.fromkeys(pairs))


def line_credits(
    e: KernelSide,
    c: KernelSide,
    pairs: list[tuple[int, str]],
    compiled_ops: dict[str, frozenset[str]],
    runs_heavy_work: Callable[[str], bool],
) -> pd.DataFrame | None:
    """``eager_row``, ``kernel``, ``confidence`` from the line ``pairs`` (None when no pair
    survives the filters; ``compiled_ops``: per compiled kernel, the op keys of its FX nodes;
    ``runs_heavy_work``: whether a kernel can run a GEMM/conv/attention)."""
    own = own_key(e.label).values()
    layout = layout_kernels(c)
    kept = []
    for i, kernel in pairs:
        key = own[i]
        heavy = key in HEAVY_KEYS
        # a layout kernel never does the GEMM/conv it prepares; a heavy op runs in a library
        # kernel or an Inductor template, never in a pointwise kernel carrying its epilogue
        if heavy and (kernel in layout or not runs_heavy_work(kernel)):
            continue
        kept.append((i, kernel, key))
    if not kept:
        return None
    ops = {n: compiled_ops.get(n, frozenset()) | frozenset(name_keys(n)) for n, in
           dict.fromkeys((k,) for _, k, _ in kept)}  # fmt: skip
    parts = {
        n: frozenset(p for k in keys for p in COMPOSITES.get(k, ())) for n, keys in ops.items()
    }
    # 2: the kernel holds the eager op itself; 1: a part of one of its ops (addmm's bias add)
    scored = [(i, n, 2 if k in ops[n] else 1 if k in parts[n] else 0) for i, n, k in kept]
    best: dict[int, int] = {}
    for i, _, has in scored:
        best[i] = max(best.get(i, has), has)
    scored = [s for s in scored if s[2] == best[s[0]]]
    distinct: dict[int, set[str]] = {}
    for i, n, _ in scored:
        distinct.setdefault(i, set()).add(n)
    # Sharing a line is evidence only when the line names one compiled kernel: on a coarse
    # line (a whole model called from one line) a kernel without the eager op is a guess.
    scored = [s for s in scored if s[2] > 0 or len(distinct[s[0]]) == 1]
    if not scored:
        return None
    by_i: dict[int, set[str]] = {}
    for i, n, _ in sorted(scored, key=lambda s: s[0]):
        by_i.setdefault(i, set()).add(n)
    # a tuple, not a joined string: library kernel names hold ", " in their template arguments
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, names in by_i.items():
        groups.setdefault(tuple(sorted(names)), []).append(i)
    by_name = instances_by_name(c)
    rows: list[npt.NDArray[np.int64]] = []
    chosen: list[npt.NDArray[np.object_]] = []
    confidence: list[npt.NDArray[np.float64]] = []
    for names_of, members in groups.items():
        instances = np.asarray(members, dtype=np.int64)
        rows.append(e.rows[instances])
        chosen.append(nearest_kernel(list(names_of), by_name, e.pos[instances]))
        confidence.append(np.full(len(members), 1.0 / len(names_of)))
    return pd.DataFrame(
        {
            "eager_row": np.concatenate(rows),
            "kernel": np.concatenate(chosen),
            "confidence": np.concatenate(confidence),
        }
    )
