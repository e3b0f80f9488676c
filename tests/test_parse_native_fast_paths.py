"""The native path's fast forms against the general ones they stand for, on made data and real
traces: ``native._present`` (two reductions, then an OR of bits) against a ``np.bincount`` per
field; ``native._factorize``'s small-range tables (values less the least as indices: the
scanner's codes, ids numbered within a batch) against ``pd.factorize`` (same codes, distinct
values in order of first appearance, first positions and dtypes); ``regions.region_table``
(built in final order and dtypes) against the general build (``_region_table_general``); and
the tables whatever ``native.BATCH_EVENTS`` is.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import SAMPLES, corpus_files, kernel, launch, op, write_trace
from tests.real_data import SAMPLE_RUNS
from tests.test_table_store import assert_same_trace
from traceviz.dense import factorize_in_order
from traceviz.parse import load_trace, native, read, regions

# every corpus trace; of the sample runs, one per code path (real_data.SAMPLE_RUNS)
REAL = corpus_files() + [
    p for run in SAMPLE_RUNS for p in sorted((SAMPLES / run).glob("*.json.gz"))
]


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


@pytest.mark.skipif(native.scanner_module() is None, reason="_scan not built")
def test_batch_size_changes_no_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same Trace whatever the batch size: the traces that span several batches of the
    default size (the corpus's) with the old size (65536) and small batches, and the three
    largest sample traces cut into several small batches (so that the property is checked
    in a clone without the corpus too)."""
    events = {p: load_trace(p, cache=False).stats.events_in for p in REAL}
    big = [p for p, n in events.items() if n > native.BATCH_EVENTS]
    samples = sorted((p for p in REAL if p.is_relative_to(SAMPLES)), key=events.__getitem__)
    checks = [(p, (65536, 5000)) for p in big] + [(p, (1000, 777)) for p in samples[-3:]]
    assert all(events[p] > min(sizes) for p, sizes in checks) and checks
    for path, sizes in checks:
        default = load_trace(path, cache=False)
        for size in sizes:
            with monkeypatch.context() as patch:
                patch.setattr(native, "BATCH_EVENTS", size)
                assert_same_trace(load_trace(path, cache=False), default)


def _assert_same_regions(fast: pd.DataFrame, general: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(fast, general, check_exact=True)
    for column in fast.columns:
        if isinstance(fast[column].dtype, pd.CategoricalDtype):
            want = general[column].cat.categories
            assert fast[column].cat.categories.dtype == want.dtype, column
            assert list(fast[column].cat.categories) == list(want), column
            np.testing.assert_array_equal(fast[column].cat.codes, general[column].cat.codes)


def test_region_table_equals_the_general_build_on_real_traces() -> None:
    with_regions = 0
    for path in REAL:
        trace = load_trace(path, cache=False)
        general = regions._region_table_general(trace.ops, trace.kernels)
        _assert_same_regions(regions.region_table(trace.ops, trace.kernels), general)
        _assert_same_regions(trace.regions, general)
        with_regions += len(general) > 0
        # the kernels credited to one kind's regions are at most the kernels measured
        for _, part in trace.regions.groupby("kind", observed=True):
            assert part["kernel_count"].sum() <= len(trace.kernels)
            assert part["kernel_time_us"].sum() <= trace.kernels["excl_dur_us"].sum() + 1e-6
    assert with_regions >= 5


def _region_events() -> list[dict]:
    """Regions out of start order over two threads, identical nested spans (ties), FX-graph
    calls with and without a key, a recompile, and kernels launched inside them."""
    return [
        op("Torch-Compiled Region: 1/0", 50, 40, tid=2),
        op("Torch-Compiled Region: 0/0", 10, 100),
        op("Torch-Compiled Region: 0/0", 10, 100),  # the same span twice: a tie
        op("## Call CompiledFxGraph fb ##", 20, 30),
        op("## Call CompiledFxGraph None ##", 55, 10, tid=2),
        op("## Call CompiledFxGraph aa ##", 10, 100),
        op("Torch-Compiled Region: 0/1", 150, 20),
        op("CompiledFunction", 60, 5, tid=2),
        op("CompiledFunctionBackward", 200, 5),
        launch("cudaLaunchKernel", 25, 2, 1),
        launch("cudaLaunchKernel", 56, 2, 2, tid=2),
        launch("cudaLaunchKernel", 155, 2, 3),
        launch("cudaLaunchKernel", 300, 2, 4),
        kernel("k1", 30, 4, 1),
        kernel("k2", 60, 4, 2),
        kernel("k3", 160, 4, 3),
        kernel("k4", 310, 4, 4),
    ]


@pytest.mark.parametrize(
    "keep",
    [
        pytest.param(lambda e: True, id="all"),
        pytest.param(lambda e: "CompiledFxGraph" not in e["name"], id="no-graph-keys"),
        pytest.param(lambda e: "None" not in e["name"], id="keys-only"),
        pytest.param(lambda e: e["name"] != "Torch-Compiled Region: 0/0", id="no-ties"),
        pytest.param(lambda e: e.get("cat") != "kernel", id="no-kernels"),
        pytest.param(lambda e: "Compiled" not in e["name"], id="no-regions"),
    ],
)
def test_region_table_equals_the_general_build_on_made_traces(
    tmp_path: Path, keep: Callable[[dict], bool]
) -> None:
    path = write_trace(tmp_path / "regions.json", [e for e in _region_events() if keep(e)])
    trace = load_trace(path, cache=False)
    general = regions._region_table_general(trace.ops, trace.kernels)
    _assert_same_regions(regions.region_table(trace.ops, trace.kernels), general)
    _assert_same_regions(trace.regions, general)


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


FACTORIZED = sorted(SAMPLES.glob("*/*.pt.trace.json*"))[:8] + corpus_files()[:8]


@pytest.mark.parametrize("path", FACTORIZED, ids=lambda p: p.name)
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
