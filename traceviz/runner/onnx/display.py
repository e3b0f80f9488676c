"""The ONNX Runtime part of a run's result as rich text (``traceviz run`` prints it after the
eager/compiled result): one row per backend with its graph size, output check and latency.

Reads run.json only; imports neither onnx nor onnxruntime.
"""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from traceviz.runs.runinfo import RunInfo
from traceviz.runs.runinfo_backends import LatencyRow, LevelCheck, OnnxRuntimeInfo
from traceviz.units import fmt_us

#: The "ref" cell by the reference evaluator's verdict (None: it raised).
_REFERENCE_CELLS = {None: "error", True: "ok", False: "[red]FAIL[/]"}


def print_backends(info: RunInfo, console: Console) -> None:
    """The export line, the backends table and one line per failing level; nothing for a run
    without extra backends."""
    ort = info.backends.onnxruntime
    if ort is None:
        return
    console.print(export_text(ort))
    console.print(backends_table(info, ort))
    for line in level_problems(ort):
        console.print(line, style="red")


def export_text(ort: OnnxRuntimeInfo) -> Text:
    e = ort.export
    if e.exporter is None:
        return Text(f"ONNX export failed: {e.error}", style="bold red")
    fallback = f" (dynamo exporter failed: {e.fallback_reason})" if e.fallback_reason else ""
    mask = ", explicit attention_mask" if e.attention_mask else ""
    seconds = f"{e.seconds:.1f} s" if e.seconds is not None else "?"
    return Text(
        f"ONNX export: {e.exporter} exporter{fallback}, opset {e.opset}, {seconds}{mask}; "
        f"onnxruntime {ort.ort_version} on {', '.join(ort.providers)}, {ort.threads} thread(s)"
    )


def backends_table(info: RunInfo, ort: OnnxRuntimeInfo) -> Table:
    """Per backend: nodes, output check vs eager (max abs difference), the reference
    evaluator's verdict, median and IQR latency, ratio to eager."""
    latency = {r.backend: r for r in info.latency.rows} if info.latency else {}
    threads = info.latency.threads if info.latency else ort.threads
    table = Table(
        box=box.SIMPLE_HEAD,
        title=f"backends, latency round-robin at {threads} thread(s)",
        caption="ort:<level>: ONNX Runtime at that optimization level · check: vs eager, "
        "max abs difference · ref: the graph evaluated by onnx.reference, vs eager",
    )
    table.add_column("backend", no_wrap=True)
    for column in ("nodes", "median", "IQR", "×eager"):
        table.add_column(column, justify="right", no_wrap=True)
    table.add_column("check", no_wrap=True)
    table.add_column("ref", min_width=5)
    for name in ("eager", "compile"):
        if name in latency:
            table.add_row(name, "", *_latency_cells(latency[name]), "", "")
    for level in ort.levels:
        row = latency.get(f"onnxruntime:{level.name}")
        nodes = str(level.nodes) if level.nodes is not None else ""
        cells = _latency_cells(row) if row else ("", "", "")
        check = "[red]error[/]" if level.error is not None else _check_cell(level.check)
        ref = level.check.reference if level.check is not None else None
        ref_cell = "" if ref is None else _REFERENCE_CELLS[ref.passed]
        table.add_row(f"ort:{level.name}", nodes, *cells, check, ref_cell)
    return table


def level_problems(ort: OnnxRuntimeInfo) -> list[str]:
    """One sentence per level that failed (its error) or whose outputs differ (its culprit)."""
    found = []
    for level in ort.levels:
        if level.error is not None:
            found.append(f"ort:{level.name} failed: {level.error}")
        elif level.check is not None and level.check.passed is False:
            culprit = level.check.culprit
            blame = (
                f"; culprit {culprit.node} ({culprit.op_type}): {culprit.error}"
                if culprit is not None
                else "; no single node is wrong alone"
            )
            found.append(f"ort:{level.name} outputs differ from eager{blame}")
    return found


def _check_cell(check: LevelCheck | None) -> str:
    if check is None or check.passed is None:
        return "not checked"
    diff = f"{check.max_abs_diff:.1g}" if check.max_abs_diff is not None else ""
    return f"[green]PASS[/] {diff}" if check.passed else f"[bold red]FAIL[/] {diff}"


def _latency_cells(row: LatencyRow) -> tuple[str, str, str]:
    return fmt_us(row.median_us), fmt_us(row.iqr_us), f"{row.ratio_to_eager:.2f}×"
