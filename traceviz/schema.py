"""Every table's columns, dtypes and units, declared once.

Code refers to columns through these classes (``K.dur_us``, not ``"dur_us"``), so a rename is
one edit and a typo is an ``AttributeError``. Units are in the names: ``_us`` is microseconds,
``bytes`` is bytes. Times (``ts_us``) are on the trace's own clock, exactly as the trace file
gives them; ``TraceMeta.time_origin_us`` is the earliest event, for plotting from zero.

Missing values are real missing values (``<NA>``/``NaN``), never magic numbers: a kernel
with no known launching op has ``op_row = <NA>``, not ``-1``.
"""

from __future__ import annotations

from enum import Enum

import pandas as pd

# dtype shorthands
CAT = "category"
F64 = "float64"
I64 = "Int64"  # nullable integer
I32 = "Int32"
BOOL = "bool"


class DeviceKind(str, Enum):
    """What executed the trace's work."""

    CUDA = "cuda"
    ROCM = "rocm"
    CPU = "cpu"  # no device activity: the CPU ops are the kernels
    OTHER = "other"  # an accelerator traceviz does not model (e.g. MTIA): loaded, not analysed


class ActivityKind(str, Enum):
    """What a row of the kernels table is."""

    KERNEL = "kernel"  # a device kernel (or, on a CPU-only trace, a CPU op that computes)
    MEMCPY = "memcpy"
    MEMSET = "memset"


class LaunchClass(str, Enum):
    """The class of a runtime/driver API call."""

    KERNEL_LAUNCH = "kernel_launch"
    GRAPH_LAUNCH = "graph_launch"
    MEMCPY = "memcpy"
    MEMSET = "memset"
    SYNC = "sync"
    OTHER = "other"


class OpCategory(str, Enum):
    """The trace category of a CPU-side op."""

    CPU_OP = "cpu_op"  # includes the oldest schema's "Operator"
    USER_ANNOTATION = "user_annotation"  # record_function spans, ProfilerStep#N
    PYTHON_FUNCTION = "python_function"  # with_stack=True python frames


class RegionKind(str, Enum):
    """Which compiled-region marker a row of the regions table comes from."""

    COMPILED_REGION = "compiled_region"  # "Torch-Compiled Region: X/Y": Dynamo frame X, recompile Y
    FX_GRAPH_CALL = "fx_graph_call"  # "## Call CompiledFxGraph <key> ##" (Inductor graph)
    COMPILED_FUNCTION = "compiled_function"  # AOTAutograd forward
    COMPILED_FUNCTION_BACKWARD = "compiled_function_backward"  # AOTAutograd backward


class Kernels:
    """``Trace.kernels``: one row per device activity (kernel, memcpy, memset).

    On a CPU-only trace (``DeviceKind.CPU``) the rows are the CPU ops that do the work
    themselves (see :mod:`traceviz.parse.cpu_kernels` for the rule); their launch columns
    point at the op itself.
    """

    name = "name"  # kernel name as the trace gives it (category)
    activity = "activity"  # ActivityKind value (category)
    device = "device"  # device index (Int32)
    stream = "stream"  # stream id (Int64); CPU kernels: <NA>
    ts_us = "ts_us"  # start, µs (float64)
    dur_us = "dur_us"  # duration, µs (float64; NaN when the trace has none)
    # dur_us less the time of other kernels nested inside this one on its thread (CPU kernels:
    # aten::addmm less the aten::copy_ it calls); = dur_us for device activity. Sum this, not
    # dur_us, for kernel time: it counts each µs once. µs (float64; NaN when dur_us is).
    excl_dur_us = "excl_dur_us"
    correlation = "correlation"  # runtime correlation id linking to the launch (Int64)
    external_id = "external_id"  # External id linking to the CPU op (Int64)
    grid = "grid"  # grid dims as JSON text, e.g. "[108, 1, 1]" (category) or <NA>
    block = "block"  # block dims as JSON text, e.g. "[128, 1, 1]" (category) or <NA>
    registers = "registers"  # registers per thread (Int32)
    shared_memory_bytes = "shared_memory_bytes"  # static + dynamic shared memory (Int64)
    occupancy_pct = "occupancy_pct"  # "est. achieved occupancy %" where present (float64)
    # bytes moved by a memcpy/memset; for an ONNX Runtime node, the sizes of the tensors it reads
    # and writes as ORT recorded them (activation + parameter + output) (Int64)
    bytes = "bytes"
    copy_kind = "copy_kind"  # memcpy direction "HtoD"/"DtoH"/"DtoD"/... (category)
    launch_row = "launch_row"  # row in Trace.launches of the launching API call (Int64)
    launch_name = "launch_name"  # launching API name, e.g. cudaLaunchKernel (category)
    launch_ts_us = "launch_ts_us"  # launching API start, µs (float64)
    launch_dur_us = "launch_dur_us"  # launching API duration, µs (float64)
    launch_delay_us = "launch_delay_us"  # device start − launch end, µs (float64)
    thread = "thread"  # CPU thread that launched it, "pid/tid" (category)
    op_row = "op_row"  # row in Trace.ops of the enclosing CPU op (Int64)
    op_name = "op_name"  # that op's name (category)
    op_link = "op_link"  # how op_row was found: "external_id" | "time" | "self" (category)
    graph_launch_row = "graph_launch_row"  # row in Trace.launches of the owning graph launch
    in_graph = "in_graph"  # replayed by a CUDA/HIP graph (bool)


