"""The parse build phase's plain code as it was before it was made faster (issue 14,
PARSE-BUILD), kept as references: tests/test_parse_build_fast.py checks that the fast code
gives the very same tables (values, dtypes, category order, even the values under <NA>) on
every corpus and sample trace and on hand-made edge cases.

Linking (traceviz.parse.link before): pandas index lookups, columns taken as Python objects;
tables (traceviz.parse.tables, nesting, columns.raw_text_of before): frames made then taken in
order, placeholders from lists of n values, a three-key lexsort.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from traceviz import schema
from traceviz.parse import build, nesting
from traceviz.parse.columns import ColumnSet, map_categories
from traceviz.parse.routing import DEVICE_CATEGORIES, OP_CATEGORIES
from traceviz.parse.source import EventSource
from traceviz.parse.tables import sorted_categorical
from traceviz.schema import ActivityKind, Kernels, LaunchClass, Launches, OpCategory, Ops


def link_kernels(kernels: pd.DataFrame, launches: pd.DataFrame, ops: pd.DataFrame) -> None:
    """Fill the kernels table's launch, thread, graph and op columns in place."""
    if kernels.empty:
        return
    for table, columns in ((kernels, Kernels), (launches, Launches)):
        if _ids_mirror_correlation(table[columns.external_id], table[columns.correlation]):
            table[columns.external_id] = pd.array([pd.NA] * len(table), dtype="Int64")
    launch_row = _lookup(launches[Launches.correlation], kernels[Kernels.correlation])
    _attach_launches(kernels, launches, launch_row)
    _attach_ops_by_external_id(kernels, ops)
    _attach_ops_by_time(kernels, launches, ops, launch_row)
    counts = np.bincount(launch_row[launch_row >= 0], minlength=len(launches))
    launches[Launches.kernel_count] = pd.array(counts, dtype="Int64")


def _ids_mirror_correlation(external: pd.Series, correlation: pd.Series) -> bool:
    """Some 2022-2023 Kineto versions wrote the correlation id into "External id" on device
    and runtime events; such ids name no op, and matching them against op ids would link
    kernels to unrelated ops."""
    both = (external.notna() & correlation.notna()).to_numpy()
    if not both.any():
        return False
    same = external[both].to_numpy(dtype=np.int64) == correlation[both].to_numpy(dtype=np.int64)
    return bool(same.mean() > 0.9)


def _lookup(keys: pd.Series, queries: pd.Series) -> np.ndarray:
    """Row of the first ``keys`` entry equal to each query (−1 where none or missing)."""
    present = keys.notna().to_numpy()
    index = pd.Index(keys[present].astype("int64").to_numpy())
    rows = np.flatnonzero(present)
    first = ~index.duplicated(keep="first")
    index, rows = index[first], rows[first]
    query = queries.to_numpy(dtype="int64", na_value=np.iinfo(np.int64).min)
    pos = index.get_indexer(pd.Index(query))
    return (
        np.where(pos >= 0, rows[np.maximum(pos, 0)], -1) if len(rows) else np.full(len(query), -1)
    )


def _nullable(rows: np.ndarray) -> pd.arrays.IntegerArray:
    return pd.arrays.IntegerArray(rows.astype(np.int64), rows < 0)


def _take(column: pd.Series, rows: np.ndarray) -> pd.Series:
    """``column[rows]`` with missing values where ``rows`` is −1 (keeps the dtype)."""
    if len(column) == 0:
        return pd.Series([None] * len(rows), dtype=column.dtype)
    taken = column.take(np.maximum(rows, 0)).reset_index(drop=True)
    return taken.where(rows >= 0)


