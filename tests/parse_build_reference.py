"""The parse build phase's plain code as it was before it was made faster (issue 14,
PARSE-BUILD), kept as references: tests/test_parse_build_fast.py checks that the fast code
gives the very same tables (values, dtypes, category order, even the values under <NA>) on
every corpus and sample trace and on hand-made edge cases.

Linking (traceviz.parse.link before): pandas index lookups, columns taken as Python objects.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from traceviz.parse import nesting
from traceviz.schema import Kernels, LaunchClass, Launches, OpCategory, Ops


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
