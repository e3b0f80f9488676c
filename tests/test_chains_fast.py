"""The unfused-chain analysis with less CPU (issue 14) against the code it replaced, kept in
tests/chains_reference.py: chain_members equal frame for frame and chain_groups field for
field, to the last bit, on every corpus and sample trace, the 1M-event pair of the benchmarks
(when it has been made) and tiny hand-made traces for the edge cases: the walk from the
kernels' ops stopped at their contexts, optimizer spans above a context, Python frames,
depths that disagree with parents, columns that are not categorical."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest

import traceviz
from tests import chains_reference as reference
from tests._reference import real_traces, same
from tests.conftest import REPO, kernel, launch, load_trace, op
from traceviz.analysis import chains as chains_mod
from traceviz.diagnose.facts import facts_of_trace, kernel_steps
from traceviz.diagnose.rules.gemm import timeline_of
from traceviz.schema import Kernels, Ops
from traceviz.trace import Trace

PAIR_1M = [
    REPO / "benchmarks" / "data" / "a100_eager_train_control_x10.json",
    REPO / "benchmarks" / "data" / "a100_compiled_cudagraph_train_2023_x10.json",
]


def _check_equal(trace: Trace) -> pd.DataFrame:
    """chain_members and chain_groups of ``trace`` equal to the reference's (the lanes as
    the diagnosis hands them, and built here); the members returned."""
    facts = facts_of_trace(trace)
    steps = kernel_steps(facts)
    # the kernels' kind as texts, not categorical: the kinds tested on the lanes' texts
    kind = chains_mod.ChainMember.kind  # (the classified kernels' column)
    plain = facts.kernels.assign(**{kind: facts.kernels[kind].astype(object)})
    for kernels, lanes in (
        (facts.kernels, timeline_of(facts)),
        (facts.kernels, None),
        (plain, timeline_of(facts)),
    ):
        got = chains_mod.chain_members(trace, kernels, steps, lanes=lanes)
        want = reference.chain_members(trace, kernels, steps, lanes=lanes)
        same(got, want)
        groups = chains_mod.chain_groups(trace, got)
        want_groups = reference.chain_groups(trace, want)
        assert _tuples(groups) == _tuples(want_groups)
    # op names as plain texts: the largest intermediate's op named by iloc
    named = SimpleNamespace(ops=trace.ops.assign(**{Ops.name: trace.ops[Ops.name].astype(object)}))
    assert _tuples(chains_mod.chain_groups(named, got)) == _tuples(  # type: ignore[arg-type]
        reference.chain_groups(named, want)  # type: ignore[arg-type]
    )
    # honest: each kernel in at most one chain, chain time at most the kernels' measured time
    assert not got[chains_mod.ChainMember.row].duplicated().any()
    measured = float(np.nansum(facts.kernels[Kernels.dur_us].to_numpy(dtype=float)))
    assert sum(g.time_us for g in groups) <= measured + 1e-6
    assert all(g.saving_us <= g.time_us for g in groups)
    assert sum(g.kernels for g in groups) == len(got)
    return got


def _tuples(groups: list[Any]) -> list[tuple[Any, ...]]:
    return [dataclasses.astuple(g) for g in groups]


def _context_equal(ops: pd.DataFrame, rows: np.ndarray) -> None:
    """_context_of_rows equals the levels' pass over every op at ``rows``."""
    full = reference._op_context(ops)
    got = _context_at(ops, rows)
    same(tuple(a[rows] for a in got), tuple(a[rows] for a in full))


def _context_at(ops: pd.DataFrame, rows: np.ndarray) -> tuple[np.ndarray, ...]:
    """``_context_of_rows`` at ``rows``' distinct rows, spread over the ops table (−1, the op
    itself, False elsewhere), to compare with the reference's whole-table pass."""
    distinct = np.unique(rows).astype(np.int64)
    return chains_mod._spread(len(ops), distinct, *chains_mod._context_of_rows(ops, distinct))


