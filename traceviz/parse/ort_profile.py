"""ONNX Runtime profiles (``SessionOptions.enable_profiling``) → :class:`~traceviz.trace.Trace`.

An ORT profile is a Chrome trace: a top-level JSON array of complete (``"ph": "X"``) events,
``cat`` ``"Session"`` (``model_loading_uri``/``_array``, ``session_initialization``,
``model_run``, ``SequentialExecutor::Execute``) and ``"Node"`` (``<node>_kernel_time``, with
``args`` ``op_name``, ``provider``, ``node_index``, ``input_type_shape``, ``output_type_shape``,
``activation_size``, ``parameter_size``, ``output_size``, ``thread_scheduling_stats``; older
versions add ``<node>_fence_before``/``_fence_after``).

Where each event goes (every event is counted once in :class:`~traceviz.trace.ParseStats`):

- ``Node`` ``<node>_kernel_time`` → one row of ``Trace.ops`` (category ``cpu_op``, name = the
  op type ``op_name``, ``input_dims``/``input_types`` from ``input_type_shape``) and, derived
  from it, one row of ``Trace.kernels``: ``name`` = the node name (``<node>``, unique in the
  graph), ``op_name`` = the op type, ``op_link`` ``self``, ``bytes`` = ``activation_size +
  parameter_size + output_size`` (the bytes of the node's inputs read once and outputs written
  once, as ORT recorded them; ``<NA>`` when ORT gave none; prepacked weights are not in ORT's
  sizes), ``excl_dur_us`` = duration less nested nodes on the thread (subgraphs of If/Loop/Scan);
- ``Session`` → ``Trace.ops`` rows of category ``user_annotation``; each ``model_run`` is also
  one row of ``Trace.steps`` (numbered 0, 1, ... in time order);
- ``<node>_fence_before``/``_fence_after`` → no row, ``ignored["fence"]``; events that are not
  complete events → ``ignored["not_complete:<ph>"]``; a negative or infinite duration →
  ``ignored["bad_duration"]``; any other complete event → ``Trace.spans``.

The trace's device kind comes from the providers of the nodes: ``CUDAExecutionProvider``
(and TensorRT) → ``cuda``, ``ROCMExecutionProvider``/``MIGraphXExecutionProvider`` → ``rocm``,
CPU only → ``cpu``, anything else → ``other``. With a GPU provider a node's duration is the
host-side time of running it (ORT does not synchronise per node). A profile cut short before
its closing ``]`` (a process that never called ``end_profiling``) is read as if it were there.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pandas as pd

from traceviz import schema
from traceviz.errors import TraceFormatError
from traceviz.parse import build, nesting, tables
from traceviz.parse.columns import floats, nullable_ints
from traceviz.parse.events import TraceEvent
from traceviz.parse.meta import time_bounds
from traceviz.schema import DeviceKind, OpCategory, Ops, Steps
from traceviz.trace import ParseStats, Trace, TraceMeta

__all__ = ["FORMAT", "detect", "read_profile"]

FORMAT = "onnxruntime"
KERNEL_SUFFIX = "_kernel_time"
FENCE_SUFFIXES = ("_fence_before", "_fence_after")
NODE, SESSION, MODEL_RUN = "Node", "Session", "model_run"
_HEAD = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\[\s*\{[^{}]*"cat"\s*:\s*"(?:Session|Node)"')
_DEVICE_OF_PROVIDER = {
    "CPUExecutionProvider": DeviceKind.CPU,
    "CUDAExecutionProvider": DeviceKind.CUDA,
    "TensorrtExecutionProvider": DeviceKind.CUDA,
    "ROCMExecutionProvider": DeviceKind.ROCM,
    "MIGraphXExecutionProvider": DeviceKind.ROCM,
}

Num = int | float | str | None
_MAX_SIZE = (2**63 - 1) // 3
_NO_RAW = msgspec.Raw(b"")


class OrtArgs(msgspec.Struct, frozen=True, gc=False):
    """The ``args`` of an ORT event that traceviz reads (others, such as
    ``thread_scheduling_stats``, string or object, are skipped by the decoder)."""

    op_name: Any = None
    provider: Any = None
    node_index: Num = None
    input_type_shape: msgspec.Raw = _NO_RAW  # [{"float": [4, 16]}, ...], read once per text
    activation_size: Num = None
    parameter_size: Num = None
    output_size: Num = None


class OrtEvent(TraceEvent, gc=False):
    """One event of the profile's array."""

    args: OrtArgs = OrtArgs()


def detect(path: Path, head: bytes | bytearray) -> bool:
    """An ORT profile: a JSON array whose first event has ``cat`` ``Session`` or ``Node``."""
    return _HEAD.match(bytes(head[:4096])) is not None