def _attach_launches(kernels: pd.DataFrame, launches: pd.DataFrame, row: np.ndarray) -> None:
    linked = row >= 0
    if not linked.any():
        return
    kernels[Kernels.launch_row] = _nullable(row)
    kernels[Kernels.launch_name] = _take(launches[Launches.name], row).to_numpy()
    kernels[Kernels.launch_name] = kernels[Kernels.launch_name].astype("category")
    launch_ts = _take(launches[Launches.ts_us], row).to_numpy(dtype=float)
    launch_dur = _take(launches[Launches.dur_us], row).to_numpy(dtype=float)
    kernels[Kernels.launch_ts_us] = launch_ts
    kernels[Kernels.launch_dur_us] = launch_dur
    kernels[Kernels.launch_delay_us] = kernels[Kernels.ts_us].to_numpy() - (launch_ts + launch_dur)
    threads = launches[Launches.thread]
    codes = np.where(linked, np.asarray(threads.cat.codes)[np.maximum(row, 0)], -1)
    kernels[Kernels.thread] = pd.Categorical.from_codes(codes, categories=threads.cat.categories)
    is_graph = np.zeros(len(row), dtype=bool)
    classes = np.asarray(launches[Launches.launch_class].astype(object))
    is_graph[linked] = classes[row[linked]] == LaunchClass.GRAPH_LAUNCH.value
    kernels[Kernels.in_graph] = is_graph
    kernels[Kernels.graph_launch_row] = _nullable(np.where(is_graph, row, -1))
    launch_external = _take(launches[Launches.external_id], row).astype("Int64")
    own = kernels[Kernels.external_id]
    kernels[Kernels.external_id] = own.fillna(launch_external)


def _attach_ops_by_external_id(kernels: pd.DataFrame, ops: pd.DataFrame) -> None:
    linkable = ops[Ops.category] != OpCategory.PYTHON_FUNCTION.value
    keys = ops[Ops.external_id].where(linkable)
    row = _lookup(keys, kernels[Kernels.external_id])
    _set_ops(kernels, ops, row, "external_id", np.ones(len(row), dtype=bool))


def _attach_ops_by_time(
    kernels: pd.DataFrame, launches: pd.DataFrame, ops: pd.DataFrame, launch_row: np.ndarray
) -> None:
    todo = kernels[Kernels.op_row].isna().to_numpy() & (launch_row >= 0)
    if not todo.any() or ops.empty:
        return
    op_threads = np.asarray(ops[Ops.thread].cat.codes)
    starts = ops[Ops.ts_us].to_numpy()
    ends = starts + np.nan_to_num(ops[Ops.dur_us].to_numpy())
    timeline = nesting.Timeline.covering(starts, ends)
    rows = launch_row[todo]
    q_thread = np.asarray(launches[Launches.thread].cat.codes)[rows]
    q_start = launches[Launches.ts_us].to_numpy()[rows]
    q_end = q_start + np.nan_to_num(launches[Launches.dur_us].to_numpy()[rows])
    parent = ops[Ops.parent_row].to_numpy(dtype=np.int64, na_value=-1)
    span_keys = (timeline.keys(op_threads, starts), timeline.keys(op_threads, ends))
    query_keys = (timeline.keys(q_thread, q_start), timeline.keys(q_thread, q_end))
    is_cpu_op = (ops[Ops.category] == OpCategory.CPU_OP.value).to_numpy()
    found = nesting.innermost_enclosing(*span_keys, parent, is_cpu_op, *query_keys)
    # No cpu_op around the launch (e.g. a graph replay called from Python): any span will do.
    missing = found < 0
    if missing.any():
        anywhere = nesting.innermost_enclosing(
            *span_keys,
            parent,
            np.ones(len(ops), dtype=bool),
            query_keys[0][missing],
            query_keys[1][missing],
        )
        found[missing] = anywhere
    full = np.full(len(kernels), -1, dtype=np.int64)
    full[np.flatnonzero(todo)] = found
    _set_ops(kernels, ops, full, "time", todo)


def _set_ops(
    kernels: pd.DataFrame, ops: pd.DataFrame, row: np.ndarray, how: str, where: np.ndarray
) -> None:
    """Write op_row/op_name/op_link for rows where ``where`` and a match was found."""
    hit = where & (row >= 0)
    if not hit.any():
        return
    op_row = kernels[Kernels.op_row].to_numpy(dtype=np.int64, na_value=-1, copy=True)
    op_row[hit] = row[hit]
    kernels[Kernels.op_row] = _nullable(op_row)
    names = ops[Ops.name]
    name_codes = np.where(op_row >= 0, np.asarray(names.cat.codes)[np.maximum(op_row, 0)], -1)
    kernels[Kernels.op_name] = pd.Categorical.from_codes(
        name_codes, categories=names.cat.categories
    )
    link = kernels[Kernels.op_link].astype(object).to_numpy(copy=True)
    link[hit] = how
    kernels[Kernels.op_link] = pd.Categorical(link, categories=["external_id", "time", "self"])


