"""Small things a user hits at the command line.

GIVEN ``compare -o FILE`` without ``--format``, THEN the format follows FILE's suffix.
GIVEN a default ``traceviz ingest DIR`` (its dataset in ``DIR/traceviz-dataset``), THEN
``summary DIR --ranks`` finds the dataset. GIVEN a Ctrl-C during ``ingest --workers``, THEN
one line and exit 130, no Dask traceback and no worker left behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import SAMPLES
from traceviz.cli import main
from traceviz.commands.output import output_format

RUN = SAMPLES / "pointwise"


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
    assert main(["compare", str(RUN), "-o", str(out), "--no-cache"]) == 0
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
    assert main(["ingest", str(traces), "--quiet"]) == 0
    assert (traces / "traceviz-dataset").is_dir()
    capsys.readouterr()
    assert main(["summary", str(traces), "--ranks", "--format", "json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["ranks"]) == 4


def test_summary_ranks_of_a_plain_folder_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("pyarrow", reason="pyarrow not installed (ranks extra)")
    assert main(["summary", str(tmp_path), "--ranks"]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path) in err and "traceviz-dataset" in err and "Traceback" not in err


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