class Ops:
    """``Trace.ops``: CPU-side ops (cpu_op, user_annotation, python_function)."""

    name = "name"  # op name, e.g. aten::addmm (category)
    category = "category"  # OpCategory value (category)
    thread = "thread"  # "pid/tid" (category)
    ts_us = "ts_us"  # start, µs (float64)
    dur_us = "dur_us"  # duration, µs (float64)
    self_us = "self_us"  # duration minus direct children's durations, µs (float64)
    depth = "depth"  # nesting depth on its thread, 0 = outermost (Int32)
    parent_row = "parent_row"  # row of the enclosing op on the same thread (Int64)
    external_id = "external_id"  # External id (Int64)
    sequence_number = "sequence_number"  # autograd sequence number (Int64)
    fwd_thread_id = "fwd_thread_id"  # forward thread of a backward op (Int64)
    input_dims = "input_dims"  # "Input Dims" as JSON text, e.g. "[[8, 16], []]" (category)
    input_types = "input_types"  # "Input type" as JSON text (category)
    concrete_inputs = "concrete_inputs"  # "Concrete Inputs" as JSON text (category)
    kernel_backend = "kernel_backend"  # Inductor launch metadata: "triton" / "cpp" (category)
    kernel_file = "kernel_file"  # Inductor generated source file (category)
    kernel_num_gb = "kernel_num_gb"  # Inductor's estimate of GB moved by the kernel (float64)


class Launches:
    """``Trace.launches``: runtime and driver API calls (cuda_runtime, cuda_driver, hip*)."""

    name = "name"  # API name, e.g. cudaLaunchKernel (category)
    launch_class = "launch_class"  # LaunchClass value (category)
    thread = "thread"  # "pid/tid" (category)
    ts_us = "ts_us"  # start, µs (float64)
    dur_us = "dur_us"  # duration, µs (float64)
    correlation = "correlation"  # correlation id (Int64)
    external_id = "external_id"  # External id of the op that made the call (Int64)
    kernel_count = "kernel_count"  # device activities linked to this call (Int64)


class Regions:
    """``Trace.regions``: compiled-region spans on the CPU timeline."""

    kind = "kind"  # RegionKind value (category)
    name = "name"  # the marker's full name (category)
    frame_id = "frame_id"  # X of "Torch-Compiled Region: X/Y" (Int32)
    recompile_id = "recompile_id"  # Y of "Torch-Compiled Region: X/Y" (Int32)
    graph_key = "graph_key"  # FX graph key of "## Call CompiledFxGraph <key> ##" (category)
    thread = "thread"  # "pid/tid" (category)
    ts_us = "ts_us"  # start, µs (float64)
    dur_us = "dur_us"  # wall time, µs (float64)
    op_row = "op_row"  # row in Trace.ops (Int64)
    # kernels (not memcpy/memset) launched inside and not inside a nested region of the same
    # kind: a kind's rows partition its kernels (Int64)
    kernel_count = "kernel_count"
    kernel_time_us = "kernel_time_us"  # their total exclusive device time (excl_dur_us), µs


