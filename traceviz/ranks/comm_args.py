"""The collective arguments Kineto records and the parsed Trace does not keep.

Kineto (torch ≥ 2.1) puts a collective's message on its device kernel (``ncclKernel_*`` /
``ncclDevKernel_*``) and on the ``record_param_comms`` CPU op that launched it: ``Collective
name``, ``In msg nelems``, ``Out msg nelems``, ``dtype``, ``Group size``, ``Process Group
Name``. :func:`collective_args` reads only those keys (plus the ids that join them back: a
kernel's ``correlation``, an op's ``External id``) with a second, narrow msgspec pass over the
trace file, and is called only for a trace that has collective kernels.

Columns of the returned table (:class:`CommArgs`), one row per event that carries them.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pandas as pd

from traceviz.errors import TraceFormatError
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


def collective_args(path: str | Path) -> pd.DataFrame:
    """The collective arguments of the trace at ``path`` (columns: :class:`CommArgs`).

    Raises :class:`TraceFormatError` when the file cannot be read or decoded.
    """
    path = Path(path)
    data = read_bytes(path)
    try:
        if data.lstrip()[:1] == b"[":
            events = msgspec.json.decode(data, type=list[_Event])
        else:
            events = msgspec.json.decode(data, type=_Doc).traceEvents
    except (msgspec.DecodeError, RecursionError) as err:
        raise TraceFormatError(path, f"collective arguments unreadable: {err}") from err
    rows = [
        (_on_kernel(e.cat), e.args)
        for e in events
        if e.args is not None and e.args.collective is not None
    ]
    return _table(rows)


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
    try:
        return int(float(value)) if value is not None and value != "" else None
    except (TypeError, ValueError, OverflowError):
        return None


def _text(value: _Num) -> str | None:
    return None if value is None else str(value)
