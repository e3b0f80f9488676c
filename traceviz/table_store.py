"""One pandas table as one uncompressed NumPy ``.npz`` file, read back exactly; NumPy only.

The trace cache (:meth:`traceviz.trace.Trace.save`, :func:`traceviz.trace.load_cache`) writes
each table with :func:`write_table` and keeps the column list it returns in its JSON header;
:func:`read_table` rebuilds the table from the file and that list: the same columns in the
same order, the same dtypes (categories with their order, their own dtype and unused or bare
categories included), the same values, NaN and NA. No pyarrow: the cache works where pandas
runs without it.

Column kinds (the ``kind`` of a column's entry in the list) and the file's members (named by
the column's position ``i``, so any column name is safe):

- ``"numpy"``: a plain NumPy bool, integer or float column: member ``i``.
- ``"masked"``: a pandas nullable column (``Int32``, ``Int64``, ``Float64``, ``boolean``, ...):
  its values in member ``i`` (the numbers under NA are whatever pandas held) and, where any
  row is NA, the NA mask (bool) in ``i.mask``.
- ``"category"``: a categorical column: its codes (-1 for NaN) in member ``i``; its categories
  either as strings, one UTF-8 byte blob in ``i.labels`` (uint8) cut at ``i.offsets`` (int64,
  one more than there are categories; lone surrogates kept), or, for numeric categories, as
  an array in ``i.categories``.

Anything else (object or string columns, datetimes, ...) raises ``ValueError`` at write time,
naming the table and the column: nothing is dropped silently. The row index is not kept (the
table reads back with a ``RangeIndex``), as the Parquet cache before it did not keep it.
Reading a file that is damaged, truncated, or lacks a member its column list names raises
:class:`~traceviz.errors.TraceFormatError` naming the file and the problem.
"""

from __future__ import annotations

import functools
import io
import itertools
import re
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from traceviz.errors import TraceFormatError

STORE_FORMAT = 1  # bump when the member layout or the column entries change

# pandas' default string dtype, the dtype ``"str"`` names: StringDtype(na_value=nan) in pandas 3
# (its storage pyarrow where pyarrow is installed, else python), object before. Categories of
# that dtype are written as "str" and read back as the reader's "str", which is what a fresh
# parse there gives.
_DEFAULT_STR = "str"
# pandas' nullable arrays: values plus an NA mask.
_MASKED = (pd.arrays.IntegerArray, pd.arrays.FloatingArray, pd.arrays.BooleanArray)
_READ_ERRORS = (OSError, EOFError, ValueError, KeyError, TypeError, IndexError, zipfile.BadZipFile)


def write_table(path: Path, table: pd.DataFrame, *, name: str) -> dict[str, Any]:
    """Write ``table`` to ``path`` (one uncompressed ``.npz``); return the JSON-able column
    list :func:`read_table` needs: ``{"format", "rows", "columns": [{"name", "kind", ...}]}``.

    Raises ``ValueError`` naming ``name`` and the column for a dtype the store cannot keep."""
    if not table.columns.is_unique:
        raise ValueError(f"table {name}: duplicate column names cannot be stored")
    arrays: dict[str, np.ndarray] = {}
    columns = []
    for i, column in enumerate(table.columns):
        if not isinstance(column, str):
            raise ValueError(f"table {name}: column name {column!r} is not a string")
        try:
            entry, members = _encode_column(table[column])
        except ValueError as err:
            raise ValueError(f"table {name}, column {column!r}: {err}") from None
        columns.append({"name": column, **entry})
        arrays.update({f"{i}{suffix}": array for suffix, array in members.items()})
    with open(path, "wb") as out:
        np.savez(out, allow_pickle=False, **arrays)
    return {"format": STORE_FORMAT, "rows": len(table), "columns": columns}


