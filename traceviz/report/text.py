"""Terminal rendering with rich tables.

Names are never cut: a table whose kernel, op or source names (:attr:`View.names`) do not fit
the console's width whole (80 columns when piped, 140 with ``-o FILE``) is printed as one block
per row instead (:func:`render_view`), and every cell folds rather than ends in "…".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from rich.cells import cell_len
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from traceviz.analysis.roofline.per_kernel import Roofline
from traceviz.analysis.summary import TraceSummary, summarize
from traceviz.diagnose.finding import Finding
from traceviz.records import records
from traceviz.report.backends_views import backends_views
from traceviz.report.bundle import Report
from traceviz.report.roofline_report import bounds_view, kernels_view, roofline_views
from traceviz.report.views import View, comparison_views, headline
from traceviz.schema import DeviceKind
from traceviz.trace import Trace
from traceviz.units import fmt_bytes, fmt_count, fmt_pct, fmt_us


def print_summary(trace: Trace, console: Console, *, top: int = 10) -> None:
    """Print the summary of one trace (see :func:`traceviz.analysis.summary.summarize`)."""
    render_summary(summarize(trace, top=top), console)


def render_summary(
    summary: TraceSummary, console: Console, *, roofline: Roofline | None = None
) -> None:
    """Print a :class:`TraceSummary` as a headline table and detail tables, then, given the
    trace's ``roofline``, its device time by bound and its top kernels against the roof."""
    console.print(_headline(summary))
    if len(summary.activities):
        console.print(_activities(summary))
    if len(summary.top_kernels):
        render_view(_top_kernels(summary), console)
    if len(summary.launch_classes):
        console.print(_launch_classes(summary))
    if len(summary.region_kinds):
        console.print(_regions(summary))
    if roofline is not None:
        views = [bounds_view(roofline), kernels_view([(None, roofline)], top=summary.top)]
        for view in views:
            if view is not None:
                render_view(view, console)


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
    if s.partial_steps:
        steps += f" ({s.partial_steps} partial step left out: cut short by the profiler's stop)"
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
            + (f"({', '.join(f'{k}: {v:,}' for k, v in s.ignored.items())})" if s.ignored else ""),
        ),
    ]
    if not s.analysed:
        rows = [(what, _NA if what in _DEVICE_ROWS else value) for what, value in rows]
        rows.insert(3, ("device activity", _device_activity_text(s)))
    elif s.device == DeviceKind.CPU.value:
        rows = [(what, _NA_CPU if what in _CPU_NA_ROWS else value) for what, value in rows]
    for what, value in rows:
        table.add_row(what, value)
    return table


_NA = "n/a (device not analysed)"
_DEVICE_ROWS = ("kernels", "memcpy", "memset", "launch API calls")
_NA_CPU = "n/a (a CPU trace has no device copies or launch calls)"
_CPU_NA_ROWS = ("memcpy", "memset", "launch API calls")


def _device_activity_text(s: TraceSummary) -> str:
    held = s.device_activity
    if held is None:
        return "–"
    return (
        f"{fmt_count(held.runtime_calls)} runtime calls ({fmt_us(held.runtime_time_us)}), "
        f"{fmt_count(held.device_events)} device events ({fmt_us(held.device_event_time_us)} "
        f"summed): {', '.join(held.categories) or 'no categories'}"
    )


def _plain_table(title: str, columns: Sequence[str], rows: Iterable[Sequence[str]]) -> Table:
    """A summary table: the first column left-aligned, the others (numbers) right-aligned."""
    table = Table(title=title, title_justify="left")
    for i, column in enumerate(columns):
        table.add_column(column, justify="right" if i else "left")
    for row in rows:
        table.add_row(*row)
    return table


def _activities(s: TraceSummary) -> Table:
    rows = (
        [str(r["activity"]), fmt_count(r["count"]), fmt_us(r["time_us"]), fmt_bytes(r["bytes"])]
        for r in records(s.activities)
    )
    return _plain_table("Device activity by kind", ("kind", "count", "time", "bytes"), rows)


def _top_kernels(s: TraceSummary) -> View:
    rows = [
        [
            str(row["name"]),
            fmt_count(row["count"]),
            fmt_us(row["time_us"]),
            fmt_us(row["mean_us"]),
            fmt_pct(row["share_pct"]),
        ]
        for row in records(s.top_kernels)
    ]
    return View(
        f"Top {len(s.top_kernels)} kernels by device time",
        ["kernel", "calls", "total", "mean", "share"],
        rows,
        names=(0,),
    )


def _launch_classes(s: TraceSummary) -> Table:
    rows = (
        [str(r["launch_class"]), fmt_count(r["count"]), fmt_us(r["time_us"])]
        for r in records(s.launch_classes)
    )
    return _plain_table("Runtime/driver API calls", ("class", "calls", "CPU time"), rows)


def _regions(s: TraceSummary) -> Table:
    rows = (
        [str(r["kind"]), fmt_count(r["calls"]), fmt_us(r["wall_us"]),
         fmt_count(r["kernel_count"]), fmt_us(r["kernel_time_us"])]
        for r in records(s.region_kinds)
    )  # fmt: skip
    columns = ("marker", "calls", "wall time", "kernels inside", "their device time")
    return _plain_table("Compiled regions", columns, rows)


