"""``profile_model``: run a model eagerly and under torch.compile; trace, time and check both.

The order: for each variant, warm-up (so compilation, caches and allocator growth stay out of
the numbers) and timing outside the profiler; the compiled variant first gets
``torch._dynamo.explain`` (graph breaks) and a timed first call (compilation), the eager
variant a profiling pass under the source-line marks, written to a trace of its own so that
the measured eager trace, like the compiled one, has nothing of traceviz's. Then both are timed
again alternating in blocks (the verdict's step times), and profiled alternating in one
session split into the two traces: profiled under the same conditions as they are timed.
Intra-op threads stay at one count throughout (:func:`~traceviz.runner.measure.pinned_threads`).
A compiled-side failure is recorded in run.json, not raised: the eager trace is still written.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import shutil
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import torch

from traceviz._version import __version__
from traceviz.errors import UsageError
from traceviz.runner import compile_log, dynamo, lines, measure
from traceviz.runner.compare import (
    compare_outputs,
    move_inputs,
    snapshot,
    tensor_specs,
    tf32_in_effect,
)
from traceviz.runner.environment import describe, resolve_device
from traceviz.runner.host_peaks import run_host_peaks
from traceviz.runner.models import LoadedModel, first_line, load_model, one_line
from traceviz.runner.options import (
    DEFAULT_BACKENDS,
    DEFAULT_ITERS,
    DEFAULT_STEPS,
    DEFAULT_WARMUP,
    Options,
    parse_backends,
)
from traceviz.runner.portable import make_portable
from traceviz.runner.progress import Reporter, RichProgress, Silent
from traceviz.runs.run import Run
from traceviz.runs.runinfo import (
    COMPILE_LOG,
    COMPILED_TRACE,
    EAGER_LINES_TRACE,
    EAGER_TRACE,
    RUN_JSON,
    CompileInfo,
    Correctness,
    DynamoFacts,
    HostPeaks,
    Memory,
    MemoryStats,
    ModelInfo,
    RunError,
    RunInfo,
    RunOptions,
    Timing,
    TimingStats,
    Traces,
    decode,
    encode,
)
from traceviz.runs.runinfo_backends import ONNX_DIR, Backends, Latency

Backend = str | Callable[..., Any]


@dataclass(frozen=True)
class Workload:
    """A model placed on its device, with its inputs split into args and kwargs."""

    name: str
    spec: str | None
    fn: Any  # the nn.Module (or callable) to run
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    device: torch.device
    train: bool

    def step(self, fn: Any) -> measure.Step:
        return measure.make_step(fn, self.args, self.kwargs, train=self.train, module=self.fn)


@dataclass(frozen=True)
class Measured:
    """What was measured of one variant (eager or compiled)."""

    timing: TimingStats
    memory: MemoryStats
    outputs: Any
    lines_trace: str | None = None  # eager: the lines trace's file name (None: none written)


@dataclass(frozen=True)
class CompiledResult:
    info: CompileInfo
    dynamo: DynamoFacts
    cpp_kernel_profile: bool
    timing: TimingStats | None = None
    memory: MemoryStats | None = None
    outputs: Any = None
    traced: bool = False
    compile_log: str | None = None  # file name in the run directory
    fn: Any = None  # the compiled model, when it ran through (for other backends' latency)


def profile_model(
    model: Any,
    example_inputs: Any = None,
    *,
    name: str | None = None,
    device: str = "auto",
    mode: str = "default",
    backend: Backend = "inductor",
    dtype: str | None = None,
    batch_size: int | None = None,
    train: bool = False,
    steps: int = DEFAULT_STEPS,
    warmup: int = DEFAULT_WARMUP,
    iters: int = DEFAULT_ITERS,
    out: str | Path | None = None,
    progress: bool | Reporter = False,
    command: str | None = None,
    backends: str | tuple[str, ...] = DEFAULT_BACKENDS,
    ort_offline: str | None = None,
) -> Run:
    """Profile ``model`` eagerly and compiled; write a run directory, return it as a :class:`Run`.

    ``model`` is an ``nn.Module`` (or callable) with ``example_inputs`` (a tuple of positional
    arguments, a dict of keyword arguments, or one tensor), or a MODEL spec string: a built-in
    name (see ``traceviz models``), ``path/to/file.py:factory`` or ``package.module:factory``,
    whose factory (called with ``batch_size`` when given) returns ``(model, example_inputs)``.

    ``steps`` profiled steps per trace, ``warmup`` untimed steps before timing and before
    profiling, ``iters`` timed steps (outside the profiler). ``dtype`` casts the model and the
    floating inputs ("float32", "bfloat16", "float16"); None leaves them as they are.
    ``out`` is the run directory (default ``traceviz-runs/<name>-<device>-<time>``).
    ``progress=True`` shows a rich progress display on stderr.
    ``backends`` ("eager,compile" or with ",onnxruntime") adds backends beyond eager and
    compiled (docs/onnxruntime.md); ``ort_offline="transformers:<model_type>"`` adds the
    offline ``onnxruntime.transformers`` optimizer as one more ONNX Runtime level.

    The module is moved (and cast) in place, as ``nn.Module.to`` does; its train/eval mode is
    restored afterwards. ``torch._dynamo.reset()`` runs before and after, so code compiled
    elsewhere in the process is compiled again on its next call.

    Raises :class:`UsageError` for bad options, an unknown model, a model that fails eagerly,
    or ``device="cuda"`` without CUDA. A failing compilation is recorded, not raised: check
    ``run.ok`` / ``run.problems()``.
    """
    backend_name = backend if isinstance(backend, str) else _callable_name(backend)
    options = Options(
        device=device,
        mode=mode,
        backend=backend_name,
        dtype=dtype,
        batch_size=batch_size,
        train=train,
        steps=steps,
        warmup=warmup,
        iters=iters,
        backends=parse_backends(backends),
        ort_offline=ort_offline,
    )
    if "onnxruntime" in options.backends:  # a missing extra fails now, not after compiling
        from traceviz.runner.onnx.extra import require

        require("onnx")
        require("onnxruntime")
    loaded = _resolve(model, example_inputs, name=name, batch_size=batch_size)
    known = torch._dynamo.list_backends(exclude_tags=()) if isinstance(backend, str) else []
    if isinstance(backend, str) and backend not in known:
        raise UsageError(f"unknown torch.compile backend {backend!r}; known: {', '.join(known)}")
    reporter: Reporter = RichProgress() if progress is True else (progress or Silent())
    try:
        return _profile(loaded, options, backend, out, reporter, command)
    finally:
        reporter.done()


def _profile(
    loaded: LoadedModel,
    options: Options,
    backend: Backend,
    out: str | Path | None,
    reporter: Reporter,
    command: str | None,
) -> Run:
    device = resolve_device(options.device)
    was_training = getattr(loaded.model, "training", None)
    work = _place(loaded, device, options)
    directory = Path(out) if out is not None else default_out_dir(loaded.name, device)
    directory.mkdir(parents=True, exist_ok=True)
    # a rerun into the same directory
    for stale in (EAGER_TRACE, EAGER_LINES_TRACE, COMPILED_TRACE, COMPILE_LOG, RUN_JSON):
        (directory / stale).unlink(missing_ok=True)
    shutil.rmtree(directory / ONNX_DIR, ignore_errors=True)
    dynamo.reset()
    try:
        pinned = measure.pinned_threads(torch.get_num_threads())
        # gradients off for inference runs: no autograd bookkeeping
        with torch.set_grad_enabled(options.train), pinned as threads:
            eager = _run_eager(work, options, directory, reporter)
            compiled = _run_compiled(work, options, backend, directory, reporter)
            eager, compiled = _time_interleaved(work, options, eager, compiled, reporter)
            eager, compiled = _profile_interleaved(
                work, options, eager, compiled, directory, reporter
            )
            extra = _run_backends(work, options, eager, compiled, directory, reporter)
            # last: its 512 MiB of buffers must not disturb the model's timed steps
            host = run_host_peaks(device, threads=threads, reporter=reporter)
    finally:
        dynamo.reset()
        if isinstance(was_training, bool):
            work.fn.train(was_training)
    info = _assemble(work, options, device, eager, compiled, command, extra, host)
    (directory / RUN_JSON).write_bytes(encode(info))
    if make_portable(directory, Path.cwd()):  # source paths relative to the run directory
        info = decode((directory / RUN_JSON).read_bytes(), source=directory / RUN_JSON)
    return Run(directory=directory, info=info)


def _resolve(model: Any, inputs: Any, *, name: str | None, batch_size: int | None) -> LoadedModel:
    if isinstance(model, str):
        loaded = load_model(model, batch_size=batch_size)
        return LoadedModel(name or loaded.name, loaded.spec, loaded.model, loaded.inputs)
    if not callable(model):
        raise UsageError(f"model must be an nn.Module, a callable or a MODEL spec, not {model!r}")
    if inputs is None:
        raise UsageError("profile_model(model, example_inputs): example_inputs is missing")
    if batch_size is not None:
        raise UsageError("batch_size applies to MODEL specs only; pass inputs of that size")
    return LoadedModel(name or _callable_name(model), None, model, inputs)


def _place(loaded: LoadedModel, device: torch.device, options: Options) -> Workload:
    """Move (and cast) the model and inputs; put the model in train or eval mode."""
    dtype = getattr(torch, options.dtype) if options.dtype else None
    fn = loaded.model
    if isinstance(fn, torch.nn.Module):
        fn = fn.to(device=device) if dtype is None else fn.to(device=device, dtype=dtype)
        fn.train(options.train)
    inputs = move_inputs(loaded.inputs, device, dtype)
    args: tuple[Any, ...]
    if isinstance(inputs, dict):
        args, kwargs = (), dict(inputs)
    elif isinstance(inputs, tuple | list):
        args, kwargs = tuple(inputs), {}
    else:
        args, kwargs = (inputs,), {}
    return Workload(loaded.name, loaded.spec, fn, args, kwargs, device, options.train)


def _run_eager(work: Workload, options: Options, directory: Path, reporter: Reporter) -> Measured:
    """Warm up and time the eager model; keep its outputs as the reference; then profile it
    under the line marks (``EAGER_LINES_TRACE``, :func:`_profile_lines`). Its measured trace
    (``EAGER_TRACE``) comes later, interleaved with compiled's (:func:`_profile_interleaved`)."""
    passes = _Passes(work.step(work.fn), measure.synchronizer(work.device), work, options, reporter)
    try:
        reporter.phase("eager: warm-up", options.warmup + 1)
        outputs = snapshot(passes.step())
        reporter.advance()
        measured = _measure(passes, "eager", outputs)
    except UsageError:
        raise
    except Exception as err:
        raise UsageError(f"the model fails in eager mode: {one_line(err)}") from err
    lines_trace = _profile_lines(passes, directory / EAGER_LINES_TRACE)
    return dataclasses.replace(measured, lines_trace=lines_trace)


