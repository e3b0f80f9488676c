"""Issue 14 (dashboard target, ANALYSIS): the analysis after the load of the 1M-event pair,
each replaced form kept here as the reference and the new one proved equal to the last bit
on every corpus and sample trace (tests/_reference.py), and on tiny made tables for the
edges (missing names, non-categorical columns, CPU traces)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests import chains_reference
from tests._reference import every_trace_file, real_traces, same
from tests.conftest import load_trace
from traceviz.analysis import blocking as blocking_mod
from traceviz.analysis import chains as chains_mod
from traceviz.analysis import comparable, provenance
from traceviz.analysis import idle as idle_mod
from traceviz.analysis import timeline as timeline_mod
from traceviz.analysis.blocking import BlockingColumns as B
from traceviz.analysis.fusion_match import HEAVY_KEYS
from traceviz.analysis.kernels import Classified, classify, kind_table
from traceviz.analysis.launch import launch_overhead
from traceviz.analysis.memory import memory_traffic
from traceviz.analysis.op_keys import op_key
from traceviz.analysis.timeline import Lane, timeline
from traceviz.analysis.windows import overlap as windows_overlap
from traceviz.analysis.windows import union
from traceviz.dense import first_of_codes, sorted_unique, unique_inverse
from traceviz.diagnose.facts import (
    TraceFacts,
    durations,
    facts_of_trace,
    kernel_steps,
    window_bounds,
)
from traceviz.diagnose.rules import copies, gemm, profiling
from traceviz.schema import ActivityKind, Kernels, Launches, OpCategory, Ops
from traceviz.trace import Trace

# --- timeline: the text columns (kind, source, label) ---------------------------------------


def _texts_reference(column: pd.Series, order: np.ndarray) -> np.ndarray:
    """The replaced form: every row's value as an object, pandas infers the text column."""
    return column.astype(object).to_numpy()[order]


def _labels_reference(trace: object, kernels: pd.DataFrame, order: np.ndarray) -> np.ndarray:
    return timeline_mod._labels(trace, kernels)[order]  # type: ignore[arg-type]


def _timeline_reference(
    trace: object, kernels: pd.DataFrame, steps: np.ndarray, mp: pytest.MonkeyPatch
) -> pd.DataFrame:
    with mp.context() as m:
        m.setattr(timeline_mod, "_texts", _texts_reference)
        m.setattr(timeline_mod, "_ordered_labels", _labels_reference)
        return timeline(trace, kernels, steps, keys=False)  # type: ignore[arg-type]