def read_table(path: Path, spec: dict[str, Any]) -> pd.DataFrame:
    """The table :func:`write_table` wrote to ``path`` with column list ``spec``.

    Raises :class:`~traceviz.errors.TraceFormatError` naming ``path`` when the file is
    missing, damaged, truncated, or does not hold what ``spec`` names."""
    try:
        if not isinstance(spec, dict):
            raise ValueError("its column list is not a JSON object")
        if spec.get("format") != STORE_FORMAT:
            raise ValueError(f"table format {spec.get('format')!r} is not {STORE_FORMAT}")
        rows = int(spec["rows"])
        with open(path, "rb") as file:
            archive = _Archive(file)
            data = {
                entry["name"]: _decode_column(archive, str(i), entry, rows)
                for i, entry in enumerate(spec["columns"])
            }
    except FileNotFoundError:
        raise TraceFormatError(path, "table file is missing") from None
    except _READ_ERRORS as err:
        raise TraceFormatError(path, f"unreadable table: {_describe(err)}") from err
    return pd.DataFrame(data, index=pd.RangeIndex(rows), copy=False)


# --- writing ---------------------------------------------------------------------------------


def _encode_column(series: pd.Series) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """A column's entry (kind, dtype) and the arrays it is stored as, by member suffix."""
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return _encode_categorical(series.array)
    array = series.array
    if isinstance(array, _MASKED):
        numpy_dtype = dtype.numpy_dtype  # type: ignore[union-attr]
        mask = np.asarray(array.isna(), dtype=bool)
        has_na = bool(mask.any())
        members = {"": array.to_numpy(dtype=numpy_dtype, na_value=numpy_dtype.type(0))}
        if has_na:
            members[".mask"] = mask
        return {"kind": "masked", "dtype": str(dtype), "mask": has_na}, members
    if isinstance(dtype, np.dtype) and dtype.kind in "biuf":
        return {"kind": "numpy", "dtype": dtype.str}, {"": series.to_numpy()}
    raise ValueError(f"dtype {dtype} cannot be stored (category, Int/Float/boolean, numpy numbers)")


def _encode_categorical(values: pd.Categorical) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    categories = values.categories
    entry: dict[str, Any] = {"kind": "category", "ordered": bool(values.ordered)}
    members: dict[str, np.ndarray] = {"": np.asarray(values.codes)}
    cat_dtype = categories.dtype
    if isinstance(cat_dtype, np.dtype) and cat_dtype.kind in "biuf":
        entry["categories"] = cat_dtype.str
        members[".categories"] = categories.to_numpy()
        return entry, members
    entry["categories"] = _string_dtype_name(cat_dtype)
    labels = categories.tolist()
    if not all(isinstance(label, str) for label in labels):
        raise ValueError("categories that are not all strings cannot be stored")
    blob, offsets = _pack_strings(labels)
    members[".labels"] = blob
    members[".offsets"] = offsets
    return entry, members


def _string_dtype_name(dtype: Any) -> str:
    """How a string categories' dtype is written: ``"object"``, ``"str"`` (pandas' default
    string dtype) or ``"string[<storage>]"`` / ``"str[<storage>]"`` (NA / NaN missing value)."""
    if isinstance(dtype, np.dtype) and dtype == np.dtype(object):
        return "object"
    if isinstance(dtype, pd.StringDtype):
        if dtype == pd.api.types.pandas_dtype(_DEFAULT_STR):
            return _DEFAULT_STR
        kind = "string" if dtype.na_value is pd.NA else "str"
        return f"{kind}[{dtype.storage}]"
    raise ValueError(f"categories of dtype {dtype} cannot be stored")


