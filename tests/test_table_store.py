"""The trace cache's NumPy table store (traceviz/table_store.py, Trace.save / load_cache):
every real trace reads back exactly as parsed, dtypes, categories and NA included; the
hand-made corners (empty tables, unused or "" categories, non-ASCII, NA) too; a damaged file is
a TraceFormatError naming the directory; and no pyarrow anywhere on the way."""

from __future__ import annotations

import io
import json
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
from tests.conftest import CORPUS, SAMPLES, corpus_params, kernel, launch, op, write_trace
from traceviz import table_store
from traceviz.errors import TraceFormatError
from traceviz.parse import cache
from traceviz.trace import CACHE_MARKER, Trace, load_cache

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


def test_an_old_or_damaged_cache_entry_is_a_miss_and_rewritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The automatic cache turns each of those errors into a miss: parse again, write again."""
    monkeypatch.setattr(cache, "MIN_FILE_BYTES", 0)
    path = write_trace(tmp_path / "t.json", [op("aten::mm", 0, 5), op("aten::add", 6, 2)])
    root = tmp_path / "c"
    fresh = traceviz.load(path, cache=False)
    entry = cache.Entry.of(path, root)
    assert entry is not None
    for damage in ("old format", "truncated"):
        traceviz.load(path, cache=root)
        if damage == "old format":
            _edit_header(entry.directory, lambda header: header.update(format_version=3))
        else:
            file = entry.directory / "ops.npz"
            file.write_bytes(file.read_bytes()[:100])
        with pytest.raises(TraceFormatError):
            load_cache(entry.directory)
        assert entry.read() is None  # a miss, and the entry is gone
        assert not entry.directory.exists()
        assert_same_trace(traceviz.load(path, cache=root), fresh)
        assert_same_trace(load_cache(entry.directory), fresh)  # written again, whole


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
