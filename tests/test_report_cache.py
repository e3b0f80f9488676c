"""The report cache (traceviz/report_cache.py): a second look at an unchanged pair or run
reads the report back (rendered JSON identical), any change of an input misses, damage is
rebuilt, --no-cache writes nothing, and foreign entries are never unpickled (concurrent
writers: tests/test_render_cache.py)."""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
from pathlib import Path

import pytest

import traceviz
from tests.conftest import CORPUS, SAMPLES, launched, op, write_trace
from tests.light_import_fixtures import assert_imports_none
from traceviz import pipeline
from traceviz.cli import main
from traceviz.report.formats import renderer
from traceviz.report_cache import ENTRY_PREFIX, PAYLOAD_FILE
from traceviz.settings import CACHE_DIR_ENV, NO_CACHE_ENV

RUNS = ("attention", "graph-break", "block")
RUN_JSON = json.loads((SAMPLES / "attention" / "run.json").read_text())


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh cache directory for this test (and the environment put back afterwards)."""
    root = tmp_path / "cache"
    monkeypatch.setenv(CACHE_DIR_ENV, str(root))
    monkeypatch.delenv(NO_CACHE_ENV, raising=False)
    return root


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Counts the reports actually built (cache misses) by the pipeline."""
    seen: list[str] = []
    compare, compare_run = pipeline._compare, pipeline._compare_run

    inside_run: list[bool] = []

    def counted_compare(*args, **kwargs):  # type: ignore[no-untyped-def]
        if not inside_run:  # a run's own pair is part of the run's build
            seen.append("pair")
        return compare(*args, **kwargs)

    def counted_run(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append("run")
        inside_run.append(True)
        try:
            return compare_run(*args, **kwargs)
        finally:
            inside_run.pop()

    monkeypatch.setattr(pipeline, "_compare", counted_compare)
    monkeypatch.setattr(pipeline, "_compare_run", counted_run)
    return seen


def entries(root: Path) -> list[Path]:
    return sorted(root.glob(f"{ENTRY_PREFIX}*")) if root.is_dir() else []


def as_json(report: traceviz.Report) -> str:
    return renderer("json").comparison(report, top=10)  # type: ignore[no-any-return]


def pair(tmp_path: Path) -> tuple[Path, Path]:
    """Two tiny hand-made traces: an eager side of three kernels, a compiled side of one."""
    eager = [
        e
        for i in range(3)
        for e in launched("aten::add", 40 * i, 5, 10 + i, kernel_name=f"elementwise_{i}")
    ]
    compiled = launched("triton_poi_fused_add_0", 0, 6, 20, kernel_name="triton_poi_fused_add_0")
    return (write_trace(tmp_path / "p-eager.json", eager),
            write_trace(tmp_path / "p-compiled.json", compiled))  # fmt: skip


@pytest.mark.parametrize("run", RUNS)
def test_second_look_at_a_sample_run_is_read_back_whole(
    run: str, cache: Path, builds: list[str]
) -> None:
    first = pipeline.compare_run(SAMPLES / run)
    assert builds == ["run"] and len(entries(cache)) == 1
    second = pipeline.compare_run(SAMPLES / run)
    assert builds == ["run"], "the second look built the report again"
    assert second is not first and as_json(second) == as_json(first)
    assert renderer("text").comparison(second, top=5) is not None
    # the sides' traces come back too (the Python API hands them out)
    assert second.a.trace.kernels.equals(first.a.trace.kernels)
    assert second.b.trace.meta == first.b.trace.meta


def test_a_look_from_another_directory_shows_paths_from_there(
    tmp_path: Path, cache: Path, builds: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The graph-break finding names the user's file relative to the working directory: a
    report cached in one directory is not read back in another, where that path would name
    nothing."""
    run = SAMPLES.resolve() / "graph-break"
    monkeypatch.chdir(SAMPLES.parent)
    here = as_json(pipeline.compare_run(run))
    monkeypatch.chdir(tmp_path)
    there = as_json(pipeline.compare_run(run))
    assert builds == ["run", "run"], "the other directory read the first one's report"
    assert as_json(pipeline.compare_run(run)) == there and builds == ["run", "run"]
    assert set(re.findall(r"at (\S*zoo\.py):\d+", here)) == {"traceviz/runner/zoo.py"}
    assert set(re.findall(r"at (\S*zoo\.py):\d+", there)) == {
        str(SAMPLES.parent.resolve() / "traceviz" / "runner" / "zoo.py")
    }


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus not found at {CORPUS}")
def test_second_look_at_a_corpus_pair(cache: Path, builds: list[str]) -> None:
    a = CORPUS / "nvidia" / "a100_eager_train_control.json.gz"
    b = CORPUS / "nvidia" / "a100_compiled_cudagraph_train_2023.json.gz"
    first = traceviz.compare(a, b, names=("eager", "compiled"), force=True)
    second = traceviz.compare(a, b, names=("eager", "compiled"), force=True)
    assert builds == ["pair"] and as_json(second) == as_json(first)
    assert [f.id for f in second.findings] == [f.id for f in first.findings]
    # the parse entries of both traces and the one report entry
    assert len(entries(cache)) == 1 and len(list(cache.iterdir())) == 3


def test_any_change_of_an_input_misses(
    tmp_path: Path, cache: Path, builds: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from traceviz import report_cache

    a, b = pair(tmp_path)
    base = traceviz.compare(a, b, names=("x", "y"))
    traceviz.compare(a, b, names=("x", "y"))
    assert builds == ["pair"]
    traceviz.compare(a, b, names=("x", "z"))  # other labels
    traceviz.compare(a, b, names=("x", "y"), force=True)  # --force
    traceviz.compare(a, b, names=("x", "y"), run_info=RUN_JSON)
    assert builds == ["pair"] * 4
    st = a.stat()
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # touched
    traceviz.compare(a, b, names=("x", "y"))
    assert builds == ["pair"] * 5
    moved = write_trace(a, [op("aten::mul", 0, 30)])  # rewritten: another report
    changed = traceviz.compare(moved, b, names=("x", "y"))
    assert builds == ["pair"] * 6 and as_json(changed) != as_json(base)
    assert len(entries(cache)) == 6
    monkeypatch.setattr(report_cache, "_source_fingerprint", lambda: "an edited analysis")
    traceviz.compare(moved, b, names=("x", "y"))  # another traceviz source
    assert builds == ["pair"] * 7 and len(entries(cache)) == 7


def test_a_small_trace_rewritten_with_as_many_bytes_in_the_same_tick_misses(
    tmp_path: Path, cache: Path, builds: list[str]
) -> None:
    a, b = pair(tmp_path)
    before = traceviz.compare(a, b)
    st = b.stat()
    text = b.read_text()
    assert '"dur": 6' in text
    b.write_text(text.replace('"dur": 6', '"dur": 9'))  # same size, other kernel time
    os.utime(b, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the same mtime
    assert b.stat().st_size == st.st_size
    after = traceviz.compare(a, b)
    assert builds == ["pair", "pair"] and as_json(after) != as_json(before)


def test_a_run_directory_misses_when_a_file_or_the_compile_log_changes(
    tmp_path: Path, cache: Path, builds: list[str]
) -> None:
    run = shutil.copytree(SAMPLES / "attention", tmp_path / "attention")
    other_log = shutil.copy(SAMPLES / "graph-break" / "compile_log.jsonl.gz", tmp_path / "o.gz")
    pipeline.compare_run(run)
    pipeline.compare_run(run)
    assert builds == ["run"]
    pipeline.compare_run(run, compile_log=other_log)  # another compile log
    pipeline.compare_run(run, names=("before", "after"))
    pipeline.compare_run(run, force=True)
    assert builds == ["run"] * 4
    (run / "run.json").touch()
    os.utime(run / "run.json", ns=(0, (run / "run.json").stat().st_mtime_ns + 1_000_000))
    pipeline.compare_run(run)
    assert builds == ["run"] * 5
    (run / "notes.txt").write_text("a new file in the run directory")
    pipeline.compare_run(run)
    assert builds == ["run"] * 6
    pipeline.compare_run(run)
    assert builds == ["run"] * 6


def test_no_cache_writes_nothing_and_the_cli_hits(
    tmp_path: Path,
    cache: Path,
    builds: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run = str(SAMPLES / "attention")
    assert main(["compare", run, "--no-cache", "--format", "json"]) == 0
    first = capsys.readouterr().out
    assert main(["compare", run, "--no-cache", "--format", "json"]) == 0
    assert builds == ["run", "run"] and not cache.exists()
    assert main(["compare", run, "--format", "json"]) == 0  # the cache: a miss, then a hit
    assert main(["compare", run, "--format", "json"]) == 0
    assert builds == ["run"] * 3 and capsys.readouterr().out == first * 3
    shutil.rmtree(cache)  # then with NO_CACHE_ENV, nothing written again
    monkeypatch.setenv(NO_CACHE_ENV, "1")
    a, b = pair(tmp_path)
    traceviz.compare(a, b)
    assert not cache.exists()
    # --cache-dir turns it back on, there
    other = tmp_path / "elsewhere"
    assert main(["compare", run, "--cache-dir", str(other), "--format", "json"]) == 0
    assert len(entries(other)) == 1
    capsys.readouterr()


def test_objects_are_not_cached(tmp_path: Path, cache: Path, builds: list[str]) -> None:
    a, b = pair(tmp_path)
    ta = traceviz.load(a)
    traceviz.compare(ta, b)
    traceviz.compare(ta, b)
    assert builds == ["pair", "pair"] and entries(cache) == []
    traceviz.compare(a, b, load=traceviz.load)  # a loader of the caller's own: not cached
    assert entries(cache) == []


@pytest.mark.parametrize("damage", ["truncate", "garbage", "no-payload", "wrong-key", "not-ours"])
def test_a_damaged_entry_is_rebuilt(
    tmp_path: Path, cache: Path, builds: list[str], damage: str
) -> None:
    a, b = pair(tmp_path)
    good = as_json(traceviz.compare(a, b))
    (entry,) = entries(cache)
    payload = entry / PAYLOAD_FILE
    if damage == "truncate":
        payload.write_bytes(payload.read_bytes()[:1000])
    elif damage == "garbage":
        payload.write_bytes(b"\x80\x05not a pickle at all" * 10)
    elif damage == "no-payload":
        payload.unlink()
    elif damage == "wrong-key":
        marker = entry / "entry.json"
        marker.write_text(marker.read_text().replace('"kind": "pair"', '"kind": "run"'))
    else:  # group-writable payload: not trusted
        payload.chmod(0o664)
    assert as_json(traceviz.compare(a, b)) == good
    assert len(builds) == 2
    (entry,) = entries(cache)  # rebuilt in place, sound again
    assert (entry / PAYLOAD_FILE).stat().st_mode & 0o077 == 0
    assert as_json(traceviz.compare(a, b)) == good and len(builds) == 2


class _Planted:
    """A pickle that writes a file when it is loaded: what an attacker would plant."""

    def __init__(self, flag: Path) -> None:
        self.flag = flag

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (Path.write_text, (self.flag, "unpickled"))


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX permissions")
@pytest.mark.parametrize("how", ["world-writable", "symlink"])
def test_an_entry_others_could_write_is_never_unpickled(
    tmp_path: Path, cache: Path, builds: list[str], how: str
) -> None:
    a, b = pair(tmp_path)
    traceviz.compare(a, b)
    (entry,) = entries(cache)
    flag = tmp_path / "flag"
    planted = pickle.dumps(_Planted(flag))
    if how == "world-writable":
        entry.chmod(0o777)
        (entry / PAYLOAD_FILE).write_bytes(planted)
    else:
        elsewhere = tmp_path / "planted"
        shutil.move(entry, elsewhere)
        (elsewhere / PAYLOAD_FILE).write_bytes(planted)
        entry.symlink_to(elsewhere, target_is_directory=True)
    report = traceviz.compare(a, b)
    assert not flag.exists(), "a foreign entry was unpickled"
    assert len(builds) == 2 and report.findings is not None
    assert entry.exists()  # left alone: not ours to delete


# What a text `traceviz compare RUN` never needs, cache cold or warm (and with --no-cache, not
# even pyarrow's Parquet reader, which only the parse cache uses).
NOT_FOR_A_TEXT_COMPARE = ("torch", "plotly", "panel", "bokeh", "dask", "distributed", "onnx",
                          "onnxruntime", "onnxscript", "transformers")  # fmt: skip


@pytest.mark.parametrize("options", [["--no-cache"], ["--cache-dir", "{cache}"]])
def test_a_text_compare_imports_nothing_it_does_not_need(
    tmp_path: Path, options: list[str]
) -> None:
    argv = ["compare", str(SAMPLES / "attention"),
            *(o.format(cache=tmp_path / "c") for o in options)]  # fmt: skip
    twice = f"from traceviz.cli import main\nfor _ in range(2):\n    main({argv!r})\n"
    extra = ("pyarrow.parquet",) if "--no-cache" in options else ()
    assert_imports_none(twice, (*NOT_FOR_A_TEXT_COMPARE, *extra))
    if "--no-cache" not in options:
        assert len(entries(tmp_path / "c")) == 1  # the second round was a hit
