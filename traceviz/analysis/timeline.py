"""Kernels in the order they ran, per stream or thread: what "consecutive" means for the rules.

:func:`timeline` returns one row per kernel-table row (memcpy/memset included: they separate
kernels), sorted by start within each **lane** (a GPU stream, or the CPU thread of a CPU-only
trace). Rows that start inside an earlier row's span on the same lane are dropped: on CPU-only
traces those are helpers nested inside a computing op (``aten::copy_`` inside ``aten::mul``),
not separate steps of the computation.

Columns: ``row`` (position in the kernels table), ``lane`` (code), ``ts``/``end``/``dur`` (µs),
``step`` (step window index, −1 outside every step), ``in_region`` (bool), ``kind``,
``source``, ``label`` (the eager op for GPU kernels of eager/extern ops, e.g. ``aten::add``,
else the kernel name), ``key`` (the largest tensor shape the launching op reads, as text, or
None when shapes were not recorded), ``op`` (row in ``Trace.ops`` of the launching op, float,
NaN when none).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import numpy.typing as npt
import pandas as pd

from traceviz.analysis.kernel_kinds import KernelSource
from traceviz.analysis.kernels import Classified
from traceviz.analysis.shapes import tensor_shapes
from traceviz.diagnose.facts import TraceFacts, durations, kernel_steps
from traceviz.schema import Kernels, Ops

#: Overlap tolerance when deciding that a row is nested in the one before it, µs.
NESTING_TOLERANCE_US = 1e-3
_OP_LABEL_SOURCES = (KernelSource.EAGER_ATEN.value, KernelSource.EXTERN.value)


def timeline(facts: TraceFacts) -> pd.DataFrame:
    """The kernels of ``facts`` in lane order (see the module docstring); built once per facts."""
    return facts.memo("timeline", lambda: _timeline(facts))


def _timeline(facts: TraceFacts) -> pd.DataFrame:
    kernels = facts.kernels
    lanes = _lanes(facts)
    ts = kernels[Kernels.ts_us].to_numpy(dtype=float, na_value=np.nan)
    dur = durations(kernels)
    order = np.lexsort((ts, lanes))
    frame = pd.DataFrame(
        {
            "row": order,
            "lane": lanes[order],
            "ts": ts[order],
            "end": (ts + dur)[order],
            "dur": dur[order],
            "step": kernel_steps(facts)[order],
            "in_region": kernels[Classified.in_region].to_numpy(dtype=bool)[order],
            "kind": kernels[Classified.kind].astype(object).to_numpy()[order],
            "source": kernels[Classified.source].astype(object).to_numpy()[order],
            "label": _labels(facts)[order],
            "key": data_keys(facts)[order],
            "op": kernels[Kernels.op_row].to_numpy(dtype=float, na_value=np.nan)[order],
        }
    )
    frame = frame[np.isfinite(frame["ts"].to_numpy())]
    return frame[~_nested(frame)].reset_index(drop=True)


def same_context(frame: pd.DataFrame) -> npt.NDArray[np.bool_]:
    """Per row: same lane, step and compiled-region status as the row before it (row 0: False),
    and inside a step."""
    lane, step = frame["lane"].to_numpy(), frame["step"].to_numpy()
    region = frame["in_region"].to_numpy()
    same = np.zeros(len(frame), dtype=bool)
    same[1:] = (lane[1:] == lane[:-1]) & (step[1:] == step[:-1]) & (region[1:] == region[:-1])
    return same & (step >= 0)


def _lanes(facts: TraceFacts) -> npt.NDArray[np.int64]:
    """Per kernel, a code for its stream (GPU: device + stream) or thread (CPU)."""
    kernels = facts.kernels
    thread = kernels[Kernels.thread].astype(object).astype(str)
    if facts.is_gpu:
        stream = kernels[Kernels.stream].astype(object).astype(str)
        device = kernels[Kernels.device].astype(object).astype(str)
        key = device + "/" + stream.where(kernels[Kernels.stream].notna(), "t" + thread)
    else:
        key = thread
    codes, _ = pd.factorize(key)
    return np.asarray(codes, dtype=np.int64)


def _nested(frame: pd.DataFrame) -> npt.NDArray[np.bool_]:
    """Rows that start inside an earlier row's span on the same lane."""
    prev_end = frame.groupby("lane")["end"].shift(1)
    reach = prev_end.groupby(frame["lane"]).cummax()
    return (frame["ts"] < reach - NESTING_TOLERANCE_US).to_numpy(dtype=bool)


def _labels(facts: TraceFacts) -> npt.NDArray[np.object_]:
    """The name to show per kernel (see the module docstring)."""
    kernels = facts.kernels
    names = kernels[Kernels.name].astype(object).to_numpy()
    if not facts.is_gpu:
        return names
    ops = kernels[Kernels.op_name].astype(object)
    by_op = kernels[Classified.source].astype(object).isin(_OP_LABEL_SOURCES).to_numpy()
    use_op = by_op & ops.notna().to_numpy()
    return np.where(use_op, ops.to_numpy(), names)


def data_keys(facts: TraceFacts) -> npt.NDArray[np.object_]:
    """Per kernel, the largest tensor shape its launching op reads, as text (None: unknown)."""
    kernels = facts.kernels
    op_rows = kernels[Kernels.op_row].to_numpy(dtype=float, na_value=np.nan)
    dims = facts.trace.ops[Ops.input_dims].astype(object).to_numpy()
    out = np.full(len(kernels), None, dtype=object)
    known = np.isfinite(op_rows) & (op_rows >= 0) & (op_rows < len(dims))
    rows = op_rows[known].astype(np.int64)
    out[known] = [largest_shape(d) if isinstance(d, str) else None for d in dims[rows]]
    return out


@lru_cache(maxsize=2**16)  # distinct shape strings; bounded for long-lived processes
def largest_shape(dims: str) -> str | None:
    """The largest (most elements, more than one) tensor shape of ``dims``, as ``"[a, b]"``."""
    best: tuple[int, str] | None = None
    for shape in tensor_shapes(dims):
        numel = int(np.prod(shape))
        if numel > 1 and (best is None or numel > best[0]):
            best = (numel, str(list(shape)))
    return best[1] if best else None
