"""Profile a model eagerly and under torch.compile: two traces, timings, checks, run.json.

MODEL is a built-in name (see `traceviz models`), path/to/file.py:factory or
package.module:factory, where the factory returns (model, example_inputs). The run directory
gets eager.pt.trace.json.gz, compiled.pt.trace.json.gz and run.json (docs/run-json.md).

It ends with the commands to type next (compare, dashboard, HTML report on the run directory).

Exit status: 0 when the compiled model ran and matches eager; 1 when compilation failed (the
eager trace and run.json are still written) or the outputs differ (compiled, or an ONNX Runtime
level with --backends ...,onnxruntime); 2 for bad usage.

examples:
  traceviz run pointwise --device cpu
  traceviz run attention --mode max-autotune --dtype bfloat16 --out runs/attn
  traceviz run my_model.py:make_model --train --steps 3
  traceviz run gpt2 --backends eager,compile,onnxruntime   # + ONNX Runtime (docs/onnxruntime.md)
  traceviz run gpt2 --backends eager,compile,onnxruntime --ort-offline transformers:bert
"""

from __future__ import annotations

import argparse
import shlex
import sys

from rich.console import Console

from traceviz.commands import output
from traceviz.errors import UsageError
from traceviz.runner import Run
from traceviz.runner.display import next_steps, print_run
from traceviz.runner.options import (
    BACKENDS,
    DEFAULT_BACKENDS,
    DEFAULT_ITERS,
    DEFAULT_MODEL,
    DEFAULT_STEPS,
    DEFAULT_WARMUP,
    DEVICES,
    DTYPES,
    MODES,
    parse_backends,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "model",
        nargs="?",
        default=DEFAULT_MODEL,
        metavar="MODEL",
        help=f"built-in name, file.py:factory or module:factory (default: {DEFAULT_MODEL})",
    )
    add_run_options(parser)
    parser.add_argument("--batch-size", type=int, metavar="N", help="batch size for the factory")
    for flag, default, what in (
        ("--steps", DEFAULT_STEPS, "profiled steps per trace"),
        ("--warmup", DEFAULT_WARMUP, "warm-up steps before timing and profiling"),
        ("--iters", DEFAULT_ITERS, "timed steps, outside the profiler"),
    ):
        parser.add_argument(
            flag, type=int, default=default, metavar="N", help=f"{what} ({default})"
        )
    parser.add_argument(
        "--train",
        action="store_true",
        help="profile a training step (forward + backward) instead of inference",
    )
    parser.add_argument(
        "--backends",
        type=parse_backends,
        default=DEFAULT_BACKENDS,
        metavar="LIST",
        help=f"comma-separated, from {', '.join(BACKENDS)} (default: {','.join(DEFAULT_BACKENDS)});"
        " onnxruntime exports the model and runs every ORT optimization level, needs"
        " pip install 'traceviz[onnx]'",
    )
    parser.add_argument(
        "--ort-offline",
        metavar="transformers:TYPE",
        help="with onnxruntime: add onnxruntime.transformers' offline optimizer for model type"
        " TYPE (e.g. transformers:bert; docs/onnxruntime.md) as one more level",
    )


RUN_ONLY = ("batch_size", "train", "steps", "warmup", "iters", "backends", "ort_offline")


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """The options `run` shares with `demo`: device, compile settings, dtype, output."""
    parser.add_argument(
        "--device",
        choices=DEVICES,
        default="auto",
        help="where to run (auto: cuda when available, else cpu)",
    )
    parser.add_argument("--mode", choices=MODES, default="default", help="torch.compile mode")
    parser.add_argument(
        "--backend", default="inductor", help="torch.compile backend (inductor, aot_eager, ...)"
    )
    parser.add_argument(
        "--dtype",
        choices=DTYPES,
        help="cast the model and floating inputs (default: as the factory made them)",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="run directory (default: traceviz-runs/<model>-<device>-<time>)",
    )


def run(args: argparse.Namespace) -> int:
    from traceviz.commands.speed_line import profiled_line, speed_line
    from traceviz.runner.onnx.display import print_backends

    result = profile_from_args(args)
    console = output.console()
    print_run(result, console, speed=speed_line(result.info), notice=profiled_line(result))
    print_backends(result.info, console)
    console.print(next_steps(result))
    return 0 if result.ok and not _ort_outputs_differ(result) else 1


def _ort_outputs_differ(result: Run) -> bool:
    """An ONNX Runtime level's outputs differ from eager's (--backends ...,onnxruntime)."""
    ort = result.info.backends.onnxruntime
    return ort is not None and any(
        level.check is not None and level.check.passed is False for level in ort.levels
    )


def profile_from_args(args: argparse.Namespace) -> Run:
    """Run ``args.model`` with the options of :func:`add_run_options`, showing progress. Without
    torch, a :class:`~traceviz.UsageError` naming the runner extra (found without importing
    it)."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        raise UsageError("profiling a model needs torch: pip install 'traceviz[runner]'")
    from traceviz.runner import profile_model
    from traceviz.runner.progress import RichProgress

    # `demo` has only the shared options; `run` adds these.
    extras = {name: getattr(args, name) for name in RUN_ONLY if hasattr(args, name)}
    return profile_model(
        args.model,
        device=args.device,
        mode=args.mode,
        backend=args.backend,
        dtype=args.dtype,
        out=args.out,
        **extras,
        progress=RichProgress(Console(stderr=True)),
        command=shlex.join(["traceviz", *sys.argv[1:]]),  # as typed, for run.json
    )
