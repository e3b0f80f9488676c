"""The trace cache's NumPy table store (traceviz/table_store.py, Trace.save / load_cache):
every real trace reads back exactly as parsed, dtypes, categories and NA included; the
hand-made corners (empty tables, unused or "" categories, non-ASCII, NA) too; a damaged file is
a TraceFormatError naming the directory; and no pyarrow anywhere on the way.

The automatic parse cache (traceviz/parse/cache.py): a second load of an unchanged trace is
read back from the cache, identical to a fresh parse; a changed file, another version, a
corrupt entry, concurrent runs and a full cache are all handled without an error. The one entry
writer both caches use (publish_entry / discard_entry): an entry appears whole or not at all. The
caches' one directory rule and names (traceviz.cache_paths), importable without the parser."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import traceviz
import traceviz.parse as parse_pkg
from tests.conftest import CORPUS, REPO, SAMPLES, corpus_params, kernel, launch, op, write_trace
from traceviz import cache_paths, report_cache, settings, table_store
from traceviz.commands import output_cache
from traceviz.errors import TraceFormatError, UsageError
from traceviz.parse import cache
from traceviz.parse.cache import ENTRY_FILE, discard_entry, publish_entry
from traceviz.trace import CACHE_MARKER, Trace

SAMPLE_FILES = sorted([*SAMPLES.rglob("*.pt.trace.json.gz"), *SAMPLES.rglob("*.profile.json")])


def assert_identical(read: pd.DataFrame, written: pd.DataFrame, what: str = "") -> None:
    """Same columns in order, same dtypes (a categorical's categories, their order and their
    own dtype too), same values, NaN and NA."""
    assert list(read.columns) == list(written.columns), what
    for column in written.columns:
        a, b = read[column].dtype, written[column].dtype
        assert type(a) is type(b) and str(a) == str(b), (what, column, a, b)
        if isinstance(b, pd.CategoricalDtype):
            assert isinstance(a, pd.CategoricalDtype)
            assert a.categories.dtype == b.categories.dtype, (what, column)
            assert a.categories.tolist() == b.categories.tolist(), (what, column)
            assert a.ordered == b.ordered, (what, column)
    pd.testing.assert_frame_equal(
        read,
        written,
        check_dtype=True,
        check_categorical=True,
        check_exact=True,
        check_index_type=True,
        check_column_type=True,
        obj=what or "table",
    )


def assert_same_trace(read: Trace, written: Trace) -> None:
    for name, table in written.tables().items():
        assert_identical(read.tables()[name], table, name)
    assert read.meta == written.meta
    assert read.stats == written.stats


def round_trip(table: pd.DataFrame, tmp_path: Path) -> pd.DataFrame:
    spec = table_store.write_table(tmp_path / "t.npz", table, name="t")
    return table_store.read_table(tmp_path / "t.npz", json.loads(json.dumps(spec)))


def assert_reader_agrees_with_np_load(directory: Path) -> None:
    """The store's own member reader gives what ``np.load`` gives, member for member."""
    for file in sorted(directory.glob("*.npz")):
        with open(file, "rb") as handle, np.load(file, allow_pickle=False) as npz:
            archive = table_store._Archive(handle)
            for key in npz.files:
                ours, reference = archive[key], npz[key]
                assert ours.dtype == reference.dtype, (file.name, key)
                np.testing.assert_array_equal(ours, reference, strict=True)


# --- every real trace ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    corpus_params() + [pytest.param(p, id=str(p.relative_to(SAMPLES))) for p in SAMPLE_FILES],
)
def test_every_real_trace_reads_back_exactly(path: Path, tmp_path: Path) -> None:
    try:
        trace = traceviz.load(path, cache=False)
    except TraceFormatError:
        pytest.skip(f"{path.name} is deliberately unreadable: nothing to save")
    directory = trace.save(tmp_path / "cache")
    assert sorted(f.name for f in directory.iterdir()) == sorted(
        [CACHE_MARKER, *(f"{name}.npz" for name in trace.tables())]
    )
    assert_same_trace(traceviz.load(directory), trace)
    assert_reader_agrees_with_np_load(directory)


def test_the_sample_set_is_there() -> None:
    """The parametrised test above must not pass by having nothing to run."""
    assert len(SAMPLE_FILES) >= 30


