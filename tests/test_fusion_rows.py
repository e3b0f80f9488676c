"""The fusion map's tables on every sample run (one per code path) and the corpus pairs (their
figures forced), one form each since issue 26: ``ops`` and ``eager_only`` partition the credits
(every matched instance in one ``ops`` row, every other in one ``eager_only`` row); ``kernels``
has one row per compiled kernel name with its calls and measured time, what the credits gave
it, and its basis; and what the tables credit adds up to at most what each trace measured."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.conftest import CORPUS, SAMPLES, load_trace
from tests.real_data import CORPUS_PAIRS, SAMPLE_RUNS, measured_kernel_us
from traceviz.analysis.fusion import fusion_map as fusion
from traceviz.analysis.fusion import ops as fusion_ops
from traceviz.analysis.fusion.lines import fusion_evidence, read_log
from traceviz.analysis.fusion.match import Credits, Outcome, credit_eager_kernels
from traceviz.analysis.fusion.rows import kernel_table_rows
from traceviz.analysis.kernels import classify
from traceviz.rundir import read_run_dir
from traceviz.schema import ActivityKind, Kernels
from traceviz.trace import Trace


def _check(
    eager: Trace, compiled: Trace, compiler: pd.DataFrame | None, recorded: set[str]
) -> None:
    classified = classify(compiled)
    credits = credit_eager_kernels(
        eager, compiled, compiled_classified=classified, compiler=compiler
    )
    ops = fusion_ops.kernel_ops(credits)
    only = fusion._eager_only(credits)
    matched = credits[credits[Credits.outcome] == Outcome.MATCHED.value]
    left = credits[credits[Credits.outcome] != Outcome.MATCHED.value]
    assert ops["kernels"].sum() == len(matched) and only["kernels"].sum() == len(left)
    assert ops["time_us"].sum() == pytest.approx(matched[Credits.time_us].sum(), rel=1e-12)
    assert only["time_us"].sum() == pytest.approx(left[Credits.time_us].sum(), rel=1e-12)
    assert not ops.duplicated(["kernel", "op"]).any()
    assert not only.duplicated(["op", "outcome"]).any()
    assert ops["time_us"].is_monotonic_decreasing and only["time_us"].is_monotonic_decreasing
    table = kernel_table_rows(classified, credits, ops, recorded, fusion.FUSION_KERNELS_DTYPES)
    _check_kernels(table, classified, matched, recorded)
    # what the tables credit adds up to at most what was measured
    measured = measured_kernel_us(eager.kernels)
    assert ops["time_us"].sum() + only["time_us"].sum() <= measured * (1 + 1e-12) + 1e-9
    assert table["eager_time_us"].sum() <= measured * (1 + 1e-12) + 1e-9
    assert table["time_us"].sum() <= measured_kernel_us(classified) * (1 + 1e-12) + 1e-9


def _check_kernels(
    table: pd.DataFrame, classified: pd.DataFrame, matched: pd.DataFrame, recorded: set[str]
) -> None:
    """One row per compiled kernel name: its kernel rows' count and time (``dur_us`` where
    the exclusive time is missing), the matched credits it got, largest time first."""
    rows = classified[classified[Kernels.activity] == ActivityKind.KERNEL.value]
    names = rows[Kernels.name].astype(str)
    time = rows[Kernels.excl_dur_us].fillna(rows[Kernels.dur_us]).astype(float)
    assert table["kernel"].is_unique and set(table["kernel"]) == set(names)
    by_name = table.set_index("kernel")
    counts = names.value_counts()
    assert (by_name["calls"] == counts.reindex(by_name.index)).all()
    times = time.groupby(names.to_numpy()).sum().reindex(by_name.index)
    np.testing.assert_allclose(by_name["time_us"], times, rtol=1e-12)
    got = matched.groupby(matched[Credits.kernel].astype(str))[Credits.time_us].agg(["size", "sum"])
    credited = by_name[by_name["eager_kernels"] > 0]
    assert set(credited.index) == set(got.index)
    assert (credited["eager_kernels"] == got["size"].reindex(credited.index)).all()
    np.testing.assert_allclose(credited["eager_time_us"], got["sum"].reindex(credited.index))
    assert credited["confidence"].between(0, 1).all()
    assert by_name.loc[by_name["eager_kernels"] == 0, "eager_ops"].eq("").all()
    assert table["time_us"].is_monotonic_decreasing
    assert (table["basis"].astype(str) == "compiler").tolist() == [
        k in recorded for k in table["kernel"]
    ]


@pytest.mark.parametrize("run", SAMPLE_RUNS)
def test_tables_on_sample_runs(run: str) -> None:
    r = read_run_dir(SAMPLES / run)
    eager, compiled = load_trace(r.eager), load_trace(r.compiled)
    marked = load_trace(r.eager_lines) if r.eager_lines else None
    compiler, lines = fusion_evidence(eager, compiled, read_log(r.compile_log), eager_lines=marked)
    _check(eager, compiled, compiler, set(lines.recorded) if lines is not None else set())
    _check(eager, compiled, None, set())  # by name alone, as for traces made elsewhere


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus not found at {CORPUS}")
@pytest.mark.parametrize("pair", CORPUS_PAIRS, ids=[a for a, _ in CORPUS_PAIRS])
def test_tables_on_corpus_pairs(pair: tuple[str, str]) -> None:
    _check(load_trace(CORPUS / pair[0]), load_trace(CORPUS / pair[1]), None, set())
    _check(load_trace(CORPUS / pair[1]), load_trace(CORPUS / pair[0]), None, set())
