"""The fusion map per source line (lines.lines_table) and the compiler's record as credits.

On every sample run every compiled kernel has basis ``compiler`` and ``by_line`` names the
model's own lines; there, on the corpus pairs and on hand-made cases: one row per located line
with its eager kernels, time and ops, the compiled kernels credited from it (or tied to it by
the provenance, credited or not) and their share of the measured time, the lines fused with it
(sharing a generated kernel, both ways), all within what was measured. Credits through source
lines (``line_pairs``) also for loose lines naming only their function; kernel names read back
whole; a model defined in a test here checks the exact line numbers.
"""

from __future__ import annotations

import dataclasses
import html
import inspect
import json
import math
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import traceviz
from tests.conftest import CORPUS, SAMPLES, corpus_files, load_trace, op
from tests.real_data import CORPUS_PAIRS, SAMPLE_RUNS, measured_kernel_us
from traceviz import cli
from traceviz.analysis.fusion import lines as fusion_lines
from traceviz.analysis.fusion.by_line import _measured, group_sums, lines_table_rows
from traceviz.analysis.fusion.fusion_map import FusionKernels, fusion_map
from traceviz.analysis.fusion.lines import (
    CREDITED_DTYPES,
    ByLine,
    LineRecord,
    compiler_credits,
    fusion_evidence,
    line_pairs,
    lines_table,
    read_log,
    split_kernel_names,
    with_uncredited,
)
from traceviz.analysis.fusion.match import Credits, Outcome, credit_eager_kernels
from traceviz.analysis.inductor_names import fused_kernel_ops
from traceviz.analysis.kernels import classify
from traceviz.analysis.onnx.fusion import _line_kernels
from traceviz.parse.compile_log import is_library
from traceviz.pipeline import compare_run
from traceviz.report.perfetto import _lines_of_kernels
from traceviz.rundir import is_run_dir, read_run_dir
from traceviz.schema import ActivityKind, Kernels
from traceviz.trace import Trace


def _checked(credits: pd.DataFrame, classified: pd.DataFrame, lines: LineRecord) -> pd.DataFrame:
    """The credited table of ``credits``, checked against the located credits it sums."""
    located = fusion_lines._located(credits, lines)
    table = lines_table_rows(located, classified, fusion_lines._generated, CREDITED_DTYPES)
    located = located[located["file"].notna() & located["line"].notna()]
    keys = list(zip(located["file"], located["line"].astype(int), strict=True))
    spots = list(zip(table["file"], table["line"].astype(int), strict=True))
    assert len(spots) == len(set(spots)) and set(spots) == set(keys)
    per_line = located.groupby([located["file"], located["line"].astype(int)], sort=False)
    by_spot = table.set_index([table["file"], table["line"].astype(int)])
    assert (by_spot["eager_kernels"] == per_line.size().reindex(by_spot.index)).all()
    summed = per_line[Credits.time_us].sum().reindex(by_spot.index)
    np.testing.assert_allclose(by_spot["eager_time_us"], summed, rtol=1e-12)
    assert table["eager_time_us"].is_monotonic_decreasing
    matched = located[located[Credits.outcome] == "matched"]
    for (f, n), rows in matched.groupby([matched["file"], matched["line"].astype(int)]):
        named = split_kernel_names(by_spot.loc[(f, n), "compiled_kernels"])
        assert sorted(named) == sorted({str(k) for k in rows[Credits.kernel]})
    fused = {
        (f"{f}:{n}", other)
        for f, n, text in zip(table["file"], table["line"], table["fused_with"], strict=True)
        for other in filter(None, text.split(", "))
    }
    assert all((b, a) in fused for a, b in fused)  # fused with each other, both ways
    assert table["compiled_time_us"].sum() <= measured_kernel_us(classified) * (1 + 1e-12)
    return table


def run_evidence(run: str) -> tuple[Trace, Trace, pd.DataFrame | None, LineRecord | None]:
    """A sample run's eager and compiled traces, and what ``fusion_evidence`` reads from its
    compile log and lines trace: the compiler's credits and the source lines."""
    r = read_run_dir(SAMPLES / run)
    eager, compiled = load_trace(r.eager), load_trace(r.compiled)
    marked = load_trace(r.eager_lines) if r.eager_lines else None
    compiler, lines = fusion_evidence(eager, compiled, read_log(r.compile_log), eager_lines=marked)
    return eager, compiled, compiler, lines


