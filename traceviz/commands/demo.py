"""Demo: profile the default model eagerly and compiled on the best device, then compare.

Runs the default built-in model, `block` (LayerNorm, a matmul and its bias add, a pointwise
chain, a residual add: Inductor cuts 8 kernels per step to 3 on CPU; see `traceviz models`),
with torch.compile on CUDA when available, else on the CPU, prints the eager-vs-compiled
comparison and the step-time result, then the commands to look further (compare, dashboard).

examples:
  traceviz demo
  traceviz demo --model mlp --device cpu --out runs/demo
"""

from __future__ import annotations

import argparse
import io
from collections.abc import Callable
from functools import partial

from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

import traceviz
from traceviz.commands import output
from traceviz.commands.run import add_run_options, profile_from_args
from traceviz.runner import DEFAULT_MODEL, Run
from traceviz.runner.display import next_steps, print_run

SIDE_BY_SIDE_MIN_WIDTH = 160  # narrower terminals get the summaries one under the other


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model", default=DEFAULT_MODEL, help=f"built-in model or factory ({DEFAULT_MODEL})"
    )
    add_run_options(parser)


def run(args: argparse.Namespace) -> int:
    from traceviz.commands.speed_line import speed_line

    console = output.console()
    console.rule(f"traceviz demo: {args.model}, eager vs torch.compile")
    result = profile_from_args(args)
    show_result(result, console)
    print_run(result, console, speed=speed_line(result.info))
    console.print(next_steps(result))
    return 0 if result.ok else 1


def show_result(result: Run, console: Console) -> None:
    """The eager-vs-compiled comparison (the trace summaries when there is no compiled trace)."""
    from traceviz.pipeline import open_report
    from traceviz.report.text import render_comparison

    if result.eager_trace is None or result.compiled_trace is None:
        show_summaries(result, console)
        return
    render_comparison(open_report(result), console, top=5)  # as `traceviz compare RUN_DIR`


def show_summaries(result: Run, console: Console) -> None:
    """The eager and the compiled trace summaries, side by side when the terminal is wide."""
    from traceviz.report.text import print_summary

    wide = console.width >= SIDE_BY_SIDE_MIN_WIDTH
    width = console.width // 2 - 2 if wide else console.width
    panes: list[tuple[str, RenderableType]] = []
    for label, path in (("eager", result.eager_trace), ("compiled", result.compiled_trace)):
        if path is not None:
            draw = partial(print_summary, traceviz.load(path), top=5)
            panes.append((label, _render(draw, console, width)))
    if wide and len(panes) == 2:
        grid = Table.grid(padding=(0, 2))
        grid.add_row(*(Text(label.upper(), style="bold") for label, _ in panes))
        grid.add_row(*(pane for _, pane in panes))
        console.print(grid)
        return
    for label, pane in panes:
        console.rule(label)
        console.print(pane)


def _render(draw: Callable[[Console], None], console: Console, width: int) -> Text:
    """What ``draw(console)`` prints, captured at ``width`` columns with the same colours (and,
    off a terminal, the same ASCII)."""
    buffer = io.StringIO()
    capture = output.console(
        file=buffer, width=width, force_terminal=console.is_terminal,
        color_system=console.color_system,
    )  # fmt: skip
    draw(capture)
    return Text.from_ansi(buffer.getvalue())
