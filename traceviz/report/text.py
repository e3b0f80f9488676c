"""Terminal rendering with rich tables."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from traceviz.analysis.summary import TraceSummary, summarize
from traceviz.report.units import fmt_bytes, fmt_count, fmt_name, fmt_pct, fmt_us
from traceviz.trace import Trace


def print_summary(trace: Trace, console: Console, *, top: int = 10) -> None:
    """Print the summary of one trace (see :func:`traceviz.analysis.summary.summarize`)."""
    render_summary(summarize(trace, top=top), console)


def render_summary(summary: TraceSummary, console: Console) -> None:
    """Print a :class:`TraceSummary` as a headline table and detail tables."""
    console.print(_headline(summary))
    if len(summary.activities):
        console.print(_activities(summary))
    if len(summary.top_kernels):
        console.print(_top_kernels(summary))
    if len(summary.launch_classes):
        console.print(_launch_classes(summary))
    if len(summary.region_kinds):
        console.print(_regions(summary))


def _headline(s: TraceSummary) -> Table:
    table = Table(title=f"Trace summary: {s.source}", show_header=False, title_justify="left")
    table.add_column("what", style="bold")
    table.add_column("value")
    devices = ", ".join(sorted(set(s.device_names))) or "–"
    rows = [
        ("device", f"{s.device} ({devices})"),
        ("time span", fmt_us(s.span_us)),
        ("steps", f"{s.step_count}" + (f", mean {fmt_us(s.step_mean_us)}" if s.step_mean_us else "")),
        ("kernels", f"{fmt_count(s.kernel_count)} ({fmt_us(s.kernel_time_us)} device time, measured)"),
        ("memcpy", f"{fmt_count(s.memcpy_count)} ({fmt_bytes(s.memcpy_bytes)})"),
        ("memset", fmt_count(s.memset_count)),
        ("launch API calls", f"{fmt_count(s.launch_count)} ({fmt_us(s.launch_api_time_us)} CPU time)"),
        ("compiled regions", f"{fmt_count(s.compiled_region_calls)} calls"),
        ("peak allocated", fmt_bytes(s.peak_allocated_bytes)
         if s.peak_allocated_bytes is not None else "– (no memory events)"),
        ("events", f"{fmt_count(s.events_in)} in, {fmt_count(s.events_ignored)} carry no row "
         + _ignored_text(s.ignored)),
    ]  # fmt: skip
    for what, value in rows:
        table.add_row(what, value)
    return table


def _ignored_text(ignored: dict[str, int]) -> str:
    if not ignored:
        return ""
    return "(" + ", ".join(f"{k}: {v:,}" for k, v in ignored.items()) + ")"


def _activities(s: TraceSummary) -> Table:
    table = Table(title="Device activity by kind", title_justify="left")
    for col in ("kind", "count", "time", "bytes"):
        table.add_column(col, justify="left" if col == "kind" else "right")
    for row in s.activities.itertuples(index=False):
        table.add_row(
            str(row.activity), fmt_count(row.count), fmt_us(row.time_us), fmt_bytes(row.bytes)
        )
    return table


def _top_kernels(s: TraceSummary) -> Table:
    table = Table(title=f"Top {len(s.top_kernels)} kernels by device time", title_justify="left")
    table.add_column("kernel")
    for col in ("calls", "total", "mean", "share"):
        table.add_column(col, justify="right")
    for row in s.top_kernels.itertuples(index=False):
        table.add_row(
            fmt_name(str(row.name)),
            fmt_count(row.count),
            fmt_us(row.time_us),
            fmt_us(row.mean_us),
            fmt_pct(row.share_pct),
        )
    return table


def _launch_classes(s: TraceSummary) -> Table:
    table = Table(title="Runtime/driver API calls", title_justify="left")
    for col in ("class", "calls", "CPU time"):
        table.add_column(col, justify="left" if col == "class" else "right")
    for row in s.launch_classes.itertuples(index=False):
        table.add_row(str(row.launch_class), fmt_count(row.count), fmt_us(row.time_us))
    return table


def _regions(s: TraceSummary) -> Table:
    table = Table(title="Compiled regions", title_justify="left")
    for col in ("marker", "calls", "wall time", "kernels inside", "their device time"):
        table.add_column(col, justify="left" if col == "marker" else "right")
    for row in s.region_kinds.itertuples(index=False):
        table.add_row(
            str(row.kind),
            fmt_count(row.calls),
            fmt_us(row.wall_us),
            fmt_count(row.kernel_count),
            fmt_us(row.kernel_time_us),
        )
    return table
