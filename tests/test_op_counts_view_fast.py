"""The ONNX op counts view pivots in dicts (issue 14: pivot_table, nunique, a sort and a .loc
per op on ~100 rows); its rows equal the pandas form's, kept here as the reference, on every
sample run with ONNX Runtime levels and on hand-made counts."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from tests.conftest import SAMPLES, load_trace
from traceviz.analysis.onnx_graph import EXPORTED, OpCounts
from traceviz.pipeline import compare_run
from traceviz.report.backends_views import _short_op, _view, op_counts_view
from traceviz.report.views import View

RUNS = sorted(p.parent.relative_to(SAMPLES).as_posix() for p in SAMPLES.glob("**/run.json"))


def _reference(view) -> View:  # type: ignore[no-untyped-def]
    counts = view.op_counts
    if counts.empty:
        return _view("ONNX op counts", [], [])
    table = counts.pivot_table(
        index=OpCounts.op, columns=OpCounts.graph, values=OpCounts.count, aggfunc="sum",
        fill_value=0, observed=True,
    )  # fmt: skip
    graphs = [g for g in [EXPORTED, *view.levels] if g in table.columns]
    table = table.loc[:, graphs]
    changed = table.nunique(axis=1) > 1
    order = pd.DataFrame({"changed": changed, "total": table.sum(axis=1)})
    order = order.sort_values(["changed", "total"], ascending=[False, False], kind="stable")
    rows = [[_short_op(str(op)), *(str(int(v)) for v in table.loc[op])] for op in order.index]
    return _view("ONNX op counts per graph", ["op", *graphs], rows,
                 "Ops whose count changes between graphs first.")  # fmt: skip


@pytest.mark.parametrize("run", RUNS)
def test_equal_to_the_pivot_form_on_sample_runs(run: str) -> None:
    report = compare_run(SAMPLES / run, load=load_trace)
    if report.backends is None or report.backends.op_counts.empty:
        pytest.skip("no ONNX Runtime levels in this run")
    assert op_counts_view(report.backends) == _reference(report.backends)


def test_equal_on_hand_made_counts() -> None:
    """Sums per cell, absent cells, a graph that is no level, ties in change and total."""
    report = compare_run(SAMPLES / "gpt2-ort", load=load_trace)
    assert report.backends is not None
    first, last = report.backends.levels[0], report.backends.levels[-1]
    counts = pd.DataFrame(
        {
            OpCounts.graph: [EXPORTED, EXPORTED, first, first, last, last, "other", first],
            OpCounts.op: ["b:Add", "a:Mul", "b:Add", "c:Gelu", "a:Mul", "a:Mul", "z:Zed", "b:Add"],
            OpCounts.count: pd.array([3, 2, 1, 4, 1, 1, 9, 2], dtype="Int64"),
        }
    )
    backends = dataclasses.replace(report.backends, op_counts=counts)
    got = op_counts_view(backends)
    assert got == _reference(backends)
    assert len(got.rows) == 4 and got.rows[-1][0] == "z:Zed"  # unchanged (all 0) last
