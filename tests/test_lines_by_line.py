"""The fusion map's by-line view counts every compiled kernel the compiler's provenance ties to a
line, not only those credited some eager work (helper "lines", issue: a line's helper kernels
were missing). On the H200 gpt2 run, line pytorch_utils.py:119 (Conv1D's addmm) showed 156 µs
compiled: its cuBLAS GEMM and split-K reduction, not the second cutlass GEMM (no eager kernel
is credited to it, so no credit carried it to any line)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.conftest import SAMPLES, load_trace
from tests.real_data import SAMPLE_RUNS, measured_kernel_us
from traceviz.analysis.fusion.by_line import _measured
from traceviz.analysis.fusion.lines import (
    CREDITED_DTYPES,
    ByLine,
    LineRecord,
    fusion_evidence,
    lines_table,
    read_log,
    with_uncredited,
)
from traceviz.analysis.fusion.match import Credits, Outcome, credit_eager_kernels
from traceviz.analysis.kernels import classify
from traceviz.rundir import read_run_dir
from traceviz.schema import ActivityKind, Kernels


def _run(run: str) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, LineRecord]:
    r = read_run_dir(SAMPLES / run)
    eager, compiled = load_trace(r.eager), load_trace(r.compiled)
    marked = load_trace(r.eager_lines) if r.eager_lines else None
    compiler, lines = fusion_evidence(eager, compiled, read_log(r.compile_log), eager_lines=marked)
    if lines is None or lines.compiled.empty:
        pytest.skip("no compiler provenance in this run")
    classified = classify(compiled)
    credits = credit_eager_kernels(
        eager, compiled, compiled_classified=classified, compiler=compiler
    )
    return lines_table(credits, classified, lines), credits, classified, lines


def _tied(table: pd.DataFrame, lines: LineRecord) -> dict[str, set[tuple[str, int]]]:
    """Per compiled kernel name: the table's lines its provenance names (file by its tail)."""
    pairs = zip(table[ByLine.file], table[ByLine.line], strict=True)
    spots = {(str(f).rsplit("/", 1)[-1], int(n)) for f, n in pairs}
    out: dict[str, set[tuple[str, int]]] = {}
    held = lines.compiled
    for kernel, file, line in zip(held["kernel"], held["file"], held["line"], strict=True):
        spot = (str(file).rsplit("/", 1)[-1], int(line))
        if spot in spots:
            out.setdefault(str(kernel), set()).add(spot)
    return out


def test_gpt2_line_119_counts_every_kernel_the_compiler_puts_there() -> None:
    table, credits, classified, lines = _run("h200/gpt2")
    row = table[(table[ByLine.line] == 119) & table[ByLine.file].str.endswith("pytorch_utils.py")]
    assert len(row) == 1
    measured = _measured(classified)
    matched = credits[credits[Credits.outcome] == Outcome.MATCHED.value]
    tied = _tied(table, lines)
    # the kernels the provenance ties to this line alone, credited from no other line
    only_here = [
        k for k, spots in tied.items()
        if spots == {("pytorch_utils.py", 119)} and k in measured
    ]  # fmt: skip
    assert len(only_here) >= 3  # the cuBLAS GEMM, its split-K reduction, the cutlass GEMM
    want = sum(measured[k] for k in only_here)
    got = float(row[ByLine.compiled_time_us].iloc[0])
    assert got >= want * (1 - 1e-12)
    assert got > 200.0  # was 156 µs: the cutlass GEMM's 50.9 µs left out
    uncredited = str(row[ByLine.uncredited_kernels].iloc[0])
    assert uncredited and "cutlass" in uncredited
    for name in only_here:
        assert name in str(row[ByLine.compiled_kernels].iloc[0])
        assert (name in uncredited) == (name not in set(matched[Credits.kernel].astype(str)))


