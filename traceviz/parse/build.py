"""From decoded events to a :class:`~traceviz.trace.Trace`: route, build tables, link, count."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from traceviz import schema
from traceviz.parse import cpu_kernels, durations, link, meta, regions, routing, tables
from traceviz.parse.columns import factorize_pairs
from traceviz.parse.events import Event, TraceDocument
from traceviz.schema import ActivityKind, DeviceKind, Kernels, OpCategory, Ops
from traceviz.trace import ParseStats, Trace, TraceMeta


def build_trace(path: Path, events: list[Event], doc: TraceDocument | None) -> Trace:
    """Build every table of a trace from its decoded events. Empties ``events`` on the way,
    so that the memory of events already turned into columns is given back early."""
    dest_codes, dest_labels, pairs = routing.route(events)
    rows_of = _rows_by_destination(dest_codes, dest_labels)
    ignored: Counter[str] = Counter()
    _split_instants(events, rows_of, ignored)
    for label, rows in rows_of.items():
        if label.startswith("ignored:"):
            ignored[label.removeprefix("ignored:")] += len(rows)
    events_in = len(events)
    processes, thread_names = meta.names_from_metadata(events, _rows(rows_of, "ignored:metadata"))
    on_cpu = (routing.OPS, routing.LAUNCHES, routing.SPANS, routing.MEMORY)
    parts = {label: _take(events, _rows(rows_of, label)) for label in (routing.KERNELS, *on_cpu)}
    # Negative or infinite durations are not measurements: counted as ignored, no row.
    durations.drop_impossible(parts, durations.TIMED_TABLES, ignored)
    # The events that carry no row (flow arrows are ~40% of a GPU trace) are freed here; each
    # table's events are freed as soon as its table is built.
    events.clear()
    # Threads are numbered over the CPU-side tables together, so their codes can be compared.
    thread_codes, thread_labels = _thread_codes([e for label in on_cpu for e in parts[label]])
    bounds = np.cumsum([0] + [len(parts[label]) for label in on_cpu])
    threads = {
        label: tables.thread_column(thread_codes[bounds[i] : bounds[i + 1]], thread_labels)
        for i, label in enumerate(on_cpu)
    }
    kernels = tables.kernel_table(parts.pop(routing.KERNELS))
    ops = tables.op_table(parts.pop(routing.OPS), threads[routing.OPS])
    launches = tables.launch_table(parts.pop(routing.LAUNCHES), threads[routing.LAUNCHES])
    spans = tables.span_table(parts.pop(routing.SPANS), threads[routing.SPANS])
    memory = tables.memory_table(parts.pop(routing.MEMORY), threads[routing.MEMORY])
    link.link_kernels(kernels, launches, ops)

    devices = meta.device_list(doc)
    kind = meta.device_kind(doc, devices, len(kernels), launches)
    if kind is DeviceKind.CPU:
        kernels = cpu_kernel_table(ops)

    start, end = meta.time_bounds(
        [(t[c.ts_us].to_numpy(), _durations(t)) for t, c in ((kernels, Kernels), (ops, Ops))]
        + [(launches["ts_us"].to_numpy(), launches["dur_us"].to_numpy())]
        + [(spans["ts_us"].to_numpy(), spans["dur_us"].to_numpy())]
    )
    trace_meta = TraceMeta(
        source=str(path),
        device_kind=kind,
        devices=devices,
        legacy_schema=any(cat in routing.LEGACY_CATEGORIES for _, cat in _hashable_pairs(pairs)),
        time_origin_us=start,
        time_end_us=end,
        process_names=processes,
        thread_names=thread_names,
        **meta.header_facts(doc),
    )
    stats = ParseStats(
        events_in=events_in,
        rows={
            routing.KERNELS: 0 if kind is DeviceKind.CPU else len(kernels),
            routing.OPS: len(ops),
            routing.LAUNCHES: len(launches),
            routing.SPANS: len(spans),
            routing.MEMORY: len(memory),
        },
        ignored=dict(sorted(ignored.items())),
    )
    return Trace(
        kernels=schema.conform(kernels, schema.KERNELS_DTYPES),
        ops=schema.conform(ops, schema.OPS_DTYPES),
        launches=schema.conform(launches, schema.LAUNCHES_DTYPES),
        regions=regions.region_table(ops, kernels),
        memory=schema.conform(memory, schema.MEMORY_DTYPES),
        spans=schema.conform(spans, schema.SPANS_DTYPES),
        steps=regions.step_table(ops),
        meta=trace_meta,
        stats=stats,
    )


def _durations(table: pd.DataFrame) -> np.ndarray:
    return table["dur_us"].to_numpy(dtype=float)


def _hashable_pairs(pairs: list[Any]) -> list[tuple[Any, Any]]:
    return [p for p in pairs if isinstance(p, tuple) and len(p) == 2]


def _rows(rows_of: dict[str, np.ndarray], label: str) -> np.ndarray:
    return rows_of.get(label, np.empty(0, dtype=np.int64))


def _take(events: list[Event], rows: np.ndarray) -> list[Event]:
    if len(rows) == 0:
        return []
    if len(rows) == 1:
        return [events[int(rows[0])]]
    return list(itemgetter(*rows.tolist())(events))


def _rows_by_destination(codes: np.ndarray, labels: list[str]) -> dict[str, np.ndarray]:
    """Event rows per destination label, in input order."""
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(labels) + 1))
    rows: dict[str, list[np.ndarray]] = {}
    for code, label in enumerate(labels):
        rows.setdefault(label, []).append(order[bounds[code] : bounds[code + 1]])
    return {label: np.sort(np.concatenate(parts)) for label, parts in rows.items()}


def _split_instants(
    events: list[Event], rows_of: dict[str, np.ndarray], ignored: Counter[str]
) -> None:
    """Instants named ``[memory]`` go to the memory table; the rest are counted as ignored."""
    instants = rows_of.pop(routing.INSTANT, np.empty(0, dtype=np.int64))
    names = np.array([events[i].name == routing.MEMORY_EVENT_NAME for i in instants], dtype=bool)
    rows_of[routing.MEMORY] = instants[names] if len(instants) else instants
    if len(instants) and (~names).any():
        ignored["instant"] += int((~names).sum())


def _thread_codes(events: Sequence[Event]) -> tuple[np.ndarray, list[str]]:
    """One code per event for its (pid, tid), and the "pid/tid" label of each code."""
    codes, pairs = factorize_pairs(events, "pid", "tid")
    # 7 and "7" are one thread: merge codes whose labels coincide.
    labels: list[str] = []
    code_of_label: dict[str, int] = {}
    remap = np.empty(len(pairs), dtype=np.int64)
    for i, (pid, tid) in enumerate(pairs):
        label = f"{_label(pid)}/{_label(tid)}"
        if label not in code_of_label:
            code_of_label[label] = len(labels)
            labels.append(label)
        remap[i] = code_of_label[label]
    return remap[codes], labels


def _label(value: Any) -> str:
    if value is None:
        return "?"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip()


def cpu_kernel_table(ops: pd.DataFrame) -> pd.DataFrame:
    """Kernels of a CPU-only trace: the ops chosen by :mod:`traceviz.parse.cpu_kernels`."""
    parent = ops[Ops.parent_row].to_numpy(dtype=np.int64, na_value=-1)
    is_cpu_op = (ops[Ops.category] == OpCategory.CPU_OP.value).to_numpy()
    rows = np.flatnonzero(cpu_kernels.cpu_kernel_mask(ops[Ops.name].array, is_cpu_op, parent))
    chosen = ops.iloc[rows]
    n = len(rows)
    durs = chosen[Ops.dur_us].to_numpy()
    exclusive = cpu_kernels.exclusive_durations(
        np.asarray(chosen[Ops.thread].cat.codes), chosen[Ops.ts_us].to_numpy(), durs
    )
    na_int = pd.array([pd.NA] * n, dtype="Int64")
    frame = pd.DataFrame(
        {
            Kernels.name: chosen[Ops.name].array.remove_unused_categories(),
            Kernels.activity: pd.Categorical(
                [ActivityKind.KERNEL.value] * n, categories=[k.value for k in ActivityKind]
            ),
            Kernels.device: pd.array([pd.NA] * n, dtype="Int32"),
            Kernels.stream: na_int,
            Kernels.ts_us: chosen[Ops.ts_us].to_numpy(),
            Kernels.dur_us: durs,
            Kernels.excl_dur_us: exclusive,
            Kernels.correlation: na_int,
            Kernels.external_id: chosen[Ops.external_id].array,
            Kernels.grid: pd.Categorical([None] * n),
            Kernels.block: pd.Categorical([None] * n),
            Kernels.registers: pd.array([pd.NA] * n, dtype="Int32"),
            Kernels.shared_memory_bytes: na_int,
            Kernels.occupancy_pct: np.full(n, np.nan),
            Kernels.bytes: na_int,
            Kernels.copy_kind: pd.Categorical([None] * n),
            Kernels.launch_row: na_int,
            Kernels.launch_name: pd.Categorical([None] * n),
            Kernels.launch_ts_us: np.full(n, np.nan),
            Kernels.launch_dur_us: np.full(n, np.nan),
            Kernels.launch_delay_us: np.full(n, np.nan),
            Kernels.thread: chosen[Ops.thread].array,
            Kernels.op_row: pd.array(rows, dtype="Int64"),
            Kernels.op_name: chosen[Ops.name].array.remove_unused_categories(),
            Kernels.op_link: pd.Categorical(
                ["self"] * n, categories=["external_id", "time", "self"]
            ),
            Kernels.graph_launch_row: na_int,
            Kernels.in_graph: np.zeros(n, dtype=bool),
        }
    )
    return frame.sort_values(Kernels.ts_us, kind="stable").reset_index(drop=True)
