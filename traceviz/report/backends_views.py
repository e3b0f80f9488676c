"""The backends of a run as titled tables (text, Markdown, HTML, dashboard): eager,
torch.compile and each ONNX Runtime level side by side, what each level fused, and the op
counts. Empty for a report without ONNX Runtime data (:attr:`Report.backends` is None)."""

from __future__ import annotations

from typing import Any

from traceviz.analysis.backends import BackendRow, BackendsView
from traceviz.analysis.onnx.fusion import CrossFusion
from traceviz.analysis.onnx.graph import EXPORTED, Folded, OpCounts
from traceviz.records import records
from traceviz.report.views import View, fmt_ratio, fmt_value, missing
from traceviz.units import fmt_count, fmt_us

__all__ = ["backends_views", "fusion_level", "level_summary_view"]

NAMES_SHOWN = 6  # exported node names listed per fused node


def backends_views(report: Any, *, top: int = 10) -> list[View]:
    """Every backends table of ``report`` (none without ONNX Runtime data)."""
    view: BackendsView | None = getattr(report, "backends", None)
    if view is None:
        return []
    views = [backends_table(view), level_summary_view(view), fusion_view(view, top=top),
             op_counts_view(view), folded_view(view, top=top)]  # fmt: skip
    return [v for v in views if v.rows or v.note]


def backends_table(view: BackendsView) -> View:
    """One row per backend: step time (median ± IQR, ×eager), kernels and kernel time per
    step, estimated bytes, the output check and the one-time cost."""
    rows = []
    for row in records(view.rows):
        rows.append([
            str(row[BackendRow.backend]),
            fmt_value(row[BackendRow.step_median_us], "us"),
            fmt_value(row[BackendRow.step_iqr_us], "us"),
            fmt_ratio(row[BackendRow.ratio_to_eager]),
            fmt_value(row[BackendRow.kernels_per_step], "count"),
            fmt_value(row[BackendRow.kernel_time_per_step_us], "us"),
            fmt_value(row[BackendRow.est_bytes_per_step], "bytes"),
            _check(row),
            _seconds(row[BackendRow.one_time_s], row[BackendRow.one_time]),
        ])  # fmt: skip
    method = view.latency_method or "run.json timing"
    verdict = _fastest_text(view)
    threads = f", {view.threads} thread{'s' if view.threads != 1 else ''}" if view.threads else ""
    note = verdict + (
        f"Step time: median and IQR measured outside the profiler ({method}{threads}); "
        "kernels and kernel time measured in the traces (ORT: its profile's node runs); "
        "bytes estimated (ORT: input and output sizes of each node)."
    )
    errors = [f"{r[BackendRow.backend]}: {r[BackendRow.error]}" for r in records(view.rows)
              if r[BackendRow.error]]  # fmt: skip
    errors += [f"{r[BackendRow.backend]} outputs: {r[BackendRow.culprit]}"
               for r in records(view.rows) if r[BackendRow.culprit]]  # fmt: skip
    if errors:
        note += " Failed: " + "; ".join(errors)
    columns = ["backend", "step median", "IQR", "× eager", "kernels/step", "kernel time/step",
               "est. bytes/step", "output check (max |Δ|)", "one-time cost"]  # fmt: skip
    return View("Backends side by side", columns, rows, note, names=(0,))


def level_summary_view(view: BackendsView) -> View:
    """Per ORT level: nodes, fused groups and the exported nodes they replaced, folded
    nodes, and the fused op types with their counts."""
    rows = []
    for level in view.levels:
        mapping = view.mappings.get(level)
        if mapping is None:
            rows.append([level, "–", "–", "–", "–", "graph not read"])
            continue
        fused = mapping.fused
        ops = fused[CrossFusion.op].value_counts()
        rows.append([
            level,
            f"{mapping.exported_nodes} → {mapping.optimized_nodes}",
            fmt_count(len(fused)),
            fmt_count(int(fused[CrossFusion.exported_count].sum())),
            fmt_count(len(mapping.folded)),
            ", ".join(f"{_short_op(str(op))} ×{n}" for op, n in ops.items()) or "–",
        ])  # fmt: skip
    export = view.export
    note = ""
    if export.get("exporter"):
        note = f"Exported with the {export['exporter']} exporter"
        note += f", opset {export['opset']}" if export.get("opset") else ""
        note += f" in {export['seconds']:.1f} s" if export.get("seconds") is not None else ""
        note += (
            f" (fell back: {export['fallback_reason']})" if export.get("fallback_reason") else ""
        )
        note += f"; ONNX Runtime {view.ort_version}" if view.ort_version else ""
        note += ". "
    elif export.get("error"):
        note = f"The export failed: {export['error']}. "
    note += "Nodes mapped back to the exported graph by dataflow; each exported node is "
    note += "credited to at most one fused node."
    if view.problems:
        note += " Not read: " + "; ".join(view.problems)
    columns = ["level", "nodes", "fused nodes", "exported nodes fused", "folded", "fused ops"]
    return View("ONNX Runtime levels: what each fused", columns, rows, note)


def fusion_level(view: BackendsView) -> str | None:
    """The level whose fusion is shown in detail: the last level that fused anything."""
    fused = [lvl for lvl in view.levels if lvl in view.mappings and len(view.mappings[lvl].fused)]
    return fused[-1] if fused else None


