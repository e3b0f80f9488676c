"""The terminal forms fit 80 columns (characters, as a terminal counts them).

GIVEN COLUMNS=80 (a standard terminal, or a pipe told its width) WHEN a command prints its text
form THEN no line is wider than 80: compare and summary on a sample run, the ranks summary and
comparison of a job (whose findings wrap under their own indent).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import traceviz
from tests.conftest import REPO, SAMPLES

WIDTH = 80


def _text_of(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "traceviz.cli", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=REPO,
        env={**_env(), "COLUMNS": str(WIDTH)},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "LINES"}


def _too_wide(text: str) -> list[str]:
    return [line for line in text.splitlines() if len(line) > WIDTH]


@pytest.mark.parametrize("run", ["block", "graph-break"])
def test_compare_of_a_sample_run_fits_80_columns(run: str) -> None:
    assert not _too_wide(_text_of("compare", str(Path("sample_traces") / run), "--no-cache"))


def test_summary_of_a_sample_trace_fits_80_columns() -> None:
    trace = SAMPLES / "block" / "compiled.pt.trace.json.gz"
    assert not _too_wide(_text_of("summary", str(trace), "--no-cache"))


def test_ranks_text_fits_80_columns(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow", reason="pyarrow not installed (ranks extra)")
    from tests.ranks_fixtures import synthetic_job, write_ranks

    traces = write_ranks(tmp_path / "traces", synthetic_job(8, steps=3).docs)
    dataset = tmp_path / "job"
    traceviz.load_ranks(traces, dataset)
    summary = _text_of("summary", str(dataset), "--ranks")
    assert "straggler" in summary and not _too_wide(summary)
    pair = _text_of("compare", str(dataset), str(dataset), "--ranks")
    assert "speedup" in pair and not _too_wide(pair)