@pytest.mark.parametrize("path", real_traces())
def test_timeline_text_columns_match_the_object_form(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = load_trace(path)
    kernels = classify(trace)
    steps = kernel_steps(facts_of_trace(trace))
    got = timeline(trace, kernels, steps, keys=False)
    want = _timeline_reference(trace, kernels, steps, monkeypatch)
    same(got, want)
    for column in (Lane.kind, Lane.source, Lane.label):
        assert got[column].dtype == want[column].dtype


def _edited(kernels: pd.DataFrame, **columns: object) -> pd.DataFrame:
    return kernels.assign(**columns)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "edit",
    ["missing-name", "missing-op", "all-missing", "object-columns", "non-text", "empty"],
)
def test_timeline_text_columns_on_made_edges(edit: str, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = load_trace(
        Path(__file__).parent.parent / "sample_traces/h200/block/eager.pt.trace.json.gz"
    )
    kernels = classify(trace)
    n = len(kernels)
    names = kernels[Kernels.name].astype(object).to_numpy().copy()
    ops = kernels[Kernels.op_name].astype(object).to_numpy().copy()
    if edit == "missing-name":
        names[::3] = None
        kernels = _edited(kernels, **{Kernels.name: pd.Categorical(names)})
    elif edit == "missing-op":
        ops[::2] = None
        kernels = _edited(kernels, **{Kernels.op_name: pd.Categorical(ops)})
    elif edit == "all-missing":
        none = pd.Categorical([None] * n, categories=["x"])
        kernels = _edited(kernels, **{Kernels.name: none, Kernels.op_name: none})
    elif edit == "object-columns":
        kernels = _edited(
            kernels,
            **{
                Kernels.name: names,
                Kernels.op_name: ops,
                Classified.kind: kernels[Classified.kind].astype(object),
            },
        )
    elif edit == "non-text":
        kernels = _edited(kernels, **{Kernels.name: pd.Categorical(np.arange(n) % 3)})
    else:
        kernels = kernels.iloc[:0]
    steps = np.zeros(len(kernels), dtype=np.int64)
    got = timeline(trace, kernels, steps, keys=False)
    want = _timeline_reference(trace, kernels, steps, monkeypatch)
    same(got, want)
    assert list(got.dtypes) == list(want.dtypes)


# --- comparable._heavy_signatures: by codes -------------------------------------------------


def _heavy_signatures_reference(
    trace: Trace, kernels: pd.DataFrame, *, inductor: bool
) -> tuple[set[comparable.Signature], int]:
    """The replaced form: the label and every op's Input Dims as objects, pairs de-duplicated
    by pandas."""
    frame = kernels
    if inductor:
        frame = frame[~frame[Kernels.name].astype(object).isin(comparable._inductor_names(kernels))]
    label = frame[Kernels.op_name].astype(object).fillna(frame[Kernels.name].astype(object))
    codes, uniques = pd.factorize(label)
    key_of = np.array([op_key(str(u)) for u in uniques] + [None], dtype=object)
    keys = key_of[codes]
    heavy = np.isin(keys, list(HEAVY_KEYS))
    op_rows = frame[Kernels.op_row].to_numpy(dtype=float, na_value=np.nan)[heavy]
    has_op = ~np.isnan(op_rows)
    dims = np.full(len(op_rows), None, dtype=object)
    if len(trace.ops) and has_op.any():
        all_dims = trace.ops[Ops.input_dims].astype(object).to_numpy()
        dims[has_op] = all_dims[op_rows[has_op].astype(np.int64)]
    pairs = pd.DataFrame({"key": keys[heavy], "dims": dims}).drop_duplicates()
    sigs = {
        (str(key), comparable._matrix_dims(text))
        for key, text in zip(pairs["key"], pairs["dims"], strict=True)
    }
    return sigs, int(heavy.sum())


@pytest.mark.parametrize("path", real_traces())
@pytest.mark.parametrize("inductor", [False, True])
def test_heavy_signatures_match_the_object_form(path: Path, inductor: bool) -> None:
    trace = load_trace(path)
    kernels = comparable._kernel_rows(trace)
    got = comparable._heavy_signatures(trace, kernels, inductor=inductor)
    assert got == _heavy_signatures_reference(trace, kernels, inductor=inductor)


@pytest.mark.parametrize("inductor", [False, True])
def test_heavy_signatures_on_made_kernels(inductor: bool) -> None:
    """Missing op names fall back to the kernel name, missing both is no label, an op without
    shapes is None, plain object columns work as categoricals do."""
    trace = load_trace(
        Path(__file__).parent.parent / "sample_traces/h200/block/eager.pt.trace.json.gz"
    )
    n_ops = len(trace.ops)
    kernels = pd.DataFrame(
        {
            Kernels.name: ["ampere_sgemm_128x64_nn", "triton_poi_fused_add_0", None, "k", "k"],
            Kernels.op_name: [None, "aten::mm", None, "aten::addmm", "aten::conv2d"],
            Kernels.op_row: pd.array([None, 0, 1, n_ops - 1, 2], dtype="Int64"),
        }
    )
    for frame in (kernels, kernels.astype({Kernels.name: "category", Kernels.op_name: "category"})):
        got = comparable._heavy_signatures(trace, frame, inductor=inductor)
        assert got == _heavy_signatures_reference(trace, frame, inductor=inductor)
        assert got[1] == (2 if inductor else 3)  # mm/addmm/conv2d; the Inductor kernel left out


# --- diagnose: compile spans by code, copy cost per window ---------------------------------


def _compile_name_mask_reference(names: pd.Series) -> np.ndarray:
    """The replaced form: pandas' factorize of the whole column, each distinct name matched."""
    codes, uniques = pd.factorize(names)
    hits = np.array([bool(profiling.COMPILE_EVENT.search(str(u))) for u in uniques], dtype=bool)
    out = np.zeros(len(names), dtype=bool)
    known = codes >= 0
    out[known] = hits[codes[known]]
    return out


def _copy_cost_reference(facts: TraceFacts, rows: pd.DataFrame) -> float:
    """The replaced form: every copy and blocking call clipped to each window."""
    starts = rows[Kernels.ts_us].to_numpy(dtype=float)
    ends = starts + durations(rows)
    calls = facts.launch.blocking.calls
    calls = calls[calls[B.reason].isin(copies.COPY_REASONS) & (calls[B.step] >= 0)]
    c_start = calls[B.ts_us].to_numpy(dtype=float)
    c_end = c_start + calls[B.dur_us].to_numpy(dtype=float)
    total = 0.0
    for lo, hi in zip(*window_bounds(facts), strict=True):
        s, e = union(
            np.clip(np.concatenate([starts, c_start]), lo, hi),
            np.clip(np.concatenate([ends, c_end]), lo, hi),
        )
        total += float((e - s).sum())
    return total


@pytest.mark.parametrize("path", real_traces())
def test_compile_mask_and_copy_cost_match_the_old_forms(path: Path) -> None:
    trace = load_trace(path)
    names = trace.ops[Ops.name]
    for column in (names, names.astype(object), names.cat.add_categories(["torch._dynamo x"])):
        same(profiling.compile_name_mask(column), _compile_name_mask_reference(column))
    facts = facts_of_trace(trace)
    kernels = facts.kernels
    memcpy = (kernels[Kernels.activity] == ActivityKind.MEMCPY.value).to_numpy(dtype=bool)
    for rows in (kernels[memcpy], kernels.iloc[::7]):  # the copies; any kernels
        got = copies._copy_cost(facts, rows)
        want = _copy_cost_reference(facts, rows)
        assert got == want or (np.isnan(got) and np.isnan(want))


@pytest.mark.parametrize("path", real_traces())
def test_gemm_per_name_by_category_matches_factorize(path: Path) -> None:
    """gemm._per_name of a categorical column (once per category) equals the factorize form
    (the object column), for both tests the matmul-add rule asks, on ops and kernel names."""
    trace = load_trace(path)
    for column in (trace.ops[Ops.name], trace.kernels[Kernels.name]):
        picked = column.iloc[::3]
        for test in (gemm._is_plain_matmul, gemm._is_add):
            got = gemm._per_name(picked, test)
            same(got, gemm._per_name(picked.astype(object), test))


# --- chains._op_context at the chains' launching ops only (walked up) ------------------------


def _at_rows(
    full: tuple[np.ndarray, np.ndarray, np.ndarray], rows: np.ndarray
) -> tuple[np.ndarray, ...]:
    return tuple(a[rows] for a in full)


@pytest.mark.parametrize("path", real_traces())
def test_op_context_walked_up_equals_the_levels_at_kernel_ops(path: Path) -> None:
    """The walk from the kernels' launching ops (what chain_members asks) gives, at those
    rows, what the pass over every op by depth level gives; any other rows too."""
    trace = load_trace(path)
    ops = trace.ops
    full = chains_mod._op_context(ops)
    op = trace.kernels[Kernels.op_row].to_numpy(dtype=float, na_value=np.nan)
    kernel_ops = op[np.isfinite(op)].astype(np.int64)
    for rows in (kernel_ops, np.arange(0, len(ops), 5, dtype=np.int64)):
        walked = chains_mod._walk_up(chains_mod._op_flags(ops), rows)
        assert walked is not None  # real traces' depths agree with their parents
        same(_at_rows(walked, rows), _at_rows(full, rows))
        same(_at_rows(chains_mod._op_context(ops, rows), rows), _at_rows(full, rows))


def test_op_context_walk_falls_back_when_depths_disagree() -> None:
    """A parent as deep as its child (a missing depth read as 0, a loop): the walk gives up
    and the levels' answer stands, which differs from a true walk here."""
    ops = pd.DataFrame(
        {
            Ops.name: pd.Categorical(
                ["ProfilerStep#1", "Optimizer.step#SGD", "aten::add", "aten::mul", "x", "aten::y"]
            ),
            Ops.parent_row: pd.array([None, 0, 1, 2, 5, 4], dtype="Int64"),  # 4 <-> 5: a loop
            Ops.depth: pd.array([0, 1, None, 3, 1, 1], dtype="Int32"),
            Ops.category: pd.Categorical(
                ["user_annotation", "cpu_op", "cpu_op", "cpu_op", "a", "b"]
            ),
        }
    )
    rows = np.arange(len(ops), dtype=np.int64)
    assert chains_mod._walk_up(chains_mod._op_flags(ops), rows[3:4]) is None
    assert chains_mod._walk_up(chains_mod._op_flags(ops), rows[4:]) is None
    same(chains_mod._op_context(ops, rows[3:4]), chains_mod._op_context(ops))
    # consistent depths: walked, and equal at the rows asked
    fine = ops.assign(**{Ops.depth: pd.array([0, 1, 2, 3, 1, 1], dtype="Int32")}).iloc[:4]
    walked = chains_mod._walk_up(chains_mod._op_flags(fine), rows[:4])
    assert walked is not None
    same(walked, chains_mod._op_context(fine))
    assert walked[2][3] and walked[0][3] == 1 and walked[1][3] == 2  # optimizer, context, top


# --- dense: np.unique's answers without its sort --------------------------------------------


def _same_unique(values: np.ndarray) -> None:
    got = unique_inverse(values)
    want = np.unique(values, return_inverse=True, return_counts=True)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and np.array_equal(g, w)


@pytest.mark.parametrize("seed", range(20))
def test_unique_inverse_and_first_of_codes_match_numpy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    for high in (1, 7, n, 50 * n + 100_000):  # the last: past the table's bound (np.unique)
        for dtype in (np.int64, np.int32, np.uint16):
            _same_unique(rng.integers(0, min(high, np.iinfo(dtype).max), n).astype(dtype))
    _same_unique(rng.integers(-5, 5, n))  # negative: np.unique
    _same_unique(np.zeros(0, dtype=np.int64))
    for values in (rng.integers(0, 9, n), rng.integers(0, 10**9, n), rng.integers(-3, 3, n)):
        same(sorted_unique(values), np.unique(values))
    codes, _ = pd.factorize(rng.integers(0, 40, n))
    codes = np.asarray(codes, dtype=np.int64)
    same(first_of_codes(codes), np.unique(codes, return_index=True)[1])
    shuffled = rng.permutation(codes)  # not numbered by first appearance: np.unique's answer
    same(first_of_codes(shuffled), np.unique(shuffled, return_index=True)[1])
    same(
        first_of_codes(np.zeros(0, dtype=np.int64)),
        np.unique(np.zeros(0, np.int64), return_index=True)[1],
    )


@pytest.mark.parametrize("path", real_traces())
def test_unique_inverse_on_kernel_op_rows(path: Path) -> None:
    """The memory traffic's grouping of kernels by launching op (every op row of a real trace)
    equals np.unique's."""
    kernels = load_trace(path).kernels
    ops = kernels[Kernels.op_row].to_numpy(dtype=np.int64, na_value=-1)
    _same_unique(ops[ops >= 0])
    _same_unique(ops)  # with −1: np.unique's path


# --- idle._work_table: grouped by codes -----------------------------------------------------


def _work_of(trace: Trace) -> tuple[pd.DataFrame, list[object]]:
    """The outer ops and the CPU work pieces idle_split hands to _work_table."""
    seen: dict[str, object] = {}

    def spy(ops: pd.DataFrame, work: list[object]) -> pd.DataFrame:
        seen["args"] = (ops, work)
        return idle_mod._work_table_texts(ops, work) if work else pd.DataFrame()

    with pytest.MonkeyPatch.context() as m:
        m.setattr(idle_mod, "_work_table", spy)
        launch_overhead(trace)
    return seen["args"]  # type: ignore[return-value]


@pytest.mark.parametrize("path", real_traces())
def test_work_table_by_codes_matches_the_texts(path: Path) -> None:
    ops, work = _work_of(load_trace(path))
    if not work:
        pytest.skip("no CPU work in the idle gaps")
    same(idle_mod._work_table(ops, work), idle_mod._work_table_texts(ops, work))
    # a missing name, plain text columns: the texts' form
    names = ops[Ops.name].astype(object).to_numpy().copy()
    names[0] = None
    for edited in (ops.assign(**{Ops.name: pd.Categorical(names)}), ops.astype(object)):
        same(idle_mod._work_table(edited, work), idle_mod._work_table_texts(edited, work))


# --- chains: distinct top ops per long chain ------------------------------------------------


def _nunique_reference(chain: np.ndarray, op_top: np.ndarray) -> np.ndarray:
    """The replaced form: pandas' nunique of the top ops per chain, over every row."""
    return pd.Series(op_top).groupby(chain).transform("nunique").to_numpy()


def _check_distinct(chain: np.ndarray, op_top: np.ndarray) -> None:
    sizes = np.bincount(chain)[chain]
    long = sizes >= chains_mod.MIN_CHAIN_KERNELS
    got = chains_mod._distinct_per_chain(chain, op_top, long)
    want = _nunique_reference(chain, op_top)
    same(got[long], want[long].astype(np.int64))
    assert not got[~long].any()


@pytest.mark.parametrize("path", real_traces())
def test_distinct_per_chain_matches_nunique_on_real_traces(path: Path) -> None:
    trace = load_trace(path)
    facts = facts_of_trace(trace)
    seq = chains_reference._lane_order(trace, facts.kernels, kernel_steps(facts))
    if len(seq) < chains_mod.MIN_CHAIN_KERNELS:
        pytest.skip("too few kernels for a chain")
    rows = chains_reference._known_rows(seq, len(trace.ops))
    context, top, optimizer = chains_mod._op_context(trace.ops, rows)
    link = chains_mod._links(seq, trace.ops, context, top, optimizer)
    chain = np.cumsum(link == "")
    _check_distinct(chain, chains_mod._at(top, seq["op"].to_numpy(dtype=float)))


@pytest.mark.parametrize("seed", range(10))
def test_distinct_per_chain_matches_nunique_on_random_chains(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 500))
    chain = np.cumsum(rng.random(n) < 0.3)
    _check_distinct(chain, rng.integers(-1, 6, n))
    _check_distinct(np.zeros(n, dtype=np.int64), np.full(n, -1))  # one chain, no ops


