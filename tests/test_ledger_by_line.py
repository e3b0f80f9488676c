"""The fusion ledger per source line (traceviz.analysis.roofline.ledger.ledger_by_line) on every
sample run with source lines: each eager kernel counts once, on its own line, so the lines add
up to at most the per-kernel ledger and to at most what the traces measured; a fused kernel
whose eager kernels all have lines is split over them whole."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import SAMPLES
from traceviz.analysis.fusion.match import Credits
from traceviz.analysis.roofline.ledger import (
    LedgerByLineColumns,
    LedgerColumns,
    fusion_ledger,
    ledger_by_line,
)
from traceviz.pipeline import Report, compare_run
from traceviz.report.roofline_report import roofline_of
from traceviz.schema import ActivityKind, Kernels

RUNS = sorted(
    p
    for p in [*SAMPLES.glob("*"), *(SAMPLES / "h200").glob("*")]
    if (p / "run.json").is_file() and (p / "eager_lines.pt.trace.json.gz").is_file()
)
L, K = LedgerByLineColumns, LedgerColumns
SUMMED = [
    (L.eager_kernels, K.eager_kernels),
    (L.eager_unsized, K.eager_unsized),
    (L.eager_bytes, K.eager_bytes),
    (L.eager_time_us, K.eager_time_us),
    (L.fused_time_us, K.fused_time_us),
]


@cache
def _tables(run: Path) -> tuple[Report, pd.DataFrame, pd.DataFrame]:
    report = compare_run(run)
    compiled = roofline_of(report, "b")
    assert compiled is not None
    steps = (report.a.summary.step_count, report.b.summary.step_count)
    kwargs = {"eager_traffic": report.a.traffic, "compiled": compiled, "steps": steps}
    return (
        report,
        fusion_ledger(report.fusion, **kwargs),  # type: ignore[arg-type]
        ledger_by_line(report.fusion, **kwargs),  # type: ignore[arg-type]
    )


def _credited_with_lines(report: Report) -> pd.DataFrame:
    """The credits to fused kernels of the eager kernels that have a line."""
    fusion = report.fusion
    fused = fusion.kernels.loc[fusion.kernels["is_fusion"].astype(bool), "kernel"].astype(str)
    credits = fusion.credits[fusion.credits[Credits.kernel].astype(str).isin(set(fused))]
    lined = set(fusion.eager_lines["eager_row"].astype(int))
    return credits[credits[Credits.eager_row].astype(int).isin(lined)]


def _kernel_time(report: Report, which: str) -> float:
    kernels = report.side(which).trace.kernels
    rows = (kernels[Kernels.activity] == ActivityKind.KERNEL.value).to_numpy(dtype=bool)
    return float(np.nansum(kernels[Kernels.excl_dur_us].to_numpy(dtype=float)[rows]))


def test_the_sample_runs_have_lines_to_test() -> None:
    assert len(RUNS) >= 10
    assert sum(len(_tables(run)[2]) > 0 for run in RUNS) >= 8


@pytest.mark.parametrize("run", RUNS, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_lines_add_up_to_at_most_the_ledger_and_the_measured_totals(run: Path) -> None:
    report, ledger, by_line = _tables(run)
    steps_a = max(report.a.summary.step_count, 1)
    steps_b = max(report.b.summary.step_count, 1)
    for line_column, kernel_column in SUMMED:
        assert by_line[line_column].sum() <= ledger[kernel_column].sum() * (1 + 1e-9) + 1e-9
    assert np.nansum(by_line[L.roof_us]) <= np.nansum(ledger[K.roof_us]) * (1 + 1e-9) + 1e-12
    # kernels credited never more than kernels measured; time likewise, on both sides
    assert by_line[L.eager_kernels].sum() * steps_a <= report.fusion.eager_kernel_count + 1e-9
    assert by_line[L.eager_time_us].sum() * steps_a <= _kernel_time(report, "a") * (1 + 1e-9)
    assert by_line[L.fused_time_us].sum() * steps_b <= _kernel_time(report, "b") * (1 + 1e-9)
    # each eager kernel counted once, on its own line
    credited = _credited_with_lines(report)
    assert by_line[L.eager_kernels].sum() * steps_a == pytest.approx(len(credited))
    assert by_line[L.eager_time_us].sum() * steps_a == pytest.approx(
        credited[Credits.time_us].sum()
    )
    assert not by_line.duplicated([L.file, L.line]).any()
    assert (by_line[L.saved_us] == by_line[L.eager_time_us] - by_line[L.fused_time_us]).all()


@pytest.mark.parametrize("run", RUNS, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_each_fused_kernel_goes_to_the_lines_by_their_share_of_its_eager_time(run: Path) -> None:
    """The lines' fused time is each fused kernel's time times the share of its credited eager
    time whose eager kernels have a line (all of it: the kernel is split whole)."""
    report, ledger, by_line = _tables(run)
    fusion = report.fusion
    credits = fusion.credits[fusion.credits[Credits.kernel].notna()]
    lined = credits[Credits.eager_row].astype(int).isin(set(fusion.eager_lines["eager_row"]))
    kernel = credits[Credits.kernel].astype(str)
    time = credits[Credits.time_us].astype(float)
    expected = 0.0
    for row in ledger.itertuples(index=False):
        mine = (kernel == row.kernel).to_numpy()
        total = time[mine].sum()
        share = (
            time[mine & lined.to_numpy()].sum() / total
            if total > 0
            else (mine & lined.to_numpy()).sum() / max(mine.sum(), 1)
        )
        expected += (0.0 if np.isnan(row.fused_time_us) else row.fused_time_us) * share
    assert by_line[L.fused_time_us].sum() == pytest.approx(expected, rel=1e-9, abs=1e-9)


def test_gpt2_gelu_line_holds_the_sixteen_eager_kernels() -> None:
    """GPT-2's GELU (transformers/activations.py) is one line: its 16 eager kernels a step and
    the whole fused GELU kernel."""
    _, ledger, by_line = _tables(SAMPLES / "h200" / "gpt2")
    gelu = ledger.iloc[0]
    (row,) = by_line[by_line[L.kernels] == gelu[K.kernel]].itertuples(index=False)
    assert str(row.file).endswith("activations.py")
    assert row.eager_kernels == gelu[K.eager_kernels] == 16
    assert row.fused_time_us == pytest.approx(gelu[K.fused_time_us])
    assert row.roof_us == pytest.approx(gelu[K.roof_us])
    assert row.saved_us == pytest.approx(gelu[K.saved_us])
