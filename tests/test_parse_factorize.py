"""The native path's factorize (:func:`traceviz.parse.native._factorize`): values in a small
range (the scanner's string and raw codes, ids numbered within a batch) go through tables
indexed by value less the least instead of pandas' hash table. Both must give the same codes,
distinct values (in order of first appearance), first positions and dtypes, on made arrays and
on every column of real traces' batches."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import SAMPLES, corpus_files
from traceviz.dense import factorize_in_order
from traceviz.parse import native, read


def _pandas(values: np.ndarray, firsts: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pandas form (the only one before the small-range tables)."""
    codes, distinct = pd.factorize(values)
    if not firsts:
        where = np.arange(len(distinct), dtype=np.int64)
    else:
        running = np.maximum.accumulate(codes) if len(codes) else codes
        where = np.flatnonzero(np.diff(running, prepend=-1) > 0)
    return codes.astype(np.int64, copy=False), np.asarray(distinct), where


def _assert_same(values: np.ndarray, firsts: bool) -> None:
    got = native._factorize(values, firsts)
    want = _pandas(values, firsts)
    for g, w, name in zip(got, want, ("codes", "distinct", "first"), strict=True):
        assert g.dtype == w.dtype, name
        np.testing.assert_array_equal(g, w, err_msg=name)


@pytest.mark.parametrize("firsts", [True, False])
def test_made_arrays(firsts: bool) -> None:
    rng = np.random.default_rng(14)
    cases = [np.array([0]), np.array([5]), np.array([3, 3, 3]), np.array([2, 0, 2, 1, 0])]
    for n in (1, 2, 7, 100, 5000, 32768):
        for high in (1, 3, n, 4 * n + 1023, 4 * n + 1024, 10**9):
            cases.append(rng.integers(0, high, size=n, dtype=np.int64))
        cases.append(rng.integers(-5, 5, size=n, dtype=np.int64))
        cases.append(rng.integers(3 * 10**6, 3 * 10**6 + 2 * n, size=n, dtype=np.int64))
        cases.append(rng.integers(-(2**63), -(2**63) + n, size=n, dtype=np.int64))
        cases.append(rng.integers(2**63 - n - 1, 2**63 - 1, size=n, dtype=np.int64))
        cases.append(np.repeat(rng.integers(0, 50, size=max(n // 10, 1)), 10)[:n])
    for values in cases:
        _assert_same(values.astype(np.int64), firsts)


def test_the_tables_are_used_where_they_apply() -> None:
    def small(*values: int) -> bool:
        return factorize_in_order(np.array(values, dtype=np.int64)) is not None

    assert small(0, 1023) and small(4 + 1023) and small(-5, 3)
    assert small(7, 7 + 8 + 1023) and not small(7, 7 + 8 + 1024)
    assert not small(-(2**63), 2**63 - 1)  # the difference overflows int64
    assert factorize_in_order(np.zeros(0, dtype=np.int64)) is None
    ids = np.arange(3_000_000, 3_032_768, dtype=np.int64)  # ids numbered within a batch
    assert factorize_in_order(ids) is not None


REAL = sorted(SAMPLES.glob("*/*.pt.trace.json*"))[:8] + corpus_files()[:8]


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_every_column_of_real_batches(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every field's values of every batch (codes, ints, float bits), as the table builders
    factorize them."""
    module = native.scanner_module()
    if module is None:
        pytest.skip("the native scanner is not built")
    monkeypatch.setattr(native, "BATCH_EVENTS", 7919)
    data = read.read_bytes(path)
    view, _ = read._document(data)
    scanner = module.Scanner(view, native.TOP_KEYS, native.ARG_KEYS, native.RAW_KEYS)
    checked = 0
    while (batch := native._next_batch(scanner)) is not None:
        for j in range(len(batch.kinds)):
            kinds, values = batch.column(j)
            for kind in np.unique(kinds).tolist():
                picked = values[kinds == kind]
                _assert_same(picked, True)
                _assert_same(picked, False)
                checked += 1
    assert checked > 0