# --- blocking: the median launch time only for the names a stall can be among ---------------


def _stalled_reference(trace: Trace, classes: pd.Series) -> np.ndarray:
    """The replaced form: every launch name's median over every launch call."""
    launches = trace.launches
    is_launch = blocking_mod._is_one_of(classes, blocking_mod._LAUNCHES)
    durs = launches[Launches.dur_us].to_numpy(dtype=float)
    if not is_launch.any():
        return np.zeros(len(launches), dtype=bool)
    names = launches[Launches.name]
    keys = names.cat.codes.to_numpy() if isinstance(names.dtype, pd.CategoricalDtype) else names
    median = pd.Series(durs).where(is_launch).groupby(np.asarray(keys)).transform("median")
    long = (
        is_launch
        & (durs >= blocking_mod.STALL_MIN_US)
        & (durs >= blocking_mod.STALL_FACTOR * median.to_numpy(float))
    )
    if not long.any():
        return long
    starts = trace.kernels[Kernels.ts_us].to_numpy(dtype=float)
    busy = union(starts, starts + trace.kernels[Kernels.dur_us].to_numpy(dtype=float))
    rows = np.flatnonzero(long)
    ts = launches[Launches.ts_us].to_numpy(dtype=float)[rows]
    call = np.nan_to_num(durs[rows])
    long[rows] = windows_overlap(*busy, ts, ts + call) < blocking_mod.STALL_IDLE_SHARE * call
    return long


