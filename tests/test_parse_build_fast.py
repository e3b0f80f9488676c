"""The parse build phase made faster (issue 14, PARSE-BUILD) gives the very tables its plain code
gave (tests/parse_build_reference.py): values, dtypes, category order, category codes and even
the values under <NA>, on every corpus and sample trace and on hand-made edge cases."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tests import parse_build_reference as reference
from tests.conftest import SAMPLES, corpus_params, kernel, launch, op
from traceviz.parse import build, columns, link, load_trace, nesting, tables

SAMPLE_TRACES = sorted(SAMPLES.glob("*/*.pt.trace.json.gz")) + sorted(
    SAMPLES.glob("h200/*/*.pt.trace.json.gz")
)
REAL = [*corpus_params(), *(pytest.param(p, id=str(p.relative_to(SAMPLES))) for p in SAMPLE_TRACES)]


def assert_identical(got: pd.DataFrame, want: pd.DataFrame, what: str = "") -> None:
    """Equal to the last bit: values, dtypes, column order, category order and codes, the
    values a masked array holds under <NA>."""
    pd.testing.assert_frame_equal(got, want, check_exact=True, obj=what)
    assert type(got.index) is type(want.index)
    for column in want.columns:
        a, b = got[column].array, want[column].array
        if isinstance(b, pd.Categorical):
            assert isinstance(a, pd.Categorical), (what, column)
            assert a.categories.dtype == b.categories.dtype, (what, column)
            assert list(a.categories) == list(b.categories), (what, column)
            assert a.codes.dtype == b.codes.dtype and np.array_equal(a.codes, b.codes), column
        if isinstance(b, pd.arrays.IntegerArray):
            assert isinstance(a, pd.arrays.IntegerArray), (what, column)
            assert np.array_equal(a._data, b._data), (what, column, "values under <NA>")
            assert np.array_equal(a._mask, b._mask), (what, column)


@pytest.fixture
def linked_against_reference(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Every ``link.link_kernels`` call is also made by the reference on copies of its
    inputs, and both results compared; yields the list of kernel counts linked."""
    fast = link.link_kernels
    calls: list[int] = []

    def both(kernels: pd.DataFrame, launches: pd.DataFrame, ops: pd.DataFrame) -> None:
        want_k, want_l, want_o = (t.copy(deep=True) for t in (kernels, launches, ops))
        reference.link_kernels(want_k, want_l, want_o)
        fast(kernels, launches, ops)
        assert_identical(kernels, want_k, "kernels")
        assert_identical(launches, want_l, "launches")
        assert_identical(ops, want_o, "ops")
        calls.append(len(kernels))

    monkeypatch.setattr(link, "link_kernels", both)
    yield calls


@pytest.mark.parametrize("path", REAL)
def test_link_equals_reference_on_real_traces(
    path: Path | None, linked_against_reference: list[int]
) -> None:
    assert path is not None
    load_trace(path, cache=False)
    assert linked_against_reference