def _run(run: str) -> tuple[Trace, pd.DataFrame, pd.DataFrame, LineRecord]:
    """A sample run's eager trace, credits (the compiler's first), classified compiled
    kernels and source lines."""
    eager, compiled, compiler, lines = run_evidence(run)
    if lines is None:
        pytest.skip("no source lines in this run")
    classified = classify(compiled)
    credits = credit_eager_kernels(
        eager, compiled, compiled_classified=classified, compiler=compiler
    )
    return eager, credits, classified, lines


@pytest.mark.parametrize("run", SAMPLE_RUNS)
def test_by_line_on_sample_runs(run: str) -> None:
    """Also, where the compiler's provenance ties kernels to lines: summed over lines, the
    compiled time is exactly the measured time of the kernels credited from a located eager
    kernel plus the uncredited kernels the provenance ties to a line, each counted once."""
    eager, credits, classified, lines = _run(run)
    table = _checked(credits, classified, lines)
    full = with_uncredited(table, credits, classified, lines)
    assert lines_table(credits, classified, lines).equals(full)
    # credits add up to at most what was measured, on both sides
    assert table["eager_time_us"].sum() <= measured_kernel_us(eager.kernels) * (1 + 1e-12)
    assert full["compiled_time_us"].sum() <= measured_kernel_us(classified) * (1 + 1e-12)
    if lines.compiled.empty or full.empty:
        return  # no compiler provenance, or no line
    measured = _measured(classified)
    matched = credits[credits[Credits.outcome] == Outcome.MATCHED.value]
    credited = {str(k) for k in matched[Credits.kernel].dropna()}
    located = matched[matched[Credits.eager_row].isin(lines.eager["eager_row"])]
    tied = _tied(full, lines)
    uncredited = {k for k in tied if k not in credited and k in measured}
    counted = {str(k) for k in located[Credits.kernel].dropna()} | uncredited
    want = sum(measured[k] for k in counted if k in measured)
    assert float(full[ByLine.compiled_time_us].sum()) == pytest.approx(want, rel=1e-9, abs=1e-9)
    # every uncredited kernel is listed among the line's compiled kernels and credited nowhere
    both = zip(full[ByLine.uncredited_kernels], full[ByLine.compiled_kernels], strict=True)
    for names, listed in both:
        assert str(listed).endswith(str(names))
    joined = ", ".join(full[ByLine.uncredited_kernels].astype(str))
    assert all(k in joined for k in uncredited)


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus not found at {CORPUS}")
@pytest.mark.parametrize("pair", CORPUS_PAIRS, ids=[a for a, _ in CORPUS_PAIRS])
def test_by_line_on_corpus_pairs(pair: tuple[str, str]) -> None:
    eager, compiled = load_trace(CORPUS / pair[0]), load_trace(CORPUS / pair[1])
    _, lines = fusion_evidence(eager, compiled)
    if lines is None or lines.eager.empty:
        pytest.skip("the eager trace maps no kernel to a source line")
    classified = classify(compiled)
    credits = credit_eager_kernels(eager, compiled, compiled_classified=classified)
    _checked(credits, classified, lines)


def _classified(names: list[str], times: list[float]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            Kernels.activity: [ActivityKind.KERNEL.value] * len(names) + ["memcpy"],
            Kernels.name: [*names, "Memcpy HtoD"],
            Kernels.dur_us: [*times, 5.0],
            Kernels.excl_dur_us: [t if i % 2 else np.nan for i, t in enumerate(times)] + [5.0],
        }
    )