def _stretched(trace: Trace, every: int) -> Trace:
    """``trace`` with every ``every``-th launch call 2,000 times longer (stalls to find)."""
    launches = trace.launches.copy()
    durs = launches[Launches.dur_us].to_numpy(dtype=float).copy()
    durs[::every] *= 2000.0
    launches[Launches.dur_us] = durs
    return dataclasses.replace(trace, launches=launches)


@pytest.mark.parametrize("path", real_traces())
def test_stalled_launches_match_the_all_names_median(path: Path) -> None:
    trace = load_trace(path)
    for variant in (trace, _stretched(trace, 97), _stretched(trace, 3)):
        classes = variant.launches[Launches.launch_class]
        want = _stalled_reference(variant, classes)
        same(blocking_mod._stalled_launches(variant, classes), want)
        plain = dataclasses.replace(
            variant,
            launches=variant.launches.assign(
                **{Launches.name: variant.launches[Launches.name].astype(object)}
            ),
        )
        same(blocking_mod._stalled_launches(plain, classes), want)


def test_maximum_is_clip_with_no_upper_bound() -> None:
    """windows.covered/overlap/_inside call np.maximum(v, 0) where they called np.clip(v, 0,
    None): numpy's clip is that call; equal to the bit, signed zeros and NaN included."""
    values = np.array([-1.5, -0.0, 0.0, 2.5, np.nan, np.inf, -np.inf])
    got, want = np.maximum(values, 0.0), np.clip(values, 0.0, None)
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(want))
    ints = np.array([-3, 0, 7], dtype=np.int64)
    same(np.maximum(ints, 0), np.clip(ints, 0, None))