def render_comparison(comparison: Report, console: Console, *, top: int = 10) -> None:
    """Print a report: the headline (the timed verdict first), the findings (what to do about
    it, the largest estimated gain first), then the evidence: every table of
    :func:`comparison_views`, the step bridge and the roofline
    (:func:`~traceviz.report.roofline_report.roofline_views`)."""
    for line in headline(comparison):
        console.print(Text(line))
    render_findings(comparison.findings, console)
    for view in [*comparison_views(comparison, top=top), *backends_views(comparison, top=top)]:
        render_view(view, console)
    for view in roofline_views(comparison, top=top):  # the step bridge and the roofline, last
        render_view(view, console)


def render_view(view: View, console: Console) -> None:
    """Print ``view`` as a table when its names fit the console whole, on one line each (texts
    may wrap between their words); otherwise one block per row: the row's first name on a line
    of its own, its other names and texts under it with their column titles, then the other
    cells aligned under one header line. A name longer than the console folds at its edge, so
    it reads back whole; no cell is ever cut."""
    if not view.names or _width(_widths(view, whole=False)) <= console.width:
        console.print(_table(view, console.width))
    else:
        _print_blocks(view, console)


def _table(view: View, width: int) -> Table:
    """The view as a rich table. Where the words (numbers with their units, whole names) fit
    side by side, each column gets at least its longest one, so text wraps between words; the
    widest columns give way first."""
    table = Table(title=view.title, title_justify="left", caption=view.note or None)
    widths = _fit(_widths(view, whole=False), _widths(view, whole=True), width)
    for i, column in enumerate(view.columns):
        right = i > 0 and _numeric(view, i) and i not in view.names
        table.add_column(
            column,
            justify="right" if right else "left",
            overflow="fold",
            width=widths[i] if widths else None,
        )
    for row in view.rows:
        table.add_row(*(Text(cell) for cell in row))
    return table


def _fit(minimums: list[int], naturals: list[int], width: int) -> list[int] | None:
    """Column widths within ``width``: the natural ones, the columns with most room above
    their minimum narrowed first; ``None`` when even the minimums do not fit."""
    if _width(minimums) > width:
        return None
    widths = list(naturals)
    while _width(widths) > width:
        _, i = max((w - m, i) for i, (w, m) in enumerate(zip(widths, minimums, strict=True)))
        widths[i] -= 1
    return widths


def _widths(view: View, *, whole: bool) -> list[int]:
    """Each column's width with every cell and header whole (``whole``), or wrapped between
    words, except names (whole) and numbers (a number never leaves its unit)."""
    widths = []
    for i, column in enumerate(view.columns):
        keep = whole or i in view.names or _numeric(view, i)
        cells = [cell_len(row[i]) if keep else _longest_word(row[i]) for row in view.rows]
        widths.append(max([cell_len(column) if whole else _longest_word(column), *cells]))
    return widths


def _width(widths: list[int]) -> int:
    """A table's width from its columns': one space either side and a border per column."""
    return sum(w + 3 for w in widths) + 1


def _longest_word(text: str) -> int:
    return max((cell_len(word) for word in text.split()), default=0)


_INDENT = 4


def _indented(text: Text, indent: int = _INDENT) -> Padding:
    """``text`` with every wrapped line indented (long words fold at the edge, never cut)."""
    text.overflow = "fold"
    return Padding(text, (0, 0, 0, indent), expand=False)


def _print_blocks(view: View, console: Console) -> None:
    """The block layout of :func:`render_view`: the other cells aligned under one header line
    when they fit beside each other, else each with its column title."""
    head, *names = view.names
    names = sorted([*names, *view.texts])
    others = [i for i in range(len(view.columns)) if i != head and i not in names]
    widths = {
        i: max([cell_len(view.columns[i]), *(cell_len(r[i]) for r in view.rows)]) for i in others
    }
    aligned = _INDENT + sum(widths.values()) + 2 * max(len(others) - 1, 0) <= console.width
    console.print(Text(view.title, style="italic"))
    console.print(Text(view.columns[head], style="bold"))
    if aligned:
        console.print(_indented(_cells([view.columns[i] for i in others], others, widths, "bold")))
    for row in view.rows:
        console.print(Text(row[head], style="bold cyan"), overflow="fold")
        for i in names:
            console.print(_indented(Text(f"{view.columns[i]}: ", style="dim") + Text(row[i])))
        if aligned:
            console.print(_indented(_cells([row[i] for i in others], others, widths, "")))
        else:
            labelled = Text("; ").join(
                Text(f"{view.columns[i]}: ", style="dim") + Text(row[i]) for i in others
            )
            console.print(_indented(labelled))
    if view.note:
        console.print(Text(view.note, style="dim"))


def _cells(cells: list[str], columns: list[int], widths: dict[int, int], style: str) -> Text:
    """Cells right-aligned to their columns' widths, two spaces apart."""
    return Text(
        "  ".join(c.rjust(widths[i]) for c, i in zip(cells, columns, strict=True)), style=style
    )


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
        console.print(_indented(Text(f"• {line}"), 4))
    if finding.est_gain_us is not None:
        console.print(_indented(Text("estimated gain: ", style="green") + finding.gain_text()))
    if finding.next_step:
        console.print(_indented(Text("next step: ", style="bold") + finding.next_step))
    if finding.docs_url:
        link = Text(finding.docs_url, style="link " + finding.docs_url)
        console.print(_indented(Text("docs: ", style="dim") + link))
    console.print()


def _numeric(view: View, column: int) -> bool:
    values = [row[column] for row in view.rows if row[column] not in ("–", "", "n/a")]
    return bool(values) and all(v[:1].isdigit() or v[:1] in "+-" for v in values)