def test_hand_made_edge_cases() -> None:
    """Lines sharing kernels, unmatched rows, a row without an op or code, a missing line or
    file, a NaN time, zero credited time (even split) and a kernel the trace never ran."""
    fused = "triton_poi_fused_add_mul_0"
    credits = pd.DataFrame(
        {
            Credits.eager_row: [0, 1, 2, 3, 4, 5, 6, 7, 8],
            Credits.op: [
                "aten::add",
                "aten::mul",
                None,
                "aten::add",
                "aten::mm",
                "aten::relu",
                "aten::add",
                "aten::mul",
                "aten::sin",
            ],
            Credits.time_us: [1.5, 0.1, 2.0, np.nan, 3.0, 0.0, 0.0, 1e-9, 4.0],
            Credits.kernel: [
                fused,
                fused,
                None,
                fused,
                "sm80_gemm",
                "gone_kernel",
                "other_0",
                "other_0",
                None,
            ],
            Credits.outcome: ["matched"] * 2 + ["no counterpart"] + ["matched"] * 5 + ["removed"],
        }
    )
    eager = pd.DataFrame(
        {
            "eager_row": [0, 1, 2, 3, 4, 5, 6, 7, 8],
            "file": ["m.py", "m.py", "m.py", "n.py", None, "n.py", "n.py", "o.py", "o.py"],
            "line": pd.array([3, 4, 3, 7, 1, 7, 9, 9, pd.NA], dtype="Int64"),
            "code": ["x + y", None, "x + y", None, "mm", "relu", "", "mul", "sin"],
        }
    )
    lines = LineRecord(eager=eager)
    classified = _classified([fused, fused, "sm80_gemm", "other_0"], [2.0, 3.0, 7.0, 0.25])
    table = _checked(credits, classified, lines)
    # no file or no line: left out; a NaN time sums as nothing; m.py:3's code from its 2nd row
    assert list(zip(table["file"], table["line"], strict=True)) == [
        ("m.py", 3), ("m.py", 4), ("o.py", 9), ("n.py", 7), ("n.py", 9)
    ]  # fmt: skip
    assert table["code"].tolist() == ["x + y", "", "mul", "relu", ""]
    assert table["eager_kernels"].tolist() == [2, 1, 1, 2, 1]
    assert table["eager_ops"].iloc[3] == "aten::add (1), aten::relu (1)"
    # the fused kernel's 5 µs split 1.5 : 0.1 (n.py:7's NaN credits nothing); other_0's
    # 0.25 µs all to o.py:9 (1e-9 µs against 0); gone_kernel never ran: nothing
    assert table["compiled_time_us"].tolist() == [4.6875, 0.3125, 0.25, 0.0, 0.0]
    assert table["fused_with"].iloc[0] == "m.py:4, n.py:7"
    assert table["compiled_kernels"].iloc[3] == f"gone_kernel, {fused}"
    empty = credits.iloc[:0]
    assert fusion_lines.lines_table(empty, classified, lines).empty


@pytest.mark.parametrize("sort", [False, True])
@pytest.mark.parametrize("with_nan", [False, True])
def test_group_sums_are_pandas_groupby_sums(sort: bool, with_nan: bool) -> None:
    """Both of pandas 3's paths: ids that never decrease without NaN (reduceat) and the rest
    (compensated loop); keys with missing parts dropped."""
    rng = random.Random(14)
    for _ in range(40):
        n = rng.randint(0, 60)
        keys = [rng.choice(["b", "a", "c", None, "d"]) for _ in range(n)]
        if sort:  # contiguous groups in order: the reduceat path when there is no NaN
            keys = sorted(keys, key=lambda k: (k is not None, k or ""))
        values = [
            math.nan
            if with_nan and rng.random() < 0.2
            else rng.random() * 10.0 ** rng.randint(-9, 9)
            for _ in range(n)
        ]
        frame = pd.DataFrame({"k": pd.Series(keys, dtype=object), "v": values})
        expected = frame.groupby("k", sort=False)["v"].sum()
        ids, uniques = pd.factorize(frame["k"])  # first appearance, -1 for None: sort=False
        got = group_sums(ids, values, len(uniques))
        assert got == expected.tolist() or all(
            a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(got, expected, strict=True)
        )
        assert list(uniques) == expected.index.tolist()


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
    _, credits, classified, lines = _run("h200/gpt2")
    table = lines_table(credits, classified, lines)
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


def _line_table(lines: list[int], times: list[float]) -> pd.DataFrame:
    """By-line rows for m.py's ``lines``, each one eager aten::mm credited to kernel g."""
    n = len(lines)
    return pd.DataFrame(
        {
            ByLine.file: ["m.py"] * n,
            ByLine.line: lines,
            ByLine.code: [""] * n,
            ByLine.eager_kernels: [1] * n,
            ByLine.eager_time_us: [10.0] * n,
            ByLine.eager_ops: ["aten::mm (1)"] * n,
            ByLine.compiled_kernels: ["g"] * n,
            ByLine.compiled_time_us: times,
            ByLine.fused_with: [""] * n,
        }
    ).astype(CREDITED_DTYPES)