# --- analyze: classify's kinds reused by the memory traffic; classify's shallow copy ---------


@pytest.mark.parametrize("path", real_traces())
def test_memory_traffic_with_classify_kinds_equals_its_own(path: Path) -> None:
    trace = load_trace(path)
    kernels = classify(trace)
    got = memory_traffic(trace, kinds=kernels[Classified.kind])
    want = memory_traffic(trace)
    same(got.per_kernel, want.per_kernel)
    same(got.by_kind, want.by_kind)
    assert (got.total_bytes, got.kernel_time_us) == (want.total_bytes, want.kernel_time_us)


def test_classify_leaves_the_trace_kernels_alone() -> None:
    trace = load_trace(
        Path(__file__).parent.parent / "sample_traces/h200/block/eager.pt.trace.json.gz"
    )
    before = trace.kernels.copy()
    out = classify(trace)
    out.loc[out.index[0], Kernels.dur_us] = -1.0  # an edit of the classified table
    assert Classified.kind not in trace.kernels.columns
    pd.testing.assert_frame_equal(trace.kernels, before)


@pytest.mark.parametrize("path", real_traces())
def test_reducing_table_is_isin_of_the_reducing_ops(path: Path) -> None:
    """chains._links reads a's "reduces" from a table by op row; the replaced form was
    np.isin of the rows in _reducing_ops, for every op row and the unknown −1."""
    trace = load_trace(path)
    facts = facts_of_trace(trace)
    seq = chains_reference._lane_order(trace, facts.kernels, kernel_steps(facts))
    _, top, _ = chains_mod._op_context(trace.ops)
    top_op = chains_mod._at(top, seq["op"].to_numpy(dtype=float))
    table = chains_mod._reducing_table(seq, top_op, len(trace.ops))
    rows = np.arange(-1, len(trace.ops))
    same(table[rows], np.isin(rows, chains_mod._reducing_ops(seq, top_op)))


