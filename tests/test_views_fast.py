"""The dashboard's views with less CPU (issue 14): each fast form against the form it
replaced (kept in tests/*_reference.py), equal to the last bit on every corpus and sample
trace and on tiny made tables for the edge cases."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests import timeline_events_reference, top_kernels_reference
from tests._reference import real_traces, same
from tests.conftest import SAMPLES, load_trace
from traceviz.analysis import kernel_diff as kernel_diff_mod
from traceviz.analysis import top_kernels as top_kernels_mod
from traceviz.analysis.compare import Side, analyze
from traceviz.analysis.kernels import classify
from traceviz.analysis.timeline_events import WindowEvent, window_events
from traceviz.analysis.top_kernels import NO_OP_LABEL, top_kernels
from traceviz.pipeline import compare
from traceviz.schema import Kernels, Launches, Steps


def _check_top_kernels(sides: list[tuple[str, pd.DataFrame]]) -> pd.DataFrame:
    """top_kernels equals the reference; its calls and times add up to each side's measured."""
    got = top_kernels(sides)
    same(got, top_kernels_reference.top_kernels(sides))
    for name, k in sides:
        mine = got[got["trace"] == name]
        named = k[Kernels.name].notna()
        assert int(mine["calls"].sum()) == int(named.sum())
        measured = float(np.nansum(k.loc[named, Kernels.excl_dur_us].to_numpy(dtype=float)))
        assert float(mine["time_us"].sum()) <= measured * (1 + 1e-9) + 1e-6
        assert float(mine["time_us"].sum()) == pytest.approx(measured, rel=1e-9, abs=1e-6)
    return got


@pytest.mark.parametrize("path", real_traces())
def test_top_kernels_matches_the_reference_on_real_traces(path: Path) -> None:
    classified = classify(load_trace(path))
    assert isinstance(classified[Kernels.name].dtype, pd.CategoricalDtype)  # the fast path
    _check_top_kernels([("eager", classified), ("half", classified.iloc[::2])])
    # kinds and sources as plain texts: pandas' groupby, the launching op still by codes
    texts = classified.astype({"kind": object, "source": object})
    assert isinstance(texts[Kernels.op_name].dtype, pd.CategoricalDtype)
    _check_top_kernels([("texts", texts)])


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


def test_top_kernels_fast_path_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    """Categorical columns go by codes (the test above compares that path, not pandas')."""
    called = []
    real = top_kernels_mod._one_by_codes
    monkeypatch.setattr(top_kernels_mod, "_one_by_codes", lambda *a: called.append(1) or real(*a))
    top_kernels([("a", _made(True)), ("b", _made(False))])
    assert called == [1]


def test_top_kernels_empty() -> None:
    empty = _made(True).iloc[:0]
    same(top_kernels([("a", empty)]), top_kernels_reference.top_kernels([("a", empty)]))
    same(top_kernels([]), top_kernels_reference.top_kernels([]))


def test_pair_counts_is_unique_with_counts() -> None:
    rng = np.random.default_rng(0)
    for values in (rng.integers(0, 50, 500), rng.integers(0, 10**9, 50), np.array([3])):
        want = np.unique(values, return_counts=True)
        got = top_kernels_mod._pair_counts(values.astype(np.int64))
        same(got[0], want[0].astype(np.int64))
        same(got[1], want[1])


# --- the timeline's window events ------------------------------------------------------------


def _windows(side: Side) -> list[tuple[float, float]]:
    """The whole trace, the first step, a window cutting through the middle, an empty one."""
    ts = side.kernels[Kernels.ts_us].to_numpy(dtype=float)
    lts = side.trace.launches[Launches.ts_us].to_numpy(dtype=float)
    every = np.concatenate([ts, lts])
    every = every[np.isfinite(every)]
    if every.size == 0:
        return [(0.0, 1.0)]
    lo, hi = float(every.min()), float(every.max())
    windows = [(lo, hi + 1.0), (lo, lo + (hi - lo) / 3), (hi + 10.0, hi + 20.0)]
    steps = side.trace.steps
    if len(steps):
        s0 = float(steps[Steps.ts_us].iloc[0])
        windows.append((s0, s0 + float(steps[Steps.dur_us].iloc[0])))
    return windows


