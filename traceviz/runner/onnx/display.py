"""The ONNX Runtime part of a run's result as rich text (``traceviz run`` prints it after the
eager/compiled result): one row per backend with its graph size, output check and latency.

Reads run.json only; imports neither onnx nor onnxruntime.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from traceviz.runner.runinfo import RunInfo
from traceviz.runner.runinfo_backends import LatencyRow, LevelCheck, OnnxRuntimeInfo
from traceviz.units import fmt_us


def print_backends(info: RunInfo, console: Console) -> None:
    """The export line and the backends table; nothing for a run without extra backends."""
    ort = info.backends.onnxruntime
    if ort is None:
        return
    console.print(export_text(ort))
    console.print(backends_table(info, ort))


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
    """Per backend: nodes, output check vs eager, median and IQR latency, ratio to eager."""
    latency = {r.backend: r for r in info.latency.rows} if info.latency else {}
    threads = info.latency.threads if info.latency else ort.threads
    table = Table(title=f"backends, latency round-robin at {threads} thread(s)")
    for column in ("backend", "nodes", "check vs eager", "median", "IQR", "× eager"):
        table.add_column(
            column, justify="left" if column in ("backend", "check vs eager") else "right"
        )
    for name in ("eager", "compile"):
        if name in latency:
            table.add_row(name, "", "", *_latency_cells(latency[name]))
    for level in ort.levels:
        row = latency.get(f"onnxruntime:{level.name}")
        check = _check_cell(level.check) if level.error is None else f"[red]{level.error}[/]"
        nodes = str(level.nodes) if level.nodes is not None else ""
        cells = _latency_cells(row) if row else ("", "", "")
        table.add_row(f"onnxruntime:{level.name}", nodes, check, *cells)
    return table


def _check_cell(check: LevelCheck | None) -> str:
    if check is None or check.passed is None:
        return "not checked"
    diff = f"max abs {check.max_abs_diff:.2g}" if check.max_abs_diff is not None else ""
    if check.passed:
        text = f"[green]PASS[/] {diff}"
    else:
        text = f"[bold red]FAIL[/] {diff}"
        if check.culprit is not None:
            text += (
                f"; culprit {check.culprit.node} ({check.culprit.op_type}): {check.culprit.error}"
            )
    ref = check.reference
    if ref is not None:
        verdict = "error" if ref.passed is None else ("pass" if ref.passed else "[red]FAIL[/]")
        text += f"; reference {verdict}"
    return text


def _latency_cells(row: LatencyRow) -> tuple[str, str, str]:
    return fmt_us(row.median_us), fmt_us(row.iqr_us), f"{row.ratio_to_eager:.2f}×"