@pytest.mark.parametrize("path", real_traces())
def test_kind_table_on_its_columns_equals_the_whole_table_form(path: Path) -> None:
    kernels = classify(load_trace(path))
    grouped = kernels.groupby([Classified.kind, Classified.source], observed=True)
    want = pd.DataFrame(
        {"count": grouped.size(), "time_us": grouped[Kernels.excl_dur_us].sum(min_count=0)}
    ).reset_index()
    same(kind_table(kernels), want)


# --- provenance._user_frames: flags by category, names spelled at the picked rows only -------


def _user_frames_reference(ops: pd.DataFrame) -> dict[int, tuple[str, int, str, bool]]:
    """The replaced form: every op's name spelled, then the marks and frames picked."""
    names, marks = provenance._text_where(
        ops[Ops.name], lambda text: text.startswith(provenance.LINE_MARK_PREFIX)
    )
    _, python = provenance._text_where(
        ops[Ops.category], lambda text: text == OpCategory.PYTHON_FUNCTION.value
    )
    picked = np.flatnonzero(marks | python)
    out = {}
    for row, name, exact in zip(
        ops.index[picked], names[picked].tolist(), marks[picked].tolist(), strict=True
    ):
        text = name.removeprefix(provenance.LINE_MARK_PREFIX) if exact else name
        match = provenance._PY_FRAME.match(text)
        if match is None or match["file"].startswith("<") or provenance.is_library(match["file"]):
            continue
        out[int(row)] = (match["file"], int(match["line"]), match["function"], bool(exact))
    return out


