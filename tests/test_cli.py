"""The ``traceviz`` command line: its entry point and registry, the collector around its imports,
a standard output that cannot take the report, and small things a user hits.

- The registry: each command's summary is one sentence, its module's docstring its ``--help``;
  a command run through the lazy parser gets its full arguments.
- The collector around the console script's imports: off while the command's modules are
  imported, frozen and back on before the command runs, back on when such an import fails;
  main() called from Python (and collector_off outside one-command processes) leaves it alone.
- A standard output closed (``traceviz compare … >&-``, a cron job: Python then has no
  ``sys.stdout`` at all) or in an encoding that cannot write the report
  (``PYTHONIOENCODING=ascii``): with ``-o FILE`` the report goes to the file and the exit code is
  the command's; without, one line on stderr saying what to do and exit 2, on a rendered-output
  cache hit as on a miss, never a traceback.
- ``compare -o FILE`` without ``--format`` follows FILE's suffix; ``summary DIR --ranks`` finds
  the dataset a default ``traceviz ingest DIR`` made (``DIR/traceviz-dataset``); a Ctrl-C
  during ``ingest --workers`` is one line and exit 130, no Dask traceback, no worker left behind.
- traceviz.settings: --cache-dir, --no-cache and --max-bytes reach the library through one
  Settings value, not through os.environ; the environment variables stay the defaults (for the
  library and the command line alike); a Dask worker the command line starts still works under
  the cap it was given.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import traceviz
from tests.conftest import SAMPLES, op, write_trace
from traceviz import cli, settings
from traceviz.commands import collector
from traceviz.commands.output import output_format
from traceviz.concurrent_sides import side_by_side
from traceviz.errors import UsageError
from traceviz.settings import Settings

RUN = SAMPLES / "pointwise"
needs_run = pytest.mark.skipif(not (RUN / "run.json").is_file(), reason="sample run missing")


@pytest.mark.parametrize("name", list(cli.COMMANDS))
def test_each_summary_is_one_full_sentence(name: str) -> None:
    summary = cli.COMMANDS[name].summary
    assert summary[0].isupper() and summary.endswith("."), summary
    assert summary.count(". ") == 0, f"{name}: one sentence, please: {summary!r}"
    assert len(summary) <= 80, f"{name}: keep `traceviz --help` to one line a command"


@pytest.mark.parametrize("name", list(cli.COMMANDS))
def test_each_registered_module_is_a_command(name: str) -> None:
    module = importlib.import_module(f"traceviz.commands.{cli.COMMANDS[name].module}")
    assert callable(module.add_arguments) and callable(module.run)
    assert (module.__doc__ or "").strip(), f"{name}: the docstring is its --help text"


def test_top_level_help_lists_every_command_with_its_whole_summary(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit:
        cli.main(["--help"])
    assert exit.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps long lines
    for name, command in cli.COMMANDS.items():
        assert f"{name} {command.summary}" in text


@pytest.mark.parametrize("name", list(cli.COMMANDS))
def test_command_help_is_its_module_docstring(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit:
        cli.main([name, "--help"])
    assert exit.value.code == 0
    out = capsys.readouterr().out
    module = importlib.import_module(f"traceviz.commands.{cli.COMMANDS[name].module}")
    first_line = (module.__doc__ or "").strip().splitlines()[0]
    assert first_line in out
    assert ("--max-bytes" in out) is cli.COMMANDS[name].reads_traces


def test_command_is_the_first_word_that_is_not_an_option() -> None:
    assert cli._command_in(["--version", "compare", "a", "b"]) == "compare"
    assert cli._command_in(["summary", "models"]) == "summary"
    assert cli._command_in(["-h"]) is None
    assert cli._command_in(["nonsense", "compare"]) is None


def test_an_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        cli.main(["bogus"])
    assert exit.value.code == 2
    assert "invalid choice: 'bogus'" in capsys.readouterr().err


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([]) == 2
    assert "COMMAND" in capsys.readouterr().out


@pytest.fixture(autouse=True)
def collector_restored() -> Iterator[None]:
    yield
    collector.one_command(False)
    gc.enable()


def test_collector_off_during_imports_on_for_the_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: dict[str, bool] = {}
    frozen: list[bool] = []
    build = cli.build_parser

    def spy(load: object = None) -> object:
        seen["while importing"] = gc.isenabled()
        return build(load)  # type: ignore[arg-type]

    monkeypatch.setattr(cli, "build_parser", spy)
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(gc.isenabled()))
    monkeypatch.setattr(sys, "argv", ["traceviz", "models"])
    assert gc.isenabled()
    assert cli.main() == 0  # the console script: one command per process
    assert seen == {"while importing": False} and frozen == [False]  # frozen once, while off
    assert gc.isenabled()  # the command itself runs with the collector on
    seen.clear()
    assert cli.main(["models"]) == 0  # a program calling main() keeps its collector as it was
    assert seen == {"while importing": True} and frozen == [False]
    assert gc.isenabled()
    capsys.readouterr()


def test_collector_off_acts_in_one_command_processes_only(monkeypatch: pytest.MonkeyPatch) -> None:
    frozen: list[bool] = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(gc.isenabled()))
    collector.one_command(False)
    with collector.collector_off():
        assert gc.isenabled()
    assert frozen == []
    collector.one_command(True)
    with collector.collector_off():  # a heavy lazy import would run here
        assert not gc.isenabled()
    assert frozen == [False] and gc.isenabled()
    gc.disable()  # a collector someone turned off stays off, and nothing is frozen
    with collector.collector_off():
        assert not gc.isenabled()
    assert frozen == [False] and not gc.isenabled()


def test_a_failing_import_leaves_the_collector_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """A missing optional extra in a command's lazy import, or a broken command module."""
    monkeypatch.setattr(gc, "freeze", lambda: None)
    collector.one_command(True)
    with pytest.raises(ImportError), collector.collector_off():
        assert not gc.isenabled()
        raise ImportError("an optional extra is missing")
    assert gc.isenabled()

    def broken(load: object = None) -> object:
        assert not gc.isenabled()
        raise ImportError("broken command module")

    monkeypatch.setattr(cli, "build_parser", broken)
    monkeypatch.setattr(sys, "argv", ["traceviz", "models"])
    with pytest.raises(ImportError):
        cli.main()
    assert gc.isenabled()