def fusion_view(view: BackendsView, *, top: int) -> View:
    """The cross-backend fusion table of :func:`fusion_level`, longest ORT time first."""
    level = fusion_level(view)
    if level is None:
        return View("ONNX Runtime fusion", [], [])
    table = view.fusion[view.fusion[CrossFusion.level] == level]
    table = table.sort_values(
        CrossFusion.time_us, ascending=False, kind="stable", na_position="last"
    )
    rows = [
        [
            _short_op(str(r[CrossFusion.op])),
            fmt_value(r[CrossFusion.time_us], "us"),
            str(r[CrossFusion.aten_ops]) or "–",
            _names(str(r[CrossFusion.exported_nodes]), int(r[CrossFusion.exported_count])),
            str(r[CrossFusion.inductor_kernels]) or "–",
            str(r[CrossFusion.node]),
        ]
        for r in records(table.head(top))
    ]
    note = (
        f"{len(table)} fused nodes at level {level}"
        + (f", {top} shown" if len(table) > top else "")
        + ". Time: per run, measured in the level's ORT profile. Inductor kernels: compiled "
        "kernels the fusion map credits with the same aten ops (matched, not credited)."
    )
    columns = ["ORT op", "time/run", "aten ops", "exported nodes replaced", "Inductor kernels",
               "ORT node"]  # fmt: skip
    return View(f"ONNX Runtime fusion ({level}) vs Inductor", columns, rows, note,
                 names=(0, 2, 3, 4, 5))  # fmt: skip


def op_counts_view(view: BackendsView) -> View:
    """Nodes per op: the exported graph and each level, ops whose count changes first."""
    counts = view.op_counts
    if counts.empty:
        return View("ONNX op counts", [], [])
    # the pivot (op x graph, summed, 0 where absent) in dicts: a sample run has ~100 rows
    cells: dict[Any, dict[Any, int]] = {}
    for graph, op, n in zip(counts[OpCounts.graph].tolist(), counts[OpCounts.op].tolist(),
                            counts[OpCounts.count].tolist(), strict=True):  # fmt: skip
        if not (missing(graph) or missing(op)):
            per = cells.setdefault(op, {})
            per[graph] = per.get(graph, 0) + (0 if missing(n) else int(n))
    present = {graph for per in cells.values() for graph in per}
    graphs = [g for g in [EXPORTED, *view.levels] if g in present]
    table = {op: [cells[op].get(g, 0) for g in graphs] for op in sorted(cells)}
    order = sorted(table, key=lambda op: (len(set(table[op])) <= 1, -sum(table[op])))
    rows = [[_short_op(str(op)), *(str(v) for v in table[op])] for op in order]
    return View("ONNX op counts per graph", ["op", *graphs], rows,
                 "Ops whose count changes between graphs first.")  # fmt: skip


def folded_view(view: BackendsView, *, top: int) -> View:
    """The exported nodes the detailed level folded or removed."""
    level = view.levels[-1] if view.levels else None
    folded = view.folded[view.folded[Folded.level] == level] if level else view.folded.head(0)
    if folded.empty:
        return View("Folded exported nodes", [], [])
    rows = [
        [str(r[Folded.node]), _short_op(str(r[Folded.op])), str(r[Folded.aten_op]) or "–",
         str(r[Folded.reason])]
        for r in records(folded.head(top))
    ]  # fmt: skip
    note = f"{len(folded)} exported nodes have no node standing for them at level {level}"
    note += f", {top} shown." if len(folded) > top else "."
    return View(f"Folded exported nodes ({level})", ["exported node", "op", "aten op", "why"],
                 rows, note, names=(0,))  # fmt: skip


def _fastest_text(view: BackendsView) -> str:
    best = view.fastest
    if best is None:
        return ""
    text = f"Fastest: {best.backend}, {fmt_us(best.median_us)} per step"
    text += f" ({best.ratio_to_eager:.3g}× eager)" if best.ratio_to_eager else ""
    if best.runner_up is not None:
        how = "clearly ahead of" if best.clear else "within the spread of"
        text += f", {how} {best.runner_up} ({fmt_us(best.runner_up_median_us)})"
    return text + " (outputs checked against eager). "


def _short_op(op: str) -> str:
    """``ai.onnx:MatMul`` → ``MatMul``; other domains kept (``com.microsoft:FastGelu``)."""
    return "+".join(part.removeprefix("ai.onnx:") for part in op.split("+"))


def _names(names: str, count: int) -> str:
    parts = [n for n in names.split(", ") if n]
    shown = ", ".join(parts[:NAMES_SHOWN])
    return f"{count}: {shown}" + (f", … {count - NAMES_SHOWN} more" if count > NAMES_SHOWN else "")


def _check(row: dict[str, Any]) -> str:
    passed, diff = row[BackendRow.check_passed], row[BackendRow.max_abs_diff]
    if passed is None and missing(diff):
        return "reference" if row[BackendRow.backend] == "eager" else "–"
    verdict = "–" if passed is None else ("ok" if passed else "FAILED")
    return verdict + ("" if missing(diff) else f" ({float(diff):.2g})")


def _seconds(value: Any, what: Any) -> str:
    return "–" if missing(value) else f"{float(value):.2f} s {what}"
