"""A run's result as rich text: timings, compile, correctness, Dynamo facts, memory, files.

Problems (a failed compilation, compiled outputs that differ from eager) are shown in a red
panel first, so they cannot be missed.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from traceviz.analysis.timing.speed import ratio_words
from traceviz.runs.run import Run
from traceviz.runs.runinfo import Correctness, RunInfo, TimingStats
from traceviz.units import fmt_bytes, fmt_us


def print_run(
    run: Run, console: Console, *, speed: str | None = None, notice: str | None = None
) -> None:
    """Print the whole result of ``run``; ``speed`` is the timed steps' statistical verdict,
    printed under the timing table, and ``notice`` the note that the profiled steps are not
    representative, printed first (both from ``traceviz.commands.speed_line``: this layer
    cannot reach the analysis that makes them)."""
    if notice:
        console.print(Text(notice, style="bold yellow"))
    problems = run.problems()
    if problems:
        console.print(Panel("\n".join(problems), title="[bold]PROBLEM[/]", border_style="bold red"))
    console.print(headline(run.info))
    console.print(timing_table(run.info))
    if speed:
        console.print(Text(speed))
    console.print(facts_text(run.info))
    console.print(files_text(run))


def headline(info: RunInfo) -> Text:
    env, opts = info.environment, info.options
    dtype = opts.dtype or ", ".join(sorted({t.dtype for t in info.model.inputs})) or "-"
    mode = "train step" if opts.train else "inference"
    return Text.assemble(
        (info.model.name, "bold"),
        f" on {env.device} ({env.device_name}) · torch {env.torch} · "
        f"{opts.backend}/{opts.mode} · {dtype} · {mode}",
    )


def timing_table(info: RunInfo) -> Table:
    """Median step time with its quartiles for eager and compiled, and the speedup; the
    caption says how the steps were timed (e.g. eager and compiled alternating in blocks)."""
    t = info.timing
    table = Table(
        title=f"step time, {t.eager.iters} timed steps each, outside the profiler",
        caption=t.method,
    )
    for column in ("", "median", "IQR (q1–q3)", "min"):
        table.add_column(column, justify="right" if column else "left")
    table.add_row("eager", *_timing_cells(t.eager))
    if t.compiled is not None:
        table.add_row("compiled", *_timing_cells(t.compiled))
    else:
        table.add_row("compiled", "[red]failed[/]", "", "")
    if t.speedup is not None and t.speedup > 0:  # eager's median over compiled's
        style = "green" if t.speedup >= 1.0 else "yellow"
        words = ratio_words(1 / t.speedup)  # compiled against eager, one way round
        table.add_row("compiled", f"[bold {style}]{words}[/]", "", "")
    return table


def _timing_cells(stats: TimingStats) -> tuple[str, str, str]:
    return (
        fmt_us(stats.median_us),
        f"{fmt_us(stats.q1_us)} – {fmt_us(stats.q3_us)}",
        fmt_us(stats.min_us),
    )


def facts_text(info: RunInfo) -> Group:
    """Compile, correctness, Dynamo and memory facts, one line each (breaks indented)."""
    lines = [_compile_line(info), _correctness_line(info), _dynamo_line(info)]
    lines += [
        Text(
            f"    graph break: {b.reason}" + (f"  ({Path(b.file).name}:{b.line})" if b.file else "")
        )
        for b in info.dynamo.graph_breaks
    ]
    lines += [
        Text(f"    recompile {c.compile_id}: {c.recompile_reason}")
        for c in info.dynamo.compiles
        if c.recompile_reason
    ]
    lines.append(_memory_line(info))
    return Group(*lines)


def _compile_line(info: RunInfo) -> Text:
    c = info.compile
    if c.error is not None:
        return Text(f"compile: FAILED during {c.error.phase}: {c.error.type}", style="bold red")
    hits = c.fx_graph_cache_hits + c.aot_autograd_cache_hits
    cache = "cold: no compile-cache hits" if hits == 0 else f"warm: {hits} compile-cache hit(s)"
    time_s = f"{c.time_s:.1f} s" if c.time_s is not None else "n/a"
    return Text(f"compile (first call): {time_s}  ({cache})")


def _correctness_line(info: RunInfo) -> Text:
    c = info.correctness
    if not c.checked:
        return Text(f"correctness: not checked ({c.note})", style="yellow")
    if c.max_abs_error is None or c.max_rel_error is None or c.rtol is None or c.atol is None:
        verdict = ("PASS", "green") if c.passed else ("MISMATCH", "bold red")
        return Text.assemble("correctness: ", verdict, f"  {c.note}")
    if c.passed:
        return Text.assemble("correctness: ", ("PASS", "green"), f"  {_pass_detail(c)}")
    return Text.assemble("correctness: ", ("MISMATCH", "bold red"), f"  {_mismatch_detail(c)}")


def _bounds(c: Correctness) -> str:
    tf32 = ", TF32" if c.tf32 else ""
    if len(c.tolerances) > 1:
        each = c.tolerance_text()
        return f"|compiled − eager| ≤ atol + rtol·|eager| of each output's dtype ({each})"
    return f"|compiled − eager| ≤ atol {c.atol:g} + rtol {c.rtol:g}·|eager|{tf32}"


def _errors(c: Correctness) -> str:
    where = f" at {c.worst}" if c.worst else ""
    return f"max rel error {c.max_rel_error:.3g}{where}; max abs error {c.max_abs_error:.3g}"


def _pass_detail(c: Correctness) -> str:
    """Every element within allclose's bound; which exceed rtol alone (near-zero values, where
    atol is the bound) so a max rel error above rtol is no contradiction."""
    n = c.elements_compared
    everything = f"all {n:,} elements" if n else "every element"
    outputs = f" of {c.outputs_compared} output(s)" if c.outputs_compared else ""
    head = f"allclose passed: {everything}{outputs} within {_bounds(c)}"
    if c.over_rtol == 0 and (c.max_rel_error or 0.0) <= (c.rtol or 0.0):
        return f"{head}; {_errors(c)}"
    some = f"{c.over_rtol:,} of them exceed" if n else "some exceed"
    why = "small |eager|, where atol dominates the bound"
    return f"{head}; {some} rtol alone ({why}): {_errors(c)}"


def _mismatch_detail(c: Correctness) -> str:
    n, bad = c.elements_compared, c.failed_elements
    count = f"{bad:,} of {n:,} elements" if n else "elements"
    outputs = ", ".join(c.mismatched) or c.note or "?"
    return f"allclose failed: {count} outside {_bounds(c)} (in {outputs}); {_errors(c)}"


def _dynamo_line(info: RunInfo) -> Text:
    d = info.dynamo
    if d.explain_error is not None:
        return Text(f"dynamo: explain failed ({d.explain_error.message})", style="yellow")
    breaks = d.graph_break_count if d.graph_break_count is not None else "?"
    style = "yellow" if d.graph_break_count or d.recompiles else ""
    return Text(
        f"dynamo: {d.graphs} graph(s), {breaks} graph break(s), {d.recompiles} recompile(s)",
        style=style,
    )


def _memory_line(info: RunInfo) -> Text:
    m = info.memory
    eager = fmt_bytes(m.eager.profiled_peak_bytes)
    compiled = fmt_bytes(m.compiled.profiled_peak_bytes) if m.compiled else "n/a"
    line = f"peak memory allocated per step: eager {eager}, compiled {compiled}"
    if m.eager.device_peak_allocated_bytes is not None:
        device_compiled = m.compiled.device_peak_allocated_bytes if m.compiled else None
        line += (
            f"; device peak eager {fmt_bytes(m.eager.device_peak_allocated_bytes)}, "
            f"compiled {fmt_bytes(device_compiled)}"
        )
    return Text(line)


def files_text(run: Run) -> Text:
    lines = run.eager_lines_trace if run.info.traces.eager_lines else None  # its own file
    files = (run.eager_trace, lines, run.compiled_trace, run.compile_log)
    names = [p for p in files if p is not None]
    listing = ", ".join(p.name for p in names)
    return Text(f"written to {run.directory}: run.json, {listing}", style="dim")


def next_steps(run: Run) -> Text:
    """The commands to type next on the run directory: compare it, open the dashboard, write
    the HTML report (a summary of the eager trace when there is no compiled one)."""
    directory = shlex.quote(str(run.directory))
    if run.compiled_trace is None:
        eager = shlex.quote(str(run.eager_trace)) if run.eager_trace else directory
        lines = [f"next: traceviz summary {eager}"]
    else:
        lines = [
            f"next: traceviz compare {directory}",
            f"      traceviz dashboard {directory}",
            f"      traceviz compare {directory} --format html -o report.html",
        ]
    return Text("\n".join(lines), style="bold")