def read_profile(path: Path, data: bytes | bytearray) -> Trace:
    """Parse an ORT profile's JSON bytes (rules in the module docstring). Raises
    :class:`~traceviz.errors.TraceFormatError` naming ``path``."""
    events = _decode(path, data)
    ignored: Counter[str] = Counter()
    nodes, sessions, spans = _route(events, ignored)
    ops, node_rows = _op_table(nodes, sessions)
    node_names = [str(e.name)[: -len(KERNEL_SUFFIX)] for e in nodes]  # one kernel per node
    kernels = build.kernels_from_ops(
        ops, node_rows, names=node_names, bytes_moved=_node_bytes(nodes)
    )
    span_table = _span_table(spans)
    start, end = time_bounds(
        [(t[Ops.ts_us].to_numpy(), t[Ops.dur_us].to_numpy()) for t in (ops, span_table)]
    )
    providers = sorted({str(e.args.provider) for e in nodes if e.args.provider is not None})
    meta = TraceMeta(
        source=str(path),
        device_kind=_device_kind(providers),
        time_origin_us=start,
        time_end_us=end,
        trace_name=FORMAT,
        profiler_flags={"format": FORMAT, "providers": providers},
    )
    stats = ParseStats(
        events_in=len(events),
        rows={"kernels": 0, "ops": len(ops), "launches": 0, "spans": len(span_table), "memory": 0},
        ignored=dict(sorted(ignored.items())),
    )
    return Trace(
        kernels=schema.conform(kernels, schema.KERNELS_DTYPES),
        ops=schema.conform(ops, schema.OPS_DTYPES),
        launches=schema.empty_table(schema.LAUNCHES_DTYPES),
        regions=schema.empty_table(schema.REGIONS_DTYPES),
        memory=schema.empty_table(schema.MEMORY_DTYPES),
        spans=schema.conform(span_table, schema.SPANS_DTYPES),
        steps=_step_table(ops),
        meta=meta,
        stats=stats,
    )


# --- decoding ----------------------------------------------------------------------------


def _decode(path: Path, data: bytes | bytearray) -> list[OrtEvent]:
    """The event array; a missing closing ``]`` (and a trailing comma) is tolerated."""
    try:
        return msgspec.json.decode(data, type=list[OrtEvent])
    except msgspec.ValidationError as err:
        raise TraceFormatError(path, f"not an ONNX Runtime profile: {err}") from err
    except msgspec.DecodeError as err:
        body = bytes(data).rstrip().rstrip(b", \t\r\n")
        if not body.endswith(b"}"):  # not cut short after a complete event (or closed already)
            raise TraceFormatError(path, f"ONNX Runtime profile is not valid JSON: {err}") from err
        return _decode(path, body + b"]")


def _route(
    events: list[OrtEvent], ignored: Counter[str]
) -> tuple[list[OrtEvent], list[OrtEvent], list[OrtEvent]]:
    """Node kernel events, Session events, other complete events; the rest counted in
    ``ignored``."""
    nodes: list[OrtEvent] = []
    sessions: list[OrtEvent] = []
    spans: list[OrtEvent] = []
    durs = floats([e.dur for e in events])
    for event, dur in zip(events, durs, strict=True):
        name = event.name if isinstance(event.name, str) else ""
        if event.ph != "X":
            ignored[f"not_complete:{str(event.ph)[:16]}"] += 1
        elif event.cat == NODE and name.endswith(FENCE_SUFFIXES):
            ignored["fence"] += 1
        elif dur < 0 or np.isinf(dur):
            ignored["bad_duration"] += 1
        elif event.cat == NODE and name.endswith(KERNEL_SUFFIX):
            nodes.append(event)
        elif event.cat == SESSION:
            sessions.append(event)
        else:
            spans.append(event)
    return nodes, sessions, spans


# --- tables ------------------------------------------------------------------------------


def _threads(events: Sequence[OrtEvent]) -> list[str]:
    """The thread label ("pid/tid") of each event; each distinct pair is labelled once."""
    labels: dict[tuple[str, str], str] = {}
    out = []
    for event in events:
        key = (repr(event.pid), repr(event.tid))
        label = labels.get(key)
        if label is None:
            label = labels[key] = build.thread_label(event.pid, event.tid)
        out.append(label)
    return out


def _op_table(nodes: list[OrtEvent], sessions: list[OrtEvent]) -> tuple[pd.DataFrame, np.ndarray]:
    """Ops (nodes then sessions, sorted and nested as Kineto ops are) and, per node event in
    input order, its row in the sorted table."""
    events = [*nodes, *sessions]
    n = len(events)
    op_types = [e.args.op_name for e in nodes]
    names = [o if isinstance(o, str) and o else "<unknown>" for o in op_types]
    names += [str(e.name) for e in sessions]
    categories = [OpCategory.CPU_OP.value] * len(nodes) + [OpCategory.USER_ANNOTATION.value] * len(
        sessions
    )
    dims, types = _shape_columns(nodes)
    none_i64 = pd.array([pd.NA] * n, dtype="Int64")
    frame = pd.DataFrame(
        {
            Ops.name: pd.Categorical(names),
            Ops.category: pd.Categorical(categories, categories=[c.value for c in OpCategory]),
            Ops.thread: pd.Categorical(_threads(events)),
            Ops.ts_us: floats([e.ts for e in events]),
            Ops.dur_us: floats([e.dur for e in events]),
            Ops.external_id: none_i64,
            Ops.sequence_number: none_i64.copy(),
            Ops.fwd_thread_id: none_i64.copy(),
            Ops.input_dims: pd.Categorical([*dims, *([None] * len(sessions))]),
            Ops.input_types: pd.Categorical([*types, *([None] * len(sessions))]),
            Ops.concrete_inputs: pd.Categorical([None] * n),
            Ops.kernel_backend: pd.Categorical([None] * n),
            Ops.kernel_file: pd.Categorical([None] * n),
            Ops.kernel_num_gb: np.full(n, np.nan),
        }
    )
    order = nesting.sort_order(
        np.asarray(frame[Ops.thread].cat.codes),
        frame[Ops.ts_us].to_numpy(),
        frame[Ops.dur_us].to_numpy(),
    )
    frame = frame.take(order).reset_index(drop=True)
    tables.add_nesting(frame)
    row_of = np.empty(n, dtype=np.int64)
    row_of[order] = np.arange(n)
    return frame, row_of[: len(nodes)]