@dataclasses.dataclass(frozen=True)
class _Passes:
    """What every pass over one variant's steps needs: the step, the device's synchronizer,
    the workload (its device), the options (step counts) and the progress reporter."""

    step: measure.Step
    sync: Callable[[], None]
    work: Workload
    options: Options
    reporter: Reporter


def _profile_lines(passes: _Passes, trace: Path) -> str | None:
    """Profile the eager steps again with each torch call marked with its source line
    (:mod:`traceviz.runner.lines`); return the trace's file name, None when the marked steps
    failed (a model that runs unmarked but not under a TorchFunctionMode: no source lines).

    The marks slow the steps several times over, which would skew every per-step metric in
    compiled's favour: so they get a trace of their own, used only to give the measured eager
    kernels their lines (:func:`traceviz.analysis.fusion.line_transfer.transfer_lines`)."""
    steps, reporter = passes.options.steps, passes.reporter
    reporter.phase(
        "eager: profiling source lines", measure.PROFILER_WAIT + measure.PROFILER_WARMUP + steps
    )
    try:
        with lines.mark_lines():
            measure.profile_steps(
                passes.step,
                passes.sync,
                device=passes.work.device,
                steps=steps,
                path=trace,
                reporter=reporter,
            )
    except Exception:
        trace.unlink(missing_ok=True)
        return None
    return trace.name