def _pack_strings(labels: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """``labels`` as one UTF-8 byte blob (uint8) and the int64 offsets that cut it."""
    encoded = [label.encode("utf-8", "surrogatepass") for label in labels]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


# --- reading ---------------------------------------------------------------------------------


class _Archive:
    """The members of an uncompressed ``.npz``, each read straight from the file into an array
    of its own (no copy through zipfile's reader, no tokenizing of the ``.npy`` header as
    ``np.load`` does), its CRC-32 checked; ``archive[key]`` is ``np.load(path)[key]``.

    Only what :func:`write_table` writes: stored (uncompressed) members holding 1-D arrays of
    numbers or bools (so nothing is ever unpickled)."""

    def __init__(self, file: io.BufferedReader) -> None:
        self._file = file
        with zipfile.ZipFile(file) as archive:  # reads the central directory only
            self._members = {info.filename: info for info in archive.infolist()}

    def __getitem__(self, key: str) -> np.ndarray:
        info = self._members.get(f"{key}.npy")
        if info is None:
            raise KeyError(key)
        if info.compress_type != zipfile.ZIP_STORED:
            raise ValueError(f"member {key} is compressed")
        file = self._file
        file.seek(info.header_offset)
        local = file.read(30)
        if len(local) != 30 or local[:4] != b"PK\x03\x04":
            raise ValueError(f"member {key}: no local file header")
        name_len, extra_len = struct.unpack("<HH", local[26:30])
        file.seek(info.header_offset + 30 + name_len + extra_len)
        head, dtype, count = _npy_header(file, key)
        array = np.empty(count, dtype=dtype)
        if len(head) + array.nbytes != info.file_size:
            raise ValueError(f"member {key}: {info.file_size} bytes, its header says otherwise")
        raw = array.view(np.uint8).data
        if file.readinto(raw) != array.nbytes:
            raise ValueError(f"member {key} is truncated")
        if zlib.crc32(raw, zlib.crc32(head)) != info.CRC:
            raise ValueError(f"member {key} is damaged (CRC-32 mismatch)")
        return array


# The header np.save writes for a 1-D array of numbers or bools.
_SIMPLE_HEADER = re.compile(
    rb"\{'descr': '([<>|][biuf][0-9]+)', 'fortran_order': False, 'shape': \(([0-9]+),\), \} *\n"
)


def _npy_header(file: io.BufferedReader, key: str) -> tuple[bytes, np.dtype, int]:
    """The ``.npy`` preamble and header at the file's position (left after them), the dtype
    and the number of values; a 1-D array of bools or numbers, or ``ValueError``."""
    preamble = file.read(10)
    if len(preamble) != 10 or preamble[:6] != b"\x93NUMPY":
        raise ValueError(f"member {key} is not a .npy array")
    if preamble[6] == 1:
        (size,) = struct.unpack("<H", preamble[8:10])
    else:
        preamble += file.read(2)
        (size,) = struct.unpack("<I", preamble[8:12])
    header = file.read(size)
    simple = _SIMPLE_HEADER.fullmatch(header)
    if simple is not None:
        return preamble + header, np.dtype(simple[1].decode()), int(simple[2])
    # Another spelling of the header (another NumPy): NumPy's own parser.
    fields = np.lib.format.read_array_header_2_0(
        io.BytesIO(struct.pack("<I", size) + header), max_header_size=size + 1
    )
    shape, _, dtype = fields
    if len(shape) != 1 or dtype.kind not in "biuf":
        raise ValueError(f"member {key} holds {dtype}{shape}, not a 1-D array of numbers")
    return preamble + header, dtype, int(shape[0])


def _decode_column(archive: _Archive, key: str, entry: dict[str, Any], rows: int) -> Any:
    """One column's array (numpy or pandas extension array) from its members."""
    kind = entry["kind"]
    if kind == "numpy":
        return _member(archive, key, rows, np.dtype(entry["dtype"]))
    if kind == "masked":
        return _decode_masked(archive, key, entry, rows)
    if kind == "category":
        return _decode_categorical(archive, key, entry, rows)
    raise ValueError(f"column {entry['name']!r}: unknown kind {kind!r}")


def _decode_masked(archive: _Archive, key: str, entry: dict[str, Any], rows: int) -> Any:
    dtype: Any = _pandas_dtype(entry["dtype"])
    masked = isinstance(dtype, pd.api.extensions.ExtensionDtype)
    if not masked or not issubclass(array_type := dtype.construct_array_type(), _MASKED):
        raise ValueError(f"column {entry['name']!r}: {dtype} is not a nullable dtype")
    values = _member(archive, key, rows, dtype.numpy_dtype)
    if entry["mask"]:
        mask = _member(archive, f"{key}.mask", rows, np.dtype(bool))
    else:
        mask = np.zeros(rows, dtype=bool)
    return array_type(values, mask)


@functools.lru_cache(maxsize=64)
def _pandas_dtype(name: str) -> Any:
    """``pandas_dtype(name)``, remembered (its registry search costs more than a small column)."""
    return pd.api.types.pandas_dtype(name)


def _decode_categorical(
    archive: _Archive, key: str, entry: dict[str, Any], rows: int
) -> pd.Categorical:
    codes = archive[key]
    if codes.shape != (rows,) or codes.dtype.kind != "i":
        raise ValueError(f"column {entry['name']!r}: codes {codes.dtype}{codes.shape} do not fit")
    name = entry["categories"]
    if name in ("object", _DEFAULT_STR) or name.startswith(("str[", "string[")):
        blob = archive[f"{key}.labels"]
        offsets = archive[f"{key}.offsets"]
        categories = pd.Index(_unpack_strings(blob, offsets), dtype=_string_dtype(name))
    else:
        stored = archive[f"{key}.categories"]
        if stored.dtype != np.dtype(name) or stored.ndim != 1:
            raise ValueError(f"column {entry['name']!r}: categories are {stored.dtype}")
        categories = pd.Index(stored, dtype=stored.dtype)
    dtype = pd.CategoricalDtype(categories, ordered=bool(entry["ordered"]))
    return pd.Categorical.from_codes(codes, dtype=dtype)


def _string_dtype(name: str) -> Any:
    if name == "object":
        return object
    if name == _DEFAULT_STR:
        return _DEFAULT_STR
    kind, _, storage = name.rstrip("]").partition("[")
    return pd.StringDtype(storage, na_value=pd.NA if kind == "string" else np.nan)


def _unpack_strings(blob: np.ndarray, offsets: np.ndarray) -> list[str]:
    """The strings :func:`_pack_strings` packed."""
    if blob.dtype != np.uint8 or offsets.dtype != np.int64 or blob.ndim != 1 or offsets.ndim != 1:
        raise ValueError("category labels are not a byte blob with int64 offsets")
    if len(offsets) == 0 or offsets[0] != 0 or offsets[-1] != len(blob):
        raise ValueError("category label offsets do not cover the byte blob")
    if len(offsets) > 1 and bool((np.diff(offsets) < 0).any()):
        raise ValueError("category label offsets go backwards")
    raw = blob.tobytes()
    bounds = offsets.tolist()
    text = raw.decode("utf-8", "surrogatepass")
    if len(text) == len(raw):  # all ASCII: byte offsets are character offsets
        return [text[a:b] for a, b in itertools.pairwise(bounds)]
    return [raw[a:b].decode("utf-8", "surrogatepass") for a, b in itertools.pairwise(bounds)]


def _member(archive: _Archive, key: str, rows: int, dtype: np.dtype) -> np.ndarray:
    """Member ``key`` checked to be ``rows`` values of ``dtype``."""
    array: np.ndarray = archive[key]
    if array.dtype != dtype or array.shape != (rows,):
        raise ValueError(f"member {key} holds {array.dtype}{array.shape}, not {dtype}[{rows}]")
    return array


def _describe(err: BaseException) -> str:
    """A one-line reason for a read error (a missing member says which)."""
    if isinstance(err, KeyError):
        return f"member {err.args[0] if err.args else ''} is missing"
    lines = str(err).strip().splitlines()
    return lines[0] if lines else type(err).__name__
