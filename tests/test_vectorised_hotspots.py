"""The analysis and dashboard hot spots made faster for issue 14 (PERF-BIG) against the plain
code they replaced, kept here as references: every result must be equal to the last bit, on
every corpus and sample trace, and on tiny hand-made traces for the edge cases."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests import top_kernels_reference
from tests._reference import kernel_intervals, real_traces, same
from tests.conftest import CORPUS, kernel, launch, load_trace, op
from traceviz.analysis import blocking as blocking_mod
from traceviz.analysis import chains as chains_mod
from traceviz.analysis import idle as idle_mod
from traceviz.analysis import kernel_diff as kernel_diff_mod
from traceviz.analysis import kernel_kinds as kinds_mod
from traceviz.analysis import launch as launch_mod
from traceviz.analysis import top_kernels as top_kernels_mod
from traceviz.analysis import traffic as traffic_mod
from traceviz.analysis.blocking import blocked_intervals, blocking_calls
from traceviz.analysis.chains import chain_members
from traceviz.analysis.kernels import classify
from traceviz.analysis.memory import memory_traffic
from traceviz.analysis.stream_waits import gated_activities
from traceviz.analysis.timeline import data_keys, largest_shape, timeline
from traceviz.analysis.windows import StepWindows, overlap, step_windows, union
from traceviz.diagnose.facts import facts_of_trace, kernel_steps
from traceviz.parse.compile_log import STEP_SYNC_MARK
from traceviz.schema import Kernels, LaunchClass, Launches, Ops
from traceviz.trace import Trace

# --- references: the code as it was ---------------------------------------------------------


class _WholeBlocked(idle_mod._Blocked):
    """The blocked set as the loop used it: the whole set everywhere, no kept prefix."""

    def overlap(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        return overlap(self.lo, self.hi, lo, hi)

    def near(self, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
        return self.lo, self.hi


class _AllOuterOps(idle_mod._OuterOps):
    """The outer ops as the loop scanned them: a mask over all of them per step."""

    def rows_within(self, start: float, end: float) -> np.ndarray:
        return np.flatnonzero((self.hi > start) & (self.lo < end))


def _outer_ops_lexsort(trace: Trace, thread: str | None) -> pd.DataFrame:
    """idle._outer_ops as it was: every op of the thread sorted by (start, longer first)."""
    from traceviz.schema import OpCategory

    ops = trace.ops
    if thread is None or ops.empty:
        return ops.iloc[:0]
    mine = (
        (ops[Ops.thread] == thread).to_numpy(dtype=bool)
        & (ops[Ops.category] != OpCategory.PYTHON_FUNCTION.value).to_numpy(dtype=bool)
        & ~blocking_mod.is_step_span(ops[Ops.name])
    )
    rows = np.flatnonzero(mine)
    ts = ops[Ops.ts_us].to_numpy(dtype=float)[rows]
    end = ts + np.nan_to_num(ops[Ops.dur_us].to_numpy(dtype=float)[rows])
    order = np.lexsort((-end, ts))
    rows, ts, end = rows[order], ts[order], end[order]
    reach = np.concatenate([[-np.inf], np.maximum.accumulate(end)[:-1]])
    return ops.iloc[rows[ts >= reach]]


def _idle_split_loop(trace: Trace, windows: StepWindows) -> idle_mod.IdleSplit:
    """idle_split as it was: every step masks all kernels, subtracts and measures against the
    whole blocked set, and scans every outer op."""
    blocking = blocking_calls(trace)
    kernels = trace.kernels
    starts, ends, issued = kernel_intervals(kernels)
    gated = gated_activities(trace)
    whole = _WholeBlocked(*blocked_intervals(blocking.calls))
    thread = idle_mod._main_thread(trace)
    ops = _outer_ops_lexsort(trace, thread)
    outer = _AllOuterOps(ops)
    rows, work, spans = [], [], []
    for i, (step, lo, hi) in enumerate(windows):
        inside = (starts >= lo) & (starts < hi) & np.isfinite(starts)
        gaps = idle_mod._gaps(starts[inside], ends[inside], issued[inside], lo, hi, gated[inside])
        row, wait, blocked = idle_mod._split(gaps, whole, lo, hi)
        spans.append(blocked)
        row[idle_mod.IdleParts.busy_us] = max((hi - lo) - row[idle_mod.IdleParts.idle_us], 0.0)
        rows.append({idle_mod.IdleParts.step: step, idle_mod.IdleParts.wall_us: hi - lo, **row})
        work += idle_mod._cpu_work(outer, wait, i)
    columns = [idle_mod.IdleParts.step, idle_mod.IdleParts.wall_us, *idle_mod._ROW_COLUMNS]
    per_step = pd.DataFrame(rows, columns=columns)
    per_step[idle_mod.IdleParts.step] = per_step[idle_mod.IdleParts.step].astype("Int64")
    blocked_spans = (
        np.concatenate([b[0] for b in spans]),
        np.concatenate([b[1] for b in spans]),
    )
    return idle_mod.IdleSplit(
        per_step=per_step,
        cpu_work=idle_mod._work_table(ops, work),
        main_thread=thread,
        blocked_spans=idle_mod.union(*blocked_spans),
    )


def _classify_kind_loop(name: str) -> kinds_mod.KernelKind:
    """classify_kind as it was: every name through the case-insensitive rules, nothing kept."""
    if not isinstance(name, str):
        return kinds_mod.KernelKind.OTHER
    fused = kinds_mod.fused_kernel_ops(name)
    if fused is not None:
        return kinds_mod._inductor_kind(fused)
    if kinds_mod._NAMESPACED.match(name):
        base = kinds_mod.eager_op_base(name, strip_inplace=True)
        for rule in kinds_mod.OP_KIND_RULES:
            if rule.pattern.fullmatch(base):
                return rule.kind
        if name.startswith("aten::"):
            return kinds_mod.KernelKind.OTHER
    for rule in kinds_mod.KIND_RULES:
        if rule.pattern.search(name):
            return rule.kind
    return kinds_mod.KernelKind.OTHER


def _check_kinds(trace: Trace) -> set[str]:
    """Every distinct kernel and op name of ``trace`` (and its upper/lower-cased forms) gets
    the kind the plain rules give; returns the kinds seen."""
    names = {str(n) for n in trace.kernels[Kernels.name].dropna().unique()}
    names |= {str(n) for n in trace.ops[Ops.name].dropna().unique()}
    seen = set()
    for name in sorted(names):
        for variant in (name, name.upper(), name.lower(), name.swapcase()):
            kind = kinds_mod.classify_kind(variant)
            assert kind is _classify_kind_loop(variant), variant
            seen.add(kind.value)
    return seen


def _blocking_reasons_loop(trace: Trace) -> np.ndarray:
    """blocking_reasons as it was: launch classes compared as an object array, the device's
    busy time measured for every launch."""
    launches = trace.launches
    classes = launches[Launches.launch_class].astype(object).to_numpy()
    out = np.zeros(len(launches), dtype=np.int8)
    is_copy = classes == LaunchClass.MEMCPY.value
    is_async = launches[Launches.name].astype(str).str.contains("Async", regex=False).to_numpy()
    out[classes == LaunchClass.SYNC.value] = 1
    out[is_copy & ~is_async] = 2
    pageable = np.zeros(len(launches), dtype=bool)
    pageable[blocking_mod._pageable_launch_rows(trace)] = True
    out[is_copy & is_async & pageable] = 3
    is_launch = np.isin(classes, blocking_mod._LAUNCHES)
    durs = launches[Launches.dur_us].to_numpy(dtype=float)
    if is_launch.any():
        keys = launches[Launches.name].cat.codes.to_numpy()
        median = pd.Series(durs).where(is_launch).groupby(keys).transform("median")
        long = (
            is_launch
            & (durs >= blocking_mod.STALL_MIN_US)
            & (durs >= blocking_mod.STALL_FACTOR * median.to_numpy(float))
        )
        if long.any():
            starts = trace.kernels[Kernels.ts_us].to_numpy(dtype=float)
            busy = union(starts, starts + trace.kernels[Kernels.dur_us].to_numpy(dtype=float))
            ts = launches[Launches.ts_us].to_numpy(dtype=float)
            device_busy = overlap(*busy, ts, ts + np.nan_to_num(durs))
            long &= device_busy < blocking_mod.STALL_IDLE_SHARE * np.nan_to_num(durs)
        out[long] = 4
    width = max([1, *(len(blocking_mod._REASONS[c]) for c in np.unique(out))])
    return np.array(blocking_mod._REASONS, dtype=f"<U{width}")[out]


def _blocked_per_step_loop(windows: StepWindows, calls: pd.DataFrame) -> pd.DataFrame:
    """blocking._per_step as it was: the calls of each step counted by a comparison."""
    col = blocking_mod.BlockingColumns
    ts = calls[col.ts_us].to_numpy(dtype=float)
    end = ts + calls[col.dur_us].to_numpy(dtype=float)
    rows = []
    for i, (step, lo, hi) in enumerate(windows):
        starts, ends = union(np.clip(ts, lo, hi), np.clip(end, lo, hi))
        rows.append(
            {
                blocking_mod.BlockedStep.step: step,
                blocking_mod.BlockedStep.wall_us: hi - lo,
                blocking_mod.BlockedStep.calls: int((calls[col.step] == i).sum()),
                blocking_mod.BlockedStep.blocked_us: float((ends - starts).sum()),
            }
        )
    table = pd.DataFrame(rows)
    table[blocking_mod.BlockedStep.step] = table[blocking_mod.BlockedStep.step].astype("Int64")
    return table


def _check_blocking(trace: Trace) -> blocking_mod.BlockingCalls:
    reasons = _blocking_reasons_loop(trace)
    same(blocking_mod.blocking_reasons(trace), reasons)
    found = blocking_calls(trace)
    col = blocking_mod.BlockingColumns
    blocking = np.flatnonzero(reasons != "")
    harness = blocking_mod.issuers(trace, blocking)[0] == STEP_SYNC_MARK  # the runner's sync
    assert found.calls[col.launch_row].tolist() == sorted(
        blocking[~harness].tolist(),
        key=lambda r: trace.launches[Launches.ts_us].iat[r],
    )
    rows = found.calls[col.launch_row].to_numpy()
    assert found.calls[col.reason].tolist() == reasons[rows].tolist()
    same(found.per_step, _blocked_per_step_loop(step_windows(trace), found.calls))
    return found


def _side_by_text(kernels: pd.DataFrame, column: str) -> pd.DataFrame:
    """kernel_diff._side as it was: every row's key spelled out, grouped by text."""
    values = kernels[column]
    keys = values.astype(object).where(values.notna(), kernel_diff_mod.NO_OP).astype(str)
    time = kernels[Kernels.excl_dur_us].astype(float).fillna(0.0)
    frame = pd.DataFrame({"key": keys.to_numpy(), "time_us": time.to_numpy()})
    grouped = frame.groupby("key", sort=False)
    return pd.DataFrame({"calls": grouped.size(), "time_us": grouped["time_us"].sum()})


