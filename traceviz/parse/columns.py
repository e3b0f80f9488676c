"""Turning lists of decoded values into typed column arrays.

Each function takes the values of one field over many events (on the Python path built with
C-level ``map(attrgetter(...))``, no per-event Python code; on the native path made from the
scanner's columns only for fields of odd kinds: :mod:`traceviz.parse.native`) and returns a
NumPy/pandas array. The fast
path is one NumPy conversion; only columns holding odd values (``"N/A"``, ``"0x0"``, ids beyond
2^63) fall back to a per-value coercion.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np
import pandas as pd

from traceviz.parse.events import MISSING_INT

if TYPE_CHECKING:
    from traceviz.parse.source import EventSource


class _Numbering(dict[Any, int]):
    """value -> code, numbering new values in order of first appearance."""

    def __missing__(self, key: Any) -> int:
        code = self[key] = len(self)
        return code


def factorize(values: list[Any]) -> tuple[np.ndarray, list[Any]]:
    """Codes (−1 = missing) and distinct values in order of first appearance.

    A dict lookup per value driven by ``map`` runs entirely in C and beats building an object
    array for ``pd.factorize`` on lists of Python strings. Unhashable values (a list where a
    string belongs) are compared as text.
    """
    numbering = _Numbering()
    codes = _encode(numbering, values)
    return _without_none(codes, list(numbering))


def _without_none(codes: np.ndarray, uniques: list[Any]) -> tuple[np.ndarray, list[Any]]:
    """Renumber so that ``None`` becomes code −1 and leaves the distinct values."""
    if None not in uniques:
        return codes, uniques
    lookup = np.empty(len(uniques), dtype=np.int64)
    kept: list[Any] = []
    for i, value in enumerate(uniques):
        lookup[i] = -1 if value is None else len(kept)
        if value is not None:
            kept.append(value)
    return lookup[codes], kept


def _hashable(value: Any) -> Any:
    """``value`` with unhashable parts (lists, dicts) replaced by their text."""
    if isinstance(value, tuple):
        return tuple(_hashable(v) for v in value)
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


def floats(values: list[Any]) -> np.ndarray:
    """float64 array; ``None`` and unparsable strings become NaN."""
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        coerced = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce")
        return np.asarray(coerced, dtype=np.float64)


def nullable_ints(values: list[Any]) -> pd.arrays.IntegerArray:
    """Int64 array with ``<NA>`` for missing (``MISSING_INT``/``None``) or unusable values."""
    arr = int64s(values)
    return pd.arrays.IntegerArray(arr, arr == MISSING_INT)


def _to_int(value: Any) -> int:
    if isinstance(value, bool) or value is None:
        return MISSING_INT
    if isinstance(value, int):
        return value if -(2**63) < value < 2**63 else MISSING_INT
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and abs(value) < 2**63 else MISSING_INT
    if isinstance(value, str):
        text = value.strip()
        for base in (10, 0):
            try:
                return _to_int(int(text, base))
            except ValueError:
                continue
        # e.g. "stream 7"; isdecimal, not isdigit: int() refuses "²", which isdigit accepts
        digits = "".join(ch for ch in text if ch.isdecimal())
        return _to_int(int(digits)) if digits else MISSING_INT
    return MISSING_INT


def categorical(values: list[Any]) -> pd.Categorical[Any]:
    """Categorical of strings; ``None`` stays missing, other non-strings become their text."""
    return categorical_of(*factorize(values))


def categorical_of(codes: np.ndarray, uniques: list[Any]) -> pd.Categorical[Any]:
    """:func:`categorical` from the :func:`factorize` of the values."""
    labels = [u if isinstance(u, str) else str(u) for u in uniques]
    if len(set(labels)) != len(labels):  # e.g. 7 and "7" in one column
        return pd.Categorical([None if c < 0 else labels[c] for c in codes])
    return pd.Categorical.from_codes(codes, categories=pd.Index(labels))


def map_categories(
    values: pd.Categorical, mapping: Callable[[str], str], categories: list[str], missing: str
) -> pd.Categorical[Any]:
    """Apply ``mapping`` to each distinct value once; missing values map to ``missing``."""
    per_value = [categories.index(mapping(str(c))) for c in values.categories]
    lookup = np.array([*per_value, categories.index(missing)], dtype=np.int64)
    return pd.Categorical.from_codes(
        lookup[np.asarray(values.codes)], categories=pd.Index(categories)
    )


def raw_text(values: list[msgspec.Raw]) -> pd.Categorical[Any]:
    """Categorical of raw JSON text (e.g. ``Input Dims``); absent values are missing."""
    return raw_text_of(*factorize(list(map(bytes, values))))


def raw_text_of(codes: np.ndarray, uniques: list[bytes]) -> pd.Categorical[Any]:
    """:func:`raw_text` from the :func:`factorize` of the values' bytes."""
    labels = [u.decode("utf-8", "replace") for u in uniques]
    categories = pd.Index(labels)
    if "" in labels:
        # Absent: missing, not a category; the rest sorted, as remove_categories([""]) has it
        # (its Index.difference sorts), by renumbering the codes instead of recoding them.
        kept = categories.delete(labels.index("")).sort_values()
        codes = np.append(kept.get_indexer(categories), -1)[codes]
        categories = kept
    return pd.Categorical.from_codes(codes, categories=categories)


