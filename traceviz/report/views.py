"""The comparison as titled tables of display strings, shared by the text, Markdown and HTML
renderers (so each only decides how to draw a table, not what is in it)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from traceviz.analysis.compare import NOT_APPLICABLE, Comparison, Metric, Side
from traceviz.analysis.device import NOT_ANALYSED
from traceviz.analysis.fusion.ops import KernelOps
from traceviz.analysis.timing.speed import TIMED, TOLERANCE, UNKNOWN, SpeedVerdict
from traceviz.analysis.traffic.coverage import traffic_gap_note
from traceviz.analysis.windows import full_steps
from traceviz.diagnose.rules.slower import comparison_speed
from traceviz.records import records
from traceviz.report.headline import change_text, speed_ratio_text
from traceviz.report.headline import headline as first_screen
from traceviz.report.metric_names import is_share, metric_label
from traceviz.report.profiled_note import DEVICE_TIME_WITHHELD, profiled_note
from traceviz.schema import Steps
from traceviz.units import fmt_bytes, fmt_count, fmt_pct, fmt_us


@dataclass(frozen=True)
class View:
    """One titled table: ``columns`` names and ``rows`` of display strings. ``names`` are the
    indices of columns holding one kernel, op or source name each, ``texts`` those holding
    lists of names or code: no renderer may cut either (the text renderer gives them lines of
    their own when the names do not fit a table whole; a text may wrap between its words)."""

    title: str
    columns: list[str]
    rows: list[list[str]]
    note: str = ""
    names: tuple[int, ...] = ()
    texts: tuple[int, ...] = ()


def missing(value: object) -> bool:
    """None, NA or NaN: a figure that is not known."""
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def fmt_value(value: float, unit: str, *, share: bool = False) -> str:
    """A metric value in its unit (a ``share``, 0–1, as a percentage)."""
    if missing(value):
        return "–"
    if share:
        return fmt_pct(100 * value)
    if unit == "us":
        return fmt_us(value)
    if unit == "bytes":
        return fmt_bytes(value)
    if unit == "ratio":
        return f"{value:.3g}"
    return fmt_count(value) if float(value).is_integer() else f"{value:,.1f}"


def fmt_delta(value: float, unit: str, *, share: bool = False) -> str:
    """A difference in its unit with its sign (of two shares: percentage points, ``pp``)."""
    if missing(value):
        return "–"
    sign = "+" if value > 0 else ""
    if share:
        return f"{sign}{100 * value:.1f} pp"
    return sign + fmt_value(value, unit)


def fmt_ratio(value: float) -> str:
    return "–" if missing(value) else f"{value:.2f}×"


def headline(comparison: Comparison) -> list[str]:
    """What a user reads first, as lines: when a run's profiled steps do not look like its
    timed ones, the note that says so (:mod:`traceviz.report.profiled_note`); then the one
    sentence of :mod:`traceviz.report.headline` (the timed verdict with its interval, one way
    round, and the top finding); then :func:`headline_details`."""
    first = first_screen(comparison)
    return [*([first.note] if first.note else []), first.sentence, *headline_details(comparison)]


def headline_details(comparison: Comparison) -> list[str]:
    """The lines under the verdict sentence: what the profiled steps say when it differs from
    the timed verdict, what was compared, kernels and device time (withheld when the
    profiled steps are not representative), and fusion figures withheld for other
    workloads."""
    a, b = comparison.names
    verdict = comparison_speed(comparison)
    lines = []
    if verdict.verdict != UNKNOWN and not comparison.fusion.comparability.other_workload:
        profiled = _profiled_disagreement(comparison, verdict)
        lines += [profiled] if profiled else []
    lines += [
        f"{a}: {comparison.a.trace.meta.source} ({comparison.a.trace.device_kind.value})",
        f"{b}: {comparison.b.trace.meta.source} ({comparison.b.trace.device_kind.value})",
    ]
    kernels, time = comparison.metric("kernel_count"), comparison.metric("kernel_time_us")
    device_time = (
        DEVICE_TIME_WITHHELD
        if profiled_note(comparison.profiled_timing)
        else f"device time {_metric_value(time, Metric.a)} → {_metric_value(time, Metric.b)} "
        f"({time[Metric.basis]})"
    )
    lines.append(
        f"kernels {_metric_value(kernels, Metric.a)} → {_metric_value(kernels, Metric.b)}"
        f" ({change_text(kernels[Metric.ratio])}), {device_time}"
    )
    per = comparison.metric("eager_kernels_per_compiled_kernel")[Metric.b]
    if per is not None and not math.isnan(per):
        lines.append(f"{per:.2f} {a} kernels per {b} kernel")
    if comparison.fusion.comparability.withheld:
        lines.append(f"no fusion figures: {a} and {b} are not one workload (see findings)")
    return lines


def _profiled_disagreement(comparison: Comparison, verdict: SpeedVerdict) -> str:
    """Empty unless the verdict is timed and the profiled steps' ratio points the other way or
    differs by more than a quarter."""
    b = comparison.names[1]
    sa, sb = comparison.a.summary, comparison.b.summary
    if verdict.basis != TIMED or not sa.step_mean_us or not sb.step_mean_us:
        return ""
    ratio = sb.step_mean_us / sa.step_mean_us
    other_side = (ratio - 1) * (verdict.ratio - 1) < 0 and abs(ratio - 1) >= TOLERANCE
    if not other_side and abs(math.log(ratio / verdict.ratio)) <= math.log(1.25):
        return ""
    ea, eb = _events_per_step(comparison.a), _events_per_step(comparison.b)
    return (
        f"the profiled steps say {b} is {speed_ratio_text(ratio)} (mean "
        f"{fmt_us(sa.step_mean_us)} → {fmt_us(sb.step_mean_us)}); the timed medians are the "
        f"verdict: {verdict.n_a} and "
        f"{verdict.n_b} steps without the profiler against {sa.step_count} and "
        f"{sb.step_count} profiled, which carry the profiler's cost per recorded event "
        f"({ea:,.0f} vs {eb:,.0f} events per step) and their own spread (slowest / fastest "
        f"profiled step {_spread(comparison.a)} and {_spread(comparison.b)})"
    )


def _events_per_step(side: Side) -> float:
    """Ops, kernels and runtime calls the profiler recorded per step (measured)."""
    trace = side.trace
    events = len(trace.ops) + len(trace.kernels) + len(trace.launches)
    return events / max(side.summary.step_count, 1)


def _spread(side: Side) -> str:
    """Slowest over fastest profiled step, ``"1.80×"`` (``"–"`` without steps)."""
    durs = full_steps(side.trace)[Steps.dur_us].to_numpy(dtype=float)
    durs = durs[np.isfinite(durs) & (durs > 0)]
    return f"{durs.max() / durs.min():.2f}×" if len(durs) else "–"


def metrics_view(
    comparison: Comparison, *, only: Sequence[str] | None = None, title: str = "Metrics"
) -> View:
    """The metric rows (those named in ``only``, in the table's order, when given) by display
    name (:func:`~traceviz.report.metric_names.metric_label`), values in their units, shares
    as %, ``n/a`` where a metric does not apply to or is not analysed on a side."""
    a, b = comparison.names
    table = comparison.metrics
    if only is not None:
        table = table[table[Metric.name].isin(list(only))]
    rows = [
        [
            metric_label(str(r[Metric.name]), comparison.names),
            _metric_value(r, Metric.a),
            _metric_value(r, Metric.b),
            fmt_delta(r[Metric.delta], r[Metric.unit], share=is_share(str(r[Metric.name]))),
            fmt_ratio(r[Metric.ratio]),
            str(r[Metric.basis]),
        ]
        for r in records(table)
    ]
    note = ""
    if "est_bytes" in set(table[Metric.name]):
        why = traffic_gap_note(comparison.a.traffic, comparison.b.traffic, comparison.names)
        note = f"{metric_label('est_bytes', comparison.names)}: {why}" if why else ""
    if "step_count" in set(table[Metric.name]):
        note = "; ".join(n for n in [note, _partial_steps_note(comparison)] if n)
    return View(title, ["metric", a, b, "Δ", "ratio", "basis"], rows, note=note)


def _partial_steps_note(comparison: Comparison) -> str:
    """Which side's cut-off last step the step count and per-step figures leave out."""
    parts = [
        f"{side.name}: {side.summary.partial_steps} partial step left out of steps and "
        "per-step figures (cut short by the profiler's stop)"
        for side in (comparison.a, comparison.b)
        if side.summary.partial_steps
    ]
    return "; ".join(parts)


def _metric_value(row: Any, side: str) -> str:
    """A metric row's value for one side; ``n/a`` where the side's device is not analysed or
    the metric does not apply to it (launch calls or memcpy on a CPU trace)."""
    value = row[side]
    if row[Metric.basis] in (NOT_ANALYSED, NOT_APPLICABLE) and (value is None or math.isnan(value)):
        return "n/a"
    return fmt_value(value, row[Metric.unit], share=is_share(str(row[Metric.name])))


def kinds_view(comparison: Comparison) -> View:
    a, b = comparison.names
    kinds = comparison.kinds
    totals: dict[tuple[str, str], dict[str, float]] = {}
    for r in records(kinds):
        cell = totals.setdefault((str(r["kind"]), str(r["source"])), {})
        cell[f"count_{r['side']}"] = float(r["count"] or 0)
        cell[f"time_{r['side']}"] = float(r["time_us"] or 0)
    rows = [
        [kind, source, fmt_count(c.get("count_a", 0)), fmt_count(c.get("count_b", 0)),
         fmt_us(c.get("time_a", 0)), fmt_us(c.get("time_b", 0))]
        for (kind, source), c in totals.items()
    ]  # fmt: skip
    return View(
        "Kernels by kind and source (device time, measured)",
        ["kind", "source", f"{a} count", f"{b} count", f"{a} time", f"{b} time"],
        rows,
    )


def withheld_note(comparison: Comparison) -> str:
    """Why the fusion figures are missing or doubtful ("" when the pair is comparable)."""
    verdict = comparison.fusion.comparability
    if verdict.comparable:
        return ""
    why = "; ".join(verdict.reasons)
    if verdict.forced:
        return f"compared anyway (--force) although the traces are not one workload: {why}"
    return f"fusion figures left out, the traces are not one workload: {why} (--force compares)"


def ops_by_kernel(ops: pd.DataFrame) -> dict[str, list[tuple[str, int]]]:
    """Per compiled kernel, its credited eager ops as [(op, eager kernels), ...], largest
    device time first, from the :class:`~traceviz.analysis.fusion.ops.KernelOps` rows
    (``FusionMap.ops``)."""
    out: dict[str, list[tuple[str, int]]] = {}
    for kernel, op, n in zip(
        ops[KernelOps.kernel], ops[KernelOps.op], ops[KernelOps.kernels], strict=True
    ):
        out.setdefault(str(kernel), []).append((str(op), int(n)))
    return out


def eager_ops_texts(ops: pd.DataFrame) -> dict[str, str]:
    """Per compiled kernel, :func:`ops_by_kernel` as ``"aten::add (3), aten::mul (3)"``."""
    return {
        k: ", ".join(f"{op} ({n})" for op, n in pairs) for k, pairs in ops_by_kernel(ops).items()
    }


def fusion_view(comparison: Comparison, *, top: int) -> View:
    a, b = comparison.names
    table = comparison.fusion.kernels.sort_values("time_us", ascending=False).head(top)
    eager_ops = eager_ops_texts(comparison.fusion.ops)
    rows = [
        [
            str(r["kernel"]) + (" (layout)" if r["is_layout"] else ""),
            eager_ops.get(str(r["kernel"])) or "–",
            f"{fmt_us(r['time_us'])} ({fmt_count(r['calls'])})",
            f"{fmt_us(r['eager_time_us'])} ({fmt_count(r['eager_kernels'])})",
            _basis(r["basis"], r["confidence"]),
        ]
        for r in records(table)
    ]
    note = withheld_note(comparison) or (
        f"each {a} kernel is credited to at most one {b} kernel; confidence < 1: several "
        f"{b} kernels could hold it (nearest in the step taken); basis compiler: Inductor's "
        "provenance, name-match: op names; (layout): prepares a library GEMM/conv, no credit"
    )
    return View(
        f"Fusion map: {b} kernels and the {a} kernels they replaced (top {top} by time)",
        [
            f"{b} kernel",
            f"{a} ops credited (kernels)",
            f"{b} time (calls)",
            f"{a} time (kernels)",
            "basis (confidence)",
        ],
        rows,
        note=note if rows or not comparison.fusion.comparability.comparable else "",
        names=(0,),
        texts=(1,),
    )


def _basis(basis: object, confidence: object) -> str:
    """``"name-match 0.50"``: the row's basis and its credits' confidence ("–" when none)."""
    if missing(confidence):
        return f"{basis} –"
    return f"{basis} {float(confidence):.2f}"  # type: ignore[arg-type]


def eager_only_view(comparison: Comparison, *, top: int) -> View:
    a, b = comparison.names
    table = comparison.fusion.eager_only.sort_values("time_us", ascending=False).head(top)
    rows = [
        [str(r["op"]), str(r["outcome"]), fmt_count(r["kernels"]), fmt_us(r["time_us"])]
        for r in records(table)
    ]
    return View(
        f"{a} kernels credited to no {b} kernel",
        ["op", "outcome", "kernels", "time"],
        rows,
        note="removed: moves no data, or a copy/fill folded away" if rows else "",
        names=(0,),
    )


def by_line_view(comparison: Comparison, *, top: int) -> View:
    """The fusion map per user source line (empty without Python stacks or a compile log)."""
    a, b = comparison.names
    table = comparison.fusion.by_line.head(top)
    rows = [
        [
            f"{short_path(str(r['file']))}:{r['line']}",
            str(r["code"]),
            fmt_count(r["eager_kernels"]),
            fmt_us(r["eager_time_us"]),
            _line_kernels(a, str(r["compiled_kernels"]), str(r.get("uncredited_kernels") or "")),
            fmt_us(r["compiled_time_us"]),
            ", ".join(short_path(x) for x in str(r["fused_with"]).split(", ") if x) or "–",
        ]
        for r in records(table)
    ]
    return View(
        f"Fusion by source line (top {top} by {a} time)",
        ["line", "code", f"{a} kernels", f"{a} time", f"{b} kernels", f"{b} time", "fused with"],
        rows,
        note=_by_line_note(a, b, table) if rows else "",
        names=(0,),
        texts=(1, 4, 6),
    )


def _by_line_note(a: str, b: str, table: pd.DataFrame) -> str:
    note = f"{b} time: each kernel's measured time split over the lines it holds"
    column = table.get("uncredited_kernels")
    if column is None or not column.fillna("").astype(str).str.len().gt(0).any():
        return note
    return (
        f"{note}; one credited no {a} kernel: split evenly over the lines the compiler ties it to"
    )


def _line_kernels(a: str, kernels: str, uncredited: str) -> str:
    """A by-line row's compiled kernels, those without a counterpart in ``a`` (the tail of
    ``kernels``, ByLine.uncredited_kernels) said as such."""
    if not uncredited:
        return kernels or "–"
    credited = kernels[: len(kernels) - len(uncredited)].removesuffix(", ")
    tail = f"no {a} kernel credited: {uncredited}"
    return f"{credited} (+ {tail})" if credited else tail


def short_path(path: str) -> str:
    """The last two parts of a path (``models/block.py:12`` rather than the whole path)."""
    parts = path.replace("\\", "/").split("/")
    return "/".join(parts[-2:])


def regions_view(comparison: Comparison) -> View:
    rows = [
        [
            comparison.names[0 if r["side"] == "a" else 1],
            frame_label(r),
            fmt_count(r["calls"]),
            fmt_us(r["wall_us"]),
            fmt_count(r["kernel_count"]),
            fmt_us(r["kernel_time_us"]),
        ]
        for r in records(comparison.regions)
    ]
    notes = []
    for side in (comparison.a, comparison.b):
        stats = side.regions
        if stats.compiled:
            notes.append(
                f"{side.name}: {stats.graph_breaks} graph break(s) visible, {stats.recompiles} "
                f"recompile(s), {stats.outside_kernels} kernel(s) outside compiled regions"
            )
    return View(
        "Compiled regions (Torch-Compiled Region X/Y)",
        ["trace", "frame/recompile", "calls", "wall time", "kernels inside", "device time"],
        rows,
        note="; ".join(notes),
    )


def frame_label(row: dict[str, Any], outside: str = " (outside frames)") -> str:
    """A regions row's frame: ``X/Y``, or the compiled graphs run outside every frame
    (``backward``, ``forward``, ``graph``: Frame.kind) followed by ``outside``."""
    kind = row.get("kind")
    if kind and kind != "frame":
        return f"{kind}{outside}"
    ids = (row["frame_id"], row["recompile_id"])
    return "/".join("?" if i is None else str(int(float(str(i)))) for i in ids)


def comparison_views(comparison: Comparison, *, top: int = 10) -> list[View]:
    """Every table of the comparison, in reading order (empty tables left out)."""
    analysed = comparison.a.summary.analysed and comparison.b.summary.analysed
    views = [
        metrics_view(comparison),
        *([kinds_view(comparison)] if analysed else []),  # n/a: a device without a model
        *([fusion_view(comparison, top=top), eager_only_view(comparison, top=top),
           by_line_view(comparison, top=top)] if analysed else []),
        regions_view(comparison),
    ]  # fmt: skip
    return [v for v in views if v.rows or v.note]
