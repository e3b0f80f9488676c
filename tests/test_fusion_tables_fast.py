"""The fusion tables built with plain groupby aggregations (issue 14: pandas 3's named
``agg(**…)`` is ~7x slower on the small tables of a sample run) equal the named-agg form they
replaced, kept here as the reference, on every sample run."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.conftest import SAMPLES, load_trace
from traceviz import schema
from traceviz.analysis import fusion_lines
from traceviz.analysis.fusion_match import Credits, Outcome
from traceviz.analysis.fusion_ops import KERNEL_OPS_DTYPES, KernelOps, kernel_ops
from traceviz.pipeline import compare_run

RUNS = sorted(p.parent.relative_to(SAMPLES).as_posix() for p in SAMPLES.glob("**/run.json"))


def _kernel_ops_reference(credits: pd.DataFrame) -> pd.DataFrame:
    matched = credits[credits[Credits.outcome] == Outcome.MATCHED.value]
    per_op = matched.groupby([Credits.kernel, Credits.op], sort=False).agg(
        **{
            KernelOps.kernels: (Credits.time_us, "size"),
            KernelOps.time_us: (Credits.time_us, "sum"),
        }
    )
    per_op = per_op.reset_index().sort_values(
        [KernelOps.time_us, KernelOps.op], ascending=[False, True], kind="stable"
    )
    table = per_op.rename(columns={Credits.kernel: KernelOps.kernel, Credits.op: KernelOps.op})
    table = table.loc[:, list(KERNEL_OPS_DTYPES)].reset_index(drop=True)
    return schema.conform(table, KERNEL_OPS_DTYPES)


def _line_totals_reference(located: pd.DataFrame) -> pd.DataFrame:
    return located.groupby(["file", "line"], sort=False).agg(
        code=("code", "first"),
        eager_kernels=(Credits.time_us, "size"),
        eager_time_us=(Credits.time_us, "sum"),
    )


@pytest.fixture(scope="module", params=RUNS)
def report(request):  # type: ignore[no-untyped-def]
    return compare_run(SAMPLES / request.param, load=lambda p: load_trace(p))


def test_kernel_ops_equal_the_named_agg_form(report) -> None:  # type: ignore[no-untyped-def]
    credits = report.fusion.credits
    pd.testing.assert_frame_equal(kernel_ops(credits), _kernel_ops_reference(credits))
    empty = credits.iloc[:0]
    pd.testing.assert_frame_equal(kernel_ops(empty), _kernel_ops_reference(empty))


def test_line_totals_equal_the_named_agg_form(report, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """lines_table's first aggregation, through the function itself: the table it starts
    from is captured and compared with the named-agg form of the same rows."""
    seen: list[pd.DataFrame] = []
    ops_text = fusion_lines._ops_text

    def capture(located: pd.DataFrame, keys: list[str]) -> pd.Series:
        seen.append(located)
        return ops_text(located, keys)

    monkeypatch.setattr(fusion_lines, "_ops_text", capture)
    monkeypatch.setattr(fusion_lines, "SMALL_ROWS", -1)  # the grouped form, whatever the size
    by_line = report.fusion.by_line
    if by_line.empty:
        pytest.skip("no source lines in this run")
    # by_line again from the report's credits, its totals against the reference
    lines = _record(report)
    table = fusion_lines.lines_table(report.fusion.credits, report.b.kernels, lines)
    pd.testing.assert_frame_equal(table, by_line)
    reference = _line_totals_reference(seen[-1]).reset_index()
    merged = table.merge(reference, on=["file", "line"], suffixes=("", "_ref"))
    assert len(merged) == len(table)
    assert (merged["eager_kernels"] == merged["eager_kernels_ref"]).all()
    assert (merged["eager_time_us"] == merged["eager_time_us_ref"]).all()  # exact, same sums


def _record(report):  # type: ignore[no-untyped-def]
    from traceviz.analysis.fusion_lines import read_log
    from traceviz.rundir import read_run_dir

    run = read_run_dir(SAMPLES / _run_of(report))
    lines = load_trace(run.eager_lines) if run.eager_lines else None
    return fusion_lines.fusion_evidence(
        report.a.trace, report.b.trace, read_log(run.compile_log), eager_lines=lines
    )[1]


def _run_of(report) -> str:  # type: ignore[no-untyped-def]
    source = report.a.trace.meta.source
    return str(pd.io.common.stringify_path(source)).split("sample_traces/")[-1].rsplit("/", 1)[0]