def used_labels(codes: np.ndarray, labels: pd.Index) -> pd.Categorical[Any]:
    """The rows whose codes into ``labels`` (text; −1 missing) are ``codes``, as the
    categorical ``astype("category")`` makes of their texts: the labels used, sorted."""
    used = np.unique(codes[codes >= 0])
    texts = labels.take(used).to_numpy(dtype=object).tolist()
    order = sorted(range(len(texts)), key=texts.__getitem__)
    lookup = np.full(len(labels) + 1, -1, dtype=np.int64)  # the last entry: code -1 stays -1
    lookup[used[order]] = np.arange(len(order))
    categories = pd.Index([texts[i] for i in order]) if texts else pd.Index([], dtype=object)
    return pd.Categorical.from_codes(lookup[codes], categories=categories)


def _encode(numbering: dict[Any, int], values: Values) -> np.ndarray:
    """Codes of ``values`` in ``numbering`` (new values numbered as they first appear)."""
    try:
        return np.fromiter(map(numbering.__getitem__, values), dtype=np.int64, count=len(values))
    except TypeError:  # unhashable values: compared as text, as factorize does
        return _encode(numbering, [_hashable(v) for v in values])


def int64s(values: list[Any]) -> np.ndarray:
    """int64 array, ``MISSING_INT`` for missing or unusable values (see nullable_ints)."""
    try:
        return np.asarray(values, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        return np.fromiter((_to_int(v) for v in values), dtype=np.int64, count=len(values))


class Lazy:
    """The values of one attribute over ``items``, produced while they are consumed: a column
    is converted straight from the events, without a list of a batch's values in between."""

    __slots__ = ("attr", "items")

    def __init__(self, items: Sequence[Any], attr: str) -> None:
        self.items, self.attr = items, attr

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Any]:
        return map(attrgetter(self.attr), self.items)


Values = list[Any] | Lazy


def streamed(values: Values, dtype: Any, convert: Callable[[list[Any]], np.ndarray]) -> np.ndarray:
    """``convert(list(values))``, but one pass of ``np.fromiter`` when every value converts
    plainly (``np.fromiter`` and ``np.asarray`` agree on every value both accept). Both parse
    paths convert a field's values here, so they convert them the same way."""
    try:
        return np.fromiter(iter(values), dtype=dtype, count=len(values))
    except (TypeError, ValueError, OverflowError):
        return convert(list(values))


class ColumnSet:
    """One table's columns, filled a batch of events at a time and read once at the end.

    Text columns are numbered with one dictionary per column across all batches, so the codes
    and categories come out exactly as :func:`factorize` of the whole column would give them;
    numbers are converted per batch (8 bytes a value instead of a Python object).
    """

    def __init__(self) -> None:
        self.rows = 0
        self._parts: dict[str, list[np.ndarray]] = {}
        self._numberings: dict[str, _Numbering] = {}

    def add_array(self, name: str, values: np.ndarray) -> None:
        self._add(name, values)

    def add_codes(self, name: str, values: Values) -> np.ndarray:
        """Number ``values`` in this column's dictionary; returns this batch's codes."""
        codes = _encode(self._numberings.setdefault(name, _Numbering()), values)
        self._add(name, codes)
        return codes

    def add_from(self, name: str, events: EventSource, field: str = "") -> np.ndarray:
        """Number the values of ``field`` (default: ``name``) of ``events`` in this column's
        dictionary, as :meth:`add_codes` of those values; returns this batch's codes."""
        codes = events.codes(self.numbering(name), field or name)
        self._add(name, codes)
        return codes

    def add_raw_from(self, name: str, events: EventSource, fallback: str = "") -> None:
        """Number the raw JSON text (``bytes``) of field ``name`` of ``events`` (``fallback``'s
        where ``name`` is absent) in this column's dictionary."""
        self._add(name, events.raw_codes(self.numbering(name), name, fallback))

    def numbering(self, name: str) -> dict[Any, int]:
        """The value → code dictionary of a text column so far."""
        return self._numberings.setdefault(name, _Numbering())

    def _add(self, name: str, values: np.ndarray) -> None:
        self._parts.setdefault(name, []).append(values)

    def array(self, name: str, dtype: Any) -> np.ndarray:
        parts = self._parts.get(name)
        if not parts:
            return np.empty(0, dtype=dtype)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def floats(self, name: str) -> np.ndarray:
        return self.array(name, np.float64)

    def ints(self, name: str) -> pd.arrays.IntegerArray:
        """As :func:`nullable_ints` of the whole column."""
        arr = self.array(name, np.int64)
        return pd.arrays.IntegerArray(arr, arr == MISSING_INT)

    def factorized(self, name: str) -> tuple[np.ndarray, list[Any]]:
        """As :func:`factorize` of the whole column: codes (−1 = missing) and distinct values."""
        codes = self.array(name, np.int64)
        return _without_none(codes, list(self._numberings.get(name, {})))

    def categorical(self, name: str) -> pd.Categorical[Any]:
        """As :func:`categorical` of the whole column."""
        return categorical_of(*self.factorized(name))

    def raw_text(self, name: str) -> pd.Categorical[Any]:
        """As :func:`raw_text` of the whole column (values added as ``bytes``)."""
        return raw_text_of(*self.factorized(name))

    def drop(self, name: str) -> None:
        self._parts.pop(name, None)
