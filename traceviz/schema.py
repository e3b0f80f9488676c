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
from typing import Annotated, get_type_hints

import pandas as pd

# dtype shorthands
CAT = "category"
F64 = "float64"
I64 = "Int64"  # nullable integer
I32 = "Int32"
BOOL = "bool"

# A table class's column names are annotated with their dtype: ``name: Category = "name"``.
Category = Annotated[str, CAT]
Float = Annotated[str, F64]
Int = Annotated[str, I64]
Int32 = Annotated[str, I32]
Bool = Annotated[str, BOOL]
Text = Annotated[str, "object"]


def dtypes(table: type) -> dict[str, str]:
    """A table class's columns and their dtypes, in declaration order."""
    hints = get_type_hints(table, include_extras=True)
    return {getattr(table, column): hints[column].__metadata__[0] for column in hints}


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

    name: Category = "name"  # kernel name as the trace gives it
    activity: Category = "activity"  # ActivityKind value
    device: Int32 = "device"  # device index
    stream: Int = "stream"  # stream id; CPU kernels: <NA>
    ts_us: Float = "ts_us"  # start, µs
    dur_us: Float = "dur_us"  # duration, µs (NaN when the trace has none)
    # dur_us less the time of other kernels nested inside this one on its thread (CPU kernels:
    # aten::addmm less the aten::copy_ it calls); = dur_us for device activity. Sum this, not
    # dur_us, for kernel time: it counts each µs once. µs (NaN when dur_us is).
    excl_dur_us: Float = "excl_dur_us"
    correlation: Int = "correlation"  # runtime correlation id linking to the launch
    external_id: Int = "external_id"  # External id linking to the CPU op
    grid: Category = "grid"  # grid dims as JSON text, e.g. "[108, 1, 1]" or <NA>
    block: Category = "block"  # block dims as JSON text, e.g. "[128, 1, 1]" or <NA>
    registers: Int32 = "registers"  # registers per thread
    shared_memory_bytes: Int = "shared_memory_bytes"  # static + dynamic shared memory
    occupancy_pct: Float = "occupancy_pct"  # "est. achieved occupancy %" where present
    # bytes moved by a memcpy/memset; for an ONNX Runtime node, the sizes of the tensors it reads
    # and writes as ORT recorded them (activation + parameter + output)
    bytes: Int = "bytes"
    copy_kind: Category = "copy_kind"  # memcpy direction "HtoD"/"DtoH"/"DtoD"/...
    launch_row: Int = "launch_row"  # row in Trace.launches of the launching API call
    launch_name: Category = "launch_name"  # launching API name, e.g. cudaLaunchKernel
    launch_ts_us: Float = "launch_ts_us"  # launching API start, µs
    launch_dur_us: Float = "launch_dur_us"  # launching API duration, µs
    launch_delay_us: Float = "launch_delay_us"  # device start − launch end, µs
    thread: Category = "thread"  # CPU thread that launched it, "pid/tid"
    op_row: Int = "op_row"  # row in Trace.ops of the enclosing CPU op
    op_name: Category = "op_name"  # that op's name
    op_link: Category = "op_link"  # how op_row was found: "external_id" | "time" | "self"
    graph_launch_row: Int = "graph_launch_row"  # row in Trace.launches of the owning graph launch
    in_graph: Bool = "in_graph"  # replayed by a CUDA/HIP graph


class Ops:
    """``Trace.ops``: CPU-side ops (cpu_op, user_annotation, python_function)."""

    name: Category = "name"  # op name, e.g. aten::addmm
    category: Category = "category"  # OpCategory value
    thread: Category = "thread"  # "pid/tid"
    ts_us: Float = "ts_us"  # start, µs
    dur_us: Float = "dur_us"  # duration, µs
    self_us: Float = "self_us"  # duration minus direct children's durations, µs
    depth: Int32 = "depth"  # nesting depth on its thread, 0 = outermost
    parent_row: Int = "parent_row"  # row of the enclosing op on the same thread
    external_id: Int = "external_id"  # External id
    sequence_number: Int = "sequence_number"  # autograd sequence number
    fwd_thread_id: Int = "fwd_thread_id"  # forward thread of a backward op
    input_dims: Category = "input_dims"  # "Input Dims" as JSON text, e.g. "[[8, 16], []]"
    input_types: Category = "input_types"  # "Input type" as JSON text
    concrete_inputs: Category = "concrete_inputs"  # "Concrete Inputs" as JSON text
    kernel_backend: Category = "kernel_backend"  # Inductor launch metadata: "triton" / "cpp"
    kernel_file: Category = "kernel_file"  # Inductor generated source file
    kernel_num_gb: Float = "kernel_num_gb"  # Inductor's estimate of GB moved by the kernel


