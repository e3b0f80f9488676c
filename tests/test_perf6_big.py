"""Issue 14, PERF6 (BIG): analysis and diagnosis pieces made faster for the dashboard on two
1M-event traces, against the plain code they replaced, kept here as references: every result
must be equal to the last bit, on every corpus and sample trace, and on hand-made edge cases."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd
import pytest

from tests import chains_reference
from tests._reference import kernel_intervals, real_traces, same
from tests.conftest import load_trace
from traceviz.analysis import chains as chains_mod
from traceviz.analysis import idle as idle_mod
from traceviz.analysis import launch as launch_mod
from traceviz.analysis import windows as windows_mod
from traceviz.analysis.blocking import blocked_intervals, blocking_calls
from traceviz.analysis.chains import OPTIMIZER
from traceviz.analysis.windows import StepWindows, step_windows
from traceviz.diagnose.facts import facts_of_trace, kernel_steps
from traceviz.schema import Kernels, Launches, OpCategory, Ops

# --- chains._op_context ---------------------------------------------------------------------


def _op_context_reference(
    ops: pd.DataFrame,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """chains._op_context before PERF6: integer columns through float, the category by isin,
    one pass over every op per depth level."""
    n = len(ops)
    names = ops[Ops.name].astype("category")
    codes = names.cat.codes.to_numpy()
    distinct = [str(c) for c in names.cat.categories]
    is_aten = np.array([c.startswith("aten::") for c in distinct] + [False], dtype=bool)
    in_optimizer = np.array([bool(OPTIMIZER.search(c)) for c in distinct] + [False], dtype=bool)
    parent = ops[Ops.parent_row].to_numpy(dtype=float, na_value=-1.0).astype(np.int64)
    parent = np.where((parent >= 0) & (parent < n), parent, -1)
    depth = ops[Ops.depth].to_numpy(dtype=float, na_value=0.0).astype(np.int64)
    aten = is_aten[codes]
    optimizer = in_optimizer[codes].copy()
    rows = np.arange(n, dtype=np.int64)
    python = ops[Ops.category].isin([OpCategory.PYTHON_FUNCTION.value]).to_numpy(dtype=bool)
    transparent = aten | python
    holder = np.where(transparent, -1, rows)
    top = rows.copy()
    for level in np.unique(depth[parent >= 0]):
        at = rows[(depth == level) & (parent >= 0)]
        up = parent[at]
        optimizer[at] |= optimizer[up]
        holder[at] = np.where(transparent[at], holder[up], at)
        top[at] = np.where(aten[at] & aten[up], top[up], at)
    context = np.where(parent >= 0, holder[np.maximum(parent, 0)], -1)
    return context, top, optimizer


@pytest.mark.parametrize("path", real_traces())
def test_op_context_equals_reference_on_real_traces(path: Path) -> None:
    ops = load_trace(path).ops
    same(chains_mod._op_context(ops), _op_context_reference(ops))


def test_op_context_equals_reference_on_odd_columns() -> None:
    """Missing parents and depths, an out-of-range parent, a category without
    python_function, and the same columns as plain (non-nullable, non-categorical) dtypes."""
    ops = pd.DataFrame(
        {
            Ops.name: pd.Categorical(
                ["ProfilerStep#1", "aten::add", "aten::copy_", "Optimizer.step#SGD", None, "x"]
            ),
            Ops.parent_row: pd.array([None, 0, 1, 0, 3, 99], dtype="Int64"),
            Ops.depth: pd.array([0, 1, 2, 1, None, 1], dtype="Int32"),
            Ops.category: pd.Categorical(["user_annotation", "cpu_op", "cpu_op", "x", None, "y"]),
        }
    )
    same(chains_mod._op_context(ops), _op_context_reference(ops))
    plain = ops.assign(
        **{
            Ops.parent_row: ops[Ops.parent_row].to_numpy(dtype=float, na_value=np.nan),
            Ops.depth: ops[Ops.depth].to_numpy(dtype=float, na_value=np.nan),
            Ops.category: ops[Ops.category].astype(object),
        }
    )
    same(chains_mod._op_context(plain), _op_context_reference(plain))
    with_python = ops.assign(
        **{Ops.category: pd.Categorical(["python_function"] * 3 + ["cpu_op"] * 3)}
    )
    same(chains_mod._op_context(with_python), _op_context_reference(with_python))
    same(chains_mod._op_context(ops.iloc[:0]), _op_context_reference(ops.iloc[:0]))


# --- idle._split_steps: every step at once -----------------------------------------------------


def _both_splits(
    windows: StepWindows,
    starts: npt.NDArray[np.float64],
    ends: npt.NDArray[np.float64],
    issued: npt.NDArray[np.float64],
    blocked: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]],
    outer: pd.DataFrame,
) -> None:
    """_split_steps (all windows at once) equals _split_each (the loop it replaced)."""
    order = np.argsort(starts, kind="stable")
    activities = (starts[order], ends[order], issued[order])
    blocked_set = idle_mod._Blocked(*blocked)
    ops = idle_mod._OuterOps(outer)
    got = idle_mod._split_steps(windows, activities, blocked_set, ops)
    want = idle_mod._split_each(windows, activities, blocked_set, ops)
    assert got[0] == want[0]  # the per-step rows: every float to the last bit
    assert len(got[1]) == len(want[1])
    for g, w in zip(got[1], want[1], strict=True):
        assert g[:2] == w[:2]
        same(g[2], w[2])
        same(g[3], w[3])
    same(got[2], want[2])


@pytest.mark.parametrize("path", real_traces())
def test_split_steps_equals_the_step_loop_on_real_traces(path: Path) -> None:
    trace = load_trace(path)
    windows = step_windows(trace)
    kernels = trace.kernels
    starts, ends, issued = kernel_intervals(kernels)
    blocking = blocking_calls(trace)
    outer = idle_mod._outer_ops(trace, idle_mod._main_thread(trace))
    _both_splits(windows, starts, ends, issued, blocked_intervals(blocking.calls), outer)
    # the whole split takes the new path on these traces (ordered, finite windows)
    assert windows.in_order() or not np.isfinite(windows.end_us).all()


def _windows(bounds: list[tuple[float, float]]) -> StepWindows:
    return StepWindows(
        steps=list(range(1, len(bounds) + 1)),
        start_us=np.array([b[0] for b in bounds], dtype=float),
        end_us=np.array([b[1] for b in bounds], dtype=float),
    )


@pytest.mark.parametrize("seed", range(12))
def test_split_steps_equals_the_step_loop_on_random_steps(seed: int) -> None:
    """Touching windows, gaps between them, empty and zero-length windows, activities
    outside every window, overlapping and nested activities, unknown launches, blocked calls
    across window edges, CPU ops across them."""
    rng = np.random.default_rng(seed)
    edges = np.cumsum(rng.choice([0.0, 0.0, 5.0, 40.0, 120.0], size=12))
    bounds = []
    for a, b in itertools.pairwise(edges):
        if rng.random() < 0.7:
            bounds.append((float(a), float(b)))
    if not bounds:
        bounds = [(0.0, 100.0)]
    windows = _windows(bounds)
    assert windows.in_order()
    n = int(rng.integers(0, 80))
    span = edges[-1] + 20.0
    starts = np.round(rng.random(n) * span - 10.0, 1)
    starts[rng.random(n) < 0.05] = np.nan
    ends = starts + np.round(rng.choice([0.0, 0.5, 3.0, 30.0, 200.0], size=n), 1)
    issued = starts - np.round(rng.random(n) * 20.0, 1)
    issued[rng.random(n) < 0.3] = np.nan
    m = int(rng.integers(0, 12))
    b_lo = np.round(rng.random(m) * span, 1)
    blocked = windows_mod.union(b_lo, b_lo + np.round(rng.random(m) * 40.0, 1))
    k = int(rng.integers(0, 30))
    o_lo = np.sort(np.round(rng.random(k) * span, 1))
    o_hi = o_lo + np.round(rng.random(k) * 10.0, 1)
    reach = np.concatenate([[-np.inf], np.maximum.accumulate(o_hi)[:-1]]) if k else o_lo
    keep = o_lo >= reach
    outer = pd.DataFrame({Ops.ts_us: o_lo[keep], Ops.dur_us: o_hi[keep] - o_lo[keep]})
    _both_splits(windows, starts, ends, issued, blocked, outer)


def test_split_takes_the_loop_for_windows_out_of_order() -> None:
    assert not _windows([(0.0, 10.0), (5.0, 20.0)]).in_order()  # overlapping
    assert not _windows([(10.0, 20.0), (0.0, 5.0)]).in_order()  # unordered
    assert not _windows([(10.0, 5.0)]).in_order()  # negative length
    assert not _windows([(0.0, np.inf)]).in_order()  # infinite
    assert _windows([(0.0, 10.0), (10.0, 10.0), (10.0, 20.0)]).in_order()


# --- launch._steps_at_once and StepWindows.rows_by_window --------------------------------------


def _same_step_parts(
    windows: StepWindows,
    starts: npt.NDArray[np.float64],
    ends: npt.NDArray[np.float64],
    issue_end: npt.NDArray[np.float64],
    launch_ts: npt.NDArray[np.float64],
) -> None:
    got = launch_mod._steps_at_once(windows, starts, ends, issue_end, launch_ts)
    want = launch_mod._step_by_step(windows, starts, ends, issue_end, launch_ts)
    assert len(got) == len(want) == len(windows.steps)
    for g, w in zip(got, want, strict=True):
        same(g[0], w[0].astype(g[0].dtype))  # rows, in row order
        assert (g[1], g[2]) == (w[1], w[2])  # busy and wait to the last bit
        same(g[3], w[3].astype(g[3].dtype))


@pytest.mark.parametrize("path", real_traces())
def test_steps_at_once_equals_step_by_step_on_real_traces(path: Path) -> None:
    trace = load_trace(path)
    windows = step_windows(trace)
    if not windows.in_order():
        pytest.skip("windows out of order: the step loop runs")
    kernels = trace.kernels
    starts, ends, issue_end = kernel_intervals(kernels)
    launch_ts = trace.launches[Launches.ts_us].to_numpy(dtype=float)
    _same_step_parts(windows, starts, ends, issue_end, launch_ts)


@pytest.mark.parametrize("seed", range(12))
def test_steps_at_once_equals_step_by_step_on_random_steps(seed: int) -> None:
    """Touching, gapped, empty and zero-length windows; rows outside all of them, NaN
    starts, ties on start, overlapping and nested activities, unknown launches."""
    rng = np.random.default_rng(seed)
    edges = np.cumsum(rng.choice([0.0, 0.0, 5.0, 40.0, 120.0], size=10))
    bounds = [(float(a), float(b)) for a, b in itertools.pairwise(edges) if rng.random() < 0.7]
    windows = _windows(bounds or [(0.0, 50.0)])
    n = int(rng.integers(0, 90))
    span = edges[-1] + 20.0
    starts = np.round(rng.random(n) * span - 10.0, 0)  # rounded: ties
    starts[rng.random(n) < 0.05] = np.nan
    ends = starts + np.round(rng.choice([0.0, 0.5, 3.0, 30.0, 200.0], size=n), 1)
    issue_end = starts - np.round(rng.random(n) * 20.0, 1)
    issue_end[rng.random(n) < 0.3] = np.nan
    launch_ts = np.round(rng.random(n) * span, 1)
    _same_step_parts(windows, starts, ends, issue_end, launch_ts)
    for times in (starts, launch_ts):
        rows, window, at = windows.rows_by_window(times)
        for i, (_, lo, hi) in enumerate(windows):
            want = np.flatnonzero((times >= lo) & (times < hi))
            same(rows[at[i] : at[i + 1]], want)
            assert (window[at[i] : at[i + 1]] == i).all()


# --- windows.union: each merged interval's end read off the running reach -----------------------


def _union_reference(
    starts: npt.NDArray[np.float64], ends: npt.NDArray[np.float64]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """windows.union before PERF6: each group's end by a ufunc.at maximum."""
    keep = np.isfinite(starts) & np.isfinite(ends) & (ends > starts)
    s, e = starts[keep], ends[keep]
    if s.size == 0:
        return np.empty(0), np.empty(0)
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    reach = np.maximum.accumulate(e)
    new = np.ones(s.size, dtype=bool)
    new[1:] = s[1:] > reach[:-1]
    group = np.cumsum(new) - 1
    out_e = np.zeros(int(group[-1]) + 1)
    np.maximum.at(out_e, group, e)
    return s[new], out_e