# --- hand-made corners -----------------------------------------------------------------------


def _str_categorical(values: list[Any], categories: list[str], dtype: Any = "str") -> pd.Series:
    cats = pd.Index(categories, dtype=dtype)
    return pd.Series(pd.Categorical(values, categories=cats))


HAND_MADE: dict[str, pd.DataFrame] = {
    "zero rows, categories kept": pd.DataFrame(
        {
            "name": _str_categorical([], ["b", "a"]),
            "bare": pd.Series(pd.Categorical([], categories=pd.Index([], dtype=object))),
            "bare_str": _str_categorical([], []),
            "n": pd.Series([], dtype="Int64"),
            "x": pd.Series([], dtype="float64"),
            "flag": pd.Series([], dtype="bool"),
        }
    ),
    "one row": pd.DataFrame(
        {
            "name": _str_categorical(["k"], ["k"]),
            "n": pd.array([7], dtype="Int32"),
            "x": [1.5],
            "flag": [True],
        }
    ),
    "NA and NaN": pd.DataFrame(
        {
            "i64": pd.array([1, None, -(2**63), 2**63 - 1], dtype="Int64"),
            "i32": pd.array([None, None, 3, -(2**31)], dtype="Int32"),
            "f64": [np.nan, 1.0, -0.0, np.inf],
            "nf": pd.array([None, 1.25, None, 0.0], dtype="Float64"),
            "nb": pd.array([True, None, False, None], dtype="boolean"),
            "cat_nan": _str_categorical(["a", None, "b", None], ["a", "b"]),
        }
    ),
    "odd strings": pd.DataFrame(
        {
            "name": _str_categorical(
                ["", "naïve", "核函数", "🚀 x", "\x00nul", "k" * 10_000, ""],
                ["k" * 10_000, "", "naïve", "核函数", "🚀 x", "\x00nul", "unused"],
            ),
            # Lone surrogates (a JSON "\udc80" escape) fit object categories, not Arrow strings.
            "obj": pd.Series(
                pd.Categorical.from_codes(
                    [1, 2, 3, 0, 2, -1, 1],
                    categories=pd.Index(["ß", "é", "", "\udc80", "z"], dtype=object),
                )
            ),
        }
    ),
    "categories of other kinds": pd.DataFrame(
        {
            "ordered": pd.Series(pd.Categorical(["lo", "hi"], ["lo", "mid", "hi"], ordered=True)),
            "ints": pd.Series(pd.Categorical([3, 1, 3], categories=[3, 2, 1])),
            "floats": pd.Series(pd.Categorical([0.5, None, 2.0], categories=[2.0, 0.5])),
            "python_str": _str_categorical(
                ["x", "y", "x"], ["y", "x"], pd.StringDtype("python", na_value=np.nan)
            ),
            "string_na": _str_categorical(["x", None, "x"], ["x"], pd.StringDtype("python")),
        }
    ),
    "plain numpy": pd.DataFrame(
        {
            "i8": np.array([-1, 2, 3], dtype=np.int8),
            "u64": np.array([0, 2**64 - 1, 5], dtype=np.uint64),
            "f32": np.array([0.1, np.nan, 3], dtype=np.float32),
            "b": np.array([True, False, True]),
            "name with / and ü": [1, 2, 3],
        }
    ),
    "no columns": pd.DataFrame(index=pd.RangeIndex(4)),
}


@pytest.mark.parametrize("case", list(HAND_MADE))
def test_hand_made_tables_read_back_exactly(case: str, tmp_path: Path) -> None:
    table = HAND_MADE[case]
    assert_identical(round_trip(table, tmp_path), table, case)
    assert_reader_agrees_with_np_load(tmp_path)


def test_many_categories_with_many_rows(tmp_path: Path) -> None:
    """Codes of int16 and int32 (more than 127 / 32767 categories), non-ASCII among them."""
    rng = np.random.default_rng(0)
    for count in (300, 40_000):
        labels = [f"kernel_{i}_{'é' if i % 7 == 0 else ''}" for i in range(count)]
        codes = rng.integers(-1, count, size=100_000)
        table = pd.DataFrame(
            {"name": pd.Categorical.from_codes(codes, categories=pd.Index(labels, dtype="str"))}
        )
        assert_identical(round_trip(table, tmp_path), table, str(count))