class Launches:
    """``Trace.launches``: runtime and driver API calls (cuda_runtime, cuda_driver, hip*)."""

    name: Category = "name"  # API name, e.g. cudaLaunchKernel
    launch_class: Category = "launch_class"  # LaunchClass value
    thread: Category = "thread"  # "pid/tid"
    ts_us: Float = "ts_us"  # start, µs
    dur_us: Float = "dur_us"  # duration, µs
    correlation: Int = "correlation"  # correlation id
    external_id: Int = "external_id"  # External id of the op that made the call
    kernel_count: Int = "kernel_count"  # device activities linked to this call


class Regions:
    """``Trace.regions``: compiled-region spans on the CPU timeline."""

    kind: Category = "kind"  # RegionKind value
    name: Category = "name"  # the marker's full name
    frame_id: Int32 = "frame_id"  # X of "Torch-Compiled Region: X/Y"
    recompile_id: Int32 = "recompile_id"  # Y of "Torch-Compiled Region: X/Y"
    graph_key: Category = "graph_key"  # FX graph key of "## Call CompiledFxGraph <key> ##"
    thread: Category = "thread"  # "pid/tid"
    ts_us: Float = "ts_us"  # start, µs
    dur_us: Float = "dur_us"  # wall time, µs
    op_row: Int = "op_row"  # row in Trace.ops
    # kernels (not memcpy/memset) launched inside and not inside a nested region of the same
    # kind: a kind's rows partition its kernels
    kernel_count: Int = "kernel_count"
    kernel_time_us: Float = "kernel_time_us"  # their total exclusive device time (excl_dur_us), µs


class Memory:
    """``Trace.memory``: allocator events (``[memory]`` instants)."""

    ts_us: Float = "ts_us"  # µs
    thread: Category = "thread"  # "pid/tid"
    device_type: Category = "device_type"  # "cpu" / "cuda" / the trace's code
    device: Int32 = "device"  # device index
    bytes: Int = "bytes"  # allocation (+) or free (−) in bytes
    total_allocated_bytes: Int = "total_allocated_bytes"  # allocated after the event
    total_reserved_bytes: Int = "total_reserved_bytes"  # reserved by the caching allocator


class Spans:
    """``Trace.spans``: every other complete event — device-side annotations
    (gpu_user_annotation), profiler spans, and categories traceviz does not model — kept so that
    nothing is lost."""

    category: Category = "category"  # the trace's "cat"
    name: Category = "name"
    thread: Category = "thread"  # "pid/tid"
    ts_us: Float = "ts_us"  # µs
    dur_us: Float = "dur_us"  # µs
    external_id: Int = "external_id"


class Steps:
    """``Trace.steps``: ``ProfilerStep#N`` spans, one row per step."""

    step: Int = "step"  # N
    ts_us: Float = "ts_us"  # start, µs
    dur_us: Float = "dur_us"  # wall time, µs


# name -> dtype, in column order, per table.
KERNELS_DTYPES: dict[str, str] = dtypes(Kernels)

OPS_DTYPES: dict[str, str] = dtypes(Ops)

LAUNCHES_DTYPES: dict[str, str] = dtypes(Launches)

REGIONS_DTYPES: dict[str, str] = dtypes(Regions)

MEMORY_DTYPES: dict[str, str] = dtypes(Memory)

SPANS_DTYPES: dict[str, str] = dtypes(Spans)