def _shape_columns(nodes: list[OrtEvent]) -> tuple[list[str | None], list[str | None]]:
    """Per node, its input dims and types as Kineto-style JSON text (each distinct
    ``input_type_shape`` text is decoded once: a model's nodes repeat every run)."""
    seen: dict[bytes, tuple[str | None, str | None]] = {}
    dims: list[str | None] = []
    types: list[str | None] = []
    for event in nodes:
        raw = bytes(event.args.input_type_shape)
        pair = seen.get(raw)
        if pair is None:
            pair = seen[raw] = _shapes(_json_or_none(raw))
        dims.append(pair[0])
        types.append(pair[1])
    return dims, types


def _json_or_none(raw: bytes) -> Any:
    try:
        return msgspec.json.decode(raw) if raw else None
    except msgspec.DecodeError:
        return None


def _shapes(value: Any) -> tuple[str | None, str | None]:
    """``input_type_shape`` ``[{"float": [4, 16]}, ...]`` as Kineto-style JSON text:
    ``("[[4, 16], ...]", '["float", ...]')``; (None, None) when absent or unreadable."""
    if not isinstance(value, list) or not value:
        return None, None
    dims: list[Any] = []
    types: list[str] = []
    for item in value:
        if not isinstance(item, dict) or len(item) != 1:
            return None, None
        ((dtype, shape),) = item.items()
        dims.append(shape if isinstance(shape, list) else [])
        types.append(str(dtype))
    return json.dumps(dims), json.dumps(types)


def _node_bytes(nodes: list[OrtEvent]) -> pd.arrays.IntegerArray:
    """activation + parameter + output size per node; <NA> when ORT gave none of them, or a
    size that is not a non-negative integer (or is beyond any real tensor: above 2^63 / 3)."""
    if not nodes:
        return pd.array([], dtype="Int64")
    parts = [
        nullable_ints([getattr(e.args, key) for e in nodes])
        for key in ("activation_size", "parameter_size", "output_size")
    ]
    stacked = np.stack([p.to_numpy(dtype=np.int64, na_value=0) for p in parts])
    present = np.stack([~np.asarray(p.isna()) for p in parts])
    bad = ((stacked < 0) | (stacked > _MAX_SIZE)).any(axis=0)  # the sum could not overflow
    total = pd.array(stacked.sum(axis=0), dtype="Int64")
    total[~present.any(axis=0) | bad] = pd.NA
    return total


def _span_table(spans: list[OrtEvent]) -> pd.DataFrame:
    """Complete events that are neither nodes nor session events."""
    return pd.DataFrame(
        {
            schema.Spans.category: pd.Categorical([_text(e.cat) for e in spans]),
            schema.Spans.name: pd.Categorical([_text(e.name) for e in spans]),
            schema.Spans.thread: pd.Categorical(_threads(spans)),
            schema.Spans.ts_us: floats([e.ts for e in spans]),
            schema.Spans.dur_us: floats([e.dur for e in spans]),
            schema.Spans.external_id: pd.array([pd.NA] * len(spans), dtype="Int64"),
        }
    )


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _step_table(ops: pd.DataFrame) -> pd.DataFrame:
    """One step per ``model_run`` session event, numbered in time order from 0."""
    runs = ops[(ops[Ops.name] == MODEL_RUN) & (ops[Ops.category] == OpCategory.USER_ANNOTATION)]
    runs = runs.sort_values(Ops.ts_us, kind="stable")
    table = pd.DataFrame(
        {
            Steps.step: pd.array(np.arange(len(runs)), dtype="Int64"),
            Steps.ts_us: runs[Ops.ts_us].to_numpy(),
            Steps.dur_us: runs[Ops.dur_us].to_numpy(),
        }
    )
    return schema.conform(table, schema.STEPS_DTYPES)


def _device_kind(providers: list[str]) -> DeviceKind:
    kinds = {_DEVICE_OF_PROVIDER.get(p, DeviceKind.OTHER) for p in providers}
    for kind in (DeviceKind.CUDA, DeviceKind.ROCM, DeviceKind.OTHER):
        if kind in kinds:
            return kind
    return DeviceKind.CPU