@pytest.mark.parametrize("path", real_traces())
def test_chains_equal_the_reference_on_real_traces(path: Path) -> None:
    trace = load_trace(path)
    _check_equal(trace)
    op_rows = trace.kernels[Kernels.op_row].to_numpy(dtype=float, na_value=np.nan)
    kernel_ops = op_rows[np.isfinite(op_rows)].astype(np.int64)
    for rows in (kernel_ops, np.arange(0, len(trace.ops), 3, dtype=np.int64)):
        _context_equal(trace.ops, rows)


@pytest.mark.parametrize("path", PAIR_1M, ids=lambda p: p.name)
def test_chains_equal_the_reference_on_the_1m_pair(path: Path) -> None:
    if not path.is_file():
        pytest.skip(f"{path} not made (benchmarks/make_large_trace.py)")
    members = _check_equal(traceviz.load(path))
    assert len(members) > 1000  # the pair has chains: the comparison compared something


# --- hand-made edge cases -------------------------------------------------------------------


def _ops(
    names: list[str],
    parents: list[int | None],
    depths: list[int | None],
    categories: list[str] | None = None,
) -> pd.DataFrame:
    return pd.DataFrame(
        {
            Ops.name: pd.Categorical(names),
            Ops.parent_row: pd.array(parents, dtype="Int64"),
            Ops.depth: pd.array(depths, dtype="Int32"),
            Ops.category: pd.Categorical(categories or ["cpu_op"] * len(names)),
        }
    )


def test_context_walk_stops_at_the_context_and_sees_optimizers_above_it() -> None:
    """An optimizer span two levels above a kernel's context still marks the kernel's op;
    a nest of aten ops' top op is the outermost; Python frames are no context."""
    ops = _ops(
        [
            "ProfilerStep#1",  # 0
            "Optimizer.step#AdamW.step",  # 1
            "## inner ##",  # 2: the context of 4 and 5
            "model.py(10): forward",  # 3: a Python frame, transparent
            "aten::add_",  # 4 (under the frame)
            "aten::mul",  # 5: nest top of 6
            "aten::mul_",  # 6
            "other",  # 7: a context outside the optimizer
            "aten::exp",  # 8
            "aten::missing_parent",  # 9: parent beyond the table
        ],
        [None, 0, 1, 2, 3, 2, 5, 0, 7, 99],
        [0, 1, 2, 3, 4, 3, 4, 1, 2, 0],
        [
            "user_annotation",
            "user_annotation",
            "user_annotation",
            "python_function",
            *["cpu_op"] * 3,
            "user_annotation",
            "cpu_op",
            "cpu_op",
        ],
    )
    rows = np.array([4, 6, 6, 8, 9, 0], dtype=np.int64)
    context, top, optimizer = _context_at(ops, rows)
    assert context[4] == 2 and context[6] == 2 and context[8] == 7 and context[9] == -1
    assert top[6] == 5 and top[4] == 4 and top[8] == 8
    assert optimizer[4] and optimizer[6] and not optimizer[8] and not optimizer[0]
    _context_equal(ops, rows)
    _context_equal(ops, np.arange(len(ops), dtype=np.int64))
    _context_equal(ops, np.zeros(0, dtype=np.int64))


def test_context_walk_falls_back_when_depths_disagree() -> None:
    """A parent as deep as its child, below the context or above it: the levels' answer."""
    below = _ops(["s", "aten::a", "aten::b"], [None, 0, 1], [0, 2, 2])  # b's parent as deep
    above = _ops(["s", "c", "aten::b"], [None, 0, 1], [1, 1, 2])  # above b's context c
    loop = _ops(["x", "aten::y"], [1, 0], [1, 1])
    for ops in (below, above, loop):
        rows = np.arange(len(ops), dtype=np.int64)
        assert chains_mod._walk_up(chains_mod._op_flags(ops), rows) is None
        same(_context_at(ops, rows), reference._op_context(ops))


