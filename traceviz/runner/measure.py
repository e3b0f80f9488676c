"""Running steps: warm-up, timing outside the profiler, profiling with a schedule, peak memory.

A *step* is one call of the model on the example inputs (plus loss and backward with
``train=True``). Times are microseconds; on CUDA every timed step is bracketed by
``torch.cuda.synchronize`` so it measures the device work, not just the launches.
"""

from __future__ import annotations

import contextlib
import gzip
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import torch
from torch.profiler import ProfilerActivity

from traceviz.errors import UsageError
from traceviz.parse.compile_log import STEP_SYNC_MARK
from traceviz.runner.progress import Reporter
from traceviz.runner.split_trace import split_trace
from traceviz.runner.stderr import without_profiler_chatter
from traceviz.runs.runinfo import MemoryStats, ProfilerSettings, TimingStats

Step = Callable[[], Any]
Planned = tuple[str, bool]  # (side, kept) of one step of an interleaved profiling session

# Profiler schedule around the active steps: one step skipped, one traced and discarded.
PROFILER_WAIT = 1
PROFILER_WARMUP = 1
# c10::DeviceType codes of the trace's "[memory]" events.
_DEVICE_TYPE_CODE = {"cpu": 0, "cuda": 1}


def make_step(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    train: bool,
    module: Any,
) -> Step:
    """One step of ``fn``: a forward call, or with ``train`` zero-grad, forward, loss, backward.

    Grad mode is the caller's business (``torch.set_grad_enabled(train)``).
    """
    if not train:
        return lambda: fn(*args, **kwargs)

    def train_step() -> Any:
        if isinstance(module, torch.nn.Module):
            module.zero_grad(set_to_none=True)
        out = fn(*args, **kwargs)
        training_loss(out).backward()
        return out

    return train_step


def training_loss(out: Any) -> torch.Tensor:
    """Sum of the means of the floating outputs that require grad (a scalar to backprop)."""
    leaves = [
        t
        for t in torch.utils._pytree.tree_leaves(out)
        if isinstance(t, torch.Tensor) and t.is_floating_point() and t.requires_grad
    ]
    if not leaves:
        raise UsageError("--train: none of the model's outputs requires grad")
    return torch.stack([t.float().mean() for t in leaves]).sum()


def synchronizer(device: torch.device) -> Callable[[], None]:
    """A function that waits for the device's queued work (a no-op on CPU, which is synchronous)."""
    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    return lambda: None


INTERLEAVE_BLOCK = 5  # timed steps of one side before the other side's turn (eager vs compiled)


def timing_method(device: torch.device, *, interleaved: bool = False) -> str:
    if device.type == "cuda":
        how = "time.perf_counter around each step, torch.cuda.synchronize before and after"
    else:
        how = "time.perf_counter around each step (CPU execution is synchronous)"
    return how + (
        f"; eager and compiled alternate in blocks of {INTERLEAVE_BLOCK} timed steps"
        if interleaved
        else ""
    )


def warm_up(step: Step, sync: Callable[[], None], iters: int, reporter: Reporter) -> None:
    """Run ``iters`` untimed, unprofiled steps (caches, allocator, autotuning settle)."""
    for _ in range(iters):
        step()
        reporter.advance()
    sync()


def interleaved_samples(
    calls: dict[str, Callable[[], Any]],
    sync: Callable[[], None],
    rounds: int,
    reporter: Reporter,
    *,
    block: int = 1,
    samples_per_call: int | None = None,
) -> dict[str, list[float]]:
    """Step times in µs of each call in ``calls``, taken in turn: each round runs every call
    for ``block`` timed steps, so drift in the machine's speed (other load on a shared
    machine, clocks) hits them all alike instead of whichever was timed during the slow
    minute. With ``block > 1`` each block starts with one untimed step, so that a call is not
    timed on caches the other one just left cold (``rounds * block`` samples per call, or
    ``samples_per_call`` when given: the last block is cut short)."""
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            if block > 1:
                call()  # the switch from the other call: not timed
            for _ in range(block):
                if samples_per_call is not None and len(samples[name]) >= samples_per_call:
                    break
                sync()
                start = time.perf_counter()
                call()
                sync()
                samples[name].append((time.perf_counter() - start) * 1e6)
        reporter.advance()
    return samples


