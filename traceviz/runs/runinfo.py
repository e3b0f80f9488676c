"""``run.json``: what the runner measured, as typed, versioned records (no torch needed to read).

The layout is documented field by field in ``docs/run-json.md``. Times are in microseconds
(``_us``) or seconds (``_s``), memory in bytes; every measured number says where it came from.
:data:`SCHEMA_VERSION` grows by one whenever a field is renamed or changes meaning; readers
refuse files from a newer schema instead of misreading them. Adding a field keeps the version.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from traceviz.errors import TraceFormatError
from traceviz.runs.runinfo_backends import Backends, Latency

SCHEMA_VERSION = 1
RUN_JSON = "run.json"
EAGER_TRACE = "eager.pt.trace.json.gz"
COMPILED_TRACE = "compiled.pt.trace.json.gz"
# the eager steps profiled again under the line marks, for source lines only
EAGER_LINES_TRACE = "eager_lines.pt.trace.json.gz"
COMPILE_LOG = "compile_log.jsonl.gz"  # = traceviz.parse.compile_log.COMPILE_LOG


class TensorSpec(msgspec.Struct, frozen=True, kw_only=True):
    """One tensor of the model's inputs or outputs (``path`` is its place in the nesting)."""

    path: str  # "args[0]", "kwargs['input_ids']", "out[1]"
    shape: list[int]
    dtype: str  # "float32", "int64", ...
    device: str  # "cpu", "cuda:0"


class ModelInfo(msgspec.Struct, frozen=True, kw_only=True):
    """What was run."""

    name: str  # built-in name, factory spec or class name
    spec: str | None = None  # the MODEL argument as given (None from the Python API)
    class_name: str  # the module's (or function's) Python class / qualified name
    parameters: int  # number of parameter elements
    parameter_bytes: int
    training: bool  # True for --train (forward + backward per step)
    inputs: list[TensorSpec]
    outputs: list[TensorSpec] = []


class RunOptions(msgspec.Struct, frozen=True, kw_only=True):
    """The options the run was made with, after defaults were applied."""

    device: str  # "cpu" or "cuda" (resolved from "auto")
    mode: str  # torch.compile mode
    backend: str  # torch.compile backend name (a callable backend is recorded by its name)
    dtype: str | None  # dtype the model and floating inputs were cast to; None = as given
    batch_size: int | None  # for built-in models and factories that take it
    train: bool
    steps: int  # profiled (active) steps per trace
    warmup: int  # untimed, unprofiled iterations before timing and before profiling
    iters: int  # timed iterations outside the profiler
    # --backends; older runs: eager, compile
    backends: list[str] = msgspec.field(default_factory=lambda: ["eager", "compile"])
    ort_offline: str | None = None  # --ort-offline, e.g. "transformers:gpt2"


class Environment(msgspec.Struct, frozen=True, kw_only=True):
    """Software and hardware of the run."""

    device: str  # "cpu" / "cuda:0"
    device_name: str  # CPU model name or CUDA device name
    device_count: int  # CUDA devices visible (0 on a CPU run)
    cpu_threads: int  # torch.get_num_threads()
    torch: str
    triton: str | None  # None when Triton is not installed (e.g. CPU-only torch)
    cuda: str | None  # torch.version.cuda
    python: str
    platform: str
    hostname: str


class RunError(msgspec.Struct, frozen=True, kw_only=True):
    """An exception the runner caught and recorded instead of raising."""

    phase: str  # "explain", "compile" (the first compiled call), "warmup", "timing", "profiling"
    type: str  # exception class name
    message: str  # first line of the message ("" when it has none)
    detail: str = ""  # full message (truncated to a few thousand characters)


class CompileInfo(msgspec.Struct, frozen=True, kw_only=True):
    """torch.compile: how it was asked for and how the first call went."""

    backend: str
    mode: str
    ok: bool  # the compiled model ran through compile, warm-up, timing and profiling
    error: RunError | None = None
    time_s: float | None = None  # wall time of the first compiled call (compilation + 1 step)
    mode_options: dict[str, Any] = {}  # config the mode applies, torch._inductor.list_mode_options
    inductor_config: dict[str, Any] = {}  # selected torch._inductor.config values while compiling
    # Compile caches: a hit makes time_s a warm-cache time, not a cold compile.
    fx_graph_cache_hits: int = 0  # Inductor FX graph cache
    fx_graph_cache_misses: int = 0
    aot_autograd_cache_hits: int = 0  # AOTAutograd cache (skips Inductor entirely on a hit)
    aot_autograd_cache_misses: int = 0


class TimingStats(msgspec.Struct, frozen=True, kw_only=True):
    """Step time of one variant, measured outside the profiler.

    Each sample is one step (forward, or forward + backward with --train), bracketed by device
    synchronisation on CUDA, after the warm-up iterations.
    """

    iters: int
    median_us: float
    q1_us: float  # 25th percentile
    q3_us: float  # 75th percentile
    iqr_us: float  # q3 - q1
    min_us: float
    max_us: float
    mean_us: float
    samples_us: list[float]


