"""Linking device activity to the CPU: kernel → launch API call → CPU op.

1. **Launch**: a kernel's ``correlation`` equals its launch call's. Under CUDA/HIP graph replay
   every replayed kernel carries the correlation of the one graph launch, so they all link to
   it and are marked ``in_graph``.
2. **Op by External id**: the kernel's own External id, else its launch's, names the
   innermost op that was running when it was launched.
   (Some older Kineto versions wrote the correlation id into "External id"; such ids are
   dropped, see :func:`_ids_mirror_correlation`.)
3. **Op by time**: kernels with neither (vLLM-style replays, old traces) take the innermost
   ``cpu_op`` on the launching thread whose span contains the launch call, else the innermost
   span of any kind there (a ``python_function`` frame, a ``user_annotation``).

All joins are vectorised (sorted searches over the ids and times), on the columns' codes and
NumPy arrays: no column is turned into Python objects on the way.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from traceviz.parse import nesting
from traceviz.parse.columns import used_labels
from traceviz.parse.tables import missing_ints
from traceviz.schema import Kernels, LaunchClass, Launches, OpCategory, Ops

MISSING = np.iinfo(np.int64).min  # an absent id in the int64 id arrays below
OP_LINKS = ("external_id", "time", "self")  # the op_link categories, in this order


def link_kernels(kernels: pd.DataFrame, launches: pd.DataFrame, ops: pd.DataFrame) -> None:
    """Fill the kernels table's launch, thread, graph and op columns in place."""
    if kernels.empty:
        return
    for table, columns in ((kernels, Kernels), (launches, Launches)):
        if _ids_mirror_correlation(table[columns.external_id], table[columns.correlation]):
            table[columns.external_id] = missing_ints(len(table))
    launch_row = _lookup(_ids(launches[Launches.correlation]), _ids(kernels[Kernels.correlation]))
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


def _ids(column: pd.Series) -> np.ndarray:
    """An Int64 id column as int64, ``MISSING`` where <NA> (no present id is that value: the
    builders read it as absent). May be a view of the column: never written to."""
    return column.to_numpy(dtype=np.int64, na_value=MISSING)


def _lookup(keys: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Row of the first ``keys`` entry equal to each query (−1 where none or ``MISSING``):
    one stable sort of the present keys (ids mostly come in order: near linear) and a binary
    search per query."""
    rows = np.flatnonzero(keys != MISSING)
    if len(rows) == 0:
        return np.full(len(queries), -1, dtype=np.int64)
    order = np.argsort(keys[rows], kind="stable")  # equal keys keep row order: first wins
    sorted_keys = keys[rows[order]]
    pos = np.minimum(np.searchsorted(sorted_keys, queries), len(rows) - 1)
    hit = (sorted_keys[pos] == queries) & (queries != MISSING)
    return np.where(hit, rows[order[pos]], -1)


def _nullable(rows: np.ndarray) -> pd.arrays.IntegerArray:
    return pd.arrays.IntegerArray(rows.astype(np.int64), rows < 0)


def _take_codes(column: pd.Series, rows: np.ndarray) -> np.ndarray:
    """The category codes of a categorical column at ``rows`` (−1 where ``rows`` is −1)."""
    codes = np.asarray(column.cat.codes)
    if len(codes) == 0:
        return np.full(len(rows), -1, dtype=np.int64)
    return np.where(rows >= 0, codes[np.maximum(rows, 0)], -1)


def _take_floats(column: pd.Series, rows: np.ndarray) -> np.ndarray:
    """A float column at ``rows`` (NaN where ``rows`` is −1)."""
    values = column.to_numpy(dtype=float)
    if len(values) == 0:
        return np.full(len(rows), np.nan)
    return np.where(rows >= 0, values[np.maximum(rows, 0)], np.nan)


def _used_sorted(column: pd.Series, rows: np.ndarray) -> pd.Categorical | None:
    """The labels of a categorical column at ``rows`` (missing where −1) as a categorical of
    the labels used, sorted: what ``astype("category")`` of those labels as objects gives.
    ``None`` when no label is used (the caller takes the general way)."""
    codes = _take_codes(column, rows)
    used = column.cat.categories[np.unique(codes[codes >= 0])]
    if len(used) == 0 or not all(isinstance(label, str) for label in used):
        return None
    return used_labels(codes, column.cat.categories)


def _attach_launches(kernels: pd.DataFrame, launches: pd.DataFrame, row: np.ndarray) -> None:
    linked = row >= 0
    if not linked.any():
        return
    kernels[Kernels.launch_row] = _nullable(row)
    names = _used_sorted(launches[Launches.name], row)
    if names is None:  # no launch with a name: the general way
        taken = _take_general(launches[Launches.name], row).to_numpy()
        names = pd.Series(taken).astype("category").array
    kernels[Kernels.launch_name] = names
    launch_ts = _take_floats(launches[Launches.ts_us], row)
    launch_dur = _take_floats(launches[Launches.dur_us], row)
    kernels[Kernels.launch_ts_us] = launch_ts
    kernels[Kernels.launch_dur_us] = launch_dur
    kernels[Kernels.launch_delay_us] = kernels[Kernels.ts_us].to_numpy() - (launch_ts + launch_dur)
    threads = launches[Launches.thread]
    kernels[Kernels.thread] = pd.Categorical.from_codes(
        _take_codes(threads, row), categories=threads.cat.categories
    )
    classes = launches[Launches.launch_class].cat.categories
    graph = LaunchClass.GRAPH_LAUNCH.value
    is_graph = np.zeros(len(row), dtype=bool)
    if graph in classes:
        class_codes = _take_codes(launches[Launches.launch_class], row)
        is_graph = class_codes == classes.get_loc(graph)
    kernels[Kernels.in_graph] = is_graph
    kernels[Kernels.graph_launch_row] = _nullable(np.where(is_graph, row, -1))
    launch_external = _take_general(launches[Launches.external_id], row).astype("Int64")
    own = kernels[Kernels.external_id]
    kernels[Kernels.external_id] = own.fillna(launch_external)


def _take_general(column: pd.Series, rows: np.ndarray) -> pd.Series:
    """``column[rows]`` with missing values where ``rows`` is −1 (keeps the dtype)."""
    if len(column) == 0:
        return pd.Series([None] * len(rows), dtype=column.dtype)
    taken = column.take(np.maximum(rows, 0)).reset_index(drop=True)
    return taken.where(rows >= 0)


def _attach_ops_by_external_id(kernels: pd.DataFrame, ops: pd.DataFrame) -> None:
    python = (ops[Ops.category] == OpCategory.PYTHON_FUNCTION.value).to_numpy()
    keys = np.where(python, MISSING, _ids(ops[Ops.external_id]))  # _ids may be a view
    row = _lookup(keys, _ids(kernels[Kernels.external_id]))
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
    kernels[Kernels.op_name] = pd.Categorical.from_codes(
        _take_codes(names, op_row), categories=names.cat.categories
    )
    links = kernels[Kernels.op_link]
    link_codes = pd.Index(OP_LINKS).get_indexer(links.cat.categories)
    codes = np.append(link_codes, -1)[np.asarray(links.cat.codes)]
    codes[hit] = OP_LINKS.index(how)
    kernels[Kernels.op_link] = pd.Categorical.from_codes(codes, categories=pd.Index(OP_LINKS))