def raw_text_of(codes: np.ndarray, uniques: list[bytes]) -> pd.Categorical:
    """traceviz.parse.columns.raw_text_of before: the empty text removed as a category."""
    labels = [u.decode("utf-8", "replace") for u in uniques]
    categorical_ = pd.Categorical.from_codes(codes, categories=pd.Index(labels))
    if "" in labels:
        categorical_ = categorical_.remove_categories([""])
    return categorical_


def sort_order(thread_codes: np.ndarray, starts: np.ndarray, durs: np.ndarray) -> np.ndarray:
    """traceviz.parse.nesting.sort_order before: one three-key lexsort."""
    return np.lexsort((-np.nan_to_num(durs), np.nan_to_num(starts), thread_codes))


# --- Table builders (traceviz.parse.tables before) and nesting (traceviz.parse.nesting) -------


def kernel_table(cols: ColumnSet) -> pd.DataFrame:
    """traceviz.parse.tables.kernel_table before: placeholders made from lists of n values."""
    n = cols.rows
    activity = map_categories(
        cols.categorical("cat"),
        lambda cat: DEVICE_CATEGORIES[cat].value,
        [k.value for k in ActivityKind],
        missing=ActivityKind.KERNEL.value,
    )
    none_i64 = pd.array([pd.NA] * n, dtype="Int64")
    durs = cols.floats("dur")
    return pd.DataFrame(
        {
            Kernels.name: cols.categorical("name"),
            Kernels.activity: activity,
            Kernels.device: cols.ints("device").astype("Int32"),
            Kernels.stream: cols.ints("stream"),
            Kernels.ts_us: cols.floats("ts"),
            Kernels.dur_us: durs,
            Kernels.excl_dur_us: durs.copy(),
            Kernels.correlation: cols.ints("correlation"),
            Kernels.external_id: cols.ints("external_id"),
            Kernels.grid: raw_text_of(*cols.factorized("grid")),
            Kernels.block: raw_text_of(*cols.factorized("block")),
            Kernels.registers: cols.ints("registers").astype("Int32"),
            Kernels.shared_memory_bytes: cols.ints("shared_memory"),
            Kernels.occupancy_pct: cols.floats("occupancy"),
            Kernels.bytes: cols.ints("bytes"),
            Kernels.copy_kind: sorted_categorical(*cols.factorized("copy_kind")),
            Kernels.launch_row: none_i64,
            Kernels.launch_name: pd.Categorical([None] * n),
            Kernels.launch_ts_us: np.full(n, np.nan),
            Kernels.launch_dur_us: np.full(n, np.nan),
            Kernels.launch_delay_us: np.full(n, np.nan),
            Kernels.thread: pd.Categorical([None] * n),
            Kernels.op_row: none_i64.copy(),
            Kernels.op_name: pd.Categorical([None] * n),
            Kernels.op_link: pd.Categorical([None] * n),
            Kernels.graph_launch_row: none_i64.copy(),
            Kernels.in_graph: np.zeros(n, dtype=bool),
        }
    )


def op_table(cols: ColumnSet, threads: pd.Categorical) -> pd.DataFrame:
    """traceviz.parse.tables.op_table before: the frame made, then taken in order, then the
    nesting columns added."""
    frame = pd.DataFrame(
        {
            Ops.name: cols.categorical("name"),
            Ops.category: map_categories(
                cols.categorical("cat"),
                lambda cat: OP_CATEGORIES[cat].value,
                [c.value for c in OpCategory],
                missing=OpCategory.CPU_OP.value,
            ),
            Ops.thread: threads,
            Ops.ts_us: cols.floats("ts"),
            Ops.dur_us: cols.floats("dur"),
            Ops.external_id: cols.ints("external_id"),
            Ops.sequence_number: cols.ints("sequence_number"),
            Ops.fwd_thread_id: cols.ints("fwd_thread_id"),
            Ops.input_dims: raw_text_of(*cols.factorized("input_dims")),
            Ops.input_types: raw_text_of(*cols.factorized("input_types")),
            Ops.concrete_inputs: raw_text_of(*cols.factorized("concrete_inputs")),
            Ops.kernel_backend: cols.categorical("kernel_backend"),
            Ops.kernel_file: cols.categorical("kernel_file"),
            Ops.kernel_num_gb: cols.floats("kernel_num_gb"),
        }
    )
    thread_codes = np.asarray(threads.codes)
    order = sort_order(thread_codes, frame[Ops.ts_us].to_numpy(), frame[Ops.dur_us].to_numpy())
    frame = frame.take(order).reset_index(drop=True)
    add_nesting(frame)
    return schema.conform(frame, schema.OPS_DTYPES)