def test_values_under_na_need_not_survive_but_na_does(tmp_path: Path) -> None:
    """Only the mask decides NA: a column without NA stores no mask at all."""
    table = pd.DataFrame({"full": pd.array([1, 2], dtype="Int64"), "gaps": pd.array([None, 2])})
    spec = table_store.write_table(tmp_path / "t.npz", table, name="t")
    assert [c["mask"] for c in spec["columns"]] == [False, True]
    with np.load(tmp_path / "t.npz") as npz:
        assert sorted(npz.files) == ["0", "1", "1.mask"]
    assert_identical(table_store.read_table(tmp_path / "t.npz", spec), table)


UNSUPPORTED: dict[str, pd.DataFrame] = {
    "object": pd.DataFrame({"bad": pd.Series(["a", "b"], dtype=object)}),
    "str": pd.DataFrame({"bad": pd.Series(["a", "b"], dtype="str")}),
    "datetime": pd.DataFrame({"bad": pd.to_datetime(["2024-01-01", "2024-01-02"])}),
    "mixed categories": pd.DataFrame({"bad": pd.Categorical(["a", 1])}),
    "complex": pd.DataFrame({"bad": np.array([1j, 2j])}),
}


@pytest.mark.parametrize("case", list(UNSUPPORTED))
def test_a_dtype_the_store_cannot_keep_is_an_error_naming_table_and_column(
    case: str, tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match=r"table kernels, column 'bad'"):
        table_store.write_table(tmp_path / "t.npz", UNSUPPORTED[case], name="kernels")


def test_bad_column_names_are_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="duplicate column"):
        table_store.write_table(
            tmp_path / "t.npz", pd.DataFrame([[1, 2]], columns=["a", "a"]), name="t"
        )
    with pytest.raises(ValueError, match="not a string"):
        table_store.write_table(tmp_path / "t.npz", pd.DataFrame({0: [1]}), name="t")


def test_trace_save_names_the_table_and_column_it_cannot_keep(tmp_path: Path) -> None:
    trace = _small_trace(tmp_path)
    ops = trace.ops.assign(extra=pd.Series(["x"] * len(trace.ops), dtype=object))
    broken = Trace(**{**_fields(trace), "ops": ops})
    with pytest.raises(ValueError, match=r"table ops, column 'extra'"):
        broken.save(tmp_path / "cache")


def _npz_with(tmp_path: Path, members: dict[str, bytes]) -> Path:
    path = tmp_path / "hand.npz"
    with zipfile.ZipFile(path, "w") as archive:
        for key, data in members.items():
            archive.writestr(f"{key}.npy", data)
    return path


