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

_KEYS = ["step", "device", "stream", "name", "k"]
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
    back = pd.Series(measured_rows, index=twins[measured_rows])  # marked row → measured row
    lines = own[own[KL.kernel_row].isin(back.index)]
    lines = lines.assign(**{KL.kernel_row: back.loc[lines[KL.kernel_row].to_numpy()].to_numpy()})
    lines = lines.sort_values(KL.kernel_row, kind="stable").reset_index(drop=True)
    return LineTransfer(
        schema.conform(lines, schema.KERNEL_LINES_DTYPES), len(twins), matched, len(lines)
    )


def twin_rows(measured: Trace, marked: Trace) -> npt.NDArray[np.int64]:
    """Per row of ``measured.kernels``, the row of its twin in ``marked.kernels`` (−1: none)."""
    mine, theirs = _keys(measured), _keys(marked)
    out = np.full(len(mine), _NONE, dtype=np.int64)
    if mine.empty or theirs.empty:
        return out
    pairs = mine.reset_index(names="row").merge(
        theirs.reset_index(names="twin"), on=_KEYS, how="inner"
    )  # keys are unique per trace (k counts within the rest), so this is one-to-one
    out[pairs["row"].to_numpy(dtype=np.int64)] = pairs["twin"].to_numpy(dtype=np.int64)
    return out


def _keys(trace: Trace) -> pd.DataFrame:
    """Per kernel row, its alignment key (module docstring); −1 stands for "no device/stream"
    and for "outside every step" (such kernels align among themselves)."""
    kernels = trace.kernels
    issue = issue_us(kernels)
    windows = step_windows(trace)
    ordinal = np.argsort(np.argsort(windows.start_us, kind="stable"), kind="stable")
    window = windows.index_of(issue) if len(kernels) else np.zeros(0, dtype=np.int64)
    step = np.where(window >= 0, ordinal[np.clip(window, 0, None)], _NONE)
    keys = pd.DataFrame(
        {
            "step": step.astype(np.int64),
            "device": _ints(kernels[K.device]),
            "stream": _ints(kernels[K.stream]),
            "name": kernels[K.name].astype(str).to_numpy(),
            "issue": issue,
            "ts": kernels[K.ts_us].to_numpy(dtype=float, na_value=np.nan),
        }
    )
    order = np.lexsort((np.arange(len(keys)), keys["ts"].to_numpy(), keys["issue"].to_numpy()))
    ranked = keys.iloc[order]
    k = ranked.groupby(["step", "device", "stream", "name"], sort=False).cumcount()
    keys["k"] = k.sort_index().to_numpy(dtype=np.int64)
    return keys[_KEYS]


def _ints(column: pd.Series) -> npt.NDArray[np.int64]:
    return np.asarray(column.astype("Int64").fillna(_NONE), dtype=np.int64)