def _cli(
    args: list[str], cache: Path | None, *, ascii_out: bool = False
) -> subprocess.CompletedProcess[str]:
    """``traceviz ARGS`` with stdout closed (or, with ``ascii_out``, in ASCII)."""
    env = {**os.environ, "COLUMNS": "120"}
    env.pop("TRACEVIZ_NO_CACHE", None)
    if cache is None:
        env["TRACEVIZ_NO_CACHE"] = "1"
    else:
        env["TRACEVIZ_CACHE_DIR"] = str(cache)
    if ascii_out:
        env["PYTHONIOENCODING"] = "ascii"
    return subprocess.run(
        [sys.executable, "-m", "traceviz.cli", *args],
        stdout=subprocess.PIPE if ascii_out else subprocess.DEVNULL,  # closed in the child
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=None if ascii_out else lambda: os.close(1),
        timeout=300,
        check=False,
    )


def _one_line_error(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert all(word in lines[0] for word in ("-o", *words)), lines[0]
    assert "Traceback" not in proc.stderr


@needs_run
@pytest.mark.parametrize("cached", [False, True], ids=["no-cache", "cache"])
def test_report_to_a_file_with_stdout_closed(tmp_path: Path, cached: bool) -> None:
    out = tmp_path / "report.txt"
    cache = tmp_path / "cache" if cached else None
    for look in ("first", "second"):  # with the cache: a miss, then a hit
        out.unlink(missing_ok=True)
        proc = _cli(["compare", str(RUN), "-o", str(out)], cache)
        assert proc.returncode == 0, (look, proc.stderr)
        assert proc.stderr == ""
        text = out.read_text(encoding="utf-8")
        assert "Metrics" in text and "Fusion map" in text, text[:300]  # the whole report


@needs_run
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_compare_to_a_closed_stdout_is_one_error(tmp_path: Path, fmt: str) -> None:
    for cache in (None, tmp_path / "cache", tmp_path / "cache"):  # no cache, a miss, a hit
        proc = _cli(["compare", str(RUN), "--format", fmt], cache)
        _one_line_error(proc, "error", "standard output")


def test_summary_to_a_closed_stdout_is_one_error(tmp_path: Path) -> None:
    path = write_trace(tmp_path / "t.json", [op("a", 0, 1)])
    for _ in range(2):  # a miss, then a hit
        proc = _cli(["summary", str(path)], tmp_path / "cache")
        _one_line_error(proc, "error", "standard output")


@needs_run
def test_an_ascii_stdout_gets_ascii_text_and_markdown_is_one_error(tmp_path: Path) -> None:
    """Text in a pipe is ASCII (glyphs spelled out), so an ASCII stdout takes it; Markdown keeps
    its glyphs and says how to write it."""
    for _ in ("miss", "hit"):
        text = _cli(["compare", str(RUN)], tmp_path / "cache", ascii_out=True)
        assert text.returncode == 0 and text.stderr == "", text.stderr
        assert "x faster" in text.stdout and "Fusion map" in text.stdout
        proc = _cli(["compare", str(RUN), "--format", "markdown"], tmp_path / "cache",
                    ascii_out=True)  # fmt: skip
        _one_line_error(proc, "ascii", "PYTHONIOENCODING=utf-8")


@pytest.mark.parametrize(
    ("given", "path", "want"),
    [
        (None, "r.html", "html"),
        (None, "R.HTM", "html"),
        (None, "out/r.md", "markdown"),
        (None, "r.json", "json"),
        (None, "r.txt", "text"),
        (None, "report", "text"),
        (None, None, "text"),
        ("json", "r.html", "json"),  # --format given wins
        (None, "r.html", "text"),  # html not rendered by this command: text
    ],
)
def test_output_format_follows_the_suffix(given: str | None, path: str | None, want: str) -> None:
    choices = ("text", "json", "markdown") if want == "text" and path == "r.html" else None
    assert output_format(given, path, choices or ("text", "json", "markdown", "html")) == want


@pytest.mark.parametrize("suffix", [".md", ".json", ".html"])
def test_compare_writes_by_suffix(tmp_path: Path, suffix: str) -> None:
    if suffix == ".html":
        pytest.importorskip("plotly", reason="plotly not installed (dashboard extra)")
    out = tmp_path / f"r{suffix}"
    assert cli.main(["compare", str(RUN), "-o", str(out), "--no-cache"]) == 0
    text = out.read_text()
    if suffix == ".md":
        assert text.startswith("#")
    elif suffix == ".json":
        assert "schema_version" in json.loads(text)
    else:
        assert text.lstrip().lower().startswith("<!doctype html")


def _job(directory: Path, ranks: int, steps: int) -> Path:
    from tests.ranks_fixtures import synthetic_job, write_ranks

    write_ranks(directory, synthetic_job(ranks, steps=steps).docs)
    return directory


def test_summary_ranks_finds_the_default_dataset_in_the_traces_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("pyarrow", reason="pyarrow not installed (ranks extra)")
    traces = _job(tmp_path / "traces", 4, 2)
    assert cli.main(["ingest", str(traces), "--quiet"]) == 0
    assert (traces / "traceviz-dataset").is_dir()
    capsys.readouterr()
    assert cli.main(["summary", str(traces), "--ranks", "--format", "json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["ranks"]) == 4


def _workers_of(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def test_ctrl_c_during_ingest_workers_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("distributed", reason="distributed not installed (distributed extra)")
    pytest.importorskip("pyarrow", reason="pyarrow not installed (ranks extra)")
    traces = _job(tmp_path / "traces", 48, 20)
    command = [sys.executable, "-m", "traceviz.cli", "ingest", str(traces), "--workers", "2"]
    # its own process group, as a terminal's foreground job: Ctrl-C reaches every process
    ingest = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert ingest.stderr is not None
    seen = []
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:  # until the workers have finished a first rank
        line = ingest.stderr.readline()
        seen.append(line)
        if not line or (line.startswith("ranks ") and not line.startswith("ranks 0/")):
            break
    if ingest.poll() is not None:
        pytest.skip(f"the ingest ended before it could be interrupted: {''.join(seen)[-300:]}")
    os.killpg(ingest.pid, signal.SIGINT)
    _, err = ingest.communicate(timeout=120)
    assert ingest.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.strip().splitlines()[-1] == "traceviz: interrupted"
    assert not _workers_of(ingest.pid)


# --- settings: the options reach the library, the environment gives the defaults ------------------


BLOCK = SAMPLES / "block"
TRACE = BLOCK / "eager.pt.trace.json.gz"


def _entries(root: Path) -> list[str]:
    return sorted(p.name.split("-")[0] for p in root.iterdir()) if root.is_dir() else []


def test_from_environ_reads_every_variable(tmp_path: Path) -> None:
    env = {
        "TRACEVIZ_CACHE_DIR": str(tmp_path / "c"),
        "TRACEVIZ_MAX_BYTES": "512M",
        "TRACEVIZ_CACHE_MAX_BYTES": "1GiB",
        "TRACEVIZ_CONCURRENT": "0",
        "TRACEVIZ_NATIVE": " 0 ",
    }
    assert Settings.from_environ(env) == Settings(
        cache_dir=tmp_path / "c",
        cache_origin="TRACEVIZ_CACHE_DIR",
        max_bytes=512 * 2**20,
        cache_max_bytes=2**30,
        concurrent=False,
        native=False,
    )
    plain = Settings.from_environ({"XDG_CACHE_HOME": str(tmp_path)})
    assert (plain.cache_dir, plain.cache_origin) == (tmp_path / "traceviz", "the cache directory")
    assert (plain.max_bytes, plain.cache_max_bytes) == (4 * 2**30, 2 * 2**30)
    assert plain.concurrent and plain.native
    assert Settings.from_environ({**env, "TRACEVIZ_NO_CACHE": "yes"}).cache_dir is None


def test_a_given_field_is_not_read_from_its_variable() -> None:
    env = {"TRACEVIZ_MAX_BYTES": "lots"}
    with pytest.raises(UsageError, match=r"^TRACEVIZ_MAX_BYTES: 'lots' is not a size"):
        Settings.from_environ(env)
    assert Settings.from_environ(env, max_bytes=100).max_bytes == 100


def test_using_sets_the_current_value_for_the_with_and_its_worker_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TRACEVIZ_MAX_BYTES", "1M")
    chosen = Settings.from_environ(max_bytes=123)
    with settings.using(chosen):
        here, beside = side_by_side(settings.current, settings.current)
        plain: list[Settings] = []
        thread = threading.Thread(target=lambda: plain.append(settings.current()))
        thread.start()
        thread.join()
    assert here is chosen and beside is chosen  # the pair's worker carries the context
    assert plain[0].max_bytes == 2**20  # a bare thread: the environment's defaults
    assert settings.current().max_bytes == 2**20  # the environment's again after the with


def test_cli_options_reach_the_load_without_touching_the_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = dict(os.environ)
    root = tmp_path / "c"
    assert cli.main(["compare", str(BLOCK), "--format", "json", "--cache-dir", str(root)]) == 0
    assert "report" in _entries(root) and "output" in _entries(root)  # the report: the library's
    assert dict(os.environ) == before

    elsewhere = tmp_path / "env-cache"
    os.environ["TRACEVIZ_CACHE_DIR"] = str(elsewhere)  # restored below
    try:
        assert cli.main(["compare", str(BLOCK), "--format", "json", "--no-cache"]) == 0
        assert cli.main(["summary", str(TRACE), "--max-bytes", "1K"]) == 2
        assert dict(os.environ) == {**before, "TRACEVIZ_CACHE_DIR": str(elsewhere)}
    finally:
        os.environ["TRACEVIZ_CACHE_DIR"] = before["TRACEVIZ_CACHE_DIR"]
    assert not elsewhere.exists()
    err = capsys.readouterr().err
    assert str(TRACE) in err and "1,024 bytes" in err
    # nothing of those calls stays behind: a plain load afterwards has the default cap
    assert traceviz.load(TRACE).stats.events_in > 0


def test_environment_defaults_still_apply_to_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "c"
    monkeypatch.setenv("TRACEVIZ_CACHE_DIR", str(root))
    assert cli.main(["compare", str(BLOCK), "--format", "json"]) == 0
    assert "report" in _entries(root)
    monkeypatch.setenv("TRACEVIZ_MAX_BYTES", "1K")
    assert cli.main(["summary", str(TRACE), "--no-cache"]) == 2
    assert "1,024 bytes" in capsys.readouterr().err
    assert (
        cli.main(["summary", str(TRACE), "--no-cache", "--max-bytes", "4GiB"]) == 0
    )  # option wins
    monkeypatch.setenv("TRACEVIZ_MAX_BYTES", "lots")
    assert cli.main(["summary", str(TRACE), "--no-cache"]) == 2
    assert "TRACEVIZ_MAX_BYTES: 'lots' is not a size" in capsys.readouterr().err


def test_dask_workers_started_by_the_cli_keep_its_cap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`ingest --workers 2` parses in worker processes, which inherit the environment but not
    the command's Settings: the cap travels with each task."""
    pytest.importorskip("distributed", reason="distributed not installed (distributed extra)")
    pytest.importorskip("pyarrow", reason="pyarrow not installed (ranks extra)")
    traces = _job(tmp_path / "traces", 2, 2)
    before = _traceviz_variables()
    argv = ["ingest", str(traces), "--workers", "2", "--quiet", "--max-bytes", "1K"]
    assert cli.main(argv) == 1
    assert "0 ingested" in capsys.readouterr().out
    assert _traceviz_variables() == before  # (Dask sets its own, OMP_NUM_THREADS and others)


def _traceviz_variables() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if name.startswith("TRACEVIZ_")}


@pytest.mark.parametrize("option", ["--no-cache", "--cache-dir=x"])
def test_ingest_takes_no_cache_options(option: str, capsys: pytest.CaptureFixture[str]) -> None:
    """ingest keeps its own dataset (--cache) and reads none of the parse, report and output
    caches: their options would do nothing there."""
    with pytest.raises(SystemExit):
        cli.main(["ingest", "traces", option])
    assert "unrecognized arguments" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["compare", "--help"])
    assert "--no-cache" in capsys.readouterr().out