def _check_kernel_tables(
    a: pd.DataFrame, b: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> pd.DataFrame:
    """top_kernels and kernel_diff (every grouping) of classified kernels ``a`` and ``b``
    equal what the per-group Python and the per-row texts gave; returns top_kernels."""
    sides = [("a", a), ("b", b)]
    got = top_kernels_mod.top_kernels(sides)
    diffs = {by: kernel_diff_mod.kernel_diff(a, b, by=by) for by in kernel_diff_mod.GROUPS}
    # top_kernels against its old form kept whole (categorical tables no longer reach the
    # _launched_by that a patch here used to replace: that compared the new code with itself)
    same(got, top_kernels_reference.top_kernels(sides))
    with monkeypatch.context() as m:
        m.setattr(kernel_diff_mod, "_side", _side_by_text)
        for by, diff in diffs.items():
            same(diff, kernel_diff_mod.kernel_diff(a, b, by=by))
    for side in ("a", "b"):  # every activity in one row: the times add up to the measured
        measured = (a if side == "a" else b)[Kernels.excl_dur_us].fillna(0.0).sum()
        for diff in diffs.values():
            assert diff[f"{side}_time_us"].sum() == pytest.approx(measured, rel=1e-9, abs=1e-6)
    return got


def _group_rows_loop(columns: list[pd.Series]) -> tuple[np.ndarray, list[list[object]]]:
    """traffic._group_rows as it was: each group's values read one by one from the uniques."""
    codes_uniques = [pd.factorize(c, use_na_sentinel=True) for c in columns]
    key = np.zeros(len(columns[0]), dtype=np.int64)
    for codes, uniques in codes_uniques:
        key, _ = pd.factorize(key * (len(uniques) + 1) + (np.asarray(codes) + 1))
    key = np.asarray(key, dtype=np.int64)
    _, first = np.unique(key, return_index=True)
    groups = [
        [uniques[codes[row]] if codes[row] >= 0 else None for codes, uniques in codes_uniques]
        for row in first
    ]
    return key, groups


def _check_traffic(trace: Trace, monkeypatch: pytest.MonkeyPatch) -> None:
    got = memory_traffic(trace)
    with monkeypatch.context() as m:
        m.setattr(traffic_mod, "_group_rows", _group_rows_loop)
        want = memory_traffic(trace)
    same(got.per_kernel, want.per_kernel)
    same(got.by_kind, want.by_kind)
    assert (got.total_bytes, got.estimated_bytes) == (want.total_bytes, want.estimated_bytes)


def _launch_per_step_loop(
    trace: Trace, is_kernel: np.ndarray, counted: np.ndarray, idle: idle_mod.IdleSplit
) -> pd.DataFrame:
    """launch._per_step as it was: every step masks every kernel and every launch."""
    from traceviz.schema import DeviceKind

    col = launch_mod.StepOverhead
    windows = step_windows(trace)
    kernels = trace.kernels
    starts, ends, issue_end = kernel_intervals(kernels)
    launch_ts = trace.launches[Launches.ts_us].to_numpy(dtype=float)
    launch_durs = trace.launches[Launches.dur_us].to_numpy(dtype=float)
    kernel_durs = kernels[Kernels.excl_dur_us].to_numpy(dtype=float)
    gpu = trace.device_kind in (DeviceKind.CUDA, DeviceKind.ROCM)
    waits = idle.per_step[idle_mod.IdleParts.cpu_wait_us].to_numpy(dtype=float)
    rows = []
    for i, (step, lo, hi) in enumerate(windows):
        inside = (starts >= lo) & (starts < hi) & np.isfinite(starts)
        busy, wait = launch_mod._busy_and_wait(
            starts[inside], ends[inside], issue_end[inside], lo, hi
        )
        in_step = counted & (launch_ts >= lo) & (launch_ts < hi)
        wall = hi - lo
        kernel_time = float(np.nansum(kernel_durs[inside & is_kernel]))
        if trace.device_kind is DeviceKind.CPU:
            busy = min(kernel_time, wall)
        if gpu:
            wait = float(waits[i])
        rows.append(
            {
                col.step: step,
                col.wall_us: wall,
                col.kernel_count: int((inside & is_kernel).sum()),
                col.kernel_time_us: kernel_time,
                col.busy_us: busy,
                col.idle_us: max(wall - busy, 0.0),
                col.cpu_wait_us: wait,
                col.launch_calls: int(in_step.sum()),
                col.launch_api_us: float(np.nansum(launch_durs[in_step])),
            }
        )
    table = pd.DataFrame(rows)
    table[col.step] = table[col.step].astype("Int64")
    return table


def _check_launch(trace: Trace, split: idle_mod.IdleSplit) -> None:
    from traceviz.schema import ActivityKind

    is_kernel = (trace.kernels[Kernels.activity] == ActivityKind.KERNEL.value).to_numpy()
    counted = trace.launches[Launches.launch_class].isin(launch_mod.LAUNCH_CLASSES).to_numpy()
    same(
        launch_mod._per_step(trace, is_kernel, counted, split),
        _launch_per_step_loop(trace, is_kernel, counted, split),
    )


def _written_bytes_loop(ops: pd.DataFrame, op_rows: pd.Series) -> np.ndarray:
    """chains._written_bytes as it was: every member's op estimated through the cache."""
    rows = op_rows.to_numpy(dtype=float)
    out = np.full(len(rows), np.nan)
    known = np.isfinite(rows) & (rows >= 0) & (rows < len(ops))
    if not known.any():
        return out
    picked = ops.iloc[rows[known].astype(np.int64)]
    names, dims, types, concrete = (
        picked[c].astype(object).to_numpy()
        for c in (Ops.name, Ops.input_dims, Ops.input_types, Ops.concrete_inputs)
    )
    text = chains_mod._text
    out[known] = [
        chains_mod._written(text(n), text(d), text(t), text(c))
        for n, d, t, c in zip(names, dims, types, concrete, strict=True)
    ]
    return out


def _data_keys_by_text(trace: Trace, kernels: pd.DataFrame) -> np.ndarray:
    """timeline.data_keys as it was: every kernel's shapes text spelled out and factorized."""
    op_rows = kernels[Kernels.op_row].to_numpy(dtype=float, na_value=np.nan)
    dims = trace.ops[Ops.input_dims]
    out = np.full(len(kernels), None, dtype=object)
    known = np.isfinite(op_rows) & (op_rows >= 0) & (op_rows < len(dims))
    rows = op_rows[known].astype(np.int64)
    codes, texts = pd.factorize(dims.iloc[rows].to_numpy(dtype=object), use_na_sentinel=False)
    keys = np.array([largest_shape(d) if isinstance(d, str) else None for d in texts], dtype=object)
    out[known] = keys[codes] if len(codes) else []
    return out


def _check_chains(trace: Trace, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """chain members and groups with the shared timeline and the grouped byte estimates equal
    those of the code replaced; returns the groups."""
    facts = facts_of_trace(trace)
    steps = kernel_steps(facts)
    lanes = timeline(trace, facts.kernels, steps)
    assert (
        data_keys(trace, facts.kernels).tolist()
        == _data_keys_by_text(trace, facts.kernels).tolist()
    )
    members = chain_members(trace, facts.kernels, steps, lanes=lanes)
    groups = chains_mod.chain_groups(trace, members)
    with monkeypatch.context() as m:
        m.setattr(chains_mod, "_written_bytes", _written_bytes_loop)
        want = chain_members(trace, facts.kernels, steps)
        same(members, want)
        assert groups == chains_mod.chain_groups(trace, want)
    return groups


def _check_idle(trace: Trace) -> idle_mod.IdleSplit:
    windows = step_windows(trace)
    got = idle_mod.idle_split(trace, windows, blocking_calls(trace))
    want = _idle_split_loop(trace, windows)
    same(got.per_step, want.per_step)
    same(got.cpu_work, want.cpu_work)
    same(got.blocked_spans, want.blocked_spans)
    assert got.main_thread == want.main_thread
    return got


# --- real traces ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", real_traces())
def test_hot_spots_match_the_code_they_replaced_on_real_traces(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = load_trace(path)
    classified = classify(trace)
    _check_kernel_tables(classified, classified.iloc[::2], monkeypatch)
    _check_traffic(trace, monkeypatch)
    _check_chains(trace, monkeypatch)
    _check_kinds(trace)
    _check_blocking(trace)
    split = _check_idle(trace)
    _check_launch(trace, split)
    # what is credited never exceeds what was measured
    per_step = split.per_step
    parts = per_step[list(idle_mod.PARTS)].sum(axis=1).to_numpy()
    assert np.all(parts <= per_step[idle_mod.IdleParts.idle_us].to_numpy() * (1 + 1e-9) + 1e-6)
    assert split.total(idle_mod.IdleParts.idle_us) <= split.total(idle_mod.IdleParts.wall_us)


def test_real_traces_have_blocked_and_cpu_wait_time() -> None:
    """The idle comparison above is not vacuous: a corpus trace has several steps, blocked
    time and CPU work named in the waits."""
    if not CORPUS.is_dir():
        pytest.skip(f"corpus not found at {CORPUS}")
    trace = load_trace(CORPUS / "nvidia" / "a100_compiled_cudagraph_train_2023.json.gz")
    split = _check_idle(trace)
    found = _check_blocking(trace)
    assert set(found.calls[blocking_mod.BlockingColumns.reason]) >= {
        "sync",
        "pageable_copy",
        "stalled_launch",
    }
    assert len(split.per_step) > 1
    assert split.total(idle_mod.IdleParts.cpu_wait_us) > 0
    assert len(split.cpu_work) > 0


def test_real_traces_have_chains_with_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The chains comparison above is not vacuous: a corpus trace has chain groups with
    estimated bytes and a largest op."""
    if not CORPUS.is_dir():
        pytest.skip(f"corpus not found at {CORPUS}")
    trace = load_trace(CORPUS / "nvidia" / "a100_eager_train_control.json.gz")
    groups = _check_chains(trace, monkeypatch)
    assert any(g.bytes_saved for g in groups)  # type: ignore[attr-defined]
    assert any(g.largest_op for g in groups)  # type: ignore[attr-defined]
    keys = data_keys(trace, facts_of_trace(trace).kernels)
    assert sum(k is not None for k in keys) > 1000  # the data keys comparison is not vacuous


def test_real_names_cover_most_kinds() -> None:
    """The kind comparison above is not vacuous: corpus names reach most kinds."""
    if not CORPUS.is_dir():
        pytest.skip(f"corpus not found at {CORPUS}")
    seen: set[str] = set()
    for name in ("a100_eager_train_control.json.gz", "v100_resnet50_eager_train_2021.json.gz"):
        seen |= _check_kinds(load_trace(CORPUS / "nvidia" / name))
    assert {"gemm", "conv", "pointwise", "reduction", "normalization", "copy"} <= seen


# --- edge cases -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "Kelvin_\u212a_gemm",  # not ASCII: the case-insensitive rules, as before
        "GEMM_\u017f",
        "SOFTMAX_WARP_FORWARD",
        "void at::native::ReduceOp<float>",
        "CatArrayBatchedCopy",
        "nchwToNhwcKernel",
        "fbgemm_only",  # the look-behind
        "",
    ],
)
def test_kind_of_unusual_names_matches_the_rules(name: str) -> None:
    assert kinds_mod.classify_kind(name) is _classify_kind_loop(name)
    assert kinds_mod.classify_kind(name) is kinds_mod.classify_kind(name)  # remembered


def test_launched_by_ties_missing_ops_and_text_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel whose two ops tie, one with no launching op, one launched by one op; the same
    with text (not categorical) columns."""
    frame = pd.DataFrame(
        {
            Kernels.name: ["tie", "tie", "tie", "tie", "none", "one", "one", "one"],
            Kernels.op_name: ["x", "y", "y", "x", None, "z", "z", "x"],
            Kernels.excl_dur_us: [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, np.nan, 8.0],
            "kind": ["gemm"] * 8,
            "source": ["eager_aten"] * 8,
        }
    )
    cats = frame.astype({Kernels.name: "category", Kernels.op_name: "category"})
    for kernels in (cats, frame):
        got = _check_kernel_tables(kernels, kernels.iloc[:5], monkeypatch)
        mine = got[got["trace"] == "a"]
        launched = dict(zip(mine["kernel"], mine["launched_by"], strict=True))
        assert launched["one"] == "z"
        assert launched["tie"] in {"x", "y"}


@pytest.mark.parametrize("seed", range(20))
def test_outer_ops_order_is_lexsort(seed: int) -> None:
    """Starts in order with many ties (and sometimes out of order, or NaN): the order of the
    outer-ops search equals np.lexsort((-end, ts)) exactly."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 60))
    ts = np.sort(rng.integers(0, 12, n).astype(float))
    end = ts + rng.integers(0, 4, n)
    if seed % 5 == 3 and n > 2:
        ts[0], ts[-1] = ts[-1], ts[0]
    if seed % 5 == 4 and n > 2:
        ts[n // 2] = np.nan
    got = idle_mod._by_start_longer_first(ts, end)
    assert got.tolist() == np.lexsort((-end, ts)).tolist()


def test_idle_split_ties_nan_starts_and_blocking_across_steps(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    """Kernels tied on their start, a sync spanning a step boundary, a step with no kernel."""
    events = [
        op("ProfilerStep#1", 0, 1000),
        op("ProfilerStep#2", 1000, 1000),
        op("ProfilerStep#3", 2000, 500),
        op("outer", 5, 300),
        launch("cudaLaunchKernel", 10, 5, 1),
        launch("cudaLaunchKernel", 20, 5, 2),
        kernel("k1", 400, 50, 1),
        kernel("k2", 400, 80, 2),  # same start as k1
        launch("cudaStreamSynchronize", 900, 300, 99),  # blocks across the step boundary
        launch("cudaLaunchKernel", 1250, 5, 3),
        kernel("k3", 1300, 20, 3),
    ]
    trace = load_trace(tmp_trace(events))
    split = _check_idle(trace)
    assert _check_blocking(trace).per_step[blocking_mod.BlockedStep.calls].tolist() == [1, 0, 0]
    assert len(split.per_step) == 3
    assert split.total(idle_mod.IdleParts.blocked_us) > 0
