"""Snapshots of every output format of `traceviz compare` and `traceviz summary` on a real
sample run. A change in any output shows up here as a diff to review.

A snapshot that is missing or differs fails the test; nothing is written unless asked. Write or
refresh them after an intended change, then review the diff (``git diff tests/snapshots``):
``TRACEVIZ_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/test_snapshots.py``.
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
from pathlib import Path

import pytest
from rich.console import Console

from tests.conftest import REPO, SAMPLES
from traceviz.analysis.roofline.per_kernel import trace_roofline
from traceviz.analysis.summary import summarize
from traceviz.pipeline import compare
from traceviz.report.json_report import comparison_json
from traceviz.report.markdown import comparison_markdown
from traceviz.report.text import render_comparison, render_summary
from traceviz.rundir import read_run_dir

SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE_ENV = "TRACEVIZ_UPDATE_SNAPSHOTS"
UPDATE = os.environ.get(UPDATE_ENV) == "1"
RUN = "graph-break"


def _normalise(text: str) -> str:
    """Random element ids. (Trace sources print relative to the checkout; paths inside the
    sample's run.json are data and the same everywhere.)"""
    return re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<uuid>", text)


def _check(name: str, text: str) -> None:
    path = SNAPSHOTS / name
    text = _normalise(text)
    if UPDATE:
        path.write_text(text)
    elif not path.exists():
        pytest.fail(f"snapshot {path} is missing; write it with {UPDATE_ENV}=1 and review it")
    assert text == path.read_text(), f"{name} changed; review, then regenerate with {UPDATE_ENV}=1"


@pytest.fixture(scope="module")
def comparison():  # type: ignore[no-untyped-def]
    run_dir = SAMPLES / RUN
    if not (run_dir / "run.json").is_file():
        pytest.skip(f"sample run {run_dir} not found")
    cwd = Path.cwd()
    os.chdir(REPO)  # sources print relative to the checkout
    try:
        run = read_run_dir(Path("sample_traces") / RUN)
        return compare(  # as `traceviz compare RUN_DIR` does: with the run's compile log
            run.eager,
            run.compiled,
            names=("eager", "compiled"),
            run_info=run.info,
            compile_log=run.compile_log,
        )
    finally:
        os.chdir(cwd)


def _rich(draw) -> str:  # type: ignore[no-untyped-def]
    buffer = io.StringIO()
    draw(Console(file=buffer, width=140, color_system=None, force_terminal=False))
    return buffer.getvalue()


def test_compare_text(comparison) -> None:  # type: ignore[no-untyped-def]
    _check(f"compare-{RUN}.txt", _rich(lambda c: render_comparison(comparison, c, top=5)))


def test_compare_markdown(comparison) -> None:  # type: ignore[no-untyped-def]
    _check(f"compare-{RUN}.md", comparison_markdown(comparison, top=5))


def test_compare_json(comparison) -> None:  # type: ignore[no-untyped-def]
    doc = comparison_json(comparison, top=5)
    doc["run"] = {"model": doc["run"]["model"]}  # run.json itself is checked by the runner tests
    _check(f"compare-{RUN}.json", json.dumps(doc, indent=1, sort_keys=True) + "\n")


def test_summary_text_and_json(comparison) -> None:  # type: ignore[no-untyped-def]
    summary = summarize(comparison.b.trace, top=5)
    roofline = trace_roofline(comparison.b.trace)  # as `traceviz summary` shows it
    text = _rich(lambda c: render_summary(summary, c, roofline=roofline))
    _check(f"summary-{RUN}-compiled.txt", text)
    shown = {**summary.to_json(), "roofline": roofline.to_json(top=5) if roofline else None}
    doc = json.dumps(shown, indent=1, sort_keys=True) + "\n"
    _check(f"summary-{RUN}-compiled.json", doc)


def test_a_missing_snapshot_fails_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = sys.modules[__name__]
    monkeypatch.setattr(module, "SNAPSHOTS", tmp_path)
    monkeypatch.setattr(module, "UPDATE", False)
    with pytest.raises(pytest.fail.Exception, match="missing"):
        _check("new.txt", "some output\n")
    assert not (tmp_path / "new.txt").exists()


def test_update_writes_then_a_changed_output_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = sys.modules[__name__]
    monkeypatch.setattr(module, "SNAPSHOTS", tmp_path)
    monkeypatch.setattr(module, "UPDATE", True)
    _check("new.txt", "first\n")
    assert (tmp_path / "new.txt").read_text() == "first\n"
    monkeypatch.setattr(module, "UPDATE", False)
    _check("new.txt", "first\n")
    with pytest.raises(AssertionError, match="changed"):
        _check("new.txt", "second\n")