class Timing(msgspec.Struct, frozen=True, kw_only=True):
    """Eager versus compiled step time; ``speedup`` = eager median / compiled median."""

    method: str  # how a sample was taken, e.g. "perf_counter, torch.cuda.synchronize around step"
    eager: TimingStats
    compiled: TimingStats | None = None
    speedup: float | None = None


class Correctness(msgspec.Struct, frozen=True, kw_only=True):
    """Compiled outputs against eager outputs on the same inputs and weights.

    An element passes when ``|compiled - eager| <= atol + rtol * |eager|`` (NaNs must match)
    with the ``rtol``/``atol`` of its output's own dtype (``tolerances``); ``rtol``/``atol``
    are the loosest of those, the lowest-precision floating output dtype's.
    ``max_rel_error`` is the largest ``|compiled - eager| / max(|eager|, atol)``.
    """

    checked: bool  # False when there was no compiled output to compare
    passed: bool | None = None
    outputs_compared: int = 0  # tensors compared
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    rtol: float | None = None
    atol: float | None = None
    # [rtol, atol] by floating output dtype compared ("tf32" for float32 in TF32); {} in
    # run.json written before outputs were checked each by its own dtype
    tolerances: dict[str, list[float]] = {}
    mismatched: list[str] = []  # output paths that failed, e.g. "out[0]"
    tf32: bool = False  # float32 GEMMs/convs ran in TF32 on CUDA: rtol/atol are TF32's
    elements_compared: int = 0  # elements of all outputs (0 in run.json before it was kept)
    over_rtol: int = 0  # elements whose relative error alone exceeds rtol
    failed_elements: int = 0  # elements outside atol + rtol·|eager|
    worst: str | None = None  # the element of max_rel_error: "out[3, 7]: eager …, compiled …"
    note: str = ""

    def tolerance_text(self) -> str:
        """``"rtol 0.001, atol 0.0001"``; by dtype when outputs of several floating dtypes were
        compared (``"float32: rtol 0.001, atol 0.0001; bfloat16: rtol 0.05, atol 0.05"``)."""
        if len(self.tolerances) > 1:
            return "; ".join(
                f"{d}: rtol {r:g}, atol {a:g}" for d, (r, a) in self.tolerances.items()
            )
        if self.rtol is None or self.atol is None:
            return "no tolerances (nothing compared)"
        return f"rtol {self.rtol:g}, atol {self.atol:g}"


class GraphBreak(msgspec.Struct, frozen=True, kw_only=True):
    """One graph break, as torch._dynamo.explain reports it."""

    reason: str  # one line: the break's headline
    detail: str = ""  # Dynamo's full explanation and hints
    file: str | None = None  # user code location of the break
    line: int | None = None
    function: str | None = None


class CompileRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One Dynamo frame compilation, from torch._dynamo.utils.get_compilation_metrics()."""

    compile_id: str  # "X/Y": frame X, recompile Y (the "Torch-Compiled Region: X/Y" marker)
    function: str | None = None
    file: str | None = None
    line: int | None = None
    graph_ops: int | None = None
    compile_time_s: float | None = None  # whole-frame compile time
    recompile_reason: str | None = None  # the failed guard, for Y > 0
    fail_type: str | None = None
    fail_reason: str | None = None


class DynamoFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What Dynamo itself reported; nothing here is inferred from the trace.

    ``graphs``, ``graph_break_count`` and ``graph_breaks`` come from ``torch._dynamo.explain``
    run on the same inputs just before compiling; ``compiles``, ``recompiles`` and
    ``unique_graphs`` from the real compilation (get_compilation_metrics and
    ``torch._dynamo.utils.counters``); ``counters`` keeps Dynamo's raw graph-break and
    unsupported-feature counters (first line of each message → count).
    """

    graphs: int | None = None
    graph_break_count: int | None = None
    graph_breaks: list[GraphBreak] = []
    unique_graphs: int | None = None
    recompiles: int = 0
    compiles: list[CompileRecord] = []
    counters: dict[str, dict[str, int]] = {}
    explain_error: RunError | None = None


class MemoryStats(msgspec.Struct, frozen=True, kw_only=True):
    """Peak memory of one variant.

    ``profiled_peak_bytes``: from the trace's ``[memory]`` events on the run's device, the
    highest "Total Allocated" during the profiled steps minus the level before the first event,
    i.e. what a step allocates on top of the weights and inputs (the only measure on CPU).
    ``device_peak_allocated_bytes``: torch.cuda.max_memory_allocated over the timed iterations
    (weights included); None on CPU.
    """

    profiled_peak_bytes: int | None = None
    device_peak_allocated_bytes: int | None = None


class Memory(msgspec.Struct, frozen=True, kw_only=True):
    eager: MemoryStats
    compiled: MemoryStats | None = None


