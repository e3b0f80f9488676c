"""The collective arguments Kineto records and the parsed Trace does not keep.

Kineto (torch ≥ 2.1) puts a collective's message on its device kernel (``ncclKernel_*`` /
``ncclDevKernel_*``) and on the ``record_param_comms`` CPU op that launched it: ``Collective
name``, ``In msg nelems``, ``Out msg nelems``, ``dtype``, ``Group size``, ``Process Group
Name``. :func:`collective_args` reads only those keys (plus the ids that join them back: a
kernel's ``correlation``, an op's ``External id``) with a second, narrow pass over the trace
file, and is called only for a trace that has collective kernels. The pass is the native
scanner's (:mod:`traceviz.parse.native`; it is generic over keys: here ``cat`` and those
arguments only) when it is built; else, or when the scanner finds the file unusual, a msgspec
decode of the same keys. The table is the same either way.

Columns of the returned table (:class:`CommArgs`), one row per event that carries them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pandas as pd

from traceviz.errors import TraceFormatError
from traceviz.parse.native import scanner_module
from traceviz.parse.read import read_bytes


class CommArgs:
    """Columns of :func:`collective_args`."""

    on_kernel = "on_kernel"  # the args sit on a device kernel (True) or a CPU op (False) (bool)
    correlation = "correlation"  # kernel's correlation id (Int64; NA on ops)
    external_id = "external_id"  # op's External id (Int64; NA on kernels)
    collective = "collective"  # "Collective name" as recorded, e.g. "allreduce" (object)
    in_nelems = "in_nelems"  # "In msg nelems": input elements (Int64)
    out_nelems = "out_nelems"  # "Out msg nelems": output elements (Int64)
    dtype = "dtype"  # "dtype", a c10 ScalarType name such as "Float", "BFloat16" (object)
    group_size = "group_size"  # "Group size": ranks in the process group (Int64)
    group = "group"  # "Process Group Name" (object)


#: Bytes per element of the c10 ScalarType names Kineto writes in ``dtype``.
DTYPE_BYTES: dict[str, int] = {
    "Double": 8, "Float": 4, "Half": 2, "BFloat16": 2, "Long": 8, "Int": 4, "Short": 2,
    "Char": 1, "Byte": 1, "Bool": 1, "ComplexFloat": 8, "ComplexDouble": 16, "ComplexHalf": 4,
    "Float8_e4m3fn": 1, "Float8_e5m2": 1, "Float8_e4m3fnuz": 1, "Float8_e5m2fnuz": 1,
    "UInt16": 2, "UInt32": 4, "UInt64": 8,
}  # fmt: skip

_Num = int | float | str | None


class _Args(msgspec.Struct, gc=False):
    collective: _Num = msgspec.field(default=None, name="Collective name")
    in_nelems: _Num = msgspec.field(default=None, name="In msg nelems")
    out_nelems: _Num = msgspec.field(default=None, name="Out msg nelems")
    dtype: _Num = None
    group_size: _Num = msgspec.field(default=None, name="Group size")
    group: _Num = msgspec.field(default=None, name="Process Group Name")
    correlation: _Num = None
    external_id: _Num = msgspec.field(default=None, name="External id")


class _Event(msgspec.Struct, gc=False):
    cat: _Num = None
    args: _Args | None = None


class _Doc(msgspec.Struct, gc=False):
    traceEvents: list[_Event] = []


_ARG_FIELDS = msgspec.structs.fields(_Args)
_TOP_KEYS = ("cat",)
_ARG_KEYS = tuple(f.encode_name for f in _ARG_FIELDS)  # scanner fields 1.. in _Args order
_COLLECTIVE = len(_TOP_KEYS) + [f.name for f in _ARG_FIELDS].index("collective")
_INT, _FLOAT, _STR = 2, 3, 4  # the scanner's kinds of value (0 absent, 1 null)
_BATCH_EVENTS = 65536


def collective_args(path: str | Path, *, scanner: Any = None) -> pd.DataFrame:
    """The collective arguments of the trace at ``path`` (columns: :class:`CommArgs`).

    ``scanner``: the scanner module (default: the native one when it is built; tests pass a
    stand-in). Raises :class:`TraceFormatError` when the file cannot be read or decoded.
    """
    path = Path(path)
    data = read_bytes(path)
    rows = _scanned_rows(data, scanner if scanner is not None else scanner_module())
    return _table(rows if rows is not None else _decoded_rows(path, data))


def _scanned_rows(data: bytes | bytearray, module: Any) -> list[tuple[bool, _Args]] | None:
    """The events that carry a collective, read by the scanner ``module``; ``None`` when
    there is none or it refuses the file (the msgspec pass then reads it, or says what is
    wrong with it)."""
    if module is None:
        return None
    rows: list[tuple[bool, _Args]] = []
    try:
        scanner = module.Scanner(data, _TOP_KEYS, _ARG_KEYS, frozenset())
        while (batch := scanner.next(_BATCH_EVENTS)) is not None:
            rows.extend(_batch_rows(batch, scanner.strings))
    except module.Unsupported:
        return None
    return rows


def _batch_rows(batch: tuple[int, list[bytes], list[bytes]], strings: list[str]) -> list[Any]:
    """(on kernel, args) of a batch's events whose ``Collective name`` is neither absent nor
    null: the values as msgspec decodes them, made for those events only."""
    _, kinds, values = batch
    has_collective = np.frombuffer(kinds[_COLLECTIVE], dtype=np.uint8) >= _INT
    rows = np.flatnonzero(has_collective)
    if len(rows) == 0:
        return []
    cat, *args = (_python(kinds[j], values[j], rows, strings) for j in range(len(kinds)))
    names = [f.name for f in _ARG_FIELDS]
    return [
        (_on_kernel(c), _Args(**dict(zip(names, values_, strict=True))))
        for c, *values_ in zip(cat, *args, strict=True)
    ]


def _python(kinds: bytes, values: bytes, rows: np.ndarray, strings: list[str]) -> list[_Num]:
    """One field's values at ``rows`` as Python objects, as msgspec decodes them into
    ``_Num``: int, float, str, or None (absent or null)."""
    kind = np.frombuffer(kinds, dtype=np.uint8)[rows].tolist()
    bits = np.frombuffer(values, dtype=np.int64)[rows]
    ints, floats = bits.tolist(), bits.view(np.float64).tolist()
    value = {_INT: ints.__getitem__, _FLOAT: floats.__getitem__, _STR: lambda i: strings[ints[i]]}
    return [value[k](i) if k in value else None for i, k in enumerate(kind)]


def _decoded_rows(path: Path, data: bytes | bytearray) -> list[tuple[bool, _Args]]:
    """The events that carry a collective, by a msgspec decode of ``cat`` and ``args``."""
    try:
        if data.lstrip()[:1] == b"[":
            events = msgspec.json.decode(data, type=list[_Event])
        else:
            events = msgspec.json.decode(data, type=_Doc).traceEvents
    except (msgspec.DecodeError, RecursionError) as err:
        raise TraceFormatError(path, f"collective arguments unreadable: {err}") from err
    return [
        (_on_kernel(e.cat), e.args)
        for e in events
        if e.args is not None and e.args.collective is not None
    ]


def _on_kernel(cat: object) -> bool:
    return str(cat).lower() == "kernel"


def _table(rows: list[tuple[bool, _Args]]) -> pd.DataFrame:
    on_kernel = [k for k, _ in rows]
    args = [a for _, a in rows]
    return pd.DataFrame(
        {
            CommArgs.on_kernel: pd.Series(on_kernel, dtype=bool),
            CommArgs.correlation: _ints([a.correlation if k else None for k, a in rows]),
            CommArgs.external_id: _ints([None if k else a.external_id for k, a in rows]),
            CommArgs.collective: pd.Series([str(a.collective) for a in args], dtype=object),
            CommArgs.in_nelems: _ints([a.in_nelems for a in args]),
            CommArgs.out_nelems: _ints([a.out_nelems for a in args]),
            CommArgs.dtype: pd.Series([_text(a.dtype) for a in args], dtype=object),
            CommArgs.group_size: _ints([a.group_size for a in args]),
            CommArgs.group: pd.Series([_text(a.group) for a in args], dtype=object),
        }
    )


def _ints(values: list[_Num]) -> pd.Series:
    return pd.Series([_int(v) for v in values], dtype="Int64")


def _int(value: _Num) -> int | None:
    """An integer as it is (no float round trip: ids beyond 2^53 stay exact), a float or a
    numeric text truncated; None where missing, unusable or beyond int64 (an Int64 column
    cannot hold it)."""
    if value is None or value == "":
        return None
    try:
        number = value if isinstance(value, int) else int(float(value))
    except (TypeError, ValueError, OverflowError):
        return None
    return number if -(2**63) < number < 2**63 else None


def _text(value: _Num) -> str | None:
    return None if value is None else str(value)
