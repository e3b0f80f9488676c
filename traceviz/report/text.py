"""Terminal rendering with rich tables."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from traceviz.analysis.summary import TraceSummary, summarize
from traceviz.diagnose.finding import Finding
from traceviz.records import records
from traceviz.report.bundle import Report
from traceviz.report.views import View, comparison_views, headline
from traceviz.trace import Trace
from traceviz.units import fmt_bytes, fmt_count, fmt_name, fmt_pct, fmt_us


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
    table = Table(
        title=f"Trace summary: {s.source} "
        + ("(all figures measured)" if s.analysed else "(device not analysed)"),
        show_header=False,
        title_justify="left",
    )
    table.add_column("what", style="bold")
    table.add_column("value")
    devices = ", ".join(sorted(set(s.device_names))) or "–"
    steps = f"{s.step_count}"
    if s.step_mean_us:
        steps += f", mean {fmt_us(s.step_mean_us)}"
    peak = fmt_bytes(s.peak_allocated_bytes) if s.peak_allocated_bytes is not None else None
    rows = [
        ("device", f"{s.device} ({devices})"),
        ("time span", fmt_us(s.span_us)),
        ("steps", steps),
        ("kernels", f"{fmt_count(s.kernel_count)} ({fmt_us(s.kernel_time_us)} device time)"),
        ("memcpy", f"{fmt_count(s.memcpy_count)} ({fmt_bytes(s.memcpy_bytes)})"),
        ("memset", fmt_count(s.memset_count)),
        ("launch API calls", f"{fmt_count(s.launch_count)} ({fmt_us(s.launch_api_time_us)})"),
        ("compiled regions", f"{fmt_count(s.compiled_region_calls)} calls"),
        ("peak allocated", peak or "– (no memory events)"),
        (
            "events",
            f"{fmt_count(s.events_in)} in, {fmt_count(s.events_ignored)} carry no row "
            + _ignored_text(s.ignored),
        ),
    ]
    if not s.analysed:
        rows = [(what, _NA if what in _DEVICE_ROWS else value) for what, value in rows]
        rows.insert(3, ("device activity", _device_activity_text(s)))
    for what, value in rows:
        table.add_row(what, value)
    return table


_NA = "n/a (device not analysed)"
_DEVICE_ROWS = ("kernels", "memcpy", "memset", "launch API calls")


def _device_activity_text(s: TraceSummary) -> str:
    held = s.device_activity
    if held is None:
        return "–"
    return (
        f"{fmt_count(held.runtime_calls)} runtime calls ({fmt_us(held.runtime_time_us)}), "
        f"{fmt_count(held.device_events)} device events ({fmt_us(held.device_event_time_us)} "
        f"summed): {', '.join(held.categories) or 'no categories'}"
    )


def _ignored_text(ignored: dict[str, int]) -> str:
    if not ignored:
        return ""
    return "(" + ", ".join(f"{k}: {v:,}" for k, v in ignored.items()) + ")"


def _activities(s: TraceSummary) -> Table:
    table = Table(title="Device activity by kind", title_justify="left")
    for col in ("kind", "count", "time", "bytes"):
        table.add_column(col, justify="left" if col == "kind" else "right")
    for row in records(s.activities):
        table.add_row(
            str(row["activity"]),
            fmt_count(row["count"]),
            fmt_us(row["time_us"]),
            fmt_bytes(row["bytes"]),
        )
    return table


def _top_kernels(s: TraceSummary) -> Table:
    table = Table(title=f"Top {len(s.top_kernels)} kernels by device time", title_justify="left")
    table.add_column("kernel")
    for col in ("calls", "total", "mean", "share"):
        table.add_column(col, justify="right")
    for row in records(s.top_kernels):
        table.add_row(
            fmt_name(str(row["name"])),
            fmt_count(row["count"]),
            fmt_us(row["time_us"]),
            fmt_us(row["mean_us"]),
            fmt_pct(row["share_pct"]),
        )
    return table


def _launch_classes(s: TraceSummary) -> Table:
    table = Table(title="Runtime/driver API calls", title_justify="left")
    for col in ("class", "calls", "CPU time"):
        table.add_column(col, justify="left" if col == "class" else "right")
    for row in records(s.launch_classes):
        table.add_row(str(row["launch_class"]), fmt_count(row["count"]), fmt_us(row["time_us"]))
    return table


def _regions(s: TraceSummary) -> Table:
    table = Table(title="Compiled regions", title_justify="left")
    for col in ("marker", "calls", "wall time", "kernels inside", "their device time"):
        table.add_column(col, justify="left" if col == "marker" else "right")
    for row in records(s.region_kinds):
        table.add_row(
            str(row["kind"]),
            fmt_count(row["calls"]),
            fmt_us(row["wall_us"]),
            fmt_count(row["kernel_count"]),
            fmt_us(row["kernel_time_us"]),
        )
    return table


def render_comparison(comparison: Report, console: Console, *, top: int = 10) -> None:
    """Print a report: headline, every table of :func:`comparison_views`, then the findings."""
    for line in headline(comparison):
        console.print(line)
    for view in comparison_views(comparison, top=top):
        table = Table(title=view.title, title_justify="left", caption=view.note or None)
        for i, column in enumerate(view.columns):
            table.add_column(column, justify="left" if i == 0 or not _numeric(view, i) else "right")
        for row in view.rows:
            table.add_row(*row)
        console.print(table)
    render_findings(comparison.findings, console)


SEVERITY_STYLES = {"error": "bold white on red", "warning": "bold black on yellow",
                   "info": "bold white on blue"}  # fmt: skip


def render_findings(findings: Sequence[Finding], console: Console) -> None:
    """Print diagnosis findings (most severe first, as given): a coloured severity badge and
    title, the evidence, the estimated gain, the next step and its documentation link. Names
    are printed as plain text (kernel names hold brackets rich would read as markup)."""
    if not findings:
        return
    counts = Counter(f.severity.value for f in findings)
    summary = ", ".join(f"{counts[s]} {s}" for s in ("error", "warning", "info") if counts[s])
    console.print(Text(f"Findings ({summary})", style="bold underline"))
    for finding in findings:
        _render_finding(finding, console)


def _render_finding(finding: Finding, console: Console) -> None:
    severity = finding.severity.value
    head = Text()
    head.append(f" {severity.upper()} ", style=SEVERITY_STYLES.get(severity, "bold"))
    head.append(f" {finding.title} ", style="bold")
    head.append(f"({finding.id})", style="dim")
    console.print(head)
    for line in finding.evidence_lines():
        console.print(Text(f"    • {line}"))
    if finding.est_gain_us is not None:
        console.print(Text("    estimated gain: ", style="green") + Text(finding.gain_text()))
    if finding.next_step:
        console.print(Text("    next step: ", style="bold") + Text(finding.next_step))
    if finding.docs_url:
        console.print(
            Text("    docs: ", style="dim")
            + Text(finding.docs_url, style="link " + finding.docs_url)
        )
    console.print()


def _numeric(view: View, column: int) -> bool:
    values = [row[column] for row in view.rows if row[column] not in ("–", "")]
    return bool(values) and all(v[:1].isdigit() or v[:1] in "+-" for v in values)
