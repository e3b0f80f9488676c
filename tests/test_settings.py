"""traceviz.settings: the command line's --cache-dir, --no-cache and --max-bytes reach the
library through one Settings value, not through os.environ; the environment variables stay the
defaults (for the library and the command line alike); a Dask worker the command line starts
still works under the cap it was given."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

import traceviz
from tests.conftest import SAMPLES
from traceviz import settings
from traceviz.cli import main
from traceviz.concurrent_sides import side_by_side
from traceviz.errors import UsageError
from traceviz.settings import Settings

RUN = SAMPLES / "block"
TRACE = RUN / "eager.pt.trace.json.gz"


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
    assert main(["compare", str(RUN), "--format", "json", "--cache-dir", str(root)]) == 0
    assert "report" in _entries(root) and "output" in _entries(root)  # the report: the library's
    assert dict(os.environ) == before

    elsewhere = tmp_path / "env-cache"
    os.environ["TRACEVIZ_CACHE_DIR"] = str(elsewhere)  # restored below
    try:
        assert main(["compare", str(RUN), "--format", "json", "--no-cache"]) == 0
        assert main(["summary", str(TRACE), "--max-bytes", "1K"]) == 2
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
    assert main(["compare", str(RUN), "--format", "json"]) == 0
    assert "report" in _entries(root)
    monkeypatch.setenv("TRACEVIZ_MAX_BYTES", "1K")
    assert main(["summary", str(TRACE), "--no-cache"]) == 2
    assert "1,024 bytes" in capsys.readouterr().err
    assert main(["summary", str(TRACE), "--no-cache", "--max-bytes", "4GiB"]) == 0  # option wins
    monkeypatch.setenv("TRACEVIZ_MAX_BYTES", "lots")
    assert main(["summary", str(TRACE), "--no-cache"]) == 2
    assert "TRACEVIZ_MAX_BYTES: 'lots' is not a size" in capsys.readouterr().err


def test_dask_workers_started_by_the_cli_keep_its_cap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`ingest --workers 2` parses in worker processes, which inherit the environment but not
    the command's Settings: the cap travels with each task."""
    pytest.importorskip("distributed", reason="distributed not installed (distributed extra)")
    pytest.importorskip("pyarrow", reason="pyarrow not installed (ranks extra)")
    from tests.ranks_fixtures import synthetic_job, write_ranks

    traces = tmp_path / "traces"
    write_ranks(traces, synthetic_job(2, steps=2).docs)
    before = _traceviz_variables()
    argv = ["ingest", str(traces), "--workers", "2", "--quiet", "--max-bytes", "1K"]
    assert main(argv) == 1
    assert "0 ingested" in capsys.readouterr().out
    assert _traceviz_variables() == before  # (Dask sets its own, OMP_NUM_THREADS and others)


def _traceviz_variables() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if name.startswith("TRACEVIZ_")}


@pytest.mark.parametrize("option", ["--no-cache", "--cache-dir=x"])
def test_ingest_takes_no_cache_options(option: str, capsys: pytest.CaptureFixture[str]) -> None:
    """ingest keeps its own dataset (--cache) and reads none of the parse, report and output
    caches: their options would do nothing there."""
    with pytest.raises(SystemExit):
        main(["ingest", "traces", option])
    assert "unrecognized arguments" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    assert "--no-cache" in capsys.readouterr().out