@pytest.mark.parametrize("path", real_traces())
def test_window_events_match_the_reference_on_real_traces(path: Path) -> None:
    pytest.importorskip("plotly", reason="plotly not installed (dashboard extra)")
    from traceviz.report.figures.timeline import TIMELINE_LAUNCH_CLASSES

    side = analyze(load_trace(path), name="t")
    for start, end in _windows(side):
        for classes in (TIMELINE_LAUNCH_CLASSES, ("kernel",), ()):
            got = window_events(side, start, end, classes)
            same(got, timeline_events_reference.window_events(side, start, end, classes))
            device = got[got[WindowEvent.lane].str.startswith(("device ", "CPU ops "))]
            ts = side.kernels[Kernels.ts_us].to_numpy(dtype=float)
            inside = (ts >= start) & (ts < end)
            assert len(device) == int(inside.sum())  # each activity of the window once
            dur = side.kernels[Kernels.dur_us].to_numpy(dtype=float)[inside]
            assert float(device[WindowEvent.dur].sum()) <= float(np.nansum(dur)) * (1 + 1e-12)


def test_texts_and_isin_match_pandas() -> None:
    from traceviz.analysis.timeline_events import _isin, _texts

    cats = pd.CategoricalDtype(["b", "a", "unused"])
    for values in (
        pd.Series(pd.Categorical(["a", None, "b", "a"], dtype=cats), index=[5, 3, 9, 1]),
        pd.Series(["a", None, "b", "a"], dtype=object),
        pd.Series(pd.Categorical([], dtype=cats)),
    ):
        for got, want in (
            (_texts(values), values.astype(str).to_numpy()),
            (_texts(values, missing="–"), values.astype(object).fillna("–").astype(str).to_numpy()),
        ):  # object arrays with NaN: compared by repr (NaN != NaN)
            assert got.dtype == want.dtype and [repr(v) for v in got] == [repr(v) for v in want]
        for wanted in (["a"], ["a", "zz"], []):
            same(_isin(values, wanted), values.isin(wanted).to_numpy())


# --- the Kernels tab's side-by-side table ----------------------------------------------------


def _side_by_text(kernels: pd.DataFrame, column: str) -> pd.DataFrame:
    """kernel_diff._side as it was first: every row's key spelled out, grouped by text."""
    values = kernels[column]
    keys = values.astype(object).where(values.notna(), kernel_diff_mod.NO_OP).astype(str)
    time = kernels[Kernels.excl_dur_us].astype(float).fillna(0.0)
    frame = pd.DataFrame({"key": keys.to_numpy(), "time_us": time.to_numpy()})
    grouped = frame.groupby("key", sort=False)
    return pd.DataFrame({"calls": grouped.size(), "time_us": grouped["time_us"].sum()})


@pytest.mark.parametrize("path", real_traces())
def test_kernel_diff_matches_the_text_form_on_real_traces(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = classify(load_trace(path))
    b = a.iloc[::3]
    for by in kernel_diff_mod.GROUPS:
        got = kernel_diff_mod.kernel_diff(a, b, by=by)
        with monkeypatch.context() as m:
            m.setattr(kernel_diff_mod, "_side", _side_by_text)
            same(got, kernel_diff_mod.kernel_diff(a, b, by=by))
        for side, k in (("a", a), ("b", b)):  # every activity in one row, once
            assert int(got[f"{side}_calls"].sum()) == len(k)
            measured = float(k[Kernels.excl_dur_us].fillna(0.0).sum())
            assert float(got[f"{side}_time_us"].sum()) == pytest.approx(measured, abs=1e-6)


def test_kernel_diff_by_codes_missing_and_alike_labels() -> None:
    """A missing op is its own key; unused categories give no row; integer categories are
    spelled as text."""
    ops = pd.Categorical([None, "x", "1", None, "x"], categories=["x", "1", "unused"])
    frame = pd.DataFrame({Kernels.op_name: ops, Kernels.excl_dur_us: [1.0, 2.0, np.nan, 4, 8]})
    got = kernel_diff_mod._side(frame, Kernels.op_name)
    same(got, _side_by_text(frame, Kernels.op_name))
    assert got.loc[kernel_diff_mod.NO_OP, "calls"] == 2
    ints = frame.assign(**{Kernels.op_name: pd.Categorical([1, 1, None, 2, 1])})
    same(kernel_diff_mod._side(ints, Kernels.op_name), _side_by_text(ints, Kernels.op_name))


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