def test_an_uncredited_kernel_is_split_evenly_over_its_lines() -> None:
    """GIVEN lines 3 and 4 credited to kernel g, a helper kernel h tied to lines 3, 4 and 9 (9
    has no eager kernel) and credited nothing; WHEN the table is built; THEN h's 30 µs go half
    to line 3 and half to line 4, named as uncredited, and line 9 gets no row. A line without
    provenance is unchanged."""
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
    times = _classified(["g", "h"], [12.0, 30.0])
    out = with_uncredited(_line_table([3, 4], [8.0, 4.0]), credits, times, record)
    assert out[ByLine.compiled_time_us].tolist() == [23.0, 19.0]
    assert out[ByLine.compiled_kernels].tolist() == ["g, h", "g, h"]
    assert out[ByLine.uncredited_kernels].tolist() == ["h", "h"]
    assert float(np.sum(out[ByLine.compiled_time_us])) <= 12.0 + 30.0
    alone = with_uncredited(
        _line_table([3], [8.0]), credits.head(1), _classified(["g"], [8.0]), LineRecord()
    )
    assert alone[ByLine.compiled_time_us].tolist() == [8.0]
    assert alone[ByLine.uncredited_kernels].tolist() == [""]


RUNS = sorted(p.name for p in SAMPLES.iterdir() if (p / "run.json").exists())


def _kernels(text: str) -> set[str]:
    return {k for k in str(text).split(", ") if k}


@pytest.mark.parametrize("run", RUNS)
def test_sample_runs_use_the_compilers_record(run: str) -> None:
    """Every compiled kernel (Inductor's and the library calls it made) is in the compiler's
    record; by_line names the model's own lines, with the recorded text of each, its credits
    within what was measured, and lines fused with each other share a generated kernel."""
    comparison = compare_run(SAMPLES / run)
    kernels = comparison.fusion.kernels
    assert not kernels.empty
    assert set(kernels[FusionKernels.basis]) == {"compiler"}, kernels[[FusionKernels.kernel]]
    assert (comparison.fusion.credits[Credits.basis] == "compiler").any()
    table = comparison.fusion.by_line
    assert not table.empty
    for file, line, code in zip(table[ByLine.file], table[ByLine.line], table[ByLine.code],
                                strict=True):  # fmt: skip
        assert not is_library(file)  # model code: the user's, or a model library's (gpt2)
        assert Path(file).read_text().splitlines()[int(line) - 1].strip() == code
    assert_lines_conserve(comparison)
    held = {
        f"{f}:{n}": _kernels(k)
        for f, n, k in zip(table["file"], table["line"], table["compiled_kernels"], strict=True)
    }
    for spot, others in zip(held, table["fused_with"], strict=True):
        for other in _kernels(others):
            shared = held[spot] & held.get(other, set())
            assert any(fused_kernel_ops(k) is not None for k in shared), (run, spot, other)


def test_attention_projection_lines_are_not_fused_with_the_mlp_line() -> None:
    table = compare_run(SAMPLES / "attention").fusion.by_line
    qkv = table[table["code"].str.contains("self.qkv(x)", regex=False)]
    assert len(qkv) == 1
    assert "aten::addmm" in qkv["compiled_kernels"].iloc[0]  # it shares addmm with other lines
    mlp_line = table[table["code"].str.contains("self.fc2(", regex=False)]
    spot = f"{mlp_line['file'].iloc[0]}:{int(mlp_line['line'].iloc[0])}"
    assert spot not in qkv["fused_with"].iloc[0]


CREDIT_RUNS = ["h200/gpt2", "h200/graph-break", "h200/attention-train", "block"]


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


