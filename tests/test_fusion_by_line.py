"""The per-line fusion table (fusion_by_line.lines_table_rows; one form since issue 26) on one
sample run per code path, on the corpus eager traces whose kernels have source lines, and on
hand-made edge cases: one row per located line with its eager kernels, time and ops, the
compiled kernels credited from it and their share of the measured time, the lines fused with
it (both ways); a hand-made case's figures worked out by hand; group_sums is pandas' groupby
sum."""

from __future__ import annotations

import math
import random

import numpy as np
import pandas as pd
import pytest

from tests.conftest import CORPUS, SAMPLES, load_trace
from tests.real_data import CORPUS_PAIRS, SAMPLE_RUNS, measured_kernel_us
from traceviz.analysis.fusion import lines as fusion_lines
from traceviz.analysis.fusion.by_line import group_sums, lines_table_rows
from traceviz.analysis.fusion.lines import (
    CREDITED_DTYPES,
    LineRecord,
    fusion_evidence,
    read_log,
    split_kernel_names,
)
from traceviz.analysis.fusion.match import Credits, credit_eager_kernels
from traceviz.analysis.kernels import classify
from traceviz.rundir import read_run_dir
from traceviz.schema import ActivityKind, Kernels


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


@pytest.mark.parametrize("run", SAMPLE_RUNS)
def test_by_line_on_sample_runs(run: str) -> None:
    r = read_run_dir(SAMPLES / run)
    eager, compiled = load_trace(r.eager), load_trace(r.compiled)
    marked = load_trace(r.eager_lines) if r.eager_lines else None
    log = read_log(r.compile_log)
    compiler, lines = fusion_evidence(eager, compiled, log, eager_lines=marked)
    if lines is None:
        pytest.skip("no source lines in this run")
    classified = classify(compiled)
    credits = credit_eager_kernels(
        eager, compiled, compiled_classified=classified, compiler=compiler
    )
    table = _checked(credits, classified, lines)
    full = fusion_lines.with_uncredited(table, credits, classified, lines)
    assert fusion_lines.lines_table(credits, classified, lines).equals(full)
    # credits add up to at most what was measured, on both sides
    assert table["eager_time_us"].sum() <= measured_kernel_us(eager.kernels) * (1 + 1e-12)
    assert full["compiled_time_us"].sum() <= measured_kernel_us(classified) * (1 + 1e-12)


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
