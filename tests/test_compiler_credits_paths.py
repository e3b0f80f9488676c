"""compiler_credits has two paths in the package, both kept: small inputs without pandas' joins
and groupbys (fusion_lines_pairs), large ones grouped (fusion_lines._credits_grouped). They give
the same table on real runs (H200 CUDA with a lines trace, a graph break, attention; a CPU
run), also with half of each run's eager lines made loose (naming only their function), and
line_pairs the pairs of fusion_lines._line_pairs in the same order; the compiled lines too."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from tests.conftest import SAMPLES, load_trace
from traceviz.analysis import fusion_lines
from traceviz.analysis.fusion_lines import LineRecord, fusion_evidence, read_log
from traceviz.analysis.fusion_lines_pairs import line_pairs
from traceviz.rundir import read_run_dir
from traceviz.trace import Trace

RUNS = ["h200/gpt2", "h200/graph-break", "h200/attention-train", "block"]


def _both(eager: Trace, compiled: Trace, lines: LineRecord, monkeypatch) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    fast = fusion_lines.compiler_credits(eager, compiled, lines)
    with monkeypatch.context() as m:
        m.setattr(fusion_lines, "SMALL_ROWS", -1)
        grouped = fusion_lines.compiler_credits(eager, compiled, lines)
    pd.testing.assert_frame_equal(fast, grouped, check_exact=True)
    return fast


def _loose(lines: LineRecord) -> LineRecord:
    eager = lines.eager.copy()
    eager["exact"] = [i % 2 == 0 for i in range(len(eager))]
    return dataclasses.replace(lines, eager=eager)


@pytest.mark.parametrize("run", RUNS)
def test_equal_to_the_grouped_form_on_sample_runs(run: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    r = read_run_dir(SAMPLES / run)
    eager, compiled = load_trace(r.eager), load_trace(r.compiled)
    marked = load_trace(r.eager_lines) if r.eager_lines else None
    _, lines = fusion_evidence(eager, compiled, read_log(r.compile_log), eager_lines=marked)
    if lines is None or lines.compiled.empty:
        pytest.skip("no compiled source lines in this run")
    credits = _both(eager, compiled, lines, monkeypatch)
    assert len(credits) and credits["eager_row"].is_unique
    _both(eager, compiled, _loose(lines), monkeypatch)
    for record in (lines, _loose(lines)):
        located = record.eager.assign(i=range(len(record.eager)))
        expected = fusion_lines._line_pairs(located, record.compiled)
        got = line_pairs(located, record.compiled)
        assert got == list(zip(expected["i"], expected["kernel"], strict=True))


@pytest.mark.parametrize("run", RUNS)
def test_compiled_lines_equal_the_grouped_form(run: str) -> None:
    r = read_run_dir(SAMPLES / run)
    compiled, log = load_trace(r.compiled), read_log(r.compile_log)
    if log is None:
        pytest.skip("no compile log")
    held, ops = fusion_lines._compiled_lines(compiled, log)
    expected, expected_ops = fusion_lines._compiled_lines_grouped(compiled, log)
    pd.testing.assert_frame_equal(held, expected, check_exact=True)
    assert ops == expected_ops and len(held)
    # a log whose lines name no kernel of this trace: the empty table, as the grouped form has it
    empty = dataclasses.replace(log, lines=log.lines.head(0))
    pd.testing.assert_frame_equal(
        fusion_lines._compiled_lines(compiled, empty)[0],
        fusion_lines._compiled_lines_grouped(compiled, empty)[0],
    )
