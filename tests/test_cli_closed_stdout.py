"""A command whose standard output cannot take the report: closed (``traceviz compare … >&-``,
a cron job: Python then has no ``sys.stdout`` at all) or in an encoding that cannot write it
(``PYTHONIOENCODING=ascii``, a Latin-1 locale). With ``-o FILE`` the report goes to the file and
the exit code is the command's; without, one line on stderr saying what to do and exit 2 — on
a rendered-output cache hit as on a miss, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SAMPLES, op, write_trace

RUN = SAMPLES / "pointwise"
needs_run = pytest.mark.skipif(not (RUN / "run.json").is_file(), reason="sample run missing")


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
@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_an_ascii_stdout_is_one_error(tmp_path: Path, fmt: str) -> None:
    for _ in ("miss", "hit"):
        proc = _cli(["compare", str(RUN), "--format", fmt], tmp_path / "cache", ascii_out=True)
        _one_line_error(proc, "ascii", "PYTHONIOENCODING=utf-8")
