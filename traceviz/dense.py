"""Distinct values of integer arrays (row numbers, codes) without sorting or hashing them.

``np.unique`` sorts (an argsort of every value when it is asked for the inverse) and
``pd.factorize`` hashes; row numbers and codes are small non-negative integers, so a table as
long as the largest value gives the same answer in two passes. Each function here returns
exactly what its ``np.unique`` (or, for :func:`factorize_in_order`, ``pd.factorize``) form
returns, and falls back to it (or says ``None``) for values the table does not suit
(negative, or much larger than the array). NumPy only: the parser and the analyses use it.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["factorize_in_order", "first_of_codes", "sorted_unique", "unique_inverse"]

#: The table is used while the largest value is below 8 × the values + this (its size bound).
_SLACK = 1 << 16


def _suits(values: npt.NDArray[np.integer]) -> bool:
    if values.dtype.kind not in "iu" or values.size == 0:
        return False
    return bool(values.min() >= 0) and int(values.max()) < 8 * values.size + _SLACK


def sorted_unique(values: npt.NDArray[np.integer]) -> npt.NDArray[np.integer]:
    """``np.unique(values)`` of a 1-D integer array: its distinct values, sorted."""
    if not _suits(values):
        return np.unique(values)
    present = np.zeros(int(values.max()) + 1, dtype=bool)
    present[values] = True
    return np.flatnonzero(present).astype(values.dtype, copy=False)


def unique_inverse(
    values: npt.NDArray[np.integer],
) -> tuple[npt.NDArray[np.integer], npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """``np.unique(values, return_inverse=True, return_counts=True)`` of a 1-D integer array:
    the sorted distinct values, each value's position among them, and their counts."""
    if not _suits(values):
        return np.unique(values, return_inverse=True, return_counts=True)
    present = np.zeros(int(values.max()) + 1, dtype=bool)
    present[values] = True
    uniques = np.flatnonzero(present).astype(values.dtype, copy=False)
    position = np.cumsum(present, dtype=np.intp) - 1
    inverse = position[values]
    return uniques, inverse, np.bincount(inverse, minlength=uniques.size).astype(np.intp)


def first_of_codes(codes: npt.NDArray[np.integer]) -> npt.NDArray[np.intp]:
    """``np.unique(codes, return_index=True)[1]`` for codes numbered in order of first
    appearance (``pd.factorize``'s, no missing): where each code first appears, by code."""
    if codes.size == 0 or codes.dtype.kind not in "iu":
        return np.unique(codes, return_index=True)[1]
    seen = np.maximum.accumulate(codes)
    new = np.ones(codes.size, dtype=bool)
    new[1:] = codes[1:] > seen[:-1]
    first = np.flatnonzero(new)
    if codes[0] != 0 or not np.array_equal(codes[first], np.arange(first.size)):
        return np.unique(codes, return_index=True)[1]  # not first-appearance codes
    return first


def factorize_in_order(
    values: npt.NDArray[np.int64], firsts: bool = True
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
    """``pd.factorize(values)`` of a 1-D int64 array whose values all lie within
    4 × len + 1023 of their least (string and raw codes, ids numbered within a batch), through
    tables indexed by value less the least: per value the number of its distinct value, the
    distinct values in order of first appearance, and where each first appears (with
    ``firsts``; else 0, 1, ...), all int64. ``None`` for values outside such a range (or
    none): hash them."""
    if values.size == 0:
        return None
    low, high = int(values.min()), int(values.max())
    if high - low >= 4 * values.size + 1024:
        return None
    n = values.size
    offsets = values - np.int64(low) if low else values
    first = np.full(high - low + 1, n, dtype=np.int64)
    np.minimum.at(first, offsets, np.arange(n, dtype=np.int64))  # each value's least position
    seen = np.flatnonzero(first < n)
    in_order = seen[np.argsort(first[seen], kind="stable")]
    number = np.empty(len(first), dtype=np.int64)
    number[in_order] = np.arange(len(in_order), dtype=np.int64)
    where = first[in_order] if firsts else np.arange(len(in_order), dtype=np.int64)
    distinct = in_order + np.int64(low) if low else in_order
    return number[offsets], distinct, where
