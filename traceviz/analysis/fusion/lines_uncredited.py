"""The per-line fusion table's compiled kernels that no eager kernel was credited to.

The fusion map credits each eager kernel to one compiled kernel, so a compiled kernel the
compiler added beside the work it replaced (a library GEMM's split-K reduction, a second
cutlass GEMM of the same ``addmm`` call) gets no credit, and a by-line table built from the
credits alone leaves its time out of every line. The compiler's provenance still ties it to
its source lines (:attr:`LineRecord.compiled <traceviz.analysis.fusion.lines.LineRecord>`).

:func:`add_uncredited` adds those kernels to the lines they are tied to, with the rule:

- a compiled kernel credited some eager work keeps its share as before (its measured time
  split over the lines it was credited from, in proportion to their eager time);
- a compiled kernel credited nothing (no eager counterpart) is split evenly over the table's
  lines its provenance names; its name is listed in ``uncredited_kernels`` too.

Each kernel's time is so counted at most once over all lines, and a kernel tied to no line of
the table (a line without eager kernels) is counted on none.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from traceviz.analysis.fusion.by_line import _measured, largest_first
from traceviz.analysis.fusion.match import Credits, Outcome

__all__ = ["add_uncredited", "uncredited_shares"]

#: The column :func:`add_uncredited` adds (ByLine.uncredited_kernels).
UNCREDITED = "uncredited_kernels"


def uncredited_shares(
    credits: pd.DataFrame,
    classified: pd.DataFrame,
    held: pd.DataFrame,
    rows: list[tuple[Any, Any]],
) -> dict[tuple[Any, Any], list[tuple[str, float]]]:
    """Per line of ``rows`` (``(file, line)`` as the compile log spells the file): the
    compiled kernels ``held`` (the provenance's ``kernel``, ``file``, ``line`` rows) ties to it
    that no matched credit names, each with its share, µs (its measured time in ``classified``
    over the number of ``rows`` lines it is tied to), largest first."""
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
    table[UNCREDITED] = uncredited
    return table
