"""Column builders: per table, ``add_<table>`` takes one batch of that table's events into a
:class:`~traceviz.parse.columns.ColumnSet`, and ``<table>_table`` turns the filled set into a
DataFrame once every batch is in.

Linking columns (launch, op, graph) are filled later by :mod:`traceviz.parse.link`; here each
table only holds what its own events say.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from traceviz.parse import nesting
from traceviz.parse.columns import ColumnSet, map_categories
from traceviz.parse.events import MISSING_INT
from traceviz.parse.routing import DEVICE_CATEGORIES, OP_CATEGORIES
from traceviz.parse.source import EventSource
from traceviz.schema import (
    ActivityKind,
    Kernels,
    LaunchClass,
    Launches,
    Memory,
    OpCategory,
    Ops,
    Spans,
)

COPY_DIRECTION = re.compile(r"\b([HDPA]to[HDPA])\b")

# c10::DeviceType codes used by [memory] events
DEVICE_TYPE_NAMES = {
    0: "cpu",
    1: "cuda",
    6: "hip",
    12: "xpu",
    13: "mps",
    19: "mtia",
    20: "privateuse1",
}


def thread_column(codes: np.ndarray, labels: list[str]) -> pd.Categorical[Any]:
    """Thread codes (−1 = unknown) as a categorical of "pid/tid" labels shared by all tables."""
    return pd.Categorical.from_codes(codes, categories=pd.Index(labels))


def missing_ints(n: int) -> pd.arrays.IntegerArray:
    """An Int64 array of ``n`` <NA>: what ``pd.array([pd.NA] * n, dtype="Int64")`` gives, to
    the values under the mask, without making ``n`` Python objects."""
    return pd.arrays.IntegerArray(np.ones(n, dtype=np.int64), np.ones(n, dtype=bool))


def no_categories(n: int) -> pd.Categorical[Any]:
    """A categorical of ``n`` missing values and no categories: what ``pd.Categorical([None] *
    n)`` gives (its empty categories are float64, object when ``n`` is 0), without the list."""
    empty = pd.Index([], dtype=np.float64 if n else object)
    return pd.Categorical.from_codes(np.full(n, -1, dtype=np.int8), categories=empty)


def _first_present(primary: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """``primary`` where present, else ``fallback`` (``MISSING_INT`` marks absent)."""
    return np.where(primary == MISSING_INT, fallback, primary)


def external_ids(events: EventSource) -> np.ndarray:
    """``External id`` (or the oldest schema's ``external id``); Kineto's 0 means none
    (``MISSING_INT`` where absent)."""
    ids = _first_present(events.ints("external_id"), events.ints("external_id_legacy"))
    ids[ids == 0] = MISSING_INT
    return ids


def sorted_categorical(codes: np.ndarray, uniques: list[Any]) -> pd.Categorical[Any]:
    """What ``pd.Categorical(values)`` gives (categories sorted), from the values' codes."""
    kept = sorted(u for u in uniques if u is not None)
    if not kept:
        return pd.Categorical([None] * len(codes))
    position = {u: i for i, u in enumerate(kept)}
    lookup = np.array([*(position.get(u, -1) for u in uniques), -1], dtype=np.int64)
    return pd.Categorical.from_codes(lookup[codes], categories=pd.Index(kept))


def add_kernels(cols: ColumnSet, events: EventSource) -> None:
    """One batch of device activities (kernels, memcpy, memset)."""
    cols.rows += len(events)
    cats = cols.add_from("cat", events)
    names = cols.add_from("name", events)
    cols.add_array("device", _first_present(events.ints("device"), events.ints("pid")))
    cols.add_array("stream", _first_present(events.ints("stream"), events.ints("tid")))
    cols.add_array("ts", events.floats("ts"))
    cols.add_array("dur", events.floats("dur"))
    cols.add_array("correlation", events.ints("correlation"))
    cols.add_array("external_id", external_ids(events))
    cols.add_raw_from("grid", events)
    cols.add_raw_from("block", events)
    cols.add_array("registers", events.ints("registers"))
    cols.add_array("shared_memory", events.ints("shared_memory"))
    cols.add_array("occupancy", events.floats("occupancy"))
    cols.add_array("bytes", events.ints("bytes"))
    copies = [code for cat, code in cols.numbering("cat").items() if _is_memcpy(cat)]
    is_copy = np.isin(cats, copies)
    cols.add_codes("copy_kind", _copy_kinds(is_copy, events, names, list(cols.numbering("name"))))


def _is_memcpy(cat: Any) -> bool:
    return isinstance(cat, str) and DEVICE_CATEGORIES.get(cat) is ActivityKind.MEMCPY


def kernel_table(cols: ColumnSet) -> pd.DataFrame:
    """Device activities with the fields their own events carry (links filled later)."""
    n = cols.rows
    activity = map_categories(
        cols.categorical("cat"),
        lambda cat: DEVICE_CATEGORIES[cat].value,
        [k.value for k in ActivityKind],
        missing=ActivityKind.KERNEL.value,
    )
    durs = cols.floats("dur")
    return pd.DataFrame(
        {
            Kernels.name: cols.categorical("name"),
            Kernels.activity: activity,
            Kernels.device: cols.ints("device").astype("Int32"),
            Kernels.stream: cols.ints("stream"),
            Kernels.ts_us: cols.floats("ts"),
            Kernels.dur_us: durs,
            Kernels.excl_dur_us: durs.copy(),  # device activities do not nest in each other
            Kernels.correlation: cols.ints("correlation"),
            Kernels.external_id: cols.ints("external_id"),
            Kernels.grid: cols.raw_text("grid"),
            Kernels.block: cols.raw_text("block"),
            Kernels.registers: cols.ints("registers").astype("Int32"),
            Kernels.shared_memory_bytes: cols.ints("shared_memory"),
            Kernels.occupancy_pct: cols.floats("occupancy"),
            Kernels.bytes: cols.ints("bytes"),
            Kernels.copy_kind: sorted_categorical(*cols.factorized("copy_kind")),
            Kernels.launch_row: missing_ints(n),
            Kernels.launch_name: no_categories(n),
            Kernels.launch_ts_us: np.full(n, np.nan),
            Kernels.launch_dur_us: np.full(n, np.nan),
            Kernels.launch_delay_us: np.full(n, np.nan),
            Kernels.thread: no_categories(n),
            Kernels.op_row: missing_ints(n),
            Kernels.op_name: no_categories(n),
            Kernels.op_link: no_categories(n),
            Kernels.graph_launch_row: missing_ints(n),
            Kernels.in_graph: np.zeros(n, dtype=bool),
        }
    )


def _copy_kinds(
    is_copy: np.ndarray, events: EventSource, name_codes: np.ndarray, names: list[Any]
) -> list[str | None]:
    """Memcpy direction from ``args.kind`` ("HtoD") or from the name ("Memcpy HtoD (...)"),
    worked out once per distinct (kind, name) of the copies (``name_codes``: the events' codes
    of ``names``, their distinct names)."""
    out = np.full(len(events), None, dtype=object)
    rows = np.flatnonzero(is_copy)
    if len(rows) == 0:
        return out.tolist()
    scratch = ColumnSet()
    kind_codes = scratch.add_from("kind", events.take(rows))
    kinds = list(scratch.numbering("kind"))
    pairs, inverse = np.unique(kind_codes * len(names) + name_codes[rows], return_inverse=True)
    directions = [
        _copy_direction(kinds[pair // len(names)], names[pair % len(names)])
        for pair in pairs.tolist()
    ]
    lookup = np.empty(len(directions), dtype=object)
    lookup[:] = directions
    out[rows] = lookup[inverse]
    return out.tolist()


def _copy_direction(kind: Any, name: Any) -> str | None:
    if isinstance(kind, str) and COPY_DIRECTION.fullmatch(kind):
        return kind
    match = COPY_DIRECTION.search(name if isinstance(name, str) else _text(name))
    return match.group(1) if match else None


def _text(value: Any) -> str:
    """A non-string name as its categorical label would read (``None`` reads as ``nan``)."""
    return "nan" if value is None else str(value)


def add_ops(cols: ColumnSet, events: EventSource) -> None:
    """One batch of CPU-side ops."""
    cols.rows += len(events)
    cols.add_from("name", events)
    cols.add_from("cat", events)
    cols.add_array("ts", events.floats("ts"))
    cols.add_array("dur", events.floats("dur"))
    cols.add_array("external_id", external_ids(events))
    cols.add_array("sequence_number", events.ints("sequence_number"))
    cols.add_array("fwd_thread_id", events.ints("fwd_thread_id"))
    # the oldest schema's "Input dims" where there is no "Input Dims"
    cols.add_raw_from("input_dims", events, fallback="input_dims_legacy")
    cols.add_raw_from("input_types", events)
    cols.add_raw_from("concrete_inputs", events)
    cols.add_from("kernel_backend", events)
    cols.add_from("kernel_file", events)
    cols.add_array("kernel_num_gb", events.floats("kernel_num_gb"))


def op_table(cols: ColumnSet, threads: pd.Categorical) -> pd.DataFrame:
    """CPU-side ops, sorted by thread then start, with depth, parent and self time (the
    columns of :class:`~traceviz.schema.Ops`, in its order). Each column is put in order once
    and the frame made once, around the columns (no copy)."""
    thread_codes = np.asarray(threads.codes)
    starts, durs = cols.floats("ts"), cols.floats("dur")
    order = nesting.sort_order(thread_codes, starts, durs)
    starts, durs, thread_codes = starts[order], durs[order], thread_codes[order]
    self_us, depth, parent = nested_columns(thread_codes, starts, durs)
    category = map_categories(
        cols.categorical("cat"),
        lambda cat: OP_CATEGORIES[cat].value,
        [c.value for c in OpCategory],
        missing=OpCategory.CPU_OP.value,
    )
    columns = {
        Ops.name: cols.categorical("name"),
        Ops.category: category,
        Ops.thread: threads,
        Ops.ts_us: starts,
        Ops.dur_us: durs,
        Ops.self_us: self_us,
        Ops.depth: depth,
        Ops.parent_row: parent,
        Ops.external_id: cols.ints("external_id"),
        Ops.sequence_number: cols.ints("sequence_number"),
        Ops.fwd_thread_id: cols.ints("fwd_thread_id"),
        Ops.input_dims: cols.raw_text("input_dims"),
        Ops.input_types: cols.raw_text("input_types"),
        Ops.concrete_inputs: cols.raw_text("concrete_inputs"),
        Ops.kernel_backend: cols.categorical("kernel_backend"),
        Ops.kernel_file: cols.categorical("kernel_file"),
        Ops.kernel_num_gb: cols.floats("kernel_num_gb")[order],
    }
    in_order = (Ops.ts_us, Ops.dur_us, Ops.self_us, Ops.depth, Ops.parent_row, Ops.kernel_num_gb)
    for name, values in columns.items():
        if name not in in_order:
            columns[name] = values.take(order)
    return pd.DataFrame(columns, copy=False)


def add_nesting(ops: pd.DataFrame) -> None:
    """Fill depth, parent_row and self_us of an ops table sorted by thread, then start."""
    self_us, depth, parent = nested_columns(
        np.asarray(ops[Ops.thread].cat.codes), ops[Ops.ts_us].to_numpy(), ops[Ops.dur_us].to_numpy()
    )
    ops[Ops.self_us] = self_us
    ops[Ops.depth] = depth
    ops[Ops.parent_row] = parent


def nested_columns(
    thread_codes: np.ndarray, starts: np.ndarray, durs: np.ndarray
) -> tuple[np.ndarray, pd.arrays.IntegerArray, pd.arrays.IntegerArray]:
    """``self_us`` (float64, µs), ``depth`` (Int32) and ``parent_row`` (Int64, <NA> for an
    outermost op) of ops sorted by thread, then start (:func:`nesting.sort_order`)."""
    ends = starts + np.nan_to_num(durs)
    timeline = nesting.Timeline.covering(starts, ends)
    depth = nesting.depths(
        timeline.keys(thread_codes, starts), timeline.keys(thread_codes, ends), durs
    )
    parent = nesting.parents(depth, thread_codes)
    self_us = nesting.self_times(durs, parent)
    return self_us, pd.array(depth, dtype="Int32"), pd.arrays.IntegerArray(parent, parent < 0)


LAUNCH_CLASS_BY_NAME: dict[str, LaunchClass] = {
    name: LaunchClass.KERNEL_LAUNCH
    for name in (
        "cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx",
        "cudaLaunchCooperativeKernel", "cudaLaunchCooperativeKernelMultiDevice",
        "cudaLaunchKernel_ptsz", "cudaLaunchKernelExC_ptsz", "cudaLaunchCooperativeKernel_ptsz",
        "hipLaunchKernel", "hipModuleLaunchKernel", "hipExtModuleLaunchKernel",
        "hipExtLaunchKernel", "hipLaunchCooperativeKernel", "hipExtLaunchMultiKernelMultiDevice",
        "hipLaunchKernelExC", "hipModuleLaunchCooperativeKernel",
    )
} | {
    name: LaunchClass.GRAPH_LAUNCH
    for name in ("cudaGraphLaunch", "cudaGraphLaunch_ptsz", "cuGraphLaunch", "hipGraphLaunch")
}  # fmt: skip


def launch_class(name: str) -> LaunchClass:
    """The class of a runtime/driver API call, by its name."""
    known = LAUNCH_CLASS_BY_NAME.get(name)
    if known is not None:
        return known
    if "Memcpy" in name:
        return LaunchClass.MEMCPY
    if "Memset" in name:
        return LaunchClass.MEMSET
    if "Synchronize" in name:
        return LaunchClass.SYNC
    return LaunchClass.OTHER


def add_launches(cols: ColumnSet, events: EventSource) -> None:
    """One batch of runtime/driver API calls."""
    cols.rows += len(events)
    cols.add_from("name", events)
    cols.add_array("ts", events.floats("ts"))
    cols.add_array("dur", events.floats("dur"))
    cols.add_array("correlation", events.ints("correlation"))
    cols.add_array("external_id", external_ids(events))


def launch_table(cols: ColumnSet, threads: pd.Categorical) -> pd.DataFrame:
    """Runtime/driver API calls, classed (kernel launch, graph launch, memcpy, ...)."""
    names = cols.categorical("name")
    classes = map_categories(
        names,
        lambda name: launch_class(name).value,
        [c.value for c in LaunchClass],
        missing=LaunchClass.OTHER.value,
    )
    return pd.DataFrame(
        {
            Launches.name: names,
            Launches.launch_class: classes,
            Launches.thread: threads,
            Launches.ts_us: cols.floats("ts"),
            Launches.dur_us: cols.floats("dur"),
            Launches.correlation: cols.ints("correlation"),
            Launches.external_id: cols.ints("external_id"),
            Launches.kernel_count: pd.array(np.zeros(cols.rows, dtype=np.int64), dtype="Int64"),
        }
    )


def add_spans(cols: ColumnSet, events: EventSource) -> None:
    """One batch of other complete events."""
    cols.rows += len(events)
    cols.add_from("cat", events)
    cols.add_from("name", events)
    cols.add_array("ts", events.floats("ts"))
    cols.add_array("dur", events.floats("dur"))
    cols.add_array("external_id", external_ids(events))


def span_table(cols: ColumnSet, threads: pd.Categorical) -> pd.DataFrame:
    """Other complete events (device annotations, profiler spans, unknown categories)."""
    return pd.DataFrame(
        {
            Spans.category: cols.categorical("cat"),
            Spans.name: cols.categorical("name"),
            Spans.thread: threads,
            Spans.ts_us: cols.floats("ts"),
            Spans.dur_us: cols.floats("dur"),
            Spans.external_id: cols.ints("external_id"),
        }
    )


def add_memory(cols: ColumnSet, events: EventSource) -> None:
    """One batch of ``[memory]`` allocator instants."""
    cols.rows += len(events)
    cols.add_array("ts", events.floats("ts"))
    type_codes = events.ints("device_type")
    cols.add_codes(
        "device_type",
        [
            None if code == MISSING_INT else DEVICE_TYPE_NAMES.get(code, f"type{code}")
            for code in type_codes.tolist()
        ],
    )
    cols.add_array("device_id", events.ints("device_id"))
    cols.add_array("mem_bytes", events.ints("mem_bytes"))
    cols.add_array("total_allocated", events.ints("total_allocated"))
    cols.add_array("total_reserved", events.ints("total_reserved"))


def memory_table(cols: ColumnSet, threads: pd.Categorical) -> pd.DataFrame:
    """``[memory]`` allocator instants."""
    return pd.DataFrame(
        {
            Memory.ts_us: cols.floats("ts"),
            Memory.thread: threads,
            Memory.device_type: sorted_categorical(*cols.factorized("device_type")),
            Memory.device: cols.ints("device_id").astype("Int32"),
            Memory.bytes: cols.ints("mem_bytes"),
            Memory.total_allocated_bytes: cols.ints("total_allocated"),
            Memory.total_reserved_bytes: cols.ints("total_reserved"),
        }
    )
