"""The automatic parse cache (traceviz/parse/cache.py): a second load of an unchanged trace is
read back from the cache, identical to a fresh parse; a changed file, another version, a
corrupt entry, concurrent runs and a full cache are all handled without an error. The one entry
writer both caches use (publish_entry / discard_entry): an entry appears whole or not at all. The
caches' one directory rule and names (traceviz.cache_paths), importable without the parser."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import traceviz
import traceviz.parse as parse_pkg
from tests.conftest import CORPUS, REPO, SAMPLES, corpus_params, kernel, launch, op, write_trace
from tests.test_table_store import assert_same_trace
from traceviz import cache_paths, report_cache, settings
from traceviz.commands import output_cache
from traceviz.errors import TraceFormatError, UsageError
from traceviz.parse import cache
from traceviz.parse.cache import ENTRY_FILE, discard_entry, publish_entry


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


def _small_trace(path: Path, n: int = 3) -> Path:
    events = [op("aten::add", 10.0 * i, 5.0, **{"External id": i + 1}) for i in range(n)]
    events += [
        launch("cudaLaunchKernel", 12.0, 1.0, 7, **{"External id": 1}),
        kernel("k", 20.0, 2.0, 7),
    ]
    return write_trace(path, events)


@pytest.fixture
def small(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(cache, "MIN_FILE_BYTES", 0)
    return _small_trace(tmp_path / "t.json")


def test_a_changed_file_is_parsed_again(small: Path, tmp_path: Path) -> None:
    root = tmp_path / "c"
    assert len(traceviz.load(small, cache=root).ops) == 3
    stat = small.stat()
    _small_trace(small, n=5)
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
    path = _small_trace(tmp_path / "t.json")
    assert path.stat().st_size < cache.MIN_FILE_BYTES
    traceviz.load(path, cache=tmp_path / "c")
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("damage", ["table", "header", "entry", "empty-dir"])
def test_a_damaged_entry_is_ignored_and_rewritten(
    small: Path, tmp_path: Path, damage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "c"
    fresh = traceviz.load(small, cache=root)
    entry = cache.Entry.of(small, root)
    assert entry is not None
    if damage == "table":
        (entry.directory / "ops.npz").write_bytes(b"PK\x03\x04 not really")
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


def test_an_unwritable_cache_is_no_error(small: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert len(traceviz.load(small, cache=blocker / "sub").ops) == 3


def test_a_cache_path_that_is_a_file_is_a_usage_error(small: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(UsageError, match="not a directory"):
        traceviz.load(small, cache=blocker)
    with pytest.raises(UsageError, match="True, False or a directory"):
        traceviz.load(small, cache=3)  # type: ignore[arg-type]


def test_eviction_removes_least_recently_used_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache, "MIN_FILE_BYTES", 0)
    root = tmp_path / "c"
    paths = [_small_trace(tmp_path / f"t{i}.json", n=i + 1) for i in range(3)]
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


def test_an_entry_written_first_by_another_run_is_kept(tmp_path: Path) -> None:
    entry = tmp_path / "abc"
    assert publish_entry(entry, _fill("first"))
    assert publish_entry(entry, _fill("second"))
    assert (entry / "payload").read_text() == "first"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["abc"]


def test_a_damaged_entry_in_the_way_is_replaced(tmp_path: Path) -> None:
    entry = tmp_path / "abc"
    entry.mkdir()
    (entry / "payload").write_text("half written, no entry.json")
    assert publish_entry(entry, _fill("whole"))
    assert (entry / "payload").read_text() == "whole"
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
