"""The typed shape of a Chrome/Kineto trace event, for msgspec's decoder.

Decoding straight into these structs (``gc=False``: they hold no cycles) is the fastest way
from bytes to Python values; unknown keys are skipped by the decoder without building objects.
Scalar fields accept every type real traces use (``"inf"``, ``"N/A"``, hex strings, ids beyond
2^53); the column builders coerce them. List-valued args that only some analyses need (input
dims, types) stay as raw JSON bytes (``msgspec.Raw``) and become categorical text columns.
"""

from __future__ import annotations

from typing import Any

import msgspec

# Internal "absent" markers used only while building columns; never stored in a table.
MISSING_INT = -(2**63)
NO_RAW = msgspec.Raw(b"")

Num = int | float | str | None
Ident = int | float | str | None


class Args(msgspec.Struct, frozen=True, gc=False):
    """The ``args`` of an event: the keys traceviz reads (others are skipped)."""

    external_id: Ident = msgspec.field(default=MISSING_INT, name="External id")
    external_id_legacy: Ident = msgspec.field(default=MISSING_INT, name="external id")
    correlation: Ident = MISSING_INT
    device: Ident = MISSING_INT
    stream: Ident = MISSING_INT
    grid: msgspec.Raw = NO_RAW
    block: msgspec.Raw = NO_RAW
    registers: Num = msgspec.field(default=MISSING_INT, name="registers per thread")
    shared_memory: Num = msgspec.field(default=MISSING_INT, name="shared memory")
    occupancy: Num = msgspec.field(default=None, name="est. achieved occupancy %")
    bytes: Num = MISSING_INT
    kind: Num = None
    input_dims: msgspec.Raw = msgspec.field(default=NO_RAW, name="Input Dims")
    input_dims_legacy: msgspec.Raw = msgspec.field(default=NO_RAW, name="Input dims")
    input_types: msgspec.Raw = msgspec.field(default=NO_RAW, name="Input type")
    concrete_inputs: msgspec.Raw = msgspec.field(default=NO_RAW, name="Concrete Inputs")
    sequence_number: Ident = msgspec.field(default=MISSING_INT, name="Sequence number")
    fwd_thread_id: Ident = msgspec.field(default=MISSING_INT, name="Fwd thread id")
    kernel_backend: Num = None
    kernel_file: Num = None
    kernel_num_gb: Num = None
    # [memory] instants
    mem_bytes: Num = msgspec.field(default=MISSING_INT, name="Bytes")
    total_allocated: Num = msgspec.field(default=MISSING_INT, name="Total Allocated")
    total_reserved: Num = msgspec.field(default=MISSING_INT, name="Total Reserved")
    device_type: Num = msgspec.field(default=MISSING_INT, name="Device Type")
    device_id: Num = msgspec.field(default=MISSING_INT, name="Device Id")
    # "M" metadata events: process_name / thread_name
    label: Any = msgspec.field(default=None, name="name")


EMPTY_ARGS = Args()


class TraceEvent(msgspec.Struct, gc=False):
    """The fields of a Chrome trace-format event that every reader takes as they come
    (Kineto's :class:`Event`, ONNX Runtime's ``OrtEvent``); each adds its own typed ``args``."""

    ph: Any = None
    cat: Any = None
    name: Any = None
    pid: Any = None
    tid: Any = None
    ts: Num = None
    dur: Num = None


class Event(TraceEvent, gc=False):
    """One entry of ``traceEvents``."""

    args: Args = EMPTY_ARGS


class TraceHeader(msgspec.Struct, gc=False):
    """The top-level keys of a (non bare-array) trace file, but its events."""

    schemaVersion: Any = None
    deviceProperties: Any = None
    computeProperties: Any = None
    distributedInfo: Any = None
    record_shapes: Any = None
    profile_memory: Any = None
    with_stack: Any = None
    with_flops: Any = None
    with_modules: Any = None
    displayTimeUnit: Any = None
    baseTimeNanoseconds: Any = None
    traceName: Any = None
    cupti_version: Any = None
    cuda_runtime_version: Any = None
    cuda_driver_version: Any = None
    hip_runtime_version: Any = None
    hip_driver_version: Any = None
    roctracer_version: Any = None
    trace_id: Any = None


class TraceDocument(TraceHeader, kw_only=True, gc=False):
    """The top-level object of a (non bare-array) trace file, every event decoded."""

    traceEvents: list[Event]


class RawTraceDocument(TraceHeader, kw_only=True, gc=False):
    """The same with each event kept as its raw JSON text (decoded later, a batch at a time)."""

    traceEvents: list[msgspec.Raw]
