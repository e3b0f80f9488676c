"""The kernel explorer's table (analysis.top_kernels) on tiny made tables for the edge cases,
and the dashboard's kernel tables worked out once per report. On real traces its calls are
checked against the raw JSON in tests/test_tables_match_raw_json.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.conftest import SAMPLES, load_trace
from tests.real_data import same
from traceviz.analysis.top_kernels import NO_OP_LABEL, top_kernels
from traceviz.pipeline import compare
from traceviz.schema import Kernels


def _check_top_kernels(sides: list[tuple[str, pd.DataFrame]]) -> pd.DataFrame:
    """top_kernels of ``sides``: its calls and times add up to each side's measured."""
    got = top_kernels(sides)
    for name, k in sides:
        mine = got[got["trace"] == name]
        named = k[Kernels.name].notna()
        assert int(mine["calls"].sum()) == int(named.sum())
        measured = float(np.nansum(k.loc[named, Kernels.excl_dur_us].to_numpy(dtype=float)))
        assert float(mine["time_us"].sum()) == pytest.approx(measured, rel=1e-9, abs=1e-6)
    return got


def _made(cats: bool) -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            Kernels.name: ["tie", "tie", "none", "tie", "one", None, "one", "one", "tie", "late"],
            Kernels.op_name: ["x", "y", None, "y", "z", "z", None, "x", "x", "w"],
            Kernels.excl_dur_us: [1.0, 2.0, 5.0, 3.0, 6.0, 7.0, np.nan, 8.0, 4.0, 0.5],
            "kind": [None, "gemm", "memset", "gemm", "pointwise", "gemm", "gemm", None, "x", "y"],
            "source": ["aten", "aten", None, "aten", "triton", "aten", "aten", "x", "x", "y"],
        }
    )
    if cats:  # unused categories too: a categorical's value counts list them
        return frame.astype(
            {c: pd.CategoricalDtype([*sorted(set(frame[c].dropna())), "unused"])
             for c in (Kernels.name, Kernels.op_name, "kind", "source")}
        )  # fmt: skip
    return frame


@pytest.mark.parametrize("cats", [True, False], ids=["categorical", "text"])
def test_top_kernels_edge_cases(cats: bool) -> None:
    """Ties, a name with no launching op, a first call without a kind, a missing name."""
    frame = _made(cats)
    got = _check_top_kernels([("a", frame), ("b", frame.iloc[4:])])
    mine = got[got["trace"] == "a"].set_index("kernel")
    assert mine.loc["none", "launched_by"] == NO_OP_LABEL  # no op: not an unused category
    assert mine.loc["one", "launched_by"] in {"x", "z"}  # a tie (its third call: no op)
    assert mine.loc["late", "launched_by"] == "w"
    assert mine.loc["tie", "launched_by"] in {"x", "y"}
    assert mine.loc["tie", "kind"] == "gemm"  # its first call has no kind: the first with one
    assert mine.loc["one", "kind"] == "pointwise"
    if cats:  # no value at all: missing, as the categorical's first was
        assert pd.isna(mine.loc["none", "source"])
    assert sorted(mine.index) == ["late", "none", "one", "tie"]


def test_top_kernels_empty() -> None:
    empty = _made(True).iloc[:0]
    assert top_kernels([("a", empty)]).empty and top_kernels([]).empty


# --- the tables kept per report ----------------------------------------------------------------


def test_a_second_session_reuses_the_kernel_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two sessions' Kernels tabs of one report: the tables are worked out once, each session
    gets equal values in a frame of its own, and the entry goes with the report."""
    import gc

    pytest.importorskip("panel", reason="panel not installed (dashboard extra)")
    from traceviz.dashboard.tabs import kernel_diff as diff_tab
    from traceviz.dashboard.tabs import kernels as kernels_tab
    from traceviz.dashboard.tabs import memo

    run = SAMPLES / "graph-break"
    report = compare(
        load_trace(run / "eager.pt.trace.json.gz"), load_trace(run / "compiled.pt.trace.json.gz")
    )
    calls: list[str] = []
    real_table, real_diff = kernels_tab.kernel_table, diff_tab.kernel_diff
    monkeypatch.setattr(
        kernels_tab, "kernel_table", lambda c: calls.append("table") or real_table(c)
    )
    monkeypatch.setattr(
        diff_tab, "kernel_diff", lambda a, b, by: calls.append(by) or real_diff(a, b, by=by)
    )
    first, second = (kernels_tab.KernelsView(comparison=report) for _ in range(2))
    diffs = [diff_tab.KernelDiffView(comparison=report) for _ in range(2)]
    assert calls == ["table", "kernel"]
    same(first._data, second._data)
    same(first._data, real_table(report))
    assert first._data is not second._data
    second._data["calls"] = 0  # one session's change stays its own
    assert int(first._data["calls"].min()) > 0
    diffs[0].group = "op"
    diffs[1].group = "op"
    assert calls == ["table", "kernel", "op"]
    same(diffs[1]._table.value, real_diff(report.a.kernels, report.b.kernels, by="op"))
    rid = id(report)
    assert rid in memo._MEMO
    del first, second, diffs, report
    gc.collect()
    assert rid not in memo._MEMO
