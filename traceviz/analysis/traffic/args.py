"""Reading an op's recorded inputs for the traffic estimates
(:mod:`traceviz.analysis.traffic.estimates`).

The profiler stores ``Input Dims``, ``Input type`` and ``Concrete Inputs`` as JSON text in the
ops table; :func:`parse_args` turns one row into a list of :class:`Arg` (a tensor with shape and
itemsize in bytes per element, or any other value). Never raises on malformed text: what cannot
be read gives None.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

__all__ = [
    "DTYPE_BYTES",
    "SCALAR_TYPE_BYTES",
    "UNKNOWN",
    "Arg",
    "broadcast",
    "dtype_bytes",
    "numel",
    "parse_args",
    "tensor_args",
]

#: Bytes per element for the profiler's ``Input type`` strings of tensors.
DTYPE_BYTES: dict[str, int] = {
    "float": 4, "double": 8, "c10::Half": 2, "c10::BFloat16": 2, "long int": 8, "long": 8,
    "int": 4, "short int": 2, "signed char": 1, "unsigned char": 1, "bool": 1,
    "long unsigned int": 8, "unsigned int": 4, "short unsigned int": 2,
    "c10::complex<float>": 8, "c10::complex<double>": 16, "c10::complex<c10::Half>": 4,
    "c10::qint8": 1, "c10::quint8": 1, "c10::qint32": 4, "c10::quint4x2": 1,
    "c10::quint2x4": 1, "c10::bits16": 2,
}  # fmt: skip
_ONE_BYTE_TYPE = re.compile(r"c10::(Float8_\w+|Float4_\w+|bits\w+|dummy_u?int1_7_t<\d>)")

#: Bytes per element by c10 ScalarType code (as ``Concrete Inputs`` give a ``dtype=``).
SCALAR_TYPE_BYTES: tuple[int, ...] = (
    1, 1, 2, 4, 8, 2, 4, 8, 4, 8, 16, 1, 1, 1, 4, 2, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 2, 4, 8,
    *([1] * 14), 1, 1,
)  # fmt: skip


class Unknown(Enum):
    """``Concrete Inputs`` were not recorded (as opposed to recorded empty, which is None)."""

    UNKNOWN = "unknown"


UNKNOWN = Unknown.UNKNOWN


@dataclass(frozen=True, slots=True)
class Arg:
    """One op input: a tensor (``shape`` and ``itemsize`` set) or anything else.

    ``concrete`` is the parsed ``Concrete Inputs`` entry: a value, None when recorded empty,
    ``UNKNOWN`` when the trace has no ``Concrete Inputs``.
    """

    shape: tuple[int, ...] | None
    itemsize: int | None
    concrete: Any = UNKNOWN

    @property
    def is_tensor(self) -> bool:
        return self.shape is not None and self.itemsize is not None

    @property
    def nbytes(self) -> int:
        return numel(self.shape or ()) * (self.itemsize or 0)


def dtype_bytes(type_str: str) -> int | None:
    """Bytes per element of a tensor ``Input type`` string, or None for non-tensors."""
    size = DTYPE_BYTES.get(type_str)
    if size is None and _ONE_BYTE_TYPE.fullmatch(type_str):
        return 1
    return size


def numel(shape: Sequence[int]) -> int:
    return math.prod(shape)


def _shape(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, list) and all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in value
    ):
        return tuple(value)
    return None


def _load_list(text: str | None) -> list[Any] | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, list) else None


def _concrete(text: Any) -> Any:
    """A ``Concrete Inputs`` entry as a Python value: int, float, bool, list, or the string."""
    if not isinstance(text, str):
        return None
    if text in ("True", "False"):
        return text == "True"
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text or None


def parse_args(dims: str | None, types: str | None, concrete: str | None) -> list[Arg] | None:
    dims_list, types_list = _load_list(dims), _load_list(types)
    if dims_list is None or types_list is None:
        return None
    values = _load_list(concrete)
    args = []
    for i in range(max(len(dims_list), len(types_list))):
        t = types_list[i] if i < len(types_list) else ""
        size = dtype_bytes(t) if isinstance(t, str) else None
        shape = _shape(dims_list[i]) if i < len(dims_list) and size is not None else None
        known = values is not None and i < len(values)
        value = _concrete(values[i]) if values is not None and known else UNKNOWN
        args.append(Arg(shape, size if shape is not None else None, value))
    return args


def tensor_args(args: list[Arg]) -> list[Arg]:
    return [a for a in args if a.is_tensor]


def broadcast(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...] | None:
    """The broadcast shape, or None when the shapes do not broadcast."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(rank):
        sizes = {s[len(s) - rank + axis] for s in shapes if len(s) - rank + axis >= 0} - {1}
        if len(sizes) > 1:
            return None
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)