class Memory:
    """``Trace.memory``: allocator events (``[memory]`` instants)."""

    ts_us = "ts_us"  # µs (float64)
    thread = "thread"  # "pid/tid" (category)
    device_type = "device_type"  # "cpu" / "cuda" / the trace's code (category)
    device = "device"  # device index (Int32)
    bytes = "bytes"  # allocation (+) or free (−) in bytes (Int64)
    total_allocated_bytes = "total_allocated_bytes"  # allocated after the event (Int64)
    total_reserved_bytes = "total_reserved_bytes"  # reserved by the caching allocator (Int64)


class Spans:
    """``Trace.spans``: every other complete event — device-side annotations
    (gpu_user_annotation), profiler spans, and categories traceviz does not model — kept so that
    nothing is lost."""

    category = "category"  # the trace's "cat" (category)
    name = "name"  # (category)
    thread = "thread"  # "pid/tid" (category)
    ts_us = "ts_us"  # µs (float64)
    dur_us = "dur_us"  # µs (float64)
    external_id = "external_id"  # (Int64)


class Steps:
    """``Trace.steps``: ``ProfilerStep#N`` spans, one row per step."""

    step = "step"  # N (Int64)
    ts_us = "ts_us"  # start, µs (float64)
    dur_us = "dur_us"  # wall time, µs (float64)


# name -> dtype, in column order, per table.
KERNELS_DTYPES: dict[str, str] = {
    Kernels.name: CAT,
    Kernels.activity: CAT,
    Kernels.device: I32,
    Kernels.stream: I64,
    Kernels.ts_us: F64,
    Kernels.dur_us: F64,
    Kernels.excl_dur_us: F64,
    Kernels.correlation: I64,
    Kernels.external_id: I64,
    Kernels.grid: CAT,
    Kernels.block: CAT,
    Kernels.registers: I32,
    Kernels.shared_memory_bytes: I64,
    Kernels.occupancy_pct: F64,
    Kernels.bytes: I64,
    Kernels.copy_kind: CAT,
    Kernels.launch_row: I64,
    Kernels.launch_name: CAT,
    Kernels.launch_ts_us: F64,
    Kernels.launch_dur_us: F64,
    Kernels.launch_delay_us: F64,
    Kernels.thread: CAT,
    Kernels.op_row: I64,
    Kernels.op_name: CAT,
    Kernels.op_link: CAT,
    Kernels.graph_launch_row: I64,
    Kernels.in_graph: BOOL,
}

OPS_DTYPES: dict[str, str] = {
    Ops.name: CAT,
    Ops.category: CAT,
    Ops.thread: CAT,
    Ops.ts_us: F64,
    Ops.dur_us: F64,
    Ops.self_us: F64,
    Ops.depth: I32,
    Ops.parent_row: I64,
    Ops.external_id: I64,
    Ops.sequence_number: I64,
    Ops.fwd_thread_id: I64,
    Ops.input_dims: CAT,
    Ops.input_types: CAT,
    Ops.concrete_inputs: CAT,
    Ops.kernel_backend: CAT,
    Ops.kernel_file: CAT,
    Ops.kernel_num_gb: F64,
}

LAUNCHES_DTYPES: dict[str, str] = {
    Launches.name: CAT,
    Launches.launch_class: CAT,
    Launches.thread: CAT,
    Launches.ts_us: F64,
    Launches.dur_us: F64,
    Launches.correlation: I64,
    Launches.external_id: I64,
    Launches.kernel_count: I64,
}

REGIONS_DTYPES: dict[str, str] = {
    Regions.kind: CAT,
    Regions.name: CAT,
    Regions.frame_id: I32,
    Regions.recompile_id: I32,
    Regions.graph_key: CAT,
    Regions.thread: CAT,
    Regions.ts_us: F64,
    Regions.dur_us: F64,
    Regions.op_row: I64,
    Regions.kernel_count: I64,
    Regions.kernel_time_us: F64,
}

MEMORY_DTYPES: dict[str, str] = {
    Memory.ts_us: F64,
    Memory.thread: CAT,
    Memory.device_type: CAT,
    Memory.device: I32,
    Memory.bytes: I64,
    Memory.total_allocated_bytes: I64,
    Memory.total_reserved_bytes: I64,
}

SPANS_DTYPES: dict[str, str] = {
    Spans.category: CAT,
    Spans.name: CAT,
    Spans.thread: CAT,
    Spans.ts_us: F64,
    Spans.dur_us: F64,
    Spans.external_id: I64,
}