def test_context_walk_without_categorical_columns() -> None:
    """Names and categories as plain strings: tested per op as before, same answer."""
    ops = _ops(
        ["ProfilerStep#1", "optimizer_step", "aten::add", "aten::mul"],
        [None, 0, 1, 2],
        [0, 1, 2, 3],
    )
    plain = ops.assign(**{Ops.name: ops[Ops.name].astype(object)})
    rows = np.array([2, 3], dtype=np.int64)
    _context_equal(plain, rows)
    _context_equal(ops.assign(**{Ops.category: ops[Ops.category].astype(object)}), rows)
    assert _context_at(plain, rows)[2][3]  # under the optimizer step


def _chain_events(tid: int = 1) -> list[dict[str, Any]]:
    """A step with two chains (amax → sub → exp and add → mul → div) whose ops launch GPU
    kernels, an optimizer step with its own pointwise updates, and a GEMM breaking a run."""
    events: list[dict[str, Any]] = [
        op("ProfilerStep#1", 0, 2000, cat="user_annotation", tid=tid),
        op("## fwd ##", 10, 900, cat="user_annotation", tid=tid),
    ]
    shape, reduced = [64, 128], [64, 1]
    calls = [
        ("aten::amax", [shape], "triton_red_amax", 20),
        ("aten::sub", [shape, reduced], "elementwise_kernel_sub", 120),
        ("aten::exp", [shape], "vectorized_elementwise_kernel_exp", 220),
        ("aten::mm", [shape, [128, 64]], "ampere_sgemm_128x64_nn", 320),
        ("aten::add", [shape, shape], "elementwise_kernel_add", 420),
        ("aten::mul", [shape, shape], "elementwise_kernel_mul", 520),
        ("aten::div", [shape, []], "elementwise_kernel_div", 620),
    ]
    for i, (name, dims, kname, ts) in enumerate(calls):
        events.append(
            op(name, ts, 60, tid=tid, **{"Input Dims": dims, "Input type": ["float"] * len(dims)})
        )
        events.append(launch("cudaLaunchKernel", ts + 5, 10, correlation=i + 1, tid=tid))
        events.append(kernel(kname, 1000 + ts, 50, correlation=i + 1))
    events.append(op("Optimizer.step#SGD.step", 1000, 900, cat="user_annotation", tid=tid))
    for j in range(4):
        ts = 1010 + 100 * j
        events.append(op("aten::add_", ts, 60, tid=tid, **{"Input Dims": [shape, shape]}))
        events.append(launch("cudaLaunchKernel", ts + 5, 10, correlation=100 + j, tid=tid))
        events.append(kernel("elementwise_kernel_add_", 3000 + ts, 50, correlation=100 + j))
    return events


def test_hand_made_chains_equal_the_reference(tmp_trace: Any) -> None:
    members = _check_equal(traceviz.load(tmp_trace(_chain_events())))
    labels = members[chains_mod.ChainMember.label].tolist()
    assert labels == ["aten::add", "aten::mul", "aten::div"]  # the GEMM broke amax → sub → exp
    assert "aten::add_" not in labels  # the optimizer's updates are no chain


def test_chains_without_ops_or_kernels_equal_the_reference(tmp_trace: Any) -> None:
    """No CPU op (kernels only), no kernel, too few kernels: no chain, as before."""
    events = _chain_events()
    kernels_only = [e for e in events if e.get("cat") == "kernel"]
    for evs in (kernels_only, [e for e in events if e.get("cat") != "kernel"], events[:6]):
        members = _check_equal(traceviz.load(tmp_trace(evs)))
        assert members.empty


def test_member_links_spelled_as_before(tmp_trace: Any) -> None:
    """The link codes read back as the texts: first, same op, shapes, order."""
    trace = traceviz.load(tmp_trace(_chain_events()))
    facts = facts_of_trace(trace)
    seq = reference._lane_order(trace, facts.kernels, kernel_steps(facts))
    context, top, optimizer = reference._op_context(trace.ops)
    codes = chains_mod._link_codes(seq, trace.ops, context, top, optimizer)
    texts = reference._links(seq, trace.ops, context, top, optimizer)
    same(chains_mod._LINK_TEXTS[codes], texts)
    assert set(texts.tolist()) >= {"", "shapes"}


