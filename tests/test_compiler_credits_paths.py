"""compiler_credits through the source lines (fusion_lines_pairs, one form since issue 26) on
real runs (H200 CUDA with a lines trace, a graph break, attention; a CPU run), also with half
of each run's eager lines made loose (naming only their function): every pair line_pairs gives
shares a line (or, for a loose one, a function) with its kernel, once; every credit is one of
its instance's pairs; and the compiled lines read from the log are each (kernel, line) once,
with the same columns when the log ties no line to any kernel."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from tests.conftest import SAMPLES, load_trace
from traceviz.analysis.fusion import lines as fusion_lines
from traceviz.analysis.fusion.lines import LineRecord, fusion_evidence, read_log
from traceviz.analysis.fusion.lines_pairs import line_pairs
from traceviz.rundir import read_run_dir

RUNS = ["h200/gpt2", "h200/graph-break", "h200/attention-train", "block"]


def _loose(lines: LineRecord) -> LineRecord:
    eager = lines.eager.copy()
    eager["exact"] = [i % 2 == 0 for i in range(len(eager))]
    return dataclasses.replace(lines, eager=eager)


def _expected_pairs(located: pd.DataFrame, held: pd.DataFrame) -> set[tuple[int, str]]:
    """Every (instance, kernel) sharing a line, or a function for a loose eager line."""
    on_line = set(zip(held["kernel"], held["file"], held["line"], strict=True))
    on_function = set(zip(held["kernel"], held["file"], held["function"], strict=True))
    kernels = set(held["kernel"])
    found = set()
    for row in located.itertuples(index=False):
        exact = bool(getattr(row, "exact", True))
        for kernel in kernels:
            if (kernel, row.file, row.line if exact else None) in on_line or (
                not exact and (kernel, row.file, row.function) in on_function
            ):
                found.add((int(row.i), str(kernel)))
    return found


@pytest.mark.parametrize("run", RUNS)
def test_credits_follow_the_line_pairs(run: str) -> None:
    r = read_run_dir(SAMPLES / run)
    eager, compiled = load_trace(r.eager), load_trace(r.compiled)
    marked = load_trace(r.eager_lines) if r.eager_lines else None
    _, lines = fusion_evidence(eager, compiled, read_log(r.compile_log), eager_lines=marked)
    if lines is None or lines.compiled.empty:
        pytest.skip("no compiled source lines in this run")
    for record in (lines, _loose(lines)):
        located = record.eager.assign(i=range(len(record.eager)))
        pairs = line_pairs(located, record.compiled)
        assert len(pairs) == len(set(pairs))  # each pair once
        assert set(pairs) == _expected_pairs(located, record.compiled)
        credits = fusion_lines.compiler_credits(eager, compiled, record)
        assert len(credits) and credits["eager_row"].is_unique
        assert credits["confidence"].between(0, 1, inclusive="right").all()
        row_of = dict(zip(record.eager["eager_row"], located["i"], strict=True))
        allowed = {(row, k) for row, i in row_of.items() for j, k in pairs if j == i}
        credited = zip(credits["eager_row"], credits["kernel"], strict=True)
        assert all((int(row), str(k)) in allowed for row, k in credited)


@pytest.mark.parametrize("run", RUNS)
def test_compiled_lines_once_per_kernel_line(run: str) -> None:
    r = read_run_dir(SAMPLES / run)
    compiled, log = load_trace(r.compiled), read_log(r.compile_log)
    if log is None:
        pytest.skip("no compile log")
    held, ops = fusion_lines._compiled_lines(compiled, log)
    assert len(held) and not held.duplicated(["kernel", "file", "line"]).any()
    assert set(held["kernel"]) <= set(compiled.kernels["name"].astype(str))
    logged = set(zip(log.lines["file"], log.lines["line"], strict=True))
    assert set(zip(held["file"], held["line"], strict=True)) <= logged
    assert set(held["kernel"]) <= set(ops)
    # a log whose lines name no kernel of this trace: the empty table, the same columns
    empty = dataclasses.replace(log, lines=log.lines.head(0))
    none = fusion_lines._compiled_lines(compiled, empty)[0]
    assert none.empty
    pd.testing.assert_series_equal(none.dtypes, held.dtypes)
