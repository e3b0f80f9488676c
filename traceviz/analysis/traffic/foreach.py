"""Estimated memory traffic of ``aten::_foreach_copy_`` (``torch._foreach_copy_(self, src)``):
every ``src`` tensor is read and every ``self`` tensor written.

The profiler records a tensor list's shapes (``Input Dims``: one list of shapes per
``TensorList`` argument, ``[[[2, 64], [8]], [[2, 64], [8]], []]``) but not its dtype
(``Input type`` says only ``TensorList``), so no rule of :mod:`traceviz.analysis.traffic.rules`
can size it from its row. On CUDA and ROCm the op's fast path (every tensor on one device,
``self[i]`` and ``src[i]`` of one shape) launches kernels (``multi_tensor_apply_kernel``)
whose names carry the element types: ``UnaryOpFunctor<T, …>`` with ``Copy<…>`` (both lists
of type T) or ``CopyFunctor<D, S, …>`` (``self`` in D, ``src`` in S). There the op's bytes are

    read = Σ numel(src[i]) × itemsize(S),  written = Σ numel(self[i]) × itemsize(D)

(rule ``copy``, basis estimated), split over its kernels by duration like any op's bytes
(:func:`traceviz.analysis.traffic.memory.kernel_traffic`). An op whose kernels name no types, or
disagree, gets no figure. On the slow path (CPU; tensors of mixed dtypes, as in the corpus's
MI300X Flux trace) the op launches nothing itself: one ``aten::copy_`` per pair does, each
with its own dtypes and figure (measured, for a memcpy), so nothing is credited twice.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt
import pandas as pd

from traceviz.analysis.inductor_names import eager_op_base
from traceviz.analysis.traffic.args import _shape, dtype_bytes, numel
from traceviz.analysis.traffic.rules import TrafficEstimate, TrafficRule
from traceviz.schema import Kernels, Ops

__all__ = [
    "FOREACH_COPY",
    "copy_itemsizes",
    "foreach_copy_estimate",
    "foreach_copy_kernels",
    "tensor_list_numels",
]

#: The op's base name (``aten::_foreach_copy_`` without its in-place underscore).
FOREACH_COPY = "_foreach_copy"
_TYPE = r"\s*([\w: ]+?(?:<[\w: ,]+>)?)\s*"  # a C++ element type, e.g. c10::complex<float>
_UNARY = re.compile(r"UnaryOpFunctor<" + _TYPE + ",")
_COPY_FUNCTOR = re.compile(r"CopyFunctor<" + _TYPE + "," + _TYPE + ",")
#: Element types as kernel templates spell them that the profiler's ``Input type`` spells
#: otherwise (:data:`~traceviz.analysis.traffic.args.DTYPE_BYTES` has the rest).
_TEMPLATE_TYPES = {
    "short": 2,
    "unsigned short": 2,
    "long long": 8,
    "unsigned long": 8,
    "unsigned long long": 8,
    "at::Half": 2,
    "at::BFloat16": 2,
}


def _itemsize(type_name: str) -> int | None:
    return _TEMPLATE_TYPES.get(type_name) or dtype_bytes(type_name)


def copy_itemsizes(kernel_name: str) -> tuple[int, int] | None:
    """(bytes per element written, bytes per element read) of a ``_foreach_copy_`` kernel
    from its name, or None when the name is not a multi-tensor copy or its types are unknown."""
    if "multi_tensor_apply_kernel" not in kernel_name:
        return None
    if found := _COPY_FUNCTOR.search(kernel_name):
        sizes = _itemsize(found.group(1)), _itemsize(found.group(2))
    elif "Copy<" in kernel_name and (found := _UNARY.search(kernel_name)):
        sizes = (_itemsize(found.group(1)),) * 2
    else:
        return None
    dst, src = sizes
    return None if dst is None or src is None else (dst, src)


def _list_numels(dims: object) -> list[int] | None:
    """Elements per tensor of one ``TensorList`` argument's shapes, or None."""
    shapes = [_shape(shape) for shape in dims] if isinstance(dims, list) else []
    if not shapes or any(shape is None for shape in shapes):
        return None
    return [numel(shape or ()) for shape in shapes]


