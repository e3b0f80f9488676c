"""The fusion map's tables without groupbys (analysis/fusion_rows.py, issue 14) equal the grouped
forms they stand in for (fusion._kernel_table_grouped, fusion._eager_only_grouped,
fusion_ops._kernel_ops_grouped) to the last bit, on every sample run and on the corpus pairs
(their figures forced), and the credits they sum add up to at most what each trace measured."""

from __future__ import annotations

import pandas as pd
import pytest

from tests._reference import CORPUS_PAIRS, SAMPLE_RUNS, measured_kernel_us
from tests.conftest import CORPUS, SAMPLES, load_trace
from traceviz.analysis import fusion, fusion_ops
from traceviz.analysis.fusion_lines import fusion_evidence, read_log
from traceviz.analysis.fusion_match import credit_eager_kernels
from traceviz.analysis.fusion_rows import eager_only_rows, kernel_ops_rows, kernel_table_rows
from traceviz.analysis.kernels import classify
from traceviz.rundir import read_run_dir
from traceviz.trace import Trace


def _check(
    eager: Trace, compiled: Trace, compiler: pd.DataFrame | None, recorded: set[str]
) -> None:
    classified = classify(compiled)
    credits = credit_eager_kernels(
        eager, compiled, compiled_classified=classified, compiler=compiler
    )
    ops = kernel_ops_rows(credits, fusion_ops.KERNEL_OPS_DTYPES)
    pd.testing.assert_frame_equal(ops, fusion_ops._kernel_ops_grouped(credits), check_exact=True)
    assert fusion_ops.kernel_ops(credits).equals(ops)
    only = eager_only_rows(credits, fusion.EAGER_ONLY_DTYPES)
    pd.testing.assert_frame_equal(only, fusion._eager_only_grouped(credits), check_exact=True)
    table = kernel_table_rows(classified, credits, ops, recorded, fusion.FUSION_KERNELS_DTYPES)
    grouped = fusion._kernel_table_grouped(classified, credits, ops, recorded)
    pd.testing.assert_frame_equal(table, grouped, check_exact=True)
    # what the tables credit adds up to at most what was measured
    measured = measured_kernel_us(eager.kernels)
    assert ops["time_us"].sum() + only["time_us"].sum() <= measured * (1 + 1e-12) + 1e-9
    assert table["eager_time_us"].sum() <= measured * (1 + 1e-12) + 1e-9
    assert table["time_us"].sum() <= measured_kernel_us(classified) * (1 + 1e-12) + 1e-9


@pytest.mark.parametrize("run", SAMPLE_RUNS)
def test_equal_to_the_grouped_forms_on_sample_runs(run: str) -> None:
    r = read_run_dir(SAMPLES / run)
    eager, compiled = load_trace(r.eager), load_trace(r.compiled)
    marked = load_trace(r.eager_lines) if r.eager_lines else None
    compiler, lines = fusion_evidence(eager, compiled, read_log(r.compile_log), eager_lines=marked)
    _check(eager, compiled, compiler, set(lines.recorded) if lines is not None else set())
    _check(eager, compiled, None, set())  # by name alone, as for traces made elsewhere


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus not found at {CORPUS}")
@pytest.mark.parametrize("pair", CORPUS_PAIRS, ids=[a for a, _ in CORPUS_PAIRS])
def test_equal_to_the_grouped_forms_on_corpus_pairs(pair: tuple[str, str]) -> None:
    _check(load_trace(CORPUS / pair[0]), load_trace(CORPUS / pair[1]), None, set())
    _check(load_trace(CORPUS / pair[1]), load_trace(CORPUS / pair[0]), None, set())