class ProfilerSettings(msgspec.Struct, frozen=True, kw_only=True):
    """How both traces were recorded."""

    activities: list[str]  # "CPU", "CUDA"
    wait: int
    warmup: int
    active: int  # = options.steps; the trace holds these ProfilerStep#N spans
    record_shapes: bool
    profile_memory: bool
    cpp_kernel_profile: bool  # torch._inductor.config.cpp.enable_kernel_profile while compiling
    # the eager trace has Python frames (with_stack=True; runs before traceviz 0.1.0's line
    # marks alone, kept for reading older run.json files)
    eager_with_stack: bool = False
    # a trace has "traceviz line <file>(<line>): <function>" spans around each torch call from
    # user code: the lines trace (Traces.eager_lines) when run.json names one; in runs made
    # before it existed, the eager trace itself (older runs still: with eager_with_stack)
    eager_line_marks: bool = False


class Traces(msgspec.Struct, frozen=True, kw_only=True):
    """File names, relative to the run directory."""

    eager: str | None = None
    compiled: str | None = None  # None when compilation failed
    # Structured compile log of the compiled phase (Inductor provenance, compile metrics);
    # None for runs made before it existed or with another backend than inductor.
    compile_log: str | None = None
    # The eager steps profiled a second time under the line marks, used only for source lines
    # (the eager trace has no marks, like the compiled one). None in runs made before it
    # existed (their eager trace holds the marks, see ProfilerSettings.eager_line_marks) and
    # when the marked pass failed.
    eager_lines: str | None = None


class HostPeaks(msgspec.Struct, frozen=True, kw_only=True):
    """The CPU's own peaks, measured once by the runner on a CPU run
    (:mod:`traceviz.runner.host_peaks`), for the roofline of CPU traces (basis ``measured``).

    Each figure is the best of ``repeats`` timed calls (``time.perf_counter`` around each) on
    ``threads`` intra-op threads, the count the run's steps were timed and profiled with.
    """

    cpu: str  # the CPU's model name (/proc/cpuinfo, else platform)
    threads: int  # torch intra-op threads during the measurement
    memory_tbps: float  # copy bandwidth: (bytes read + bytes written) / best time, TB/s
    copy_bytes: int  # size of the copied buffer, bytes (one copy moves 2 × copy_bytes)
    fp32_tflops: float  # torch.mm of two gemm_size × gemm_size float32 matrices: 2·n³ / time
    bf16_tflops: float | None = None  # the same in bfloat16; None: not native on this CPU
    gemm_size: int  # n of the square GEMMs
    repeats: int  # timed calls per figure (after one untimed warm-up call)
    method: str  # one line: how the figures were taken


class RunInfo(msgspec.Struct, frozen=True, kw_only=True):
    """The whole of ``run.json``."""

    schema_version: int = SCHEMA_VERSION
    traceviz_version: str
    created_utc: str  # ISO 8601
    command: str | None = None  # the command line, for runs made by ``traceviz run``
    model: ModelInfo
    options: RunOptions
    environment: Environment
    profiler: ProfilerSettings
    compile: CompileInfo
    timing: Timing
    correctness: Correctness
    dynamo: DynamoFacts
    memory: Memory
    traces: Traces
    # --backends beyond eager/compile (runinfo_backends.py); empty / None for older runs.
    backends: Backends = msgspec.field(default_factory=Backends)
    latency: Latency | None = None
    # the CPU's measured peaks (CPU runs; None on CUDA and for older runs)
    host_peaks: HostPeaks | None = None


def encode(info: RunInfo) -> bytes:
    """run.json bytes: indented, keys in declaration order."""
    return msgspec.json.format(msgspec.json.encode(info), indent=2) + b"\n"


def decode(data: bytes, *, source: str | Path) -> RunInfo:
    """Parse run.json bytes; a bad or newer file raises :class:`TraceFormatError` naming it."""
    try:
        header = msgspec.json.decode(data)
    except msgspec.DecodeError as err:
        raise TraceFormatError(source, f"not valid JSON: {err}") from err
    version = header.get("schema_version") if isinstance(header, dict) else None
    if not isinstance(version, int):
        raise TraceFormatError(source, "no integer schema_version: not a traceviz run.json")
    if version > SCHEMA_VERSION:
        raise TraceFormatError(
            source,
            f"run.json schema {version} is newer than this traceviz reads ({SCHEMA_VERSION}); "
            "upgrade traceviz",
        )
    try:
        return msgspec.convert(header, type=RunInfo)
    except msgspec.ValidationError as err:
        raise TraceFormatError(source, f"run.json does not match schema {version}: {err}") from err


def run_info_of(
    value: RunInfo | dict[str, Any] | None, *, source: str = "run_info"
) -> RunInfo | None:
    """``value`` as a :class:`RunInfo`: a RunInfo passes through, a dict (a run.json read with
    ``json.load``) is validated like a file; a bad one raises :class:`TraceFormatError`."""
    if value is None or isinstance(value, RunInfo):
        return value
    if not isinstance(value, dict):
        raise TraceFormatError(
            source, f"run info must be a RunInfo or a dict, not {type(value).__name__}"
        )
    return decode(msgspec.json.encode(value), source=source)