def foreach_copy_estimate(
    input_dims: str | None, input_types: str | None, kernel_names: Iterable[str]
) -> TrafficEstimate | None:
    """The bytes one ``_foreach_copy_(self, src)`` moves, from its row's ``Input Dims`` /
    ``Input type`` (JSON text) and the names of the kernels it launched (the types: each
    must say the same); None when either cannot be read. Never raises on malformed input."""
    sizes = {copy_itemsizes(name) for name in kernel_names}
    lists = tensor_list_numels(input_dims, input_types)
    if len(sizes) != 1 or lists is None:
        return None
    pair = sizes.pop()
    if pair is None:
        return None
    (dst, src), (written, read) = pair, lists
    return TrafficEstimate(sum(read) * src, sum(written) * dst, TrafficRule.COPY)


def tensor_list_numels(
    input_dims: str | None, input_types: str | None
) -> tuple[list[int], list[int]] | None:
    """Elements per tensor of ``_foreach_copy_(self, src)``'s two lists (``self``'s, then
    ``src``'s) from its row's ``Input Dims`` / ``Input type`` (JSON text); None unless both
    are tensor lists (``TensorList``) of readable shapes, equally long and not empty."""
    if not isinstance(input_dims, str) or not isinstance(input_types, str):
        return None
    try:
        dims, types = json.loads(input_dims), json.loads(input_types)
    except (ValueError, RecursionError):
        return None
    if not (isinstance(dims, list) and isinstance(types, list) and len(dims) >= 2):
        return None
    if types[:2] != ["TensorList", "TensorList"]:
        return None
    written, read = _list_numels(dims[0]), _list_numels(dims[1])
    if written is None or read is None or len(written) != len(read):
        return None
    return written, read


def foreach_copy_kernels(
    kernels: pd.DataFrame, ops: pd.DataFrame, open_rows: npt.NDArray[np.bool_]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The ``open_rows`` of ``kernels`` (``Trace.kernels``) launched by a ``_foreach_copy_`` op
    (``Kernels.op_row`` → ``ops``) that has an estimate: (kernel row positions, their op row,
    the op's bytes repeated on each), ready for
    :func:`~traceviz.analysis.traffic.memory.split_bytes`."""
    empty = np.zeros(0, dtype=np.int64)
    op_row = kernels[Kernels.op_row].to_numpy(dtype=np.int64, na_value=-1)
    rows = np.flatnonzero(open_rows & (op_row >= 0))
    if rows.size == 0:
        return empty, empty, empty
    names = ops[Ops.name].astype("category").array
    wanted = [i for i, c in enumerate(names.categories) if _is_foreach_copy(c)]
    if not wanted:
        return empty, empty, empty
    codes = np.asarray(names.codes)[op_row[rows]]
    rows = rows[np.isin(codes, wanted)]
    found_rows, found_ops, totals = [], [], []
    kernel_names = kernels[Kernels.name]
    for op in np.unique(op_row[rows]).tolist():
        mine = rows[op_row[rows] == op]
        estimate = foreach_copy_estimate(
            _text(ops[Ops.input_dims].iat[op]),
            _text(ops[Ops.input_types].iat[op]),
            [str(kernel_names.iat[r]) for r in mine.tolist()],
        )
        if estimate is not None:
            found_rows.append(mine)
            found_ops.append(np.full(mine.size, op, dtype=np.int64))
            totals.append(np.full(mine.size, estimate.total_bytes, dtype=np.int64))
    if not found_rows:
        return empty, empty, empty
    return np.concatenate(found_rows), np.concatenate(found_ops), np.concatenate(totals)


def _is_foreach_copy(name: object) -> bool:
    return (
        isinstance(name, str)
        and FOREACH_COPY in name
        and eager_op_base(name, strip_inplace=True) == FOREACH_COPY
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None