@pytest.mark.parametrize("run", SAMPLE_RUNS)
def test_each_kernel_counted_once_and_every_tied_kernel_counted(run: str) -> None:
    """Summed over lines, the compiled time is exactly the measured time of the kernels
    credited from a located eager kernel plus the uncredited kernels the provenance ties to a
    line: each counted once."""
    table, credits, classified, lines = _run(run)
    if table.empty:
        pytest.skip("no line")
    measured = _measured(classified)
    matched = credits[credits[Credits.outcome] == Outcome.MATCHED.value]
    credited = {str(k) for k in matched[Credits.kernel].dropna()}
    located = matched[matched[Credits.eager_row].isin(lines.eager["eager_row"])]
    tied = _tied(table, lines)
    counted = {str(k) for k in located[Credits.kernel].dropna()} | {
        k for k in tied if k not in credited and k in measured
    }
    total = float(table[ByLine.compiled_time_us].sum())
    want = sum(measured[k] for k in counted if k in measured)
    assert total == pytest.approx(want, rel=1e-9, abs=1e-9)
    assert total <= measured_kernel_us(classified) * (1 + 1e-12)
    # every uncredited kernel is listed among the line's compiled kernels and credited nowhere
    both = zip(table[ByLine.uncredited_kernels], table[ByLine.compiled_kernels], strict=True)
    for names, listed in both:
        assert str(listed).endswith(str(names))
    uncredited = {k for k in tied if k not in credited and k in measured}
    joined = ", ".join(table[ByLine.uncredited_kernels].astype(str))
    assert all(k in joined for k in uncredited)


def _classified(times: dict[str, float]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            Kernels.name: list(times),
            Kernels.activity: [ActivityKind.KERNEL.value] * len(times),
            Kernels.dur_us: list(times.values()),
            Kernels.excl_dur_us: list(times.values()),
        }
    )


def test_an_uncredited_kernel_is_split_evenly_over_its_lines() -> None:
    """GIVEN lines 3 and 4 credited to kernel g, a helper kernel h tied to lines 3, 4 and 9 (9
    has no eager kernel) and credited nothing; WHEN the table is built; THEN h's 30 µs go half
    to line 3 and half to line 4, named as uncredited, and line 9 gets no row."""
    table = pd.DataFrame(
        {
            ByLine.file: ["m.py", "m.py"],
            ByLine.line: [3, 4],
            ByLine.code: ["", ""],
            ByLine.eager_kernels: [1, 1],
            ByLine.eager_time_us: [10.0, 5.0],
            ByLine.eager_ops: ["aten::mm (1)", "aten::mm (1)"],
            ByLine.compiled_kernels: ["g", "g"],
            ByLine.compiled_time_us: [8.0, 4.0],
            ByLine.fused_with: ["", ""],
        }
    ).astype(CREDITED_DTYPES)
    credits = pd.DataFrame(
        {Credits.kernel: ["g", "g"], Credits.outcome: [Outcome.MATCHED.value] * 2}
    )
    held = pd.DataFrame(
        {
            "kernel": ["g", "h", "h", "h"],
            "file": ["/src/m.py"] * 4,
            "line": [3, 3, 4, 9],
            "code": [""] * 4,
            "function": [""] * 4,
        }
    )
    record = LineRecord(compiled=held)
    out = with_uncredited(table, credits, _classified({"g": 12.0, "h": 30.0}), record)
    assert out[ByLine.compiled_time_us].tolist() == [23.0, 19.0]
    assert out[ByLine.compiled_kernels].tolist() == ["g, h", "g, h"]
    assert out[ByLine.uncredited_kernels].tolist() == ["h", "h"]
    assert float(np.sum(out[ByLine.compiled_time_us])) <= 12.0 + 30.0


def test_a_line_without_provenance_is_unchanged() -> None:
    table = pd.DataFrame(
        {
            ByLine.file: ["m.py"],
            ByLine.line: [3],
            ByLine.code: [""],
            ByLine.eager_kernels: [1],
            ByLine.eager_time_us: [10.0],
            ByLine.eager_ops: ["aten::mm (1)"],
            ByLine.compiled_kernels: ["g"],
            ByLine.compiled_time_us: [8.0],
            ByLine.fused_with: [""],
        }
    ).astype(CREDITED_DTYPES)
    credits = pd.DataFrame({Credits.kernel: ["g"], Credits.outcome: [Outcome.MATCHED.value]})
    out = with_uncredited(table, credits, _classified({"g": 8.0}), LineRecord())
    assert out[ByLine.compiled_time_us].tolist() == [8.0]
    assert out[ByLine.uncredited_kernels].tolist() == [""]