def _measure(
    passes: _Passes, label: str, outputs: Any, tracker: _CompiledAttempt | None = None
) -> Measured:
    """Warm-up and timing of one variant, and its device's peak memory over them; ``tracker``
    learns the phase, for errors. Profiling comes later, both variants interleaved."""
    step, sync, reporter = passes.step, passes.sync, passes.reporter
    tracker = tracker or _CompiledAttempt()
    tracker.phase = "warmup"
    measure.warm_up(step, sync, passes.options.warmup, reporter)
    measure.reset_device_peak(passes.work.device)
    tracker.phase = "timing"
    reporter.phase(f"{label}: timing", passes.options.iters)
    samples = measure.interleaved_samples({label: step}, sync, passes.options.iters, reporter)
    timing = measure.timing_stats(samples[label])
    return Measured(timing, measure.device_peak(passes.work.device), outputs)


def _run_compiled(
    work: Workload, options: Options, backend: Backend, directory: Path, reporter: Reporter
) -> CompiledResult:
    """Explain, compile (timed first call), then warm up and time the compiled model (its
    trace comes later, interleaved with eager's: :func:`_profile_interleaved`).

    With Inductor, the compile log (provenance, compile metrics) of everything after explain
    is captured into ``COMPILE_LOG`` (see :mod:`traceviz.runner.compile_log`)."""
    inductor = options.backend == "inductor"
    with dynamo.inductor_settings(work.device) as cpp_kernel_profile:
        config, mode_options = (
            dynamo.inductor_config_in_effect(options.mode) if inductor else ({}, {})
        )
        reporter.phase("dynamo: explain")
        explained, explain_error = None, None
        try:  # explain resets Dynamo before and after
            explained = torch._dynamo.explain(work.fn)(*work.args, **work.kwargs)
        except Exception as err:
            explain_error = _run_error("explain", err)
        dynamo.reset()
        mode = None if options.mode == "default" else options.mode
        compiled_fn = torch.compile(work.fn, backend=backend, mode=mode)
        attempt = _CompiledAttempt()
        log = compile_log.capture(directory / COMPILE_LOG) if inductor else nullcontext()
        with log:
            attempt.run(work.step(compiled_fn), work, options, reporter)
        breaks = dynamo.graph_breaks(explained) if explained is not None else []
        facts = dynamo.facts(explained, breaks, explain_error)
        caches = dynamo.cache_counts()
    info = CompileInfo(
        backend=options.backend,
        mode=options.mode,
        ok=attempt.error is None,
        error=attempt.error,
        time_s=attempt.compile_time_s,
        mode_options=mode_options,
        inductor_config=config,
        **caches,
    )
    measured = attempt.measured
    return CompiledResult(
        info=info,
        dynamo=facts,
        cpp_kernel_profile=cpp_kernel_profile,
        timing=measured.timing if measured else None,
        memory=measured.memory if measured else None,
        outputs=attempt.outputs,
        traced=False,  # until profiled
        compile_log=COMPILE_LOG if inductor else None,
        fn=compiled_fn if attempt.error is None else None,
    )


