"""The fusion-by-line table shows each user line's text, read from the user's source file
when the report is built (``code``). That file is no input of the caches' keys, so an edited
model file must still be seen: a cached report or output whose source files changed is a
miss, as the uncached command would print the new text."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import SAMPLES
from traceviz import settings
from traceviz.cli import main

RUN = SAMPLES / "pointwise"
MARKED = "/work/main/traceviz/runner/zoo.py"  # the file the run's line marks name


@pytest.fixture
def run_with_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The pointwise sample run with its line marks pointing at a model file of our own."""
    lines = RUN / "eager_lines.pt.trace.json.gz"
    if not lines.is_file():
        pytest.skip("sample run missing")
    with gzip.open(lines, "rt", encoding="utf-8") as source:
        text = source.read()
    if MARKED not in text:
        pytest.skip("the sample's line marks name another file")
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    model = tmp_path / "model.py"
    with gzip.open(run / lines.name, "wt", encoding="utf-8") as out:
        out.write(text.replace(MARKED, str(model)))
    model.write_text("\n" * 35 + "        return before(x)\n")
    monkeypatch.setenv(settings.CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(settings.NO_CACHE_ENV, raising=False)
    return run, model


def _codes(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    # one process for every look, as a notebook or the dashboard: linecache's copy of an
    # edited file must not be read either
    assert main(["compare", *argv, "--format", "json"]) == 0
    return [row["code"] for row in json.loads(capsys.readouterr().out)["fusion"]["by_line"]]


def test_an_edited_model_file_is_seen_by_a_second_look(
    run_with_model: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    run, model = run_with_model
    assert _codes(capsys, str(run)) == ["return before(x)"]
    assert _codes(capsys, str(run)) == ["return before(x)"]  # unchanged: the stored output
    model.write_text("\n" * 35 + "        return after(x)\n")
    assert _codes(capsys, str(run)) == ["return after(x)"]  # output cache
    assert _codes(capsys, str(run), "--top", "3") == ["return after(x)"]  # report cache
    model.unlink()  # a line no longer readable: no text, as without a cache
    assert _codes(capsys, str(run)) == [""]
    assert _codes(capsys, str(run), "--no-cache") == [""]


def test_a_report_cache_hit_after_an_edit_is_fresh(
    run_with_model: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    run, model = run_with_model
    assert _codes(capsys, str(run)) == ["return before(x)"]
    model.write_text("\n" * 35 + "        return after(x)\n")
    # other options: no stored output, only the stored report to read back
    assert _codes(capsys, str(run), "--top", "5") == ["return after(x)"]
