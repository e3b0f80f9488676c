"""The dashboard's views with less CPU (issue 14): each fast form against the form it
replaced (kept in tests/*_reference.py), equal to the last bit on every corpus and sample
trace and on tiny made tables for the edge cases."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests import top_kernels_reference
from tests._reference import real_traces, same
from tests.conftest import load_trace
from traceviz.analysis import top_kernels as top_kernels_mod
from traceviz.analysis.kernels import classify
from traceviz.analysis.top_kernels import NO_OP_LABEL, top_kernels
from traceviz.schema import Kernels


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