# --- the small replaced pieces ----------------------------------------------------------------


def test_several_ops_and_first_of_op_equal_their_sorting_forms() -> None:
    """A chain's several top ops by least and greatest (was np.unique of the pairs); the
    first row of each (chain, op) pair by one hash (was np.unique(return_index)), NaN ops
    equal to each other."""
    rng = np.random.default_rng(14)
    for _ in range(20):
        n = int(rng.integers(1, 400))
        chain = np.cumsum(rng.random(n) < 0.3).astype(np.int64)
        top = rng.integers(-1, 6, n).astype(np.int64)
        long = (np.bincount(chain)[chain] >= chains_mod.MIN_CHAIN_KERNELS) & (rng.random(n) < 2)
        want = long & (chains_mod._distinct_per_chain(chain, top, long) >= chains_mod.MIN_CHAIN_OPS)
        same(chains_mod._several_ops(chain, top, long), want)
        op = np.where(rng.random(n) < 0.2, np.nan, rng.integers(0, 5, n).astype(float))
        run = np.repeat(np.arange(n), rng.integers(1, 4, n))[:n]
        codes = pd.factorize(op, use_na_sentinel=False)[0].astype(np.int64)
        first = np.zeros(n, dtype=bool)
        first[np.unique(run * (codes.max() + 1) + codes, return_index=True)[1]] = True
        same(chains_mod._first_of_op(run, op), first)
    assert not chains_mod._first_of_op(np.zeros(0, dtype=np.intp), np.zeros(0)).size


def test_numel_is_numpys_product_even_when_it_wraps() -> None:
    for shape in [(), (3,), (2, 3, 4), (0, 5), (2**31, 2**31), (2**40, 2**40), (-1, 7)]:
        want = int(np.prod(shape)) if shape else 1
        assert chains_mod._numel(shape) == want, shape


def test_link_texts_column_as_pandas_infers_it() -> None:
    codes = np.array([0, 2, 1, 3, 3, 0], dtype=np.int8)
    got = pd.DataFrame({"x": chains_mod._texts_of_codes(chains_mod._MEMBER_LINKS, codes)})
    want = pd.DataFrame({"x": chains_mod._MEMBER_LINKS[codes]})
    same(got, want)


def test_names_at_as_iloc_gives_them() -> None:
    names = pd.Series(pd.Categorical(["aten::add", None, "aten::mul", "aten::add"]))
    rows = np.array([3, 1, 0, 2], dtype=np.int64)
    want = [str(names.iloc[r]) for r in rows]
    assert (
        chains_mod._names_at(names, rows) == want == ["aten::add", "nan", "aten::add", "aten::mul"]
    )
    assert chains_mod._names_at(names.astype(object), rows) == want


def test_signature_numbers_as_the_texts_factorized() -> None:
    """Chains numbered by their labels' codes as pd.factorize numbers their joined texts;
    a label holding the separator, or missing: None (the texts decide)."""
    chain = pd.Series([0, 0, 1, 1, 2, 2, 2, 3, 3, 3])
    labels = pd.Series(["a", "b", "a", "b", "c", "a", "b", "a", "b", "c"], dtype="str")
    starts = np.array([0, 2, 4, 7])
    codes, texts = chains_mod._signature_numbers(labels, starts)  # type: ignore[misc]
    want_codes, want_texts = pd.factorize(np.asarray(chains_mod._signatures(chain, labels)))
    same(np.asarray(codes, dtype=np.int64), np.asarray(want_codes, dtype=np.int64))
    assert texts == list(want_texts)
    joined = labels.where(labels != "c", "x" + chains_mod.SEPARATOR + "y")
    assert chains_mod._signature_numbers(joined, starts) is None
    assert chains_mod._signature_numbers(labels.where(labels != "c", None), starts) is None