class _CompiledAttempt:
    """The compiled model's run; an exception stops it and is kept with the phase it hit."""

    def __init__(self) -> None:
        self.phase = "compile"
        self.compile_time_s: float | None = None
        self.outputs: Any = None
        self.measured: Measured | None = None
        self.error: RunError | None = None

    def run(self, step: measure.Step, work: Workload, options: Options, reporter: Reporter) -> None:
        passes = _Passes(step, measure.synchronizer(work.device), work, options, reporter)
        try:
            reporter.phase("compile (first call)")
            passes.sync()
            start = time.perf_counter()
            self.outputs = snapshot(step())  # the first call: compilation included
            passes.sync()
            self.compile_time_s = time.perf_counter() - start
            reporter.phase("compiled: warm-up", options.warmup)
            self.measured = _measure(passes, "compiled", self.outputs, self)
        except Exception as err:
            self.error = _run_error(self.phase, err)


def _time_interleaved(
    work: Workload,
    options: Options,
    eager: Measured,
    compiled: CompiledResult,
    reporter: Reporter,
) -> tuple[Measured, CompiledResult]:
    """The verdict's step times: eager and compiled alternate in blocks of
    :data:`~traceviz.runner.measure.INTERLEAVE_BLOCK` timed steps, each block after one untimed
    step. Load that comes and goes on a shared machine then weighs on both alike, while each
    side runs on its own warm caches (alternating step by step slows a memory-bound model).
    Without a compiled model the eager timing stays as it is."""
    if compiled.fn is None or compiled.timing is None:
        return eager, compiled
    rounds = -(-options.iters // measure.INTERLEAVE_BLOCK)  # ceil; the last block is cut to `iters`
    reporter.phase("eager and compiled: timing, interleaved", rounds)
    samples = measure.interleaved_samples(
        {"eager": work.step(work.fn), "compiled": work.step(compiled.fn)},
        measure.synchronizer(work.device),
        rounds,
        reporter,
        block=measure.INTERLEAVE_BLOCK,
        samples_per_call=options.iters,
    )
    return (
        dataclasses.replace(eager, timing=measure.timing_stats(samples["eager"])),
        dataclasses.replace(compiled, timing=measure.timing_stats(samples["compiled"])),
    )


def _profile_interleaved(
    work: Workload,
    options: Options,
    eager: Measured,
    compiled: CompiledResult,
    directory: Path,
    reporter: Reporter,
) -> tuple[Measured, CompiledResult]:
    """The measured traces: eager and compiled profiled in one session, taking turns
    (:func:`~traceviz.runner.measure.profile_interleaved`), so that load on the machine weighs
    on both alike, as in :func:`_time_interleaved`; eager alone when compiled failed before.
    A compiled step failing here is recorded (phase "profiling") and eager is profiled alone.
    Each side's profiled peak memory is read from its trace.

    Nothing traceviz adds runs in the profiled steps but their closing device sync (annotated
    ``traceviz step sync``, left out of the blocking calls): no Python frames (``with_stack``,
    several times slower); the source-line marks have their own pass (:func:`_profile_lines`)."""
    calls = {"eager": work.step(work.fn)}
    paths = {"eager": directory / EAGER_TRACE}
    if compiled.fn is not None and compiled.timing is not None:
        calls["compiled"] = work.step(compiled.fn)
        paths["compiled"] = directory / COMPILED_TRACE
    try:
        _profile_calls(work, options, calls, paths, reporter)
    except Exception as err:
        if len(calls) == 1:
            raise UsageError(f"the model fails in eager mode: {one_line(err)}") from err
        # as a failure in any earlier phase: no timing, memory or trace; the error in run.json
        info = msgspec.structs.replace(compiled.info, ok=False, error=_run_error("profiling", err))
        compiled = dataclasses.replace(
            compiled, info=info, timing=None, memory=None, traced=False, fn=None
        )
        calls, paths = {"eager": calls["eager"]}, {"eager": paths["eager"]}
        _profile_calls(work, options, calls, paths, reporter)
    eager = dataclasses.replace(
        eager, memory=_with_profiled_peak(eager.memory, paths["eager"], work)
    )
    if "compiled" not in paths or compiled.memory is None:
        return eager, compiled
    memory = _with_profiled_peak(compiled.memory, paths["compiled"], work)
    return eager, dataclasses.replace(compiled, memory=memory, traced=True)


def _profile_calls(
    work: Workload,
    options: Options,
    calls: dict[str, measure.Step],
    paths: dict[str, Path],
    reporter: Reporter,
) -> None:
    what = " and ".join(calls) + (": profiling, interleaved" if len(calls) > 1 else ": profiling")
    reporter.phase(what, len(measure.profile_plan(list(calls), options.steps)))
    measure.profile_interleaved(
        calls,
        measure.synchronizer(work.device),
        device=work.device,
        steps=options.steps,
        paths=paths,
        reporter=reporter,
    )


def _with_profiled_peak(memory: MemoryStats, trace: Path, work: Workload) -> MemoryStats:
    """``memory`` with the peak a profiled step allocates, read from the side's trace."""
    peak = measure.profiled_peak_bytes(trace, work.device)
    return msgspec.structs.replace(memory, profiled_peak_bytes=peak)


def _run_backends(
    work: Workload,
    options: Options,
    eager: Measured,
    compiled: CompiledResult,
    directory: Path,
    reporter: Reporter,
) -> tuple[Backends, Latency | None]:
    """The backends beyond eager and compiled (``--backends``); none: empty sections."""
    if "onnxruntime" not in options.backends:
        return Backends(), None
    from traceviz.runner.onnx.backend import OrtJob, run_onnxruntime

    calls = {"eager": work.step(work.fn)}
    if compiled.fn is not None:
        calls["compile"] = work.step(compiled.fn)
    job = OrtJob(
        fn=work.fn,
        args=work.args,
        kwargs=work.kwargs,
        eager_outputs=eager.outputs,
        calls=calls,
        sync=measure.synchronizer(work.device),
        device_type=work.device.type,
        warmup=options.warmup,
        steps=options.steps,
        iters=options.iters,
        offline=options.ort_offline,
    )
    return run_onnxruntime(job, directory, reporter)


def _assemble(
    work: Workload,
    options: Options,
    device: torch.device,
    eager: Measured,
    compiled: CompiledResult,
    command: str | None,
    extra: tuple[Backends, Latency | None] = (Backends(), None),
    host: HostPeaks | None = None,
) -> RunInfo:
    """Every measured fact, as run.json."""
    c_timing = compiled.timing
    speedup = eager.timing.median_us / c_timing.median_us if c_timing else None
    correctness = (
        compare_outputs(eager.outputs, compiled.outputs, tf32=tf32_in_effect(work.fn, device))
        if compiled.info.time_s is not None  # the first compiled call returned
        else Correctness(checked=False, note="no compiled outputs: compilation failed")
    )
    return RunInfo(
        traceviz_version=__version__,
        created_utc=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        command=command,
        model=_model_info(work, eager.outputs),
        options=RunOptions(
            device=device.type,
            mode=options.mode,
            backend=options.backend,
            dtype=options.dtype,
            batch_size=options.batch_size,
            train=options.train,
            steps=options.steps,
            warmup=options.warmup,
            iters=options.iters,
            backends=list(options.backends),
            ort_offline=options.ort_offline,
        ),
        environment=describe(device),
        profiler=measure.profiler_settings(
            device,
            options.steps,
            cpp_kernel_profile=compiled.cpp_kernel_profile,
            eager_line_marks=eager.lines_trace is not None,
        ),
        compile=compiled.info,
        timing=Timing(
            method=measure.timing_method(device, interleaved=compiled.fn is not None),
            eager=eager.timing,
            compiled=c_timing,
            speedup=speedup,
        ),
        correctness=correctness,
        dynamo=compiled.dynamo,
        memory=Memory(eager=eager.memory, compiled=compiled.memory),
        traces=Traces(
            eager=EAGER_TRACE,
            compiled=COMPILED_TRACE if compiled.traced else None,
            compile_log=compiled.compile_log,
            eager_lines=eager.lines_trace,
        ),
        backends=extra[0],
        latency=extra[1],
        host_peaks=host,
    )


def _model_info(work: Workload, outputs: Any) -> ModelInfo:
    params = list(work.fn.parameters()) if isinstance(work.fn, torch.nn.Module) else []
    return ModelInfo(
        name=work.name,
        spec=work.spec,
        class_name=_callable_name(work.fn),
        parameters=sum(p.numel() for p in params),
        parameter_bytes=sum(p.numel() * p.element_size() for p in params),
        training=work.train,
        inputs=tensor_specs(work.args, "args") + tensor_specs(work.kwargs, "kwargs"),
        outputs=tensor_specs(outputs, "out"),
    )


def default_out_dir(name: str, device: torch.device) -> Path:
    """``traceviz-runs/<name>-<device type>-<YYYYmmdd-HHMMSS>`` under the working directory."""
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "model"
    return Path("traceviz-runs") / f"{safe}-{device.type}-{stamp}"


def _callable_name(obj: Any) -> str:
    """A function's qualified name, or the class name of a module or other callable object."""
    return str(getattr(obj, "__qualname__", None) or type(obj).__qualname__)


def _run_error(phase: str, err: BaseException) -> RunError:
    inner = getattr(err, "inner_exception", None)  # Dynamo's BackendCompilerFailed wraps one
    root = inner if isinstance(inner, BaseException) else err
    return RunError(
        phase=phase,
        type=type(root).__name__,
        message=first_line(str(root)),
        detail=str(err)[:4000],
    )