@pytest.mark.parametrize("seed", range(20))
def test_union_equals_reference_on_random_intervals(seed: int) -> None:
    """Nested, touching, equal, empty, negative, NaN and infinite intervals."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 60))
    starts = np.round(rng.random(n) * 100.0, 0)
    ends = starts + rng.choice([-1.0, 0.0, 0.5, 1.0, 5.0, 30.0, np.nan, np.inf], size=n)
    starts[rng.random(n) < 0.05] = -np.inf
    same(windows_mod.union(starts, ends), _union_reference(starts, ends))


@pytest.mark.parametrize("path", real_traces())
def test_union_equals_reference_on_real_kernels(path: Path) -> None:
    kernels = load_trace(path).kernels
    starts = kernels[Kernels.ts_us].to_numpy(dtype=float)
    ends = starts + kernels[Kernels.dur_us].to_numpy(dtype=float)
    same(windows_mod.union(starts, ends), _union_reference(starts, ends))


# --- chains._per_chain: each chain's figures over its run of rows --------------------------------


def _per_chain_reference(members: pd.DataFrame) -> pd.DataFrame:
    """chains._per_chain before PERF6: pandas groupby aggregations."""
    written = members[chains_mod.ChainMember.written_bytes].to_numpy(dtype=float)
    by_chain = members.groupby(chains_mod.ChainMember.chain, sort=False)
    last_op = by_chain[chains_mod.ChainMember.op].transform("last").to_numpy(dtype=float)
    op = members[chains_mod.ChainMember.op].to_numpy(dtype=float)
    counted = ~members.duplicated(
        [chains_mod.ChainMember.chain, chains_mod.ChainMember.op]
    ).to_numpy() & (op != last_op)
    frame = members.assign(
        moved=np.where(counted, 2.0 * np.nan_to_num(written), 0.0),
        unknown=(counted & np.isnan(written)) | np.isnan(op),
        out=np.where(counted, written, np.nan),
        eager=~members[chains_mod.ChainMember.source].isin(chains_mod.INDUCTOR_SOURCES).to_numpy(),
        confirmed=(members[chains_mod.ChainMember.link] != "order").to_numpy(),
        label=members[chains_mod.ChainMember.label].astype(str),
    )
    table = frame.groupby(chains_mod.ChainMember.chain, sort=False).agg(
        kernels=(chains_mod.ChainMember.dur_us, "size"),
        time_us=(chains_mod.ChainMember.dur_us, "sum"),
        longest_us=(chains_mod.ChainMember.dur_us, "max"),
        moved=("moved", "sum"),
        unknown=("unknown", "any"),
        largest=("out", "max"),
        eager=("eager", "any"),
        shapes_known=("confirmed", "all"),
    )
    table.insert(
        0,
        "signature",
        chains_mod._signatures(members[chains_mod.ChainMember.chain], frame["label"]),
    )
    largest_row = (
        frame["out"].fillna(-1.0).groupby(frame[chains_mod.ChainMember.chain], sort=False).idxmax()
    )
    table["largest_op"] = op[largest_row.to_numpy()]
    return table


def _members(trace_path: Path) -> tuple[object, pd.DataFrame]:
    trace = load_trace(trace_path)
    facts = facts_of_trace(trace)
    steps = kernel_steps(facts)
    return trace, chains_mod.chain_members(trace, facts.kernels, steps)


@pytest.mark.parametrize("path", real_traces())
def test_per_chain_equals_reference_on_real_traces(path: Path) -> None:
    _trace, members = _members(path)
    if members.empty:
        pytest.skip("no chains")
    same(chains_mod._per_chain(members), _per_chain_reference(members))


@pytest.mark.parametrize("seed", range(10))
def test_per_chain_equals_reference_on_random_chains(seed: int) -> None:
    """Unknown ops and bytes, an op's several kernels, repeated ops, ties on the largest
    intermediate, NaN durations, Inductor and eager sources, links by order."""
    rng = np.random.default_rng(seed)
    n = 120
    chain = np.sort(rng.integers(0, 25, size=n))
    op = rng.choice([1.0, 2.0, 3.0, 7.0, np.nan], size=n)
    members = pd.DataFrame(
        {
            chains_mod.ChainMember.chain: chain,
            chains_mod.ChainMember.dur_us: np.where(rng.random(n) < 0.1, np.nan, rng.random(n)),
            chains_mod.ChainMember.source: rng.choice(["inductor_triton", "eager_aten"], size=n),
            chains_mod.ChainMember.label: rng.choice(["aten::add", "aten::mul", "k"], size=n),
            chains_mod.ChainMember.op: op,
            chains_mod.ChainMember.link: rng.choice(["first", "same op", "shapes", "order"], n),
            chains_mod.ChainMember.written_bytes: rng.choice([np.nan, 8.0, 64.0, 64.0], n),
        }
    )
    same(chains_mod._per_chain(members), _per_chain_reference(members))


# --- chains._group: chains summed per op sequence ----------------------------------------------


def _group_reference(per_chain: pd.DataFrame, ops: pd.DataFrame) -> list[object]:
    """chains._group before PERF6: one groupby aggregation over the signatures."""
    per_chain = per_chain.assign(
        saving_us=per_chain["time_us"] - per_chain["longest_us"],
        largest_key=per_chain["largest"].fillna(-1.0),
    ).reset_index(drop=True)
    by_signature = per_chain.groupby("signature", sort=False)
    table = by_signature.agg(
        occurrences=("kernels", "size"),
        kernels=("kernels", "sum"),
        time_us=("time_us", "sum"),
        saving_us=("saving_us", "sum"),
        moved=("moved", "sum"),
        unknown=("unknown", "any"),
        largest=("largest", "max"),
        eager=("eager", "any"),
        shapes_known=("shapes_known", "all"),
    )
    table["largest_op"] = per_chain["largest_op"].to_numpy()[
        by_signature["largest_key"].idxmax().to_numpy()
    ]
    table = table.sort_values("time_us", ascending=False, kind="stable")
    names = ops[Ops.name].astype(object).to_numpy()
    return [_reference_names(str(signature), row, names) for signature, row in table.iterrows()]


def _reference_names(
    signature: str, row: pd.Series, names: npt.NDArray[np.object_]
) -> chains_mod.ChainGroup:
    old = chains_reference._chain_group(signature, row, pd.Series(names, dtype=object))
    return chains_mod.ChainGroup(**vars(old))  # the old module's class, as the product's


@pytest.mark.parametrize("path", real_traces())
def test_group_equals_reference_on_real_traces(path: Path) -> None:
    trace, members = _members(path)
    if members.empty:
        pytest.skip("no chains")
    per_chain = chains_mod._per_chain(members)
    got = chains_mod._group(per_chain, trace.ops)  # type: ignore[attr-defined]
    assert got == _group_reference(per_chain, trace.ops)  # type: ignore[attr-defined]
    assert got and sum(g.kernels for g in got) == len(members)  # every member counted once


@pytest.mark.parametrize("seed", range(10))
def test_group_equals_reference_on_random_chains(seed: int) -> None:
    """Repeated signatures, ties on time and on the largest intermediate, unknown bytes and
    ops, op rows outside the ops table."""
    rng = np.random.default_rng(seed)
    n = 60
    ops = pd.DataFrame({Ops.name: pd.Categorical(["aten::add", None, "aten::mul", "aten::exp"])})
    per_chain = pd.DataFrame(
        {
            "signature": rng.choice(["a\x1fb", "b\x1fc\x1fd", "e\x1fe"], size=n),
            "kernels": rng.integers(3, 9, size=n),
            "time_us": rng.choice([1.5, 2.25, 10.0, 0.1], size=n),
            "longest_us": rng.choice([0.5, 1.0], size=n),
            "moved": rng.choice([0.0, 128.0, 4096.0], size=n),
            "unknown": rng.random(n) < 0.2,
            "largest": rng.choice([np.nan, 64.0, 64.0, 512.0], size=n),
            "eager": rng.random(n) < 0.3,
            "shapes_known": rng.random(n) < 0.8,
            "largest_op": rng.choice([0.0, 1.0, 2.0, 3.0, 9.0, np.nan], size=n),
        }
    )
    assert chains_mod._group(per_chain, ops) == _group_reference(per_chain, ops)
