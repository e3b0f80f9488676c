"""From decoded events to a :class:`~traceviz.trace.Trace`: route, build tables, link, count.

Events come in batches (:func:`traceviz.parse.read.decode_batches`, or the native scanner's
columns: :mod:`traceviz.parse.native`), each an :class:`~traceviz.parse.source.EventSource`:
each batch is routed and its columns taken before the next batch is decoded, so memory holds
one batch of events plus compact columns, never a million event objects at once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from traceviz import schema
from traceviz.parse import cpu_kernels, link, meta, regions, routing, tables
from traceviz.parse.columns import ColumnSet
from traceviz.parse.events import Event, TraceHeader
from traceviz.parse.source import EventSource
from traceviz.parse.structs import StructSource
from traceviz.schema import ActivityKind, DeviceKind, Kernels, OpCategory, Ops
from traceviz.trace import ParseStats, Trace, TraceMeta


def build_trace_batches(
    path: Path, batches: Iterable[list[Event]], doc: TraceHeader | None
) -> Trace:
    """Build every table of a trace from its events, given in batches (in file order): each
    batch is routed and its columns taken (:class:`Collector`) before the next is decoded, so
    only one batch of event objects is alive at a time."""
    collector = Collector()
    for events in batches:
        collector.add(StructSource(events))
        del events
    return collector.trace(path, doc)


class Collector:
    """The tables' columns, the ignored counts and the metadata of a trace, batch by batch."""

    def __init__(self) -> None:
        self.events_in = 0
        self.ignored: Counter[str] = Counter()
        self.processes: dict[str, str] = {}
        self.thread_names: dict[str, str] = {}
        self.pairs: set[tuple[Any, Any]] = set()  # every (phase, category) seen
        self.columns = {label: ColumnSet() for label in routing.TABLES}
        self.thread_pairs = ColumnSet()  # (pid, tid) codes per CPU-side table, one numbering

    def add(self, events: EventSource) -> None:
        """Route one batch and take its columns."""
        self.events_in += len(events)
        dest_codes, dest_labels, pairs = routing.route(events)
        self.pairs.update(_hashable_pairs(pairs))
        rows_of = _rows_by_destination(dest_codes, dest_labels)
        _split_instants(events, rows_of, self.ignored)
        for label, rows in rows_of.items():
            if label.startswith("ignored:"):
                self.ignored[label.removeprefix("ignored:")] += len(rows)
        metadata = events.take(_rows(rows_of, "ignored:metadata"))
        processes, threads = meta.names_from_metadata(metadata)
        self.processes.update(processes)
        self.thread_names.update(threads)
        parts = {label: events.take(_rows(rows_of, label)) for label in routing.TABLES}
        _drop_impossible(parts, self.ignored)
        for label, add in ADDERS.items():
            if len(parts[label]):
                add(self.columns[label], parts[label])
        numbering = self.thread_pairs.numbering("pairs")
        for label in ON_CPU:
            if len(parts[label]):
                codes = parts[label].pair_codes(numbering, "pid", "tid")
                self.thread_pairs.add_array(label, codes)

    def threads(self) -> dict[str, pd.Categorical]:
        """Each CPU-side table's thread column, numbered over those tables together (in
        table order, then row order), so that their codes can be compared."""
        per_table = [self.thread_pairs.array(label, np.int64) for label in ON_CPU]
        pairs = list(self.thread_pairs.numbering("pairs"))
        codes, labels = _thread_codes(np.concatenate(per_table), pairs)
        bounds = np.cumsum([0] + [len(c) for c in per_table])
        return {
            label: tables.thread_column(codes[bounds[i] : bounds[i + 1]], labels)
            for i, label in enumerate(ON_CPU)
        }

    def trace(self, path: Path, doc: TraceHeader | None) -> Trace:
        """The Trace: tables built, linked, regions and steps found, every event counted."""
        threads = self.threads()
        cols = self.columns
        kernels = tables.kernel_table(cols[routing.KERNELS])
        ops = tables.op_table(cols.pop(routing.OPS), threads[routing.OPS])
        launches = tables.launch_table(cols.pop(routing.LAUNCHES), threads[routing.LAUNCHES])
        spans = tables.span_table(cols.pop(routing.SPANS), threads[routing.SPANS])
        memory = tables.memory_table(cols.pop(routing.MEMORY), threads[routing.MEMORY])
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
            legacy_schema=any(cat in routing.LEGACY_CATEGORIES for _, cat in self.pairs),
            time_origin_us=start,
            time_end_us=end,
            process_names=self.processes,
            thread_names=self.thread_names,
            **meta.header_facts(doc),
        )
        stats = ParseStats(
            events_in=self.events_in,
            rows={
                routing.KERNELS: 0 if kind is DeviceKind.CPU else len(kernels),
                routing.OPS: len(ops),
                routing.LAUNCHES: len(launches),
                routing.SPANS: len(spans),
                routing.MEMORY: len(memory),
            },
            ignored=dict(sorted(self.ignored.items())),
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


ON_CPU = (routing.OPS, routing.LAUNCHES, routing.SPANS, routing.MEMORY)
ADDERS: dict[str, Callable[[ColumnSet, EventSource], None]] = {
    routing.KERNELS: tables.add_kernels,
    routing.OPS: tables.add_ops,
    routing.LAUNCHES: tables.add_launches,
    routing.SPANS: tables.add_spans,
    routing.MEMORY: tables.add_memory,
}


def impossible(events: EventSource) -> np.ndarray:
    """Boolean mask: the events whose ``dur`` is negative or ±infinite."""
    durs = events.floats("dur")
    return (durs < 0) | np.isinf(durs)


def _drop_impossible(parts: dict[str, EventSource], ignored: Counter[str]) -> None:
    """A negative or infinite duration is not something a profiler measured (kept, it would
    turn summed kernel time negative and idle shares above 100%): such a complete event is
    taken out of ``parts`` and counted in ``ignored["bad_duration"]``. A missing or NaN
    duration is kept (the row exists, its duration unknown)."""
    for label in (routing.KERNELS, routing.OPS, routing.LAUNCHES, routing.SPANS):
        events = parts[label]
        bad = impossible(events) if len(events) else np.zeros(0, dtype=bool)
        if bad.any():
            parts[label] = events.take(np.flatnonzero(~bad))
            ignored["bad_duration"] += int(bad.sum())


def _durations(table: pd.DataFrame) -> np.ndarray:
    return table["dur_us"].to_numpy(dtype=float)


def _hashable_pairs(pairs: list[Any]) -> list[tuple[Any, Any]]:
    return [p for p in pairs if isinstance(p, tuple) and len(p) == 2]


def _rows(rows_of: dict[str, np.ndarray], label: str) -> np.ndarray:
    return rows_of.get(label, np.empty(0, dtype=np.int64))


def _rows_by_destination(codes: np.ndarray, labels: list[str]) -> dict[str, np.ndarray]:
    """Event rows per destination label, in input order (one pass per label: few labels)."""
    names = list(dict.fromkeys(labels))
    index = {name: i for i, name in enumerate(names)}
    destination = np.array([index[label] for label in labels], dtype=np.int64)[codes]
    return {name: np.flatnonzero(destination == i) for i, name in enumerate(names)}


def _split_instants(
    events: EventSource, rows_of: dict[str, np.ndarray], ignored: Counter[str]
) -> None:
    """Instants named ``[memory]`` go to the memory table; the rest are counted as ignored."""
    instants = rows_of.pop(routing.INSTANT, np.empty(0, dtype=np.int64))
    names = events.take(instants).equals("name", routing.MEMORY_EVENT_NAME)
    rows_of[routing.MEMORY] = instants[names] if len(instants) else instants
    if len(instants) and (~names).any():
        ignored["instant"] += int((~names).sum())


def _thread_codes(codes: np.ndarray, pairs: list[Any]) -> tuple[np.ndarray, list[str]]:
    """One code per row for its (pid, tid), numbered in order of first appearance in
    ``codes``, and the "pid/tid" label of each code (7 and "7" are one thread)."""
    in_order = pd.unique(codes)  # in order of first appearance (a hash table, no sort)
    labels: list[str] = []
    code_of_label: dict[str, int] = {}
    remap = np.full(len(pairs), -1, dtype=np.int64)
    for pair_code in in_order.tolist():
        pid, tid = pairs[pair_code]
        label = thread_label(pid, tid)
        if label not in code_of_label:
            code_of_label[label] = len(labels)
            labels.append(label)
        remap[pair_code] = code_of_label[label]
    return remap[codes], labels


def thread_label(pid: Any, tid: Any) -> str:
    """The ``thread`` label of a (pid, tid) pair: ``"pid/tid"``, ``?`` for a missing part, an
    integral float written as an integer (7, 7.0 and "7" are one thread)."""
    return f"{_label(pid)}/{_label(tid)}"


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
    return kernels_from_ops(ops, rows)


def kernels_from_ops(
    ops: pd.DataFrame,
    rows: np.ndarray,
    *,
    names: list[str] | None = None,
    bytes_moved: pd.arrays.IntegerArray | None = None,
) -> pd.DataFrame:
    """A Kernels table (before :func:`~traceviz.schema.conform`) of one CPU kernel per ops row
    in ``rows`` (positions in ``ops``), each linked to its own row (``op_link`` ``self``), in
    time order: ``ts_us``/``dur_us``/``thread``/``external_id`` are the op's, ``excl_dur_us``
    its duration less that of the kernels nested in it on its thread (µs). ``names``: the
    kernel names, one per row (default: the op names); ``bytes_moved``: ``bytes`` per row
    (default <NA>). No device, stream, launch or graph: a CPU kernel has none."""
    chosen = ops.iloc[rows]
    n = len(rows)
    durs = chosen[Ops.dur_us].to_numpy()
    exclusive = cpu_kernels.exclusive_durations(
        np.asarray(chosen[Ops.thread].cat.codes), chosen[Ops.ts_us].to_numpy(), durs
    )
    op_names = chosen[Ops.name].array.remove_unused_categories()

    frame = pd.DataFrame(
        {
            Kernels.name: op_names if names is None else pd.Categorical(names),
            Kernels.activity: pd.Categorical(
                [ActivityKind.KERNEL.value] * n, categories=[k.value for k in ActivityKind]
            ),
            Kernels.device: pd.array([pd.NA] * n, dtype="Int32"),
            Kernels.stream: tables.missing_ints(n),
            Kernels.ts_us: chosen[Ops.ts_us].to_numpy(),
            Kernels.dur_us: durs,
            Kernels.excl_dur_us: exclusive,
            Kernels.correlation: tables.missing_ints(n),
            Kernels.external_id: chosen[Ops.external_id].array,
            Kernels.grid: pd.Categorical([None] * n),
            Kernels.block: pd.Categorical([None] * n),
            Kernels.registers: pd.array([pd.NA] * n, dtype="Int32"),
            Kernels.shared_memory_bytes: tables.missing_ints(n),
            Kernels.occupancy_pct: np.full(n, np.nan),
            Kernels.bytes: tables.missing_ints(n) if bytes_moved is None else bytes_moved,
            Kernels.copy_kind: pd.Categorical([None] * n),
            Kernels.launch_row: tables.missing_ints(n),
            Kernels.launch_name: pd.Categorical([None] * n),
            Kernels.launch_ts_us: np.full(n, np.nan),
            Kernels.launch_dur_us: np.full(n, np.nan),
            Kernels.launch_delay_us: np.full(n, np.nan),
            Kernels.thread: chosen[Ops.thread].array,
            Kernels.op_row: pd.array(rows, dtype="Int64"),
            Kernels.op_name: op_names,
            Kernels.op_link: pd.Categorical(
                ["self"] * n, categories=["external_id", "time", "self"]
            ),
            Kernels.graph_launch_row: tables.missing_ints(n),
            Kernels.in_graph: np.zeros(n, dtype=bool),
        }
    )
    return frame.sort_values(Kernels.ts_us, kind="stable").reset_index(drop=True)
