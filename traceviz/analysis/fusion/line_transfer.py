"""Source lines carried over from a marked twin run to the measured eager trace.

``traceviz run`` profiles the eager steps twice: once plain (the measured trace, whose times
every per-step metric reads) and once under the line marks (the *lines trace*,
:mod:`traceviz.runner.lines`), whose ``traceviz line`` spans slow the steps down but name each
torch call's source line. :func:`transfer_lines` gives each kernel of the measured trace the
line of its twin in the lines trace.

Twins are aligned, never guessed: a kernel's key is (step ordinal, device, stream, kernel
name, k) where the step ordinal is the position of the ``ProfilerStep`` window it was issued in
(launch start, or its own start for a CPU kernel; the whole trace is one window when there are
no steps), and k counts the kernels of that name issued before it in that step on that device
stream (device and stream are absent on a CPU-only trace). Two kernels are twins when their
keys are equal, so twins always have the same name; a kernel whose key is not in the other
trace (a kernel renamed, missing, or one more of a name) gets no twin and no line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from traceviz import schema
from traceviz.analysis.kernels import issue_us
from traceviz.analysis.provenance import eager_kernel_lines
from traceviz.analysis.windows import step_windows
from traceviz.schema import KernelLines as KL
from traceviz.schema import Kernels as K
from traceviz.trace import Trace

__all__ = ["LineTransfer", "transfer_lines", "twin_rows"]

_NONE = -1


@dataclass(frozen=True)
class LineTransfer:
    """Source lines of a measured trace's kernels, read from their twins in a lines trace.

    ``lines``: :data:`~traceviz.schema.KERNEL_LINES_DTYPES` (``kernel_row`` is the row of the
    *measured* trace's kernels table), as :func:`~traceviz.analysis.provenance.
    eager_kernel_lines` gives for a trace with its own marks. ``kernels``: rows of the measured
    kernels table (kernels, memcpy and memset); ``matched``: those with a twin in the lines
    trace; ``located``: those that got a line (a twin outside user code has none).
    """

    lines: pd.DataFrame
    kernels: int
    matched: int
    located: int

    @property
    def coverage(self) -> float | None:
        """Share of the measured kernels that have a twin (None for a trace without kernels)."""
        return self.matched / self.kernels if self.kernels else None


def transfer_lines(measured: Trace, marked: Trace) -> LineTransfer:
    """Each kernel of ``measured`` gets the source line of its twin in ``marked`` (module
    docstring). Raises ``TypeError`` when either is not a Trace."""
    for label, trace in (("measured", measured), ("marked", marked)):
        if not isinstance(trace, Trace):
            raise TypeError(f"transfer_lines needs a Trace for {label}, not {type(trace).__name__}")
    twins = twin_rows(measured, marked)
    matched = int((twins != _NONE).sum())
    own = eager_kernel_lines(marked)
    if own.empty or not matched:
        return LineTransfer(schema.empty_table(schema.KERNEL_LINES_DTYPES),
                            len(twins), matched, 0)  # fmt: skip
    measured_rows = np.flatnonzero(twins != _NONE)
    back = np.full(len(marked.kernels), _NONE, dtype=np.int64)  # marked row → measured row
    back[twins[measured_rows]] = measured_rows
    marked_rows = own[KL.kernel_row].to_numpy(dtype=float, na_value=np.nan)
    known = ~np.isnan(marked_rows)
    rows = np.full(len(own), _NONE, dtype=np.int64)
    rows[known] = back[marked_rows[known].astype(np.int64)]
    keep = np.flatnonzero(rows != _NONE)
    keep = keep[np.argsort(rows[keep], kind="stable")]  # in measured-row order
    lines = own.take(keep).reset_index(drop=True)
    lines[KL.kernel_row] = rows[keep]
    return LineTransfer(
        schema.conform(lines, schema.KERNEL_LINES_DTYPES), len(twins), matched, len(lines)
    )


def twin_rows(measured: Trace, marked: Trace) -> npt.NDArray[np.int64]:
    """Per row of ``measured.kernels``, the row of its twin in ``marked.kernels`` (−1: none)."""
    mine, theirs = _keys(measured), _keys(marked)
    out = np.full(len(measured.kernels), _NONE, dtype=np.int64)
    if not len(out) or not len(marked.kernels):
        return out
    # the names of both traces in one vocabulary, then each key one integer over both traces
    vocabulary: dict[str, int] = {}
    names = [
        np.array([vocabulary.setdefault(str(c), len(vocabulary)) for c in cats] + [-1])[codes]
        for cats, codes in (mine.pop("name"), theirs.pop("name"))
    ]
    columns = [np.concatenate([m, t]) for m, t in zip(mine.values(), theirs.values(), strict=True)]
    key = _compound([*columns[:3], np.concatenate(names), columns[3]])
    mine_key, their_key = key[: len(out)], key[len(out) :]
    # keys are unique per trace (k counts within the rest), so this is one-to-one
    twin = np.full(int(key.max()) + 1, _NONE, dtype=np.int64)
    twin[their_key] = np.arange(len(their_key), dtype=np.int64)
    return twin[mine_key]


def _compound(columns: list[npt.NDArray[np.int64]]) -> npt.NDArray[np.int64]:
    """One code per distinct row of ``columns`` (0..distinct−1), column by column."""
    key = np.zeros(len(columns[0]), dtype=np.int64)
    for column in columns:
        _, part = np.unique(column, return_inverse=True)
        key = key * (int(part.max()) + 1 if len(part) else 1) + part.reshape(-1)
        _, key = np.unique(key, return_inverse=True)
        key = key.reshape(-1).astype(np.int64)
    return key


def _keys(trace: Trace) -> dict[str, Any]:
    """Per kernel row, its alignment key (module docstring): ``step``, ``device``, ``stream``
    and ``k`` as int64 arrays, ``name`` as (categories, codes); −1 stands for "no
    device/stream", for "outside every step" (such kernels align among themselves) and, in
    ``name``'s codes, for a missing name (the last entry a caller maps codes through)."""
    kernels = trace.kernels
    issue = issue_us(kernels)
    windows = step_windows(trace)
    ordinal = np.argsort(np.argsort(windows.start_us, kind="stable"), kind="stable")
    window = windows.index_of(issue) if len(kernels) else np.zeros(0, dtype=np.int64)
    step = np.where(window >= 0, ordinal[np.clip(window, 0, None)], _NONE).astype(np.int64)
    device, stream = _ints(kernels[K.device]), _ints(kernels[K.stream])
    names = kernels[K.name].astype("category")
    codes: npt.NDArray[np.int64] = np.asarray(names.cat.codes, dtype=np.int64)
    ts = kernels[K.ts_us].to_numpy(dtype=float, na_value=np.nan)
    order = np.lexsort((np.arange(len(kernels)), ts, issue))
    # k: the row's rank among the rows of its (step, device, stream, name), in issue order
    group = _compound([step, device, stream, codes]) if len(kernels) else codes
    rank = np.empty(len(kernels), dtype=np.int64)
    rank[order] = np.arange(len(kernels), dtype=np.int64)
    by_group = np.lexsort((rank, group))
    sorted_group = group[by_group]
    starts = np.r_[True, sorted_group[1:] != sorted_group[:-1]] if len(kernels) else rank > 0
    first = np.maximum.accumulate(np.where(starts, np.arange(len(kernels)), 0))
    k = np.empty(len(kernels), dtype=np.int64)
    k[by_group] = np.arange(len(kernels)) - first
    return {
        "step": step,
        "device": device,
        "stream": stream,
        "k": k,
        "name": (list(names.cat.categories), codes),
    }


def _ints(column: pd.Series) -> npt.NDArray[np.int64]:
    return np.asarray(column.astype("Int64").fillna(_NONE), dtype=np.int64)
