"""Advice knows the compile mode run.json records (issue 24 §3): no "try max-autotune" on a
max-autotune run, no "compile with reduce-overhead" on a run that asked for CUDA graphs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import traceviz
from tests.conftest import SAMPLES
from traceviz.diagnose import diagnose_trace
from traceviz.diagnose.rules.slower import slower_next_step
from traceviz.runs.runinfo import run_info_of

#: Advice to switch to max-autotune, as any rule words it.
TRY_AUTOTUNE = re.compile(r"(?i)\b(try|compile with)\b.{0,40}?max-autotune")
TRY_GRAPHS = re.compile(r'(?i)\bcompile with\b.{0,40}?mode="reduce-overhead"')


def _run(name: str) -> Path:
    run = SAMPLES / name
    if not (run / "run.json").exists():
        pytest.skip(f"sample run absent: {run}")
    return run


def _advice(run: Path, mode: str, options: dict[str, Any] | None = None) -> list[str]:
    """The next steps of the compiled trace's findings, run.json's compile mode set to
    ``mode`` (and its mode options to ``options``)."""
    info = json.loads((run / "run.json").read_text())
    info["compile"]["mode"] = mode
    info["compile"]["mode_options"] = options or {}
    trace = traceviz.load(run / "compiled.pt.trace.json.gz")
    return [f.next_step for f in diagnose_trace(trace, run_info=info, variant="compiled")]


@pytest.mark.parametrize("name", ["linear-add", "block"])  # extern-gemm; unfused-matmul-add
def test_no_max_autotune_advice_on_a_max_autotune_run(name: str) -> None:
    run = _run(name)
    assert any(TRY_AUTOTUNE.search(s) for s in _advice(run, "default"))  # not vacuous
    assert not any(TRY_AUTOTUNE.search(s) for s in _advice(run, "max-autotune"))


def test_no_reduce_overhead_advice_when_graphs_were_asked_for() -> None:
    run = _run("h200/gpt2")
    assert any(TRY_GRAPHS.search(s) for s in _advice(run, "default"))  # not vacuous
    asked = _advice(run, "reduce-overhead", {"triton.cudagraphs": True})
    assert not any(TRY_GRAPHS.search(s) for s in asked)
    assert any("asked for CUDA graphs" in s for s in asked)
    assert not any(TRY_AUTOTUNE.search(s) for s in _advice(run, "max-autotune"))


def test_compiled_slower_advice_follows_the_mode() -> None:
    info = json.loads((_run("linear-add") / "run.json").read_text())
    assert TRY_AUTOTUNE.search(slower_next_step(run_info_of(info)))
    info["compile"]["mode"] = "max-autotune"
    tuned = slower_next_step(run_info_of(info))
    assert not TRY_AUTOTUNE.search(tuned) and 'mode="reduce-overhead"' not in tuned
    assert 'mode="reduce-overhead"' in slower_next_step(None)