def add_nesting(ops: pd.DataFrame) -> None:
    """traceviz.parse.tables.add_nesting before."""
    thread_codes = np.asarray(ops[Ops.thread].cat.codes)
    starts = ops[Ops.ts_us].to_numpy()
    durs = ops[Ops.dur_us].to_numpy()
    ends = starts + np.nan_to_num(durs)
    timeline = nesting.Timeline.covering(starts, ends)
    depth = depths(timeline.keys(thread_codes, starts), timeline.keys(thread_codes, ends), durs)
    parent = parents(depth, thread_codes)
    ops[Ops.self_us] = nesting.self_times(durs, parent)
    ops[Ops.depth] = pd.array(depth, dtype="Int32")
    ops[Ops.parent_row] = pd.arrays.IntegerArray(parent, parent < 0)


def depths(start_keys: np.ndarray, end_keys: np.ndarray, durs: np.ndarray) -> np.ndarray:
    """traceviz.parse.nesting.depths before (np.sort's default sort)."""
    ended_sorted = np.sort(end_keys)
    ended_before = np.searchsorted(ended_sorted, start_keys, side="right")
    position = np.arange(len(start_keys))
    depth = position - ended_before
    depth += durs <= 0
    return np.maximum(depth, 0).astype(np.int32)


def parents(depth: np.ndarray, thread_codes: np.ndarray) -> np.ndarray:
    """traceviz.parse.nesting.parents before (a stable sort of the int32 depths)."""
    parent = np.full(len(depth), -1, dtype=np.int64)
    if len(depth) == 0:
        return parent
    rows_by_depth = np.argsort(depth, kind="stable")
    bounds = np.searchsorted(depth[rows_by_depth], np.arange(int(depth.max()) + 2))
    for level in range(1, int(depth.max()) + 1):
        above = rows_by_depth[bounds[level - 1] : bounds[level]]
        here = rows_by_depth[bounds[level] : bounds[level + 1]]
        if above.size == 0 or here.size == 0:
            continue
        pos = np.searchsorted(above, here) - 1
        found = pos >= 0
        candidate = above[np.maximum(pos, 0)]
        ok = found & (thread_codes[candidate] == thread_codes[here])
        parent[here[ok]] = candidate[ok]
    return parent


COPY_DIRECTION = re.compile(r"\b([HDPA]to[HDPA])\b")


def copy_kinds(is_copy: np.ndarray, events: EventSource) -> list[str | None]:
    """traceviz.parse.tables._copy_kinds before: a regex per copy."""
    out: list[str | None] = [None] * len(events)
    rows = np.flatnonzero(is_copy)
    copies = events.take(rows)
    kinds, names = list(copies.values("kind")), list(copies.values("name"))
    for i, kind, name in zip(rows.tolist(), kinds, names, strict=True):
        if isinstance(kind, str) and COPY_DIRECTION.fullmatch(kind):
            out[i] = kind
        else:
            text = name if isinstance(name, str) else ("nan" if name is None else str(name))
            match = COPY_DIRECTION.search(text)
            out[i] = match.group(1) if match else None
    return out


def covering(starts: np.ndarray, ends: np.ndarray) -> nesting.Timeline:
    """traceviz.parse.nesting.Timeline.covering before: the finite times copied out."""
    finite = np.concatenate([starts[np.isfinite(starts)], ends[np.isfinite(ends)]])
    if finite.size == 0:
        return nesting.Timeline(0.0, 1.0)
    lo, hi = float(finite.min()), float(finite.max())
    return nesting.Timeline(lo, 2.0 * (hi - lo) + 1.0)


def thread_codes(codes: np.ndarray, pairs: list[Any]) -> tuple[np.ndarray, list[str]]:
    """traceviz.parse.build._thread_codes before: first rows found by np.unique (a sort)."""
    seen, first = np.unique(codes, return_index=True)
    in_order = seen[np.argsort(first, kind="stable")]
    labels: list[str] = []
    code_of_label: dict[str, int] = {}
    remap = np.full(len(pairs), -1, dtype=np.int64)
    for pair_code in in_order.tolist():
        pid, tid = pairs[pair_code]
        label = build.thread_label(pid, tid)
        if label not in code_of_label:
            code_of_label[label] = len(labels)
            labels.append(label)
        remap[pair_code] = code_of_label[label]
    return remap[codes], labels