@pytest.mark.parametrize("run", CREDIT_RUNS)
def test_credits_follow_the_line_pairs(run: str) -> None:
    """Also: the compiled lines hold each (kernel, file, line) once, of this trace's kernels
    and the log's lines; a log whose lines name no kernel gives the empty table."""
    eager, compiled, _, lines = run_evidence(run)
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
    log = read_log(read_run_dir(SAMPLES / run).compile_log)
    held, ops = fusion_lines._compiled_lines(compiled, log)
    assert len(held) and not held.duplicated(["kernel", "file", "line"]).any()
    assert set(held["kernel"]) <= set(compiled.kernels["name"].astype(str))
    logged = set(zip(log.lines["file"], log.lines["line"], strict=True))
    assert set(zip(held["file"], held["line"], strict=True)) <= logged
    assert set(held["kernel"]) <= set(ops)
    empty = dataclasses.replace(log, lines=log.lines.head(0))
    none = fusion_lines._compiled_lines(compiled, empty)[0]
    assert none.empty
    pd.testing.assert_series_equal(none.dtypes, held.dtypes)


RUNS_WITH_COMMA_NAMES = ["attention-train", "gpt2", "gpt2-reduce-overhead"]


def _traces() -> list[Path]:
    samples = sorted(SAMPLES.rglob("*.json")) + sorted(SAMPLES.rglob("*.json.gz"))
    return [p for p in samples if "trace" in p.name] + corpus_files()


@pytest.mark.parametrize("path", _traces(), ids=lambda p: p.name)
def test_every_real_kernel_name_survives_a_join(path: Path) -> None:
    names = sorted(set(load_trace(path).kernels[Kernels.name].astype(str)))
    names = [n.strip() for n in names if n.strip()]
    assert split_kernel_names(", ".join(names)) == names


def test_commas_inside_brackets_do_not_part_names() -> None:
    joined = "triton_poi_fused_add_0, void k<4, F<float>, A<char*, 1> >(int, F<float>), mm"
    assert split_kernel_names(joined) == [
        "triton_poi_fused_add_0",
        "void k<4, F<float>, A<char*, 1> >(int, F<float>)",
        "mm",
    ]
    assert split_kernel_names("") == split_kernel_names(None) == []
    assert split_kernel_names(float("nan")) == []


@pytest.mark.parametrize("run", RUNS_WITH_COMMA_NAMES)
def test_line_lookups_keep_library_kernel_names_whole(run: str) -> None:
    """In the Perfetto overlay, the ONNX cross-fusion and the dashboard's line explanation."""
    path = SAMPLES / "h200" / run
    if not is_run_dir(path):
        pytest.skip(f"{path} not found")
    comparison = compare_run(path).comparison
    by_line: pd.DataFrame = comparison.fusion.by_line
    compiled = set(comparison.b.trace.kernels[Kernels.name].astype(str))
    named = {k for cell in by_line[ByLine.compiled_kernels] for k in split_kernel_names(cell)}
    assert any("," in name for name in named)  # the case this test is about
    assert named <= compiled  # every name read back is a kernel of the compiled trace
    assert set(_lines_of_kernels(by_line)) == named  # the Perfetto overlay
    assert set().union(*_line_kernels(by_line).values()) == named  # ONNX cross-fusion
    pytest.importorskip("panel", reason="panel not installed (dashboard extra)")
    from traceviz.dashboard.tabs.fusion import explain_line

    for _, row in by_line.iterrows():
        shown = explain_line(comparison, row)
        for name in split_kernel_names(row[ByLine.compiled_kernels]):
            assert f"<li>{html.escape(name)}" in shown


def assert_lines_conserve(comparison: traceviz.Comparison) -> None:
    """by_line credits add up to at most what each side measured."""
    by_line, fusion = comparison.fusion.by_line, comparison.fusion
    assert int(by_line[ByLine.eager_kernels].sum()) <= fusion.eager_kernel_count
    eager_total = measured_kernel_us(comparison.a.trace.kernels)
    assert float(by_line[ByLine.eager_time_us].sum()) <= eager_total * (1 + 1e-9)
    compiled_total = measured_kernel_us(comparison.b.trace.kernels)
    assert float(by_line[ByLine.compiled_time_us].sum()) <= compiled_total * (1 + 1e-9) + 1e-6
    assert not by_line.duplicated([ByLine.file, ByLine.line]).any()


