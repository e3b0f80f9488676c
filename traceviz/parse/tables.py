"""Column builders: one function per table, from that table's events to a DataFrame.

Linking columns (launch, op, graph) are filled later by :mod:`traceviz.parse.link`; here each
table only holds what its own events say.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from traceviz.parse import nesting
from traceviz.parse.columns import (
    arg_field,
    categorical,
    field,
    first_present,
    floats,
    map_categories,
    nullable_ints,
    raw_text,
)
from traceviz.parse.events import NO_RAW, Event
from traceviz.parse.routing import DEVICE_CATEGORIES, OP_CATEGORIES
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


def external_ids(args: Sequence[Any]) -> pd.arrays.IntegerArray:
    """``External id`` (or the oldest schema's ``external id``); Kineto's 0 means none."""
    ids = first_present(
        nullable_ints(arg_field(args, "external_id")),
        nullable_ints(arg_field(args, "external_id_legacy")),
    )
    ids[ids.to_numpy(dtype=np.int64, na_value=-1) == 0] = pd.NA
    return ids


def kernel_table(events: Sequence[Event]) -> pd.DataFrame:
    """Device activities with the fields their own events carry (links filled later)."""
    args = field(events, "args")
    activity = map_categories(
        categorical(field(events, "cat")),
        lambda cat: DEVICE_CATEGORIES[cat].value,
        [k.value for k in ActivityKind],
        missing=ActivityKind.KERNEL.value,
    )
    names = categorical(field(events, "name"))
    n = len(events)
    copy_kind = _copy_kinds(activity, names, arg_field(args, "kind"))
    none_i64 = pd.array([pd.NA] * n, dtype="Int64")
    durs = floats(field(events, "dur"))
    return pd.DataFrame(
        {
            Kernels.name: names,
            Kernels.activity: activity,
            Kernels.device: first_present(
                nullable_ints(arg_field(args, "device")), nullable_ints(field(events, "pid"))
            ).astype("Int32"),
            Kernels.stream: first_present(
                nullable_ints(arg_field(args, "stream")), nullable_ints(field(events, "tid"))
            ),
            Kernels.ts_us: floats(field(events, "ts")),
            Kernels.dur_us: durs,
            Kernels.excl_dur_us: durs.copy(),  # device activities do not nest in each other
            Kernels.correlation: nullable_ints(arg_field(args, "correlation")),
            Kernels.external_id: external_ids(args),
            Kernels.grid: raw_text(arg_field(args, "grid")),
            Kernels.block: raw_text(arg_field(args, "block")),
            Kernels.registers: nullable_ints(arg_field(args, "registers")).astype("Int32"),
            Kernels.shared_memory_bytes: nullable_ints(arg_field(args, "shared_memory")),
            Kernels.occupancy_pct: floats(arg_field(args, "occupancy")),
            Kernels.bytes: nullable_ints(arg_field(args, "bytes")),
            Kernels.copy_kind: copy_kind,
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


def _copy_kinds(
    activity: pd.Categorical, names: pd.Categorical, kinds: list[Any]
) -> pd.Categorical[Any]:
    """Memcpy direction from ``args.kind`` ("HtoD") or from the name ("Memcpy HtoD (...)")."""
    is_copy = np.asarray(activity == ActivityKind.MEMCPY.value)
    if not is_copy.any():
        return pd.Categorical([None] * len(kinds))
    name_text = np.asarray(names.astype(object))
    out: list[str | None] = [None] * len(kinds)
    for i in np.flatnonzero(is_copy):
        kind = kinds[i]
        if isinstance(kind, str) and COPY_DIRECTION.fullmatch(kind):
            out[i] = kind
        else:
            match = COPY_DIRECTION.search(str(name_text[i]))
            out[i] = match.group(1) if match else None
    return pd.Categorical(out)


def op_table(events: Sequence[Event], threads: pd.Categorical) -> pd.DataFrame:
    """CPU-side ops, sorted by thread then start, with depth, parent and self time."""
    args = field(events, "args")
    frame = pd.DataFrame(
        {
            Ops.name: categorical(field(events, "name")),
            Ops.category: map_categories(
                categorical(field(events, "cat")),
                lambda cat: OP_CATEGORIES[cat].value,
                [c.value for c in OpCategory],
                missing=OpCategory.CPU_OP.value,
            ),
            Ops.thread: threads,
            Ops.ts_us: floats(field(events, "ts")),
            Ops.dur_us: floats(field(events, "dur")),
            Ops.external_id: external_ids(args),
            Ops.sequence_number: nullable_ints(arg_field(args, "sequence_number")),
            Ops.fwd_thread_id: nullable_ints(arg_field(args, "fwd_thread_id")),
            Ops.input_dims: _input_dims(args),
            Ops.input_types: raw_text(arg_field(args, "input_types")),
            Ops.concrete_inputs: raw_text(arg_field(args, "concrete_inputs")),
            Ops.kernel_backend: categorical(arg_field(args, "kernel_backend")),
            Ops.kernel_file: categorical(arg_field(args, "kernel_file")),
            Ops.kernel_num_gb: floats(arg_field(args, "kernel_num_gb")),
        }
    )
    thread_codes = np.asarray(threads.codes)
    order = nesting.sort_order(
        thread_codes, frame[Ops.ts_us].to_numpy(), frame[Ops.dur_us].to_numpy()
    )
    frame = frame.take(order).reset_index(drop=True)
    add_nesting(frame)
    return frame


def _input_dims(args: Sequence[Any]) -> pd.Categorical[Any]:
    dims = arg_field(args, "input_dims")
    legacy = arg_field(args, "input_dims_legacy")
    if legacy.count(NO_RAW) == len(legacy):  # no oldest-schema "Input dims": nothing to merge
        return raw_text(dims)
    merged = [d if len(d) else old for d, old in zip(dims, legacy, strict=True)]
    return raw_text(merged)


def add_nesting(ops: pd.DataFrame) -> None:
    """Fill depth, parent_row and self_us of an ops table sorted by thread, then start."""
    thread_codes = np.asarray(ops[Ops.thread].cat.codes)
    starts = ops[Ops.ts_us].to_numpy()
    durs = ops[Ops.dur_us].to_numpy()
    ends = starts + np.nan_to_num(durs)
    timeline = nesting.Timeline.covering(starts, ends)
    depth = nesting.depths(
        timeline.keys(thread_codes, starts), timeline.keys(thread_codes, ends), durs
    )
    parent = nesting.parents(depth, thread_codes)
    ops[Ops.self_us] = nesting.self_times(durs, parent)
    ops[Ops.depth] = pd.array(depth, dtype="Int32")
    ops[Ops.parent_row] = pd.arrays.IntegerArray(parent, parent < 0)


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


def launch_table(events: Sequence[Event], threads: pd.Categorical) -> pd.DataFrame:
    """Runtime/driver API calls, classed (kernel launch, graph launch, memcpy, ...)."""
    args = field(events, "args")
    names = categorical(field(events, "name"))
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
            Launches.ts_us: floats(field(events, "ts")),
            Launches.dur_us: floats(field(events, "dur")),
            Launches.correlation: nullable_ints(arg_field(args, "correlation")),
            Launches.external_id: external_ids(args),
            Launches.kernel_count: pd.array(np.zeros(len(events), dtype=np.int64), dtype="Int64"),
        }
    )


def span_table(events: Sequence[Event], threads: pd.Categorical) -> pd.DataFrame:
    """Other complete events (device annotations, profiler spans, unknown categories)."""
    args = field(events, "args")
    return pd.DataFrame(
        {
            Spans.category: categorical(field(events, "cat")),
            Spans.name: categorical(field(events, "name")),
            Spans.thread: threads,
            Spans.ts_us: floats(field(events, "ts")),
            Spans.dur_us: floats(field(events, "dur")),
            Spans.external_id: external_ids(args),
        }
    )


def memory_table(events: Sequence[Event], threads: pd.Categorical) -> pd.DataFrame:
    """``[memory]`` allocator instants."""
    args = field(events, "args")
    type_codes = nullable_ints(arg_field(args, "device_type"))
    device_type = [
        None if pd.isna(code) else DEVICE_TYPE_NAMES.get(int(code), f"type{int(code)}")
        for code in type_codes
    ]
    return pd.DataFrame(
        {
            Memory.ts_us: floats(field(events, "ts")),
            Memory.thread: threads,
            Memory.device_type: pd.Categorical(device_type),
            Memory.device: nullable_ints(arg_field(args, "device_id")).astype("Int32"),
            Memory.bytes: nullable_ints(arg_field(args, "mem_bytes")),
            Memory.total_allocated_bytes: nullable_ints(arg_field(args, "total_allocated")),
            Memory.total_reserved_bytes: nullable_ints(arg_field(args, "total_reserved")),
        }
    )