@pytest.mark.parametrize("path", every_trace_file())
def test_user_frames_match_the_spelled_form(path: Path) -> None:
    """Every trace file (the runs' lines traces hold the line marks; with_stack traces the
    frames), categorical and plain columns."""
    ops = load_trace(path).ops
    want = _user_frames_reference(ops)
    assert provenance._user_frames(ops) == want
    plain = ops.astype({Ops.name: object, Ops.category: object})
    assert provenance._user_frames(plain) == _user_frames_reference(plain) == want


# --- gemm._pairs: the names tested on the GEMM and pointwise rows only -----------------------


def _pairs_reference(facts: TraceFacts, seq: pd.DataFrame) -> list[tuple[int, int]]:
    """The replaced form: both name tests over every kernel of the lane order."""
    kind = seq["kind"]
    is_gemm = kind.isin([gemm.KernelKind.GEMM.value]).to_numpy(dtype=bool)
    pointwise = kind.isin([gemm.KernelKind.POINTWISE.value]).to_numpy(dtype=bool)
    labels = seq["label"]
    plain = gemm._per_name(labels, gemm._is_plain_matmul) | gemm._op_names_are(
        facts, seq["op"], gemm._is_plain_matmul
    )
    adds = gemm._per_name(labels, gemm._is_add)
    candidate = np.zeros(len(seq), dtype=bool)
    candidate[1:] = is_gemm[:-1] & pointwise[1:] & plain[:-1] & adds[1:]
    candidate &= gemm.same_context(seq)
    at = np.flatnonzero(candidate)
    ops = seq["op"].to_numpy(dtype=float)
    gemm_dims, add_dims = gemm._dims(facts, ops[at - 1]), gemm._dims(facts, ops[at])
    return [
        (int(seq.index[j - 1]), int(seq.index[j]))
        for j, g, a in zip(at.tolist(), gemm_dims, add_dims, strict=True)
        if gemm._same_output(g, a)
    ]


@pytest.mark.parametrize("path", real_traces())
def test_matmul_add_pairs_match_the_every_row_form(path: Path) -> None:
    facts = facts_of_trace(load_trace(path))
    seq = gemm.timeline_of(facts)
    assert gemm._pairs(facts, seq) == _pairs_reference(facts, seq)