def _npy(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


def test_a_header_spelt_otherwise_is_read_by_numpy(tmp_path: Path) -> None:
    """Another NumPy may space the .npy header otherwise: the reader falls back to NumPy's."""
    plain = _npy(np.arange(3, dtype=np.int64))
    spelt = plain.replace(b"'shape': (3,), }", b"'shape':(3,)   }")
    assert spelt != plain and len(spelt) == len(plain)
    two_d = _npy(np.zeros((2, 2)))
    path = _npz_with(tmp_path, {"0": spelt, "1": two_d, "2": _npy(np.array(["a"]))})
    with open(path, "rb") as handle:
        archive = table_store._Archive(handle)
        np.testing.assert_array_equal(archive["0"], np.arange(3), strict=True)
        with pytest.raises(ValueError, match=r"not a 1-D array of numbers"):
            archive["1"]
        with pytest.raises(ValueError, match=r"not a 1-D array of numbers"):
            archive["2"]
        with pytest.raises(KeyError):
            archive["3"]


def test_a_compressed_member_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "packed.npz"
    np.savez_compressed(path, **{"0": np.arange(3)})
    spec = {"format": 1, "rows": 3, "columns": [{"name": "a", "kind": "numpy", "dtype": "<i8"}]}
    with pytest.raises(TraceFormatError, match="member 0 is compressed"):
        table_store.read_table(path, spec)


# --- damage ----------------------------------------------------------------------------------


def _small_trace(tmp_path: Path) -> Trace:
    events = [
        op("aten::add", 0, 10),
        launch("cudaLaunchKernel", 1, 2, correlation=1),
        kernel("add_kernel", 5, 3, correlation=1),
    ]
    return traceviz.load(write_trace(tmp_path / "t.json", events), cache=False)


def _fields(trace: Trace) -> dict[str, Any]:
    return {**trace.tables(), "meta": trace.meta, "stats": trace.stats}


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    """A real trace (CUDA graphs: every table has rows) saved as a cache directory."""
    path = CORPUS / "nvidia" / "a100_compiled_cudagraph_train_2023.json.gz"
    if not path.exists():
        pytest.skip(f"{path.name} not found in the corpus at {CORPUS}")
    return traceviz.load(path, cache=False).save(tmp_path / "cache")


def _damage_message(directory: Path) -> str:
    with pytest.raises(TraceFormatError) as info:
        traceviz.load(directory)
    assert info.value.path == str(directory)
    message = str(info.value)
    assert "\n" not in message
    return message


def _truncate(file: Path) -> None:
    file.write_bytes(file.read_bytes()[: file.stat().st_size // 2])


def _flip_a_value_byte(file: Path) -> None:
    """A flipped byte in a column's values (not in any header): its CRC-32 fails."""
    with zipfile.ZipFile(file) as archive:
        info = max(archive.infolist(), key=lambda i: i.file_size)
    data = bytearray(file.read_bytes())
    data[info.header_offset + 200 + info.file_size // 2] ^= 0xFF
    file.write_bytes(bytes(data))


def _write_npy(file: Path) -> None:
    with open(file, "wb") as out:
        np.save(out, np.arange(3))


@pytest.mark.parametrize(
    ("table", "damage", "message"),
    [
        ("kernels", _truncate, "cache table kernels: "),
        ("ops", _flip_a_value_byte, "CRC-32"),
        ("launches", lambda f: f.write_bytes(b""), "cache table launches: unreadable table"),
        ("launches", lambda f: f.write_bytes(b"not a zip"), "launches: unreadable table"),
        ("launches", lambda f: f.write_bytes(b"PK\x03\x04junk"), "launches: unreadable table"),
        ("steps", _write_npy, "cache table steps: "),
        ("regions", Path.unlink, "cache table regions: table file is missing"),
    ],
    ids=["truncated", "flipped-byte", "empty", "not-a-zip", "bad-zip", "npy", "missing"],
)
def test_a_damaged_table_file_is_named(
    saved: Path, table: str, damage: Callable[[Path], Any], message: str
) -> None:
    damage(saved / f"{table}.npz")
    assert message in _damage_message(saved)


def _edit_header(directory: Path, edit: Any) -> None:
    header = json.loads((directory / CACHE_MARKER).read_text())
    edit(header)
    (directory / CACHE_MARKER).write_text(json.dumps(header))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda h: h["tables"]["kernels"]["columns"].append(
                {"name": "ghost", "kind": "numpy", "dtype": "<f8"}
            ),
            r"cache table kernels: .* is missing",
        ),
        (
            lambda h: h["tables"]["ops"]["columns"].pop(),
            "cache table ops: table is missing declared columns",
        ),
        (
            lambda h: h["tables"]["launches"].update(rows=h["tables"]["launches"]["rows"] + 1),
            "cache table launches: ",
        ),
        (
            lambda h: h["tables"].update(memory=["not", "a", "dict"]),
            "cache table memory: unreadable table",
        ),
        (lambda h: h.pop("tables"), "trace cache header: 'tables' is missing"),
    ],
    ids=["extra-column", "missing-column", "row-count", "mangled-columns", "no-tables"],
)
def test_a_damaged_header_is_named(saved: Path, edit: Callable[[Any], Any], message: str) -> None:
    _edit_header(saved, edit)
    assert re.search(message, _damage_message(saved))


def test_an_old_parquet_cache_says_its_format(saved: Path) -> None:
    """What an old (format 3, Parquet) directory gives: the clear version error."""
    _edit_header(saved, lambda header: header.update(format_version=3))
    for file in saved.glob("*.npz"):
        file.rename(file.with_suffix(".parquet"))
    message = _damage_message(saved)
    assert "trace cache format 3 is not 4; delete the directory" in message


# --- no pyarrow ------------------------------------------------------------------------------

NO_PYARROW = """
import sys
sys.modules["pyarrow"] = None  # importing it now fails, as where it is not installed
from pathlib import Path
import pandas as pd
import traceviz
from tests.test_table_store import assert_same_trace
source, saved_elsewhere, out = (Path(a) for a in sys.argv[1:4])
trace = traceviz.load(source, cache=False)
assert_same_trace(traceviz.load(trace.save(out)), trace)
# A cache saved where pyarrow was installed reads back as this interpreter would parse it.
assert_same_trace(traceviz.load(saved_elsewhere), trace)
assert trace.kernels["name"].dtype.categories.dtype.storage == "python"
leaked = [m for m in sys.modules if m.startswith("pyarrow") and sys.modules[m] is not None]
assert not leaked, leaked
print("ok", len(trace.kernels))
"""


def test_save_and_load_work_without_pyarrow(tmp_path: Path) -> None:
    path = CORPUS / "nvidia" / "a100_compiled_cudagraph_train_2023.json.gz"
    if not path.exists():
        pytest.skip(f"{path.name} not found in the corpus at {CORPUS}")
    here = traceviz.load(path, cache=False).save(tmp_path / "here")
    done = subprocess.run(
        [sys.executable, "-c", NO_PYARROW, str(path), str(here), str(tmp_path / "there")],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["ok", str(len(traceviz.load(here).kernels))]


# --- the automatic parse cache (traceviz/parse/cache.py) ----------------------------------


def _no_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    """From here on, a parse of JSON fails the test: loads must come from the cache."""

    def refuse(*_: object) -> None:
        raise AssertionError("parsed the JSON again instead of reading the cache")

    monkeypatch.setattr(parse_pkg, "_parse", refuse)


def _entries(root: Path) -> list[Path]:
    """The parse cache's entries in ``root`` (not the report and output caches' that share it:
    a command writes those too)."""
    others = (report_cache.ENTRY_PREFIX, output_cache.ENTRY_PREFIX)
    return sorted(
        p
        for p in root.iterdir()
        if (p / cache.ENTRY_FILE).is_file() and not p.name.startswith(others)
    )


# Every corpus trace (CUDA graphs, eager, legacy bare array, ROCm, CPU only), the sample runs'
# traces and another reader's (parse/readers.py) ONNX Runtime profile.
REAL = [
    *corpus_params(),
    *(
        pytest.param(p, id=f"{run}/{p.name}")
        for run in ("pointwise", "mlp", "graph-break")
        for p in sorted((SAMPLES / run).glob("*.pt.trace.json.gz"))
    ),
    REPO / "tests" / "data" / "ort_all.profile.json",
]


@pytest.mark.parametrize("path", REAL)
def test_second_load_is_the_cache_and_identical(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache, "MIN_FILE_BYTES", 0)  # small traces are cached too
    try:
        fresh = traceviz.load(path, cache=False)
    except TraceFormatError:
        pytest.skip(f"{path.name} is deliberately unreadable: nothing to cache")
    first = traceviz.load(path, cache=tmp_path)
    assert len(_entries(tmp_path)) == 1
    _no_parse(monkeypatch)
    again = traceviz.load(path, cache=tmp_path)
    assert_same_trace(first, fresh)
    assert_same_trace(again, fresh)
    # Every event still accounted for, read back from the cache as it was parsed.
    assert again.stats.events_in == again.stats.accounted > 0


def _small_trace_file(path: Path, n: int = 3) -> Path:
    events = [op("aten::add", 10.0 * i, 5.0, **{"External id": i + 1}) for i in range(n)]
    events += [
        launch("cudaLaunchKernel", 12.0, 1.0, 7, **{"External id": 1}),
        kernel("k", 20.0, 2.0, 7),
    ]
    return write_trace(path, events)


@pytest.fixture
def small(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(cache, "MIN_FILE_BYTES", 0)
    return _small_trace_file(tmp_path / "t.json")


def test_a_changed_file_is_parsed_again(small: Path, tmp_path: Path) -> None:
    root = tmp_path / "c"
    assert len(traceviz.load(small, cache=root).ops) == 3
    stat = small.stat()
    _small_trace_file(small, n=5)
    os.utime(small, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert len(traceviz.load(small, cache=root).ops) == 5
    assert len(_entries(root)) == 2  # the old entry waits for eviction


def test_the_key_holds_path_size_mtime_version_and_parser(
    small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = cache.Entry.of(small, tmp_path)
    assert entry is not None
    stat = small.stat()
    assert entry.key["path"] == str(small.resolve())
    assert (entry.key["size"], entry.key["mtime_ns"]) == (stat.st_size, stat.st_mtime_ns)
    assert entry.key["traceviz"] == traceviz.__version__
    assert entry.key["parser"]
    # Another spelling of the same file is the same entry, and the trace names the spelling.
    monkeypatch.chdir(small.parent)
    assert cache.Entry.of(Path(small.name), tmp_path) == entry
    traceviz.load(small, cache=tmp_path)
    assert traceviz.load(Path(small.name), cache=tmp_path).meta.source == small.name


def test_another_version_misses(
    small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    traceviz.load(small, cache=tmp_path)
    monkeypatch.setattr(cache, "__version__", "999.0")
    entry = cache.Entry.of(small, tmp_path)
    assert entry is not None and not entry.directory.exists()
    assert entry.read() is None


def test_off_writes_nothing(small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "c"
    monkeypatch.setenv(settings.CACHE_DIR_ENV, str(root))
    traceviz.load(small, cache=False)
    assert not root.exists()
    monkeypatch.setenv(settings.NO_CACHE_ENV, "1")
    traceviz.load(small)
    assert not root.exists()
    traceviz.load(small, cache=root)  # an explicit directory wins over the variable
    assert len(_entries(root)) == 1
    monkeypatch.setenv(settings.NO_CACHE_ENV, "0")
    assert cache.cache_dir() == root


def test_small_files_are_not_cached(tmp_path: Path) -> None:
    path = _small_trace_file(tmp_path / "t.json")
    assert path.stat().st_size < cache.MIN_FILE_BYTES
    traceviz.load(path, cache=tmp_path / "c")
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize(
    "damage", ["table", "truncated", "old-format", "header", "entry", "empty-dir"]
)
def test_a_damaged_entry_is_ignored_and_rewritten(
    small: Path, tmp_path: Path, damage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each error of a damaged or old trace cache (tested above) is a miss here: parse again,
    write again."""
    root = tmp_path / "c"
    fresh = traceviz.load(small, cache=root)
    entry = cache.Entry.of(small, root)
    assert entry is not None
    ops = entry.directory / "ops.npz"
    if damage == "table":
        ops.write_bytes(b"PK\x03\x04 not really")
    elif damage == "truncated":
        ops.write_bytes(ops.read_bytes()[:100])
    elif damage == "old-format":
        _edit_header(entry.directory, lambda header: header.update(format_version=3))
    elif damage == "header":
        (entry.directory / "traceviz-trace.json").write_text("{")
    elif damage == "entry":
        (entry.directory / cache.ENTRY_FILE).write_text("[]")
    else:
        for file in entry.directory.iterdir():
            file.unlink()
    assert_same_trace(traceviz.load(small, cache=root), fresh)  # no error
    _no_parse(monkeypatch)
    assert_same_trace(traceviz.load(small, cache=root), fresh)  # and rewritten whole


def test_max_bytes_still_applies_to_a_cached_trace(small: Path, tmp_path: Path) -> None:
    traceviz.load(small, cache=tmp_path)
    size = small.stat().st_size
    with pytest.raises(TraceFormatError, match="more than the limit"):
        traceviz.load(small, cache=tmp_path, max_bytes=size - 1)
    assert len(traceviz.load(small, cache=tmp_path, max_bytes=size).ops) == 3


def test_an_unwritable_cache_is_no_error_and_a_file_as_cache_a_usage_error(
    small: Path, tmp_path: Path
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert len(traceviz.load(small, cache=blocker / "sub").ops) == 3
    with pytest.raises(UsageError, match="not a directory"):
        traceviz.load(small, cache=blocker)
    with pytest.raises(UsageError, match="True, False or a directory"):
        traceviz.load(small, cache=3)  # type: ignore[arg-type]


def test_eviction_removes_least_recently_used_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache, "MIN_FILE_BYTES", 0)
    root = tmp_path / "c"
    paths = [_small_trace_file(tmp_path / f"t{i}.json", n=i + 1) for i in range(3)]
    for i, path in enumerate(paths):
        traceviz.load(path, cache=root)
        entry = cache.Entry.of(path, root)
        assert entry is not None
        os.utime(entry.directory / cache.ENTRY_FILE, (1000 + i, 1000 + i))
    traceviz.load(paths[0], cache=root)  # a hit: now the most recently used
    sizes = {p: sum(f.stat().st_size for f in p.iterdir()) for p in _entries(root)}
    removed = cache.evict(root, limit=sum(sizes.values()) - 1)
    oldest = cache.Entry.of(paths[1], root)
    assert oldest is not None and removed == [oldest.directory]
    assert cache.evict(root, limit=0, keep=_entries(root)[0]) != []
    assert len(_entries(root)) == 1
    # The bound from the environment applies after each write.
    monkeypatch.setenv(settings.MAX_CACHE_BYTES_ENV, "1")
    traceviz.load(paths[2], cache=root)
    assert len(_entries(root)) == 1


def test_bad_size_bound_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(settings.MAX_CACHE_BYTES_ENV, "lots")
    with pytest.raises(UsageError, match=settings.MAX_CACHE_BYTES_ENV):
        cache.evict(tmp_path)


CONCURRENT = """
import sys, traceviz
from traceviz.parse import cache
from traceviz.parse.cache import ENTRY_FILE, discard_entry, publish_entry
cache.MIN_FILE_BYTES = 0
trace = traceviz.load(sys.argv[1], cache=sys.argv[2])
print(trace.stats.events_in, len(trace.kernels))
"""


def test_concurrent_runs_share_one_entry(tmp_path: Path) -> None:
    path = SAMPLES / "mlp" / "eager.pt.trace.json.gz"
    root = tmp_path / "c"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CONCURRENT, str(path), str(root)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )
        for _ in range(4)
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outputs]
    assert len({out for out, _ in outputs}) == 1
    assert len(_entries(root)) == 1
    assert not [p for p in root.iterdir() if p.name.startswith(".tmp-")]
    header = json.loads((_entries(root)[0] / cache.ENTRY_FILE).read_text())
    assert header["key"]["path"] == str(path.resolve())


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "traceviz.cli", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def test_cli_cache_options(tmp_path: Path) -> None:
    path = CORPUS / "nvidia" / "a100_eager_nccl_rank.json.gz"
    if not path.exists():
        pytest.skip(f"{path.name} not found in the corpus at {CORPUS}")
    root = tmp_path / "c"
    done = _cli("summary", str(path), "--no-cache", "--cache-dir", str(root))
    assert done.returncode == 0, done.stderr
    assert not root.exists()
    first = _cli("summary", str(path), "--cache-dir", str(root), env={settings.NO_CACHE_ENV: "1"})
    assert first.returncode == 0, first.stderr
    assert len(_entries(root)) == 1
    second = _cli("summary", str(path), "--cache-dir", str(root))
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout
    bad = _cli("summary", str(path), "--cache-dir", str(path))
    assert bad.returncode == 2
    assert "--cache-dir" in bad.stderr and "not a directory" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


# --- the entry writer ---------------------------------------------------------------------


def _fill(text: str) -> Callable[[Path], None]:
    def fill(temp: Path) -> None:
        (temp / "payload").write_text(text)
        (temp / ENTRY_FILE).write_text("{}")

    return fill


def test_an_entry_is_published_whole_and_no_temporary_directory_is_left(tmp_path: Path) -> None:
    entry = tmp_path / "root" / "abc"
    assert publish_entry(entry, _fill("one"))
    assert (entry / "payload").read_text() == "one"
    assert sorted(p.name for p in entry.parent.iterdir()) == ["abc"]


def test_a_failing_fill_is_false_and_leaves_nothing(tmp_path: Path) -> None:
    def fill(temp: Path) -> None:
        (temp / "payload").write_text("half")
        raise RuntimeError("cannot pickle")

    entry = tmp_path / "abc"
    assert publish_entry(entry, fill) is False
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("whole", [True, False], ids=["kept", "damaged-replaced"])
def test_an_entry_in_the_way_is_kept_when_whole_else_replaced(tmp_path: Path, whole: bool) -> None:
    entry = tmp_path / "abc"
    if whole:  # written first by another run
        assert publish_entry(entry, _fill("first"))
    else:  # half written: no entry.json
        entry.mkdir()
        (entry / "payload").write_text("half written")
    assert publish_entry(entry, _fill("second"))
    assert (entry / "payload").read_text() == ("first" if whole else "second")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["abc"]


def test_an_unwritable_place_is_false_not_an_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    assert publish_entry(blocker / "abc", _fill("x")) is False


def test_discard_removes_a_directory_and_ignores_one_already_gone(tmp_path: Path) -> None:
    entry = tmp_path / "abc"
    assert publish_entry(entry, _fill("x"))
    discard_entry(entry)
    discard_entry(entry)
    assert list(tmp_path.iterdir()) == []


# --- the directory rule (traceviz.cache_paths) ---------------------------------------------


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("TRACEVIZ_CACHE_DIR", "TRACEVIZ_NO_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "~/.cache/traceviz"),
        ({"TRACEVIZ_CACHE_DIR": "{tmp}/here"}, "{tmp}/here"),
        ({"TRACEVIZ_CACHE_DIR": "~/somewhere"}, "~/somewhere"),
        ({"XDG_CACHE_HOME": "{tmp}/xdg"}, "{tmp}/xdg/traceviz"),
        ({"TRACEVIZ_NO_CACHE": "1", "TRACEVIZ_CACHE_DIR": "{tmp}/here"}, None),
        ({"TRACEVIZ_NO_CACHE": "0"}, "~/.cache/traceviz"),
        ({"TRACEVIZ_NO_CACHE": " Off "}, "~/.cache/traceviz"),
        ({"TRACEVIZ_NO_CACHE": "yes"}, None),
        ({"TRACEVIZ_NO_CACHE": "false", "XDG_CACHE_HOME": "{tmp}/xdg"}, "{tmp}/xdg/traceviz"),
    ],
)
def test_the_default_cache_directory(
    env: dict[str, str], expected: str | None, tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    for name, value in env.items():
        clean_env.setenv(name, value.format(tmp=tmp_path))
    want = None if expected is None else Path(expected.format(tmp=tmp_path)).expanduser()
    assert cache_paths.cache_dir() == want
    assert cache_paths.cache_dir(None) == want
    assert cache_paths.cache_dir(False) is None
    assert cache_paths.cache_dir(tmp_path / "given") == tmp_path / "given"  # env or not


def test_a_file_in_the_way_is_a_usage_error_naming_it(
    tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    with pytest.raises(UsageError, match=f"^{re.escape(f'cache {a_file}')} is not"):
        cache_paths.cache_dir(a_file)
    clean_env.setenv("TRACEVIZ_CACHE_DIR", str(a_file))
    with pytest.raises(UsageError, match=f"^{re.escape(f'TRACEVIZ_CACHE_DIR {a_file}')} is not"):
        cache_paths.cache_dir()
    clean_env.delenv("TRACEVIZ_CACHE_DIR")
    clean_env.setenv("XDG_CACHE_HOME", str(tmp_path))
    (tmp_path / "traceviz").write_text("x")
    with pytest.raises(
        UsageError, match=f"^{re.escape(f'the cache directory {tmp_path}/traceviz')} is not"
    ):
        cache_paths.cache_dir()
    with pytest.raises(UsageError, match="cache must be True, False or a directory"):
        cache_paths.cache_dir(3)  # type: ignore[arg-type]


def test_every_cache_uses_the_one_definition() -> None:
    """The caches' directory rule and entry file are one definition, not copies."""
    assert cache.cache_dir is cache_paths.cache_dir
    assert cache.ENTRY_FILE is report_cache.ENTRY_FILE is cache_paths.ENTRY_FILE
    assert output_cache.cache_dir is report_cache.cache_dir is cache_paths.cache_dir


def test_it_imports_nothing_heavy() -> None:
    code = (
        "import sys, traceviz.cache_paths\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('pandas', 'numpy', 'pyarrow', 'msgspec') or m.startswith('traceviz.parse')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
