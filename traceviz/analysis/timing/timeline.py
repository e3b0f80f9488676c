"""Kernels in the order they ran, per stream or thread: what "consecutive" means.

:func:`timeline` returns one row per kernel-table row (memcpy/memset included: they separate
kernels), sorted by start within each **lane** (a GPU stream, or the CPU thread of a CPU-only
trace). Rows that start inside an earlier row's span on the same lane are dropped: on CPU-only
traces those are helpers nested inside a computing op (``aten::copy_`` inside ``aten::mul``),
not separate steps of the computation.

Columns: :class:`Lane`. :func:`same_context` says which rows follow the row before them in
the same lane, step and compiled-region status (the diagnosis rules' "directly after").
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from traceviz.analysis.kernel_kinds import KernelSource
from traceviz.analysis.kernels import Classified
from traceviz.analysis.shapes import tensor_shapes
from traceviz.dense import first_of_codes
from traceviz.schema import DeviceKind, Kernels, Ops
from traceviz.trace import Trace

__all__ = ["NESTING_TOLERANCE_US", "Lane", "data_keys", "largest_shape", "same_context",
           "timeline"]  # fmt: skip

#: Overlap tolerance when deciding that a row is nested in the one before it, µs.
NESTING_TOLERANCE_US = 1e-3
_OP_LABEL_SOURCES = (KernelSource.EAGER_ATEN.value, KernelSource.EXTERN.value)


class Lane:
    """Columns of :func:`timeline`: one row per kernel-table row that is not nested."""

    row = "row"  # position in the kernels table (int64)
    lane = "lane"  # code of its stream (GPU: device + stream) or thread (CPU) (int64)
    ts = "ts"  # start, µs (float64)
    end = "end"  # ts + dur, µs (float64)
    dur = "dur"  # duration as the trace gives it, µs, 0 when missing (float64)
    step = "step"  # step window index, −1 outside every step (int64)
    in_region = "in_region"  # inside a compiled region (bool)
    kind = "kind"  # KernelKind value (object)
    source = "source"  # KernelSource value (object)
    label = "label"  # the eager op for GPU kernels of eager/extern ops, else the kernel name
    key = "key"  # largest tensor shape the launching op reads, as text (None: not recorded)
    op = "op"  # row in Trace.ops of the launching op (float64, NaN when none)


def timeline(
    trace: Trace,
    kernels: pd.DataFrame,
    kernel_step: npt.NDArray[np.int64],
    *,
    keys: bool = True,
) -> pd.DataFrame:
    """The classified ``kernels`` of ``trace`` (:func:`~traceviz.analysis.kernels.classify`)
    in lane order (see the module docstring); ``kernel_step`` is each kernel row's step window
    index (−1: outside all). Columns :class:`Lane`; with ``keys=False`` the shape ``key`` is
    left as None (it parses every launching op's shapes)."""
    lanes = _lanes(trace, kernels)
    ts = kernels[Kernels.ts_us].to_numpy(dtype=float, na_value=np.nan)
    dur = np.nan_to_num(kernels[Kernels.dur_us].to_numpy(dtype=float, na_value=np.nan))
    order = np.lexsort((ts, lanes))
    frame = pd.DataFrame(
        {
            Lane.row: order,
            Lane.lane: lanes[order],
            Lane.ts: ts[order],
            Lane.end: (ts + dur)[order],
            Lane.dur: dur[order],
            Lane.step: np.asarray(kernel_step)[order],
            Lane.in_region: kernels[Classified.in_region].to_numpy(dtype=bool)[order],
            Lane.kind: _texts(kernels[Classified.kind], order),
            Lane.source: _texts(kernels[Classified.source], order),
            Lane.label: _ordered_labels(trace, kernels, order),
            Lane.key: data_keys(trace, kernels)[order] if keys else None,
            Lane.op: kernels[Kernels.op_row].to_numpy(dtype=float, na_value=np.nan)[order],
        }
    )
    frame = frame[np.isfinite(frame[Lane.ts].to_numpy())]
    return frame[~_nested(frame)].reset_index(drop=True)


def same_context(frame: pd.DataFrame) -> npt.NDArray[np.bool_]:
    """Per row of a :func:`timeline`: same lane, step and compiled-region status as the row
    before it (row 0: False), and inside a step."""
    lane, step = frame[Lane.lane].to_numpy(), frame[Lane.step].to_numpy()
    region = frame[Lane.in_region].to_numpy()
    same = np.zeros(len(frame), dtype=bool)
    same[1:] = (lane[1:] == lane[:-1]) & (step[1:] == step[:-1]) & (region[1:] == region[:-1])
    return same & (step >= 0)


def _is_gpu(trace: Trace) -> bool:
    return trace.device_kind in (DeviceKind.CUDA, DeviceKind.ROCM)


def _lanes(trace: Trace, kernels: pd.DataFrame) -> npt.NDArray[np.int64]:
    """Per kernel, a code for its stream (GPU: device + stream) or thread (CPU).

    Codes number the lanes' text keys in order of first appearance; the keys are spelled
    once per distinct (device, stream, thread) combination, not per kernel."""
    columns = (
        [Kernels.device, Kernels.stream, Kernels.thread] if _is_gpu(trace) else [Kernels.thread]
    )
    combo = np.zeros(len(kernels), dtype=np.int64)
    for column in columns:
        codes, uniques = pd.factorize(kernels[column], use_na_sentinel=False)
        combo = pd.factorize(combo * (len(uniques) + 1) + codes)[0]  # stays below len(kernels)
    first = first_of_codes(combo)  # one row per combination, in order (np.unique's index)
    # the first rows of the few columns the keys read (not of every column of the table)
    picked = pd.DataFrame({c: kernels[c].take(first) for c in _LANE_COLUMNS if c in kernels})
    lane_codes, _ = pd.factorize(_lane_keys(trace, picked))
    return np.asarray(lane_codes, dtype=np.int64)[combo]


#: The kernels columns :func:`_lane_keys` reads.
_LANE_COLUMNS = (Kernels.device, Kernels.stream, Kernels.thread)


def _lane_keys(trace: Trace, kernels: pd.DataFrame) -> pd.Series:
    """The text key of each row's lane: ``device/stream``, ``device/tTHREAD`` for a GPU row
    without a stream, the thread on CPU-only traces."""
    thread = kernels[Kernels.thread].astype(object).astype(str)
    if not _is_gpu(trace):
        return thread
    stream = kernels[Kernels.stream].astype(object).astype(str)
    device = kernels[Kernels.device].astype(object).astype(str)
    return device + "/" + stream.where(kernels[Kernels.stream].notna(), "t" + thread)


def _nested(frame: pd.DataFrame) -> npt.NDArray[np.bool_]:
    """Rows that start inside an earlier row's span on the same lane.

    ``frame`` is in lane order (each lane's rows together, as :func:`timeline`, the one caller,
    sorts them): each lane's running maximum end before a row (missing ends skipped) is taken on
    its own stretch of rows, with NumPy."""
    lane = frame[Lane.lane].to_numpy()
    end = frame[Lane.end].to_numpy(dtype=float)
    nested = np.zeros(len(frame), dtype=bool)
    if len(frame) < 2:
        return nested
    ts = frame[Lane.ts].to_numpy(dtype=float)
    bounds = np.flatnonzero(lane[1:] != lane[:-1]) + 1
    for start, stop in zip(np.r_[0, bounds], np.r_[bounds, len(frame)], strict=True):
        if stop - start < 2:
            continue
        prev_end = end[start : stop - 1]
        reach = np.fmax.accumulate(prev_end)  # skips NaN like pandas' cummax
        inside = ts[start + 1 : stop] < reach - NESTING_TOLERANCE_US
        nested[start + 1 : stop] = inside & ~np.isnan(prev_end)
    return nested


def _texts(column: pd.Series, order: npt.NDArray[np.intp]) -> Any:
    """``column``'s values at ``order``, as the text column pandas makes of them (its ``str``
    dtype; an object array where it would keep one). A categorical of text categories is taken
    by code from its few categories."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        cats = column.cat.categories
        text = _text_array(np.asarray(cats, dtype=object))
        codes = column.cat.codes.to_numpy()[order]
        if text is not None and (codes >= 0).any():
            return text.take(codes, allow_fill=True)
    return column.astype(object).to_numpy()[order]


def _text_array(values: npt.NDArray[np.object_]) -> Any:
    """``values`` (distinct texts) as pandas' ``str`` array, or None when one is not a str."""
    if not all(isinstance(v, str) for v in values):
        return None
    return pd.array(values, dtype="str")


def _ordered_labels(trace: Trace, kernels: pd.DataFrame, order: npt.NDArray[np.intp]) -> Any:
    """:func:`_labels` at ``order``, as :func:`_texts` makes a column: by code when the kernel
    and op names are categoricals of text (the op name where :func:`_labels` takes it)."""
    names, ops = kernels[Kernels.name], kernels[Kernels.op_name]
    if not _is_gpu(trace):
        return _texts(names, order)
    if not (
        isinstance(names.dtype, pd.CategoricalDtype) and isinstance(ops.dtype, pd.CategoricalDtype)
    ):
        return _labels(trace, kernels)[order]
    name_cats = np.asarray(names.cat.categories, dtype=object)
    text = _text_array(np.concatenate([name_cats, np.asarray(ops.cat.categories, dtype=object)]))
    name_codes = names.cat.codes.to_numpy()[order].astype(np.int64)
    op_codes = ops.cat.codes.to_numpy()[order].astype(np.int64)
    by_op = kernels[Classified.source].isin(_OP_LABEL_SOURCES).to_numpy(dtype=bool)[order]
    codes = np.where(by_op & (op_codes >= 0), op_codes + len(name_cats), name_codes)
    if text is None or not (codes >= 0).any():
        return _labels(trace, kernels)[order]
    return text.take(codes, allow_fill=True)


def _labels(trace: Trace, kernels: pd.DataFrame) -> npt.NDArray[np.object_]:
    """The name to show per kernel (:attr:`Lane.label`)."""
    names = kernels[Kernels.name].astype(object).to_numpy()
    if not _is_gpu(trace):
        return names
    ops = kernels[Kernels.op_name].astype(object)
    by_op = kernels[Classified.source].astype(object).isin(_OP_LABEL_SOURCES).to_numpy()
    use_op = by_op & ops.notna().to_numpy()
    return np.where(use_op, ops.to_numpy(), names)


def data_keys(trace: Trace, kernels: pd.DataFrame) -> npt.NDArray[np.object_]:
    """Per kernel, the largest tensor shape its launching op reads, as text (None: unknown)."""
    op_rows = kernels[Kernels.op_row].to_numpy(dtype=float, na_value=np.nan)
    dims = trace.ops[Ops.input_dims]
    out = np.full(len(kernels), None, dtype=object)
    known = np.isfinite(op_rows) & (op_rows >= 0) & (op_rows < len(dims))
    rows = op_rows[known].astype(np.int64)
    # each distinct shapes text parsed once, then spread back to the kernels
    codes, texts = pd.factorize(dims.iloc[rows], use_na_sentinel=False)
    keys = np.array([largest_shape(d) if isinstance(d, str) else None for d in texts], dtype=object)
    out[known] = keys[codes] if len(codes) else []
    return out
    codes, texts = pd.factorize(dims.iloc[rows].to_numpy(dtype=object), use_na_sentinel=False)
    keys = np.array([largest_shape(d) if isinstance(d, str) else None for d in texts], dtype=object)
    out[known] = keys[codes] if len(codes) else []
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
