"""The test harness itself: the corpus is found through TRACEVIZ_CORPUS, its absence skips the
real-trace tests with the place looked at, and real traces are parsed once per session."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, SAMPLES, load_trace, write_trace


def _python(code: str, corpus: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TRACEVIZ_CORPUS": str(corpus)}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=False
    )


def test_the_corpus_is_where_traceviz_corpus_says(tmp_path: Path) -> None:
    (tmp_path / "vendor").mkdir()
    write_trace(tmp_path / "vendor" / "one.json", [])
    (tmp_path / "notes.md").write_text("not a trace")
    done = _python("from tests.conftest import corpus_files; print(corpus_files())", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str([tmp_path / "vendor" / "one.json"])


def test_without_the_corpus_real_trace_tests_skip_saying_where(tmp_path: Path) -> None:
    missing = tmp_path / "no-corpus-here"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
         "tests/test_parse_corpus.py", "-k", "loads_and_conserves"],
        cwd=REPO, env={**os.environ, "TRACEVIZ_CORPUS": str(missing)},
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:]
    assert "1 skipped" in done.stdout and "passed" not in done.stdout
    assert f"corpus not found at {missing}" in done.stdout


def test_a_real_trace_is_parsed_once_per_session() -> None:
    path = SAMPLES / "pointwise" / "eager.pt.trace.json.gz"
    assert load_trace(path) is load_trace(path)
