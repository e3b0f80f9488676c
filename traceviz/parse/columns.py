"""Turning lists of decoded values into typed column arrays.

Each function takes the values of one field over many events (built with C-level
``map(attrgetter(...))``, no per-event Python code) and returns a NumPy/pandas array. The fast
path is one NumPy conversion; only columns holding odd values (``"N/A"``, ``"0x0"``, ids beyond
2^63) fall back to a per-value coercion.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any

import msgspec
import numpy as np
import pandas as pd

from traceviz.parse.events import MISSING_INT, Event


def field(events: Sequence[Event], name: str) -> list[Any]:
    """The values of one top-level event field."""
    return list(map(attrgetter(name), events))


def arg_field(args: Sequence[Any], name: str) -> list[Any]:
    """The values of one ``args`` field (``args`` from :func:`field`)."""
    return list(map(attrgetter(name), args))


def objects(values: list[Any]) -> np.ndarray:
    """A 1-d object array of ``values`` (never 2-d, even when the values are lists)."""
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    return arr


def factorize(values: list[Any]) -> tuple[np.ndarray, list[Any]]:
    """Codes (−1 = missing) and distinct values; unhashable values are compared as text."""
    arr = objects(values)
    try:
        codes, uniques = pd.factorize(arr, use_na_sentinel=True)
    except TypeError:  # a list where a string belongs
        text = objects([v if v is None or isinstance(v, str) else repr(v) for v in values])
        codes, uniques = pd.factorize(text, use_na_sentinel=True)
    return np.asarray(codes, dtype=np.int64), list(uniques)


def floats(values: list[Any]) -> np.ndarray:
    """float64 array; ``None`` and unparsable strings become NaN."""
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        coerced = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce")
        return np.asarray(coerced, dtype=np.float64)


def nullable_ints(values: list[Any]) -> pd.arrays.IntegerArray:
    """Int64 array with ``<NA>`` for missing (``MISSING_INT``/``None``) or unusable values."""
    try:
        arr = np.asarray(values, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        arr = np.fromiter((_to_int(v) for v in values), dtype=np.int64, count=len(values))
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
        digits = "".join(ch for ch in text if ch.isdigit())  # e.g. "stream 7"
        return _to_int(int(digits)) if digits else MISSING_INT
    return MISSING_INT


def categorical(values: list[Any]) -> pd.Categorical[Any]:
    """Categorical of strings; ``None`` stays missing, other non-strings become their text."""
    codes, uniques = factorize(values)
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
    codes, uniques = factorize(list(map(bytes, values)))
    labels = [u.decode("utf-8", "replace") for u in uniques]
    categorical_ = pd.Categorical.from_codes(codes, categories=pd.Index(labels))
    if "" in labels:
        categorical_ = categorical_.remove_categories([""])
    return categorical_


def first_present(
    primary: pd.arrays.IntegerArray, fallback: pd.arrays.IntegerArray
) -> pd.arrays.IntegerArray:
    """``primary`` where present, else ``fallback`` (same length)."""
    out = primary.copy()
    mask = np.asarray(out.isna())
    if mask.any():
        out[mask] = fallback[mask]
    return out
