"""Issue 14, parse in a fresh process: the native path's batch size and its per-field kind sets.

``native._present`` (two reductions, then an OR of bits) replaced a ``np.bincount`` per field;
the bincount form is kept here and compared on random kinds and on every kind column of every
real trace. ``native.BATCH_EVENTS`` went 65536 -> 32768 (fewer fresh pages a process touches):
the tables do not depend on it, checked on the real traces that span several batches.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import SAMPLES, corpus_files
from traceviz.parse import load_trace, native, read
from traceviz.trace import Trace

REAL = corpus_files() + sorted(SAMPLES.rglob("*.json.gz"))


def present_by_bincount(kinds: np.ndarray) -> int:
    """The replaced ``native._present``: a bincount of the kinds, as a bit set."""
    counts = np.bincount(kinds, minlength=native.RAW + 1)
    return sum(1 << k for k in np.flatnonzero(counts).tolist())


def _kind_columns(path: Path) -> list[np.ndarray]:
    """Every field's kinds, batch by batch, as the extension scans ``path``."""
    module = native.scanner_module()
    view, _ = read._document(read.read_bytes(path))
    scanner = module.Scanner(view, native.TOP_KEYS, native.ARG_KEYS, native.RAW_KEYS)
    columns = []
    while (batch := scanner.next(4096)) is not None:
        columns += [np.frombuffer(kinds, dtype=np.uint8) for kinds in batch[1]]
    return columns


def test_present_equals_bincount_on_random_kinds() -> None:
    rng = np.random.default_rng(14)
    cases = [np.zeros(0, dtype=np.uint8), np.full(5, 3, dtype=np.uint8)]
    cases += [np.array([k], dtype=np.uint8) for k in range(256)]
    for _ in range(2000):
        high = int(rng.choice([1, 2, 3, 6, 8, 9, 64, 256]))
        cases.append(rng.integers(0, high, int(rng.integers(0, 300))).astype(np.uint8))
    for kinds in cases:
        got = native._present(kinds)
        assert type(got) is int
        assert got == present_by_bincount(kinds), kinds
        rows = np.arange(0, len(kinds), 3)  # a gathered subset, as NativeSource.take gives
        assert native._present(kinds[rows]) == present_by_bincount(kinds[rows])


@pytest.mark.skipif(native.scanner_module() is None, reason="_scan not built")
def test_present_equals_bincount_on_real_traces() -> None:
    assert REAL
    mixed = 0
    for path in REAL:
        try:
            columns = _kind_columns(path)
        except native.scanner_module().Unsupported:
            continue  # parsed the Python way: no kinds
        for kinds in columns:
            expected = present_by_bincount(kinds)
            assert native._present(kinds) == expected, path
            mixed += expected & (expected - 1) != 0
    assert mixed  # the OR path ran, not only the one-kind shortcut


def _tables_equal(a: Trace, b: Trace) -> None:
    for name, table in a.tables().items():
        pd.testing.assert_frame_equal(b.tables()[name], table, check_exact=True, obj=name)
    assert a.meta == b.meta
    assert a.stats == b.stats


@pytest.mark.skipif(native.scanner_module() is None, reason="_scan not built")
def test_batch_size_changes_no_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """The traces that span several batches of the default size: the same Trace with the old
    size (65536), the default and small batches."""
    big = [p for p in REAL if load_trace(p, cache=False).stats.events_in > native.BATCH_EVENTS]
    assert big
    for path in big:
        default = load_trace(path, cache=False)
        for size in (65536, 5000):
            with monkeypatch.context() as patch:
                patch.setattr(native, "BATCH_EVENTS", size)
                _tables_equal(default, load_trace(path, cache=False))