def timing_stats(samples_us: list[float]) -> TimingStats:
    """Median, quartiles and extremes of step-time samples (µs)."""
    values = np.asarray(samples_us, dtype=np.float64)
    q1, median, q3 = (float(v) for v in np.percentile(values, [25, 50, 75]))
    return TimingStats(
        iters=len(samples_us),
        median_us=median,
        q1_us=q1,
        q3_us=q3,
        iqr_us=q3 - q1,
        min_us=float(values.min()),
        max_us=float(values.max()),
        mean_us=float(values.mean()),
        samples_us=[round(v, 3) for v in samples_us],
    )


def profiler_settings(
    device: torch.device, steps: int, *, cpp_kernel_profile: bool, eager_line_marks: bool = False
) -> ProfilerSettings:
    return ProfilerSettings(
        activities=[a.name for a in _activities(device)],
        wait=PROFILER_WAIT,
        warmup=PROFILER_WARMUP,
        active=steps,
        record_shapes=True,
        profile_memory=True,
        cpp_kernel_profile=cpp_kernel_profile,
        eager_line_marks=eager_line_marks,
    )


def _activities(device: torch.device) -> list[ProfilerActivity]:
    if device.type == "cuda":
        return [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    return [ProfilerActivity.CPU]


def profile_steps(
    step: Step,
    sync: Callable[[], None],
    *,
    device: torch.device,
    steps: int,
    path: Path,
    reporter: Reporter,
) -> None:
    """Trace ``steps`` steps (``ProfilerStep#N``) after the schedule's wait and warm-up steps,
    and write the Chrome trace to ``path`` (gzip when it ends in ``.gz``)."""
    path.unlink(missing_ok=True)
    calls = [step] * (PROFILER_WAIT + PROFILER_WARMUP + steps)
    _record(calls, sync, device=device, path=path, reporter=reporter)


def _record(
    calls: Sequence[Step],
    sync: Callable[[], None],
    *,
    device: torch.device,
    path: Path,
    reporter: Reporter,
) -> None:
    """One profiler session: ``calls[N]`` runs as ``ProfilerStep#N``, each closed by the
    device wait; every step after the schedule's wait and warm-up is recorded, and the Chrome
    trace written to ``path``. :class:`RuntimeError` when the profiler wrote none.

    ``record_shapes`` is on because Inductor attaches its kernel metadata only then;
    ``profile_memory`` records the allocator events peak memory is read from."""
    closing_sync = _marked_sync(sync, device)
    schedule = torch.profiler.schedule(
        wait=PROFILER_WAIT, warmup=PROFILER_WARMUP,
        active=len(calls) - PROFILER_WAIT - PROFILER_WARMUP, repeat=1,
    )  # fmt: skip
    with (
        without_profiler_chatter(),
        torch.profiler.profile(
            activities=_activities(device),
            schedule=schedule,
            on_trace_ready=lambda prof: prof.export_chrome_trace(str(path)),
            record_shapes=True,
            profile_memory=True,
        ) as prof,
    ):
        for call in calls:
            call()
            closing_sync()
            prof.step()
            reporter.advance()
    if not path.is_file():
        raise RuntimeError(f"the profiler wrote no trace to {path}")


#: Profiled steps of one side before the other's turn when both are profiled in one session.
PROFILE_BLOCK = 1


def profile_plan(sides: Sequence[str], steps: int, *, block: int = PROFILE_BLOCK) -> list[Planned]:
    """Which side runs each step of an interleaved profiling session, and whether the step is
    kept: ``plan[N]`` is ``(side, kept)`` for ``ProfilerStep#N``. The schedule's wait and
    warm-up steps come first (not kept, the sides in turn); then the sides take turns, each
    turn one step that is not kept (the switch from the other side: as in the timing, a side
    is not measured on caches the other one just left cold) and ``block`` kept steps, until
    each side has ``steps``. One side alone has no switch steps (a session of its own)."""
    plan = [(sides[i % len(sides)], False) for i in range(PROFILER_WAIT + PROFILER_WARMUP)]
    kept = dict.fromkeys(sides, 0)
    while any(kept[side] < steps for side in sides):
        for side in sides:
            n = min(block, steps - kept[side])
            if n <= 0:
                continue
            if len(sides) > 1:
                plan.append((side, False))
            plan += [(side, True)] * n
            kept[side] += n
    return plan


def profile_interleaved(
    calls: dict[str, Step],
    sync: Callable[[], None],
    *,
    device: torch.device,
    steps: int,
    paths: dict[str, Path],
    reporter: Reporter,
) -> None:
    """Profile the ``calls`` (eager and compiled) in one session, taking turns as
    :func:`profile_plan` says, and write each one's kept steps to ``paths[name]``
    (:func:`traceviz.runner.split_trace.split_trace`). Load that comes and goes on a busy
    machine then weighs on both sides' profiled steps alike, as on their timed steps
    (:func:`interleaved_samples`)."""
    plan = profile_plan(list(calls), steps)
    raw = next(iter(paths.values())).with_name("interleaved.pt.trace.json")
    for path in (raw, *paths.values()):
        path.unlink(missing_ok=True)
    try:
        _record([calls[side] for side, _ in plan], sync, device=device, path=raw, reporter=reporter)
        split_trace(raw, plan, paths)
    finally:
        raw.unlink(missing_ok=True)


def _marked_sync(sync: Callable[[], None], device: torch.device) -> Callable[[], None]:
    """The profiled step's closing wait for the device, inside a ``traceviz step sync``
    annotation: it is the harness's, not the model's, and the analysis leaves it out of the
    blocking calls, where it would read as a sync in the model. On CPU the wait is a no-op
    and the trace stays unannotated."""
    if device.type != "cuda":
        return sync

    def marked() -> None:
        with torch.profiler.record_function(STEP_SYNC_MARK):
            sync()

    return marked


class _MemoryArgs(msgspec.Struct):
    total_allocated: int | None = msgspec.field(default=None, name="Total Allocated")
    nbytes: int | None = msgspec.field(default=None, name="Bytes")
    device_type: int | None = msgspec.field(default=None, name="Device Type")
    device_id: int | None = msgspec.field(default=None, name="Device Id")


class _Event(msgspec.Struct):
    name: str = ""
    args: _MemoryArgs | None = None


class _TraceDoc(msgspec.Struct):
    traceEvents: list[_Event] = []  # the trace's own key


def profiled_peak_bytes(path: Path, device: torch.device) -> int | None:
    """Peak bytes a profiled step allocates above the level before the profiled window.

    Read from the trace's ``[memory]`` events on ``device`` (its type, and for CUDA its index:
    another GPU's allocations are not this run's peak); None when there are none.
    """
    code = _DEVICE_TYPE_CODE.get(device.type)
    index = None  # CUDA: the device's index (the current device for a bare ``cuda``)
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
    with gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb") as fh:
        doc = msgspec.json.decode(fh.read(), type=_TraceDoc)
    totals: list[int] = []
    baseline: int | None = None
    for event in doc.traceEvents:
        a = event.args
        if event.name != "[memory]" or a is None or a.device_type != code:
            continue
        if index is not None and a.device_id is not None and a.device_id != index:
            continue
        if a.total_allocated is None:
            continue
        if baseline is None:
            baseline = a.total_allocated - (a.nbytes or 0)
        totals.append(a.total_allocated)
    if baseline is None:
        return None
    return max(0, max(totals) - baseline)


def reset_device_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def device_peak(device: torch.device) -> MemoryStats:
    """The device's peak allocated bytes since :func:`reset_device_peak` (None on CPU); the
    profiled peak is read from the trace later (:func:`profiled_peak_bytes`)."""
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None
    return MemoryStats(device_peak_allocated_bytes=peak)


@contextlib.contextmanager
def pinned_threads(threads: int) -> Iterator[int]:
    """Intra-op threads set to ``threads`` (``torch.set_num_threads``) for the timing and the
    profiling of both variants, restored on exit: eager, compiled and their profiled and timed
    steps run on one stated thread count (Inductor's C++ kernels, compiled inside, are
    generated for the count in effect when they are compiled)."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield threads
    finally:
        torch.set_num_threads(before)