def test_lines_share_a_fused_kernels_time_by_their_eager_time(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    compiled = traceviz.load(
        tmp_trace([op("graph_0_cpp_fused_add_mul_0", 10, 30), op("aten::mm", 50, 60)])
    )
    credits = pd.DataFrame(
        {
            Credits.eager_row: [0, 1, 2],
            Credits.op: ["aten::mul", "aten::add", "aten::mm"],
            Credits.time_us: [10.0, 30.0, 50.0],
            Credits.kernel: ["graph_0_cpp_fused_add_mul_0", "graph_0_cpp_fused_add_mul_0",
                             "aten::mm"],
            Credits.outcome: ["matched"] * 3,
        }
    )  # fmt: skip
    lines = LineRecord(
        eager=pd.DataFrame({"eager_row": [0, 1, 2], "file": ["m.py"] * 3, "line": [3, 4, 5],
                            "code": ["y = x * 2", "z = y + 1", "w = z @ a"]})
    )  # fmt: skip
    table = lines_table(credits, classify(compiled), lines).set_index(ByLine.line)
    assert table.loc[3, ByLine.compiled_time_us] == pytest.approx(30 * 10 / 40)
    assert table.loc[4, ByLine.compiled_time_us] == pytest.approx(30 * 30 / 40)
    assert table.loc[5, ByLine.compiled_time_us] == pytest.approx(60)
    assert table.loc[3, ByLine.fused_with] == "m.py:4" and table.loc[5, ByLine.fused_with] == ""
    assert table.loc[4, ByLine.eager_ops] == "aten::add (1)"
    assert float(table[ByLine.compiled_time_us].sum()) == pytest.approx(90)
    assert list(table.index) == [5, 4, 3]  # by eager time, largest first


def test_cli_compile_log_gives_by_line_and_compiler_basis(capsys: pytest.CaptureFixture) -> None:
    run = SAMPLES / RUNS[0]
    # the run's lines trace as a: two plain traces get lines only from a's own marks
    argv = ["compare", str(run / "eager_lines.pt.trace.json.gz"),
            str(run / "compiled.pt.trace.json.gz"),
            "--compile-log", str(run / "compile_log.jsonl.gz"), "--format", "json"]  # fmt: skip
    assert cli.main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    fusion = doc["fusion"]
    assert fusion["comparable"]["comparable"] is True and fusion["by_line"]
    assert {k["basis"] for k in fusion["kernels"] if k["is_fusion"]} == {"compiler"}


def test_cli_bad_compile_log_is_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    bogus = tmp_path / "torch_trace"
    bogus.mkdir()
    run = SAMPLES / RUNS[0]
    # the run's lines trace as a: two plain traces get lines only from a's own marks
    argv = ["compare", str(run / "eager_lines.pt.trace.json.gz"),
            str(run / "compiled.pt.trace.json.gz"),
            "--compile-log", str(bogus)]  # fmt: skip
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert str(bogus) in err and "Traceback" not in err


def test_cli_force_computes_the_figures(capsys: pytest.CaptureFixture) -> None:
    compiled = str(SAMPLES / RUNS[0] / "compiled.pt.trace.json.gz")
    assert cli.main(["compare", compiled, compiled, "--format", "json"]) == 0
    withheld = json.loads(capsys.readouterr().out)
    assert withheld["fusion"]["kernels"] == [] and withheld["fusion"]["est_bytes_saved"] is None
    assert "traces-not-comparable" in {f["id"] for f in withheld["findings"]}
    assert cli.main(["compare", compiled, compiled, "--format", "json", "--force"]) == 0
    forced = json.loads(capsys.readouterr().out)
    assert forced["fusion"]["kernels"] and forced["fusion"]["comparable"]["forced"] is True


@pytest.mark.slow
def test_a_model_in_this_file_maps_to_its_exact_lines(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from traceviz.runner import profile_model

    class TwoLines(torch.nn.Module):  # type: ignore[misc]
        """Two lines of pointwise work, then a line with a GEMM: Inductor fuses the first two."""

        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(64, 64)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = torch.cos(x) * 2.0
            z = torch.relu(y) + 1.0
            return self.fc(z)

    def line_of(text: str) -> int:
        """The line number in this file of the statement ``text`` in TwoLines.forward."""
        source, start = inspect.getsourcelines(TwoLines.forward)
        found = [start + i for i, line in enumerate(source) if line.strip() == text]
        assert len(found) == 1
        return found[0]

    run = profile_model(TwoLines(), (torch.randn(8, 64),), device="cpu", steps=2, warmup=1,
                        iters=3, out=tmp_path / "two-lines")  # fmt: skip
    assert run.ok
    comparison = compare_run(tmp_path / "two-lines")
    by_line = comparison.fusion.by_line
    mine = by_line[by_line[ByLine.file] == __file__].set_index(ByLine.line)
    first, second = line_of("y = torch.cos(x) * 2.0"), line_of("z = torch.relu(y) + 1.0")
    gemm = line_of("return self.fc(z)")
    assert {first, second, gemm} <= set(mine.index), by_line[[ByLine.file, ByLine.line]]
    assert int(mine[ByLine.eager_kernels].sum()) == int(by_line[ByLine.eager_kernels].sum())
    # the two pointwise lines went into one fused kernel, each says it was fused with the other
    fused = set(mine.loc[first, ByLine.compiled_kernels].split(", "))
    assert fused & set(mine.loc[second, ByLine.compiled_kernels].split(", "))
    assert f"{__file__}:{second}" in mine.loc[first, ByLine.fused_with]
    kernels = comparison.fusion.kernels
    inductor = kernels[kernels[FusionKernels.is_fusion]]
    assert set(inductor[FusionKernels.basis]) == {"compiler"}
    assert_lines_conserve(comparison)
    assert np.isfinite(comparison.fusion.eager_kernels_per_compiled_kernel or np.nan)


def test_fusion_map_without_lines_has_no_by_line(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    trace = traceviz.load(tmp_trace([op("aten::sin", 10, 5)]))
    assert fusion_map(trace, trace).by_line.empty


def test_layout_kernel_on_the_convs_line_gets_no_conv_from_the_compiler_stage() -> None:
    path = SAMPLES / "conv-bn-relu"
    if not (path / "compile_log.jsonl.gz").is_file():
        pytest.skip("conv-bn-relu sample with a compile log not found")
    comparison = compare_run(path)
    kernels = comparison.fusion.kernels.set_index(FusionKernels.kernel)
    layout = kernels[kernels[FusionKernels.is_layout]]
    assert len(layout) and (layout[FusionKernels.eager_kernels] == 0).all()
    assert set(layout[FusionKernels.basis]) == {"compiler"}  # explained, just credited nothing
    convs = comparison.fusion.credits
    convs = convs[convs[Credits.op].str.contains("convolution")]
    assert len(convs) and not convs[Credits.kernel].isin(layout.index).any()


def test_bias_add_goes_to_the_gemm_that_fused_it() -> None:
    path = SAMPLES / "linear-add"
    if not (path / "compile_log.jsonl.gz").is_file():
        pytest.skip("linear-add sample with a compile log not found")
    credits = compare_run(path).fusion.credits
    adds = credits[credits[Credits.op] == "aten::add"]
    assert len(adds) and set(adds[Credits.kernel]) == {"aten::addmm"}
    assert (adds[Credits.confidence] == 1.0).all()


def test_function_level_eager_lines_meet_the_log_by_function_and_path_tail(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    # a with_stack frame names the function's first line and may hold a relative path
    eager = traceviz.load(tmp_trace([op("aten::cos", 10, 5), op("aten::mm", 30, 9)]))
    compiled = traceviz.load(tmp_trace([op("graph_0_cpp_fused_cos_0", 10, 2),
                                        op("aten::mm", 20, 8)]))  # fmt: skip
    lines = LineRecord(
        eager=pd.DataFrame({"eager_row": [0, 1], "file": ["pkg/model.py"] * 2, "line": [20, 20],
                            "code": ["def forward(self, x):"] * 2, "function": ["forward"] * 2,
                            "exact": [False, False]}),
        compiled=pd.DataFrame({"kernel": ["graph_0_cpp_fused_cos_0", "aten::mm"],
                               "file": ["/src/pkg/model.py"] * 2, "line": [21, 22],
                               "code": ["y = x.cos()", "return y @ w"],
                               "function": ["forward", "forward"]}),
    )  # fmt: skip
    credits = compiler_credits(eager, compiled, lines).set_index("eager_row")["kernel"]
    assert credits.to_dict() == {0: "graph_0_cpp_fused_cos_0", 1: "aten::mm"}
    exact = LineRecord(eager=lines.eager.assign(exact=True), compiled=lines.compiled)
    assert compiler_credits(eager, compiled, exact).empty  # line 20 holds no kernel