STEPS_DTYPES: dict[str, str] = dtypes(Steps)

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

    prov_kernel: Text = "prov_kernel"  # "0/0:cpp_fused_cos_relu_0:1" ("0/0[1]:…" for graph_index 1)
    compile_id: Category = "compile_id"  # Dynamo compile id "X/Y"
    graph_index: Int = "graph_index"  # Inductor graph of this compile id, in log order
    graph: Int = "graph"  # N of the trace's "graph_N_" kernel-name prefix, when known
    kernel: Text = "kernel"  # name as Inductor wrote it: cpp_fused_cos_relu_0, extern_kernels.addmm
    handle: Int = "handle"  # the ":N" debug handle: call order within the graph
    post_grad_nodes: Text = "post_grad_nodes"  # post-grad FX nodes it computes, comma-joined
    pre_grad_nodes: Text = "pre_grad_nodes"  # pre-grad (Dynamo graph) nodes, comma-joined
    est_bytes: Int = "est_bytes"  # Inductor's bytes read + written per call (NA unknown)
    extern: Bool = "extern"  # a library call (extern_kernels.*, aten fallback), not generated


class ProvenanceLines:
    """``CompileLog.lines``: one row per (kernel, user source line) from
    ``inductor_provenance_tracking_kernel_stack_traces``; frames inside torch, transformers
    and site-packages are folded to the user frame that called them."""

    prov_kernel: Text = "prov_kernel"  # ProvenanceKernels.prov_kernel
    compile_id: Category = "compile_id"
    kernel: Text = "kernel"
    handle: Int = "handle"
    file: Text = "file"  # source file path as Python recorded it
    line: Int = "line"  # 1-based line number
    function: Text = "function"  # enclosing function name
    code: Text = "code"  # the source line's text, stripped (NA when not recorded)


class CompileFrames:
    """``CompileLog.frames``: one row per Dynamo frame compilation (``compilation_metrics``)."""

    compile_id: Category = "compile_id"  # "X/Y"
    function: Text = "function"  # compiled function's name
    file: Text = "file"  # its file
    line: Int = "line"  # its first line
    compile_time_s: Float = "compile_time_s"  # whole-frame compile time, s
    inductor_compile_time_s: Float = "inductor_compile_time_s"  # part spent in Inductor, s
    graph_ops: Int = "graph_ops"  # ops in the Dynamo graph
    graph_breaks: Int = "graph_breaks"  # graph breaks in this frame: Dynamo's count or its logged
    # reasons, whichever is more
    break_reason: Text = "break_reason"  # "<reason> at <file>:<line>", "; "-joined (NA: none)
    recompile_reason: Text = "recompile_reason"  # the failed guard that caused it (NA for X/0)
    fail_reason: Text = "fail_reason"  # why compilation failed (NA when it did not)
    cache_hit: Bool = "cache_hit"  # Inductor's FX graph cache served it (no misses, ≥ 1 hit)


class KernelProvenance:
    """``traceviz.analysis.provenance.compiled_kernel_provenance``: one row per row of a
    compiled trace's kernels table that the compile log explains."""

    kernel_row: Int = "kernel_row"  # index in Trace.kernels
    compile_id: Category = "compile_id"
    prov_kernel: Text = "prov_kernel"  # ProvenanceKernels.prov_kernel
    kernel: Text = "kernel"  # Inductor's name, no graph_N_ prefix, no handle
    pre_grad_nodes: Text = "pre_grad_nodes"  # comma-joined
    post_grad_nodes: Text = "post_grad_nodes"  # comma-joined
    est_bytes: Int = "est_bytes"  # Inductor's bytes per call (NA unknown)
    primary: Bool = "primary"  # the row is the call itself, not work nested inside it


class KernelLines:
    """``traceviz.analysis.provenance.eager_kernel_lines``: the user source line that launched
    a kernel, from the trace's Python stacks (``with_stack=True``)."""

    kernel_row: Int = "kernel_row"  # index in Trace.kernels
    file: Text = "file"
    line: Int = "line"
    function: Text = "function"
    code: Text = "code"  # the line's text, read with linecache (NA when the file is absent)
    exact: Bool = "exact"  # the call site's line (traceviz line marker); False: only the function
    # is known (Python frames give a function's first line, not the calling line)


PROVENANCE_KERNELS_DTYPES: dict[str, str] = dtypes(ProvenanceKernels)

PROVENANCE_LINES_DTYPES: dict[str, str] = dtypes(ProvenanceLines)

COMPILE_FRAMES_DTYPES: dict[str, str] = dtypes(CompileFrames)

KERNEL_PROVENANCE_DTYPES: dict[str, str] = dtypes(KernelProvenance)

KERNEL_LINES_DTYPES: dict[str, str] = dtypes(KernelLines)