STEPS_DTYPES: dict[str, str] = {
    Steps.step: I64,
    Steps.ts_us: F64,
    Steps.dur_us: F64,
}

TABLE_DTYPES: dict[str, dict[str, str]] = {
    "kernels": KERNELS_DTYPES,
    "ops": OPS_DTYPES,
    "launches": LAUNCHES_DTYPES,
    "regions": REGIONS_DTYPES,
    "memory": MEMORY_DTYPES,
    "spans": SPANS_DTYPES,
    "steps": STEPS_DTYPES,
}


def empty_table(dtypes: dict[str, str]) -> pd.DataFrame:
    """A zero-row table with the declared columns and dtypes."""
    return pd.DataFrame({col: pd.Series(dtype=dt) for col, dt in dtypes.items()})


def conform(df: pd.DataFrame, dtypes: dict[str, str]) -> pd.DataFrame:
    """Return ``df`` with exactly the declared columns, in order, cast to the declared dtypes.

    Raises ``KeyError`` naming a missing column: a table that does not match its schema is a
    bug in traceviz, not bad input.
    """
    missing = [c for c in dtypes if c not in df.columns]
    if missing:
        raise KeyError(f"table is missing declared columns {missing}")
    columns = list(dtypes)
    out = df if list(df.columns) == columns else df.loc[:, columns]
    current = out.dtypes  # one Series of dtypes: a column lookup per name costs ~10x more
    casts = {c: dt for c, dt in dtypes.items() if str(current[c]) != dt}
    return out.astype(casts) if casts else out


# --- The compiler's own record (traceviz.parse.compile_log) and what it explains -------------


class ProvenanceKernels:
    """``CompileLog.kernels``: one row per kernel Inductor generated or called, from its
    provenance record (``inductor_provenance_tracking_node_mappings``).

    ``graph_index`` counts the Inductor graphs of one compile id in log order (0 = forward or
    inference, 1 = the backward of a training compile). ``prov_kernel`` is unique in a log.
    """

    prov_kernel = "prov_kernel"  # "0/0:cpp_fused_cos_relu_0:1" ("0/0[1]:…" for graph_index 1)
    compile_id = "compile_id"  # Dynamo compile id "X/Y" (category)
    graph_index = "graph_index"  # Inductor graph of this compile id, in log order (Int64)
    graph = "graph"  # N of the trace's "graph_N_" kernel-name prefix, when known (Int64)
    kernel = "kernel"  # name as Inductor wrote it: cpp_fused_cos_relu_0, extern_kernels.addmm
    handle = "handle"  # the ":N" debug handle: call order within the graph (Int64)
    post_grad_nodes = "post_grad_nodes"  # post-grad FX nodes it computes, comma-joined (str)
    pre_grad_nodes = "pre_grad_nodes"  # pre-grad (Dynamo graph) nodes, comma-joined (str)
    est_bytes = "est_bytes"  # Inductor's bytes read + written per call (Int64; NA unknown)
    extern = "extern"  # a library call (extern_kernels.*, aten fallback), not generated (bool)


class ProvenanceLines:
    """``CompileLog.lines``: one row per (kernel, user source line) from
    ``inductor_provenance_tracking_kernel_stack_traces``; frames inside torch, transformers
    and site-packages are folded to the user frame that called them."""

    prov_kernel = "prov_kernel"  # ProvenanceKernels.prov_kernel (str)
    compile_id = "compile_id"  # (category)
    kernel = "kernel"  # (str)
    handle = "handle"  # (Int64)
    file = "file"  # source file path as Python recorded it (str)
    line = "line"  # 1-based line number (Int64)
    function = "function"  # enclosing function name (str)
    code = "code"  # the source line's text, stripped (str; NA when not recorded)


class CompileFrames:
    """``CompileLog.frames``: one row per Dynamo frame compilation (``compilation_metrics``)."""

    compile_id = "compile_id"  # "X/Y" (category)
    function = "function"  # compiled function's name (str)
    file = "file"  # its file (str)
    line = "line"  # its first line (Int64)
    compile_time_s = "compile_time_s"  # whole-frame compile time, s (float64)
    inductor_compile_time_s = "inductor_compile_time_s"  # part spent in Inductor, s (float64)
    graph_ops = "graph_ops"  # ops in the Dynamo graph (Int64)
    graph_breaks = "graph_breaks"  # graph breaks in this frame: Dynamo's count or its logged
    # reasons, whichever is more (Int64)
    break_reason = "break_reason"  # "<reason> at <file>:<line>", "; "-joined (str; NA: none)
    recompile_reason = "recompile_reason"  # the failed guard that caused it (str; NA for X/0)
    fail_reason = "fail_reason"  # why compilation failed (str; NA when it did not)
    cache_hit = "cache_hit"  # Inductor's FX graph cache served it (no misses, ≥ 1 hit) (bool)


