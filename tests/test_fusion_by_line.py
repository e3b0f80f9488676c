"""The per-line fusion table without groupbys (fusion_by_line.lines_table_rows, issue 14) equals
the grouped form (fusion_lines._lines_table_grouped) to the last bit: on one sample run per code
path, on the corpus eager traces whose kernels have source lines, and on hand-made edge cases;
its compensated sum is pandas' groupby sum."""

from __future__ import annotations

import math
import random

import numpy as np
import pandas as pd
import pytest

from tests.conftest import CORPUS, SAMPLES, load_trace
from tests.real_data import CORPUS_PAIRS, SAMPLE_RUNS, measured_kernel_us
from traceviz.analysis import fusion_lines
from traceviz.analysis.fusion_by_line import group_sums, kahan_sum, lines_table_rows
from traceviz.analysis.fusion_lines import CREDITED_DTYPES, LineRecord, fusion_evidence, read_log
from traceviz.analysis.fusion_match import Credits, credit_eager_kernels
from traceviz.analysis.kernels import classify
from traceviz.rundir import read_run_dir
from traceviz.schema import ActivityKind, Kernels


def _both(credits: pd.DataFrame, classified: pd.DataFrame, lines: LineRecord) -> pd.DataFrame:
    located = fusion_lines._located(credits, lines)
    fast = lines_table_rows(located, classified, fusion_lines._generated, CREDITED_DTYPES)
    grouped = fusion_lines._lines_table_grouped(located, classified)
    pd.testing.assert_frame_equal(fast, grouped, check_exact=True)
    return fast


@pytest.mark.parametrize("run", SAMPLE_RUNS)
def test_equal_to_the_grouped_form_on_sample_runs(run: str) -> None:
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
    table = _both(credits, classified, lines)
    full = fusion_lines.with_uncredited(table, credits, classified, lines)
    assert fusion_lines.lines_table(credits, classified, lines).equals(full)
    # credits add up to at most what was measured, on both sides
    assert table["eager_time_us"].sum() <= measured_kernel_us(eager.kernels) * (1 + 1e-12)
    assert full["compiled_time_us"].sum() <= measured_kernel_us(classified) * (1 + 1e-12)


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus not found at {CORPUS}")
@pytest.mark.parametrize("pair", CORPUS_PAIRS, ids=[a for a, _ in CORPUS_PAIRS])
def test_equal_to_the_grouped_form_on_corpus_pairs(pair: tuple[str, str]) -> None:
    eager, compiled = load_trace(CORPUS / pair[0]), load_trace(CORPUS / pair[1])
    _, lines = fusion_evidence(eager, compiled)
    if lines is None or lines.eager.empty:
        pytest.skip("the eager trace maps no kernel to a source line")
    classified = classify(compiled)
    credits = credit_eager_kernels(eager, compiled, compiled_classified=classified)
    _both(credits, classified, lines)


def _classified(names: list[str], times: list[float]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            Kernels.activity: [ActivityKind.KERNEL.value] * len(names) + ["memcpy"],
            Kernels.name: [*names, "Memcpy HtoD"],
            Kernels.dur_us: [*times, 5.0],
            Kernels.excl_dur_us: [t if i % 2 else np.nan for i, t in enumerate(times)] + [5.0],
        }
    )


def test_equal_on_hand_made_edge_cases() -> None:
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
    table = _both(credits, classified, lines)
    assert table["fused_with"].tolist() != [""] * len(table)  # the shared kernel shows
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


def test_kahan_sum_is_pandas_compensated_sum() -> None:
    values = [1e16, 1.0, 1.0, -1e16, math.nan, math.inf, 1.0]
    expected = pd.Series(values).groupby([0, 0, 0, 0, 0, 1, 1]).sum()  # NaN: the Kahan path
    assert kahan_sum(values[:5]) == expected.iloc[0] == 2.0  # left to right would give 0.0
    assert kahan_sum(values[5:]) == expected.iloc[1] == math.inf