@pytest.fixture
def tables_against_reference(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every ``tables.op_table`` and ``tables.kernel_table`` call is also made by the
    reference (from the same columns: the builders only read them) and the frames compared;
    yields the names of the builders called."""
    calls: list[str] = []
    fast_ops, fast_kernels = tables.op_table, tables.kernel_table

    def ops(cols: Any, threads: pd.Categorical) -> pd.DataFrame:
        got = fast_ops(cols, threads)
        assert_identical(got, reference.op_table(cols, threads), "ops")
        calls.append("ops")
        return got

    def kernels(cols: Any) -> pd.DataFrame:
        got = fast_kernels(cols)
        assert_identical(got, reference.kernel_table(cols), "kernels")
        calls.append("kernels")
        return got

    monkeypatch.setattr(tables, "op_table", ops)
    monkeypatch.setattr(tables, "kernel_table", kernels)
    yield calls


@pytest.fixture
def copy_kinds_against_reference(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Every ``tables._copy_kinds`` call is also made by the reference; yields the number of
    copies seen per call."""
    fast = tables._copy_kinds
    calls: list[int] = []

    def both(is_copy: np.ndarray, events: Any, codes: np.ndarray, names: list[Any]) -> list[Any]:
        got = fast(is_copy, events, codes, names)
        assert got == reference.copy_kinds(is_copy, events)
        calls.append(int(is_copy.sum()))
        return got

    monkeypatch.setattr(tables, "_copy_kinds", both)
    yield calls


@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
@pytest.mark.parametrize("path", REAL)
def test_copy_kinds_equal_reference_on_real_traces(
    path: Path | None,
    native: bool,
    copy_kinds_against_reference: list[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert path is not None
    if not native:
        monkeypatch.setenv("TRACEVIZ_NATIVE", "0")
    load_trace(path, cache=False)


COPIES = [
    kernel("Memcpy HtoD (Pageable -> Device)", 1, 1, 1, cat="gpu_memcpy"),
    kernel("Memcpy DtoH (Device -> Pinned)", 2, 1, 2, cat="gpu_memcpy", kind="DtoH"),
    kernel("Memcpy DtoD (Device -> Device)", 3, 1, 3, cat="gpu_memcpy", kind="HtoP"),
    kernel("Memcpy DtoD (Device -> Device)", 4, 1, 4, cat="gpu_memcpy", kind="XtoY"),
    kernel("Memcpy PtoP", 5, 1, 5, cat="Memcpy", kind=7),
    kernel("no direction", 6, 1, 6, cat="gpu_memcpy", kind=None),
    kernel("Memcpy HtoD (Pageable -> Device)", 7, 1, 7, cat="gpu_memcpy"),
    kernel("k", 8, 1, 8),
    {**kernel("", 9, 1, 9, cat="gpu_memcpy"), "name": 12},
    {**kernel("", 10, 1, 10, cat="gpu_memcpy", kind="DtoD"), "name": None},
    {**kernel("", 11, 1, 11, cat="gpu_memcpy"), "name": ["AtoH"]},  # the Python way only
]


@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_copy_kinds_of_odd_values(
    native: bool,
    tmp_trace: Callable[..., Path],
    copy_kinds_against_reference: list[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if not native:
        monkeypatch.setenv("TRACEVIZ_NATIVE", "0")
    trace = load_trace(tmp_trace(COPIES), cache=False)
    assert copy_kinds_against_reference and sum(copy_kinds_against_reference) == 10
    column = trace.kernels.sort_values("ts_us")["copy_kind"]
    kinds = [None if pd.isna(kind) else kind for kind in column]
    assert kinds[:7] == ["HtoD", "DtoH", "HtoP", "DtoD", "PtoP", None, "HtoD"]


@pytest.mark.parametrize("path", REAL)
def test_tables_equal_reference_on_real_traces(
    path: Path | None, tables_against_reference: list[str]
) -> None:
    assert path is not None
    load_trace(path, cache=False)
    assert tables_against_reference == ["kernels", "ops"]


def _edge_traces() -> dict[str, list[dict[str, Any]]]:
    names = ["cudaLaunchKernel", "Ωlaunch", "älaunch", "Zlaunch", "\U0001f600launch", "alaunch"]
    return {
        "empty": [],
        "only-ops": [op("aten::mm", 0, 10, **{"Input Dims": [[2, 3]]})],
        "ops-tied-and-nested": [
            op("b", 0, 0),
            op("a", 0, 10, **{"Input Dims": [[1, 2]], "Input type": ["float"]}),
            op("c", 0, 10),
            op("z", 2, 3, tid=2, **{"Input Dims": []}),
            op("e", 2, 3, **{"Input Dims": [[1, 2]], "Concrete Inputs": ["", "1"]}),
            op("y", 1, 5, tid=2, cat="user_annotation"),
            op("d", 12, 1, cat="python_function"),
            op("late", -5, 1),
        ],
        "no-ops": [launch("cudaLaunchKernel", 1, 1, 5), kernel("k", 3, 1, 5)],
        "mirrored-ids": [
            op("aten::mm", 0, 10, **{"External id": 7}),
            launch("cudaLaunchKernel", 1, 1, 7, **{"External id": 7}),
            kernel("k", 3, 1, 7, **{"External id": 7}),
        ],
        "graph-replay": [
            op("aten::replay", 0, 50, **{"External id": 3}),
            launch("cudaGraphLaunch", 1, 2, 9, **{"External id": 3}),
            *(kernel(f"k{i}", 5 + i, 1, 9) for i in range(4)),
        ],
        "python-function-same-id": [
            op("f", 0, 20, cat="python_function", **{"External id": 4}),
            op("aten::add", 1, 5, **{"External id": 4}),
            launch("cudaLaunchKernel", 2, 1, 1),
            kernel("k", 4, 1, 1, **{"External id": 4}),
        ],
        "duplicate-correlations": [
            launch("cudaLaunchKernel", 1, 1, 2),
            launch("cudaLaunchKernelExC", 3, 1, 2),
            kernel("k", 5, 1, 2),
        ],
        "names-to-sort": [
            op("aten::op", 0, 100),
            *(launch(name, 1 + 2 * i, 1, 10 + i) for i, name in enumerate(names)),
            *(kernel(f"k{i}", 30 + i, 1, 10 + i) for i in range(len(names))),
            kernel("orphan", 60, 1, 99),
        ],
        "by-time-and-by-id": [
            op("aten::outer", 0, 100, **{"External id": 1}),
            op("aten::inner", 10, 20, **{"External id": 2}),
            launch("cudaLaunchKernel", 12, 1, 21, **{"External id": 2}),
            launch("cudaLaunchKernel", 40, 1, 22),
            launch("cudaLaunchKernel", 200, 1, 23),
            kernel("a", 50, 1, 21),
            kernel("b", 51, 1, 22),
            kernel("c", 201, 1, 23),
            kernel("d", 202, 1, 24, cat="gpu_memcpy"),
        ],
    }


@pytest.mark.parametrize("name", list(_edge_traces()))
def test_tables_equal_reference_on_edge_cases(
    name: str, tmp_trace: Callable[..., Path], tables_against_reference: list[str]
) -> None:
    load_trace(tmp_trace(_edge_traces()[name]), cache=False)
    assert tables_against_reference == ["kernels", "ops"]


@pytest.mark.parametrize("name", list(_edge_traces()))
def test_link_equals_reference_on_edge_cases(
    name: str, tmp_trace: Callable[..., Path], linked_against_reference: list[int]
) -> None:
    load_trace(tmp_trace(_edge_traces()[name]), cache=False)
    assert linked_against_reference


MISSING = np.iinfo(np.int64).min


@pytest.mark.parametrize("seed", range(8))
def test_lookup_equals_reference(seed: int) -> None:
    """First matching row, −1 for none and for missing, with duplicates, unsorted keys,
    missing keys and queries, and empty sides."""
    rng = np.random.default_rng(seed)
    n_keys, n_queries = (int(x) for x in rng.integers(0, 300, size=2))
    keys = rng.integers(-50, 50, size=n_keys)
    queries = rng.integers(-60, 60, size=n_queries)
    keys[rng.random(n_keys) < 0.2] = MISSING
    queries[rng.random(n_queries) < 0.2] = MISSING
    if seed % 4 == 0:
        keys.sort()  # the usual case: ids in order
    as_series = pd.Series(pd.arrays.IntegerArray(keys, keys == MISSING))
    query_series = pd.Series(pd.arrays.IntegerArray(queries, queries == MISSING))
    want = reference._lookup(as_series, query_series)
    got = link._lookup(keys, queries)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("n", [0, 1, 1000])
def test_missing_ints_is_an_all_na_array(n: int) -> None:
    want = pd.array([pd.NA] * n, dtype="Int64")
    got = tables.missing_ints(n)
    assert got.dtype == want.dtype
    assert np.array_equal(got._data, want._data) and np.array_equal(got._mask, want._mask)


@pytest.mark.parametrize("n", [0, 1, 1000])
def test_no_categories_is_a_categorical_of_nones(n: int) -> None:
    want = pd.Categorical([None] * n)
    got = tables.no_categories(n)
    assert got.dtype == want.dtype and got.categories.dtype == want.categories.dtype
    assert got.codes.dtype == want.codes.dtype and np.array_equal(got.codes, want.codes)


def test_used_sorted_is_astype_category() -> None:
    labels = ["b", "Ωx", "a", "B", "\U0001f600", "é", "", "zz", "unused"]
    column = pd.Series(pd.Categorical.from_codes([0, 1, 2, 3, 4, 5, 6, 7, -1], labels))
    rows = np.array([7, -1, 0, 1, 2, 2, 3, 4, 5, 6, 8, -1])
    got = link._used_sorted(column, rows)
    taken = reference._take(column, rows).to_numpy()
    want = pd.Series(copy.copy(taken)).astype("category").array
    assert got is not None
    assert_identical(pd.DataFrame({"x": got}), pd.DataFrame({"x": want}))
    assert link._used_sorted(column, np.array([-1, 8])) is None  # nothing used: the caller's way


@pytest.mark.parametrize("distinct", [1, 2, 126, 127, 128, 129, 300, 40000])
@pytest.mark.parametrize("empty_at", [None, 0, "middle", "last"])
def test_raw_text_of_equals_reference(distinct: int, empty_at: object) -> None:
    """The absent text ("") dropped from the categories by renumbering the codes: the same
    categories (dtype too), codes and code width as remove_categories, at the int8/int16
    boundaries and with "" first, inside, last or absent."""
    uniques = [f"[{i}, 1]".encode() for i in range(distinct)]
    if empty_at is not None:
        where = {0: 0, "middle": distinct // 2, "last": distinct}[empty_at]  # type: ignore[index]
        uniques.insert(where, b"")
    rng = np.random.default_rng(distinct)
    codes = rng.integers(-1, len(uniques), size=5000)
    got, want = columns.raw_text_of(codes, uniques), reference.raw_text_of(codes, uniques)
    assert_identical(pd.DataFrame({"x": got}), pd.DataFrame({"x": want}))


def test_raw_text_of_only_absent() -> None:
    codes = np.array([0, 0, -1])
    got, want = columns.raw_text_of(codes, [b""]), reference.raw_text_of(codes, [b""])
    assert_identical(pd.DataFrame({"x": got}), pd.DataFrame({"x": want}))


@pytest.mark.parametrize("seed", range(300))
def test_sort_order_equals_lexsort(seed: int) -> None:
    """Ties on thread and start, zero and negative durations, NaN, ±inf, -0.0, rows in time
    order or not, thread codes of every width."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 80))
    dtype = [np.int8, np.int16, np.int32, np.int64][seed % 4]
    threads = rng.integers(-1, 4, n).astype(dtype)
    if seed % 7 == 0:
        threads = threads.astype(np.int64) * 40_000  # beyond int16
    starts = rng.integers(0, 8, n).astype(float)
    durs = rng.integers(-1, 4, n).astype(float)
    for values in (starts, durs):
        pick = rng.random(n)
        values[pick < 0.05] = np.nan
        values[(pick >= 0.05) & (pick < 0.08)] = np.inf
        values[(pick >= 0.08) & (pick < 0.1)] = -0.0
        values[(pick >= 0.1) & (pick < 0.12)] = -np.inf
    if seed % 3 == 0:
        starts.sort()
    want = reference.sort_order(threads, starts, durs)
    assert np.array_equal(nesting.sort_order(threads, starts, durs), want)


def test_raw_text_of_sorts_text_as_the_reference() -> None:
    uniques = [
        '"é"',
        b"",
        '"Z"',
        '"a"',
        '"\U0001f600"',
        '"Ω"',
        '"\\u00e9"',
        "[10]",
        "[2]",
    ]
    as_bytes = [u if isinstance(u, bytes) else u.encode() for u in uniques]
    as_bytes.append(b'"\xff"')  # invalid UTF-8: decoded with replacement characters
    codes = np.arange(-1, len(as_bytes))
    got, want = columns.raw_text_of(codes, as_bytes), reference.raw_text_of(codes, as_bytes)
    assert_identical(pd.DataFrame({"x": got}), pd.DataFrame({"x": want}))


@pytest.mark.parametrize("seed", range(200))
def test_covering_equals_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    starts, ends = (rng.normal(1e15, 1e6, int(rng.integers(0, 30))) for _ in range(2))
    for values in (starts, ends):
        pick = rng.random(len(values))
        values[pick < 0.2] = np.nan
        values[(pick >= 0.2) & (pick < 0.3)] = np.inf
        values[(pick >= 0.3) & (pick < 0.35)] = -np.inf
        if seed % 5 == 0:
            values[:] = np.nan  # no finite time on this side (or at all)
    assert nesting.Timeline.covering(starts, ends) == reference.covering(starts, ends)


@pytest.mark.parametrize("seed", range(50))
def test_thread_codes_equal_reference(seed: int) -> None:
    """Threads numbered in order of first appearance, pairs of one label (7, 7.0 and "7")
    merged, pairs never seen left out."""
    rng = np.random.default_rng(seed)
    pairs: list[Any] = [(1, 7), (1, "7"), (1.0, 7.0), (2, None), ("a", 3), (None, None), (5, 5)]
    codes = rng.integers(0, len(pairs) - 1, size=int(rng.integers(0, 400)))  # (5, 5) unseen
    got, want = build._thread_codes(codes, pairs), reference.thread_codes(codes, pairs)
    assert np.array_equal(got[0], want[0]) and got[0].dtype == want[0].dtype
    assert got[1] == want[1]