class KernelProvenance:
    """``traceviz.analysis.provenance.compiled_kernel_provenance``: one row per row of a
    compiled trace's kernels table that the compile log explains."""

    kernel_row = "kernel_row"  # index in Trace.kernels (Int64)
    compile_id = "compile_id"  # (category)
    prov_kernel = "prov_kernel"  # ProvenanceKernels.prov_kernel (str)
    kernel = "kernel"  # Inductor's name, no graph_N_ prefix, no handle (str)
    pre_grad_nodes = "pre_grad_nodes"  # comma-joined (str)
    post_grad_nodes = "post_grad_nodes"  # comma-joined (str)
    est_bytes = "est_bytes"  # Inductor's bytes per call (Int64; NA unknown)
    primary = "primary"  # the row is the call itself, not work nested inside it (bool)


class KernelLines:
    """``traceviz.analysis.provenance.eager_kernel_lines``: the user source line that launched
    a kernel, from the trace's Python stacks (``with_stack=True``)."""

    kernel_row = "kernel_row"  # index in Trace.kernels (Int64)
    file = "file"  # (str)
    line = "line"  # (Int64)
    function = "function"  # (str)
    code = "code"  # the line's text, read with linecache (str; NA when the file is absent)
    exact = "exact"  # the call site's line (traceviz line marker); False: only the function
    # is known (Python frames give a function's first line, not the calling line) (bool)


PROVENANCE_KERNELS_DTYPES: dict[str, str] = {
    ProvenanceKernels.prov_kernel: "object",
    ProvenanceKernels.compile_id: CAT,
    ProvenanceKernels.graph_index: I64,
    ProvenanceKernels.graph: I64,
    ProvenanceKernels.kernel: "object",
    ProvenanceKernels.handle: I64,
    ProvenanceKernels.post_grad_nodes: "object",
    ProvenanceKernels.pre_grad_nodes: "object",
    ProvenanceKernels.est_bytes: I64,
    ProvenanceKernels.extern: BOOL,
}

PROVENANCE_LINES_DTYPES: dict[str, str] = {
    ProvenanceLines.prov_kernel: "object",
    ProvenanceLines.compile_id: CAT,
    ProvenanceLines.kernel: "object",
    ProvenanceLines.handle: I64,
    ProvenanceLines.file: "object",
    ProvenanceLines.line: I64,
    ProvenanceLines.function: "object",
    ProvenanceLines.code: "object",
}

COMPILE_FRAMES_DTYPES: dict[str, str] = {
    CompileFrames.compile_id: CAT,
    CompileFrames.function: "object",
    CompileFrames.file: "object",
    CompileFrames.line: I64,
    CompileFrames.compile_time_s: F64,
    CompileFrames.inductor_compile_time_s: F64,
    CompileFrames.graph_ops: I64,
    CompileFrames.graph_breaks: I64,
    CompileFrames.break_reason: "object",
    CompileFrames.recompile_reason: "object",
    CompileFrames.fail_reason: "object",
    CompileFrames.cache_hit: BOOL,
}

KERNEL_PROVENANCE_DTYPES: dict[str, str] = {
    KernelProvenance.kernel_row: I64,
    KernelProvenance.compile_id: CAT,
    KernelProvenance.prov_kernel: "object",
    KernelProvenance.kernel: "object",
    KernelProvenance.pre_grad_nodes: "object",
    KernelProvenance.post_grad_nodes: "object",
    KernelProvenance.est_bytes: I64,
    KernelProvenance.primary: BOOL,
}

KERNEL_LINES_DTYPES: dict[str, str] = {
    KernelLines.kernel_row: I64,
    KernelLines.file: "object",
    KernelLines.line: I64,
    KernelLines.function: "object",
    KernelLines.code: "object",
    KernelLines.exact: BOOL,
}
