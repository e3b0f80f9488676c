"""Graph breaks and recompiles: how many, where in the step, what runs between the compiled
regions and what it costs, and the reasons Dynamo gave (from run.json, when there is one).

Measured from the trace: ``Torch-Compiled Region: X/Y`` spans per step (frames per step − 1 =
breaks visible in the trace); the compiled code itself, the FX-graph calls inside those regions
(a resumed frame's region nests inside the region of the frame that broke, so only the graph
calls show where compiled code stops); the step wall time between consecutive graph calls, and
the kernels and eager ops (``aten::…``) that run there: the work the break leaves eager. The gaps
and their kernels come from one table, :attr:`RegionStats.gaps
<traceviz.analysis.regions.RegionStats>`, which the regions figure reads too.
From run.json (``dynamo``): Dynamo's break count, reasons, user-code locations and hints, and
its recompile reasons.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pandas as pd

from traceviz.analysis.regions import CodeSpan, Gap, code_spans
from traceviz.diagnose import docs
from traceviz.diagnose.facts import (
    TraceFacts,
    cpu_side_gain,
    short_name,
    top_names,
    window_bounds,
)
from traceviz.diagnose.facts import us as _us
from traceviz.diagnose.finding import Evidence, Finding, Severity, Unit
from traceviz.runs.runinfo import CompileRecord, GraphBreak
from traceviz.schema import Ops
from traceviz.source_files import shown

GRAPH_BREAK_ID = "graph-break"
RECOMPILE_ID = "recompile"
#: Dynamo reasons and hints quoted in the evidence (the rest are counted).
TOP_REASONS = 3
GAP_GAIN_BASIS = (
    "upper bound: the step's wall time between its compiled graphs (eager ops, Python, guard "
    "checks), measured; removing the break moves this work into one graph, whose own cost for "
    "it is not subtracted"
)


def graph_breaks(facts: TraceFacts) -> list[Finding]:
    """The graph-break finding: breaks seen in the trace or reported by Dynamo."""
    if not facts.shows_graph_breaks:  # (never on ORT profiles: no compiled graphs)
        return []
    dynamo = facts.dynamo()
    reported = dynamo.graph_break_count or 0
    seen = facts.regions.graph_breaks
    layout = _step_layout(facts)
    evidence: list[Evidence | str] = []
    if reported:
        evidence.append(Evidence("graph breaks Dynamo reported", reported, Unit.COUNT))
        if dynamo.graphs:
            evidence.append(Evidence("graphs Dynamo made", dynamo.graphs, Unit.COUNT))
    evidence += _reasons(dynamo.graph_breaks)
    if seen:
        evidence.append(Evidence("compiled frames per step (trace)", seen + 1, Unit.COUNT))
    if layout:
        evidence.append(layout)
    gap_us = facts.per_step(float(facts.regions.gaps[Gap.wall_us].sum()))
    if gap_us > 0:
        evidence.append(
            Evidence(
                "step wall time between the compiled graphs", gap_us, Unit.US, facts.share(gap_us)
            )
        )
    evidence += _between_evidence(facts)
    gain = cpu_side_gain(facts, gap_us, GAP_GAIN_BASIS)
    return [
        Finding(
            id=GRAPH_BREAK_ID,
            severity=Severity.WARNING,
            title=f"{facts.name}: {max(reported, seen)} graph break(s) split the model into "
            f"{max(reported, seen) + 1} compiled graphs",
            evidence=tuple(evidence),
            est_gain_us=gain.us if gap_us > 0 else None,
            gain_basis=gain.basis if gap_us > 0 else "",
            next_step="Remove the break where it is in your code: a data-dependent `if` on a "
            "tensor → `torch.where` or `torch.cond`; `.item()`, `print` or unsupported calls → "
            "move them out of the compiled function. `torch.compile(model, fullgraph=True)` "
            'raises at the first break; `TORCH_LOGS="graph_breaks"` lists every break.',
            docs_url=docs.GRAPH_BREAKS,
            trace=facts.name,
        )
    ]


def recompiles(facts: TraceFacts) -> list[Finding]:
    """The recompile finding: frames compiled again (X/Y with Y > 0) or Dynamo's count."""
    if facts.is_onnxruntime:  # ORT profiles: no Dynamo (ort_advice.py)
        return []
    frames = facts.regions.frames
    recompiled = frames[pd.to_numeric(frames["recompile_id"], errors="coerce") > 0]
    dynamo = facts.dynamo()
    reported = dynamo.recompiles
    if recompiled.empty and reported == 0:
        return []
    evidence: list[Evidence | str] = []
    if reported:
        evidence.append(Evidence("recompilations Dynamo reported", reported, Unit.COUNT))
    if not recompiled.empty:
        evidence.append(Evidence("frames recompiled (trace)", facts.regions.recompiles, Unit.COUNT))
        evidence += _recompiled_frames(facts, recompiled)
    evidence += _recompile_reasons(dynamo.compiles)
    return [
        Finding(
            id=RECOMPILE_ID,
            severity=Severity.WARNING,
            title=f"{facts.name}: Dynamo recompiled {max(reported, facts.regions.recompiles)} "
            "time(s): a guard failed (a shape, dtype or Python value changed)",
            evidence=tuple(evidence),
            next_step='`TORCH_LOGS="recompiles"` prints the guard that failed. If a size varies, '
            "mark it dynamic (`torch._dynamo.mark_dynamic(x, 0)`) or compile with "
            "`dynamic=True`; pass changing Python numbers as tensors. After "
            "`torch._dynamo.config.recompile_limit` recompiles Dynamo runs the frame eagerly.",
            docs_url=docs.RECOMPILATION,
            trace=facts.name,
        )
    ]


# --- evidence ----------------------------------------------------------------------------


def _reasons(breaks: list[GraphBreak]) -> list[Evidence | str]:
    """Dynamo's break reasons with their location and first hint, de-duplicated."""
    lines: list[str] = []
    for item in breaks:
        line = f"Dynamo: {item.reason or 'graph break'}"
        if item.file:
            line += f" at {shown(item.file)}:{item.line}"  # where it is on this machine
        if item.function:
            line += f" in {item.function}()"
        hints = (t.strip() for t in item.detail.splitlines())
        hint = next((short_name(t, 200) for t in hints if t.lower().startswith("hint:")), "")
        if hint:
            line += f" — {hint}"
        if line not in lines:
            lines.append(line)
    extra = (
        [f"… and {len(lines) - TOP_REASONS} more break reasons"] if len(lines) > TOP_REASONS else []
    )
    return [*lines[:TOP_REASONS], *extra]


def _recompiled_frames(facts: TraceFacts, recompiled: pd.DataFrame) -> list[str]:
    rows = zip(
        recompiled["frame_id"].to_numpy(dtype=float),
        recompiled["recompile_id"].to_numpy(dtype=float),
        recompiled["calls"].to_numpy(dtype=float),
        recompiled["wall_us"].to_numpy(dtype=float),
        strict=True,
    )
    return [
        f"Torch-Compiled Region {frame:.0f}/{again:.0f}: {calls:.0f} calls, "
        f"{_us(wall / facts.n_steps)} wall per step"
        for frame, again, calls, wall in rows
    ][:TOP_REASONS]


def _recompile_reasons(compiles: list[CompileRecord]) -> list[str]:
    lines: list[str] = []
    for item in compiles:
        if item.recompile_reason:
            line = f"Dynamo recompiled {item.compile_id}: {item.recompile_reason}"
            lines.append(short_name(line.replace("\n", " "), 300))
    return [*dict.fromkeys(lines)][:TOP_REASONS]


def _step_layout(facts: TraceFacts) -> str:
    """Where the compiled code of the first step with several spans sits in that step."""
    spans = code_spans(facts.trace)
    starts = spans[CodeSpan.start_us].to_numpy(dtype=float)
    for lo, hi in zip(*window_bounds(facts), strict=True):
        inside = np.flatnonzero((starts >= lo) & (starts < hi))
        if len(inside) < 2:
            continue
        parts = [
            f"frame {spans[CodeSpan.frame].iloc[i]} at {starts[i] - lo:,.0f}–"
            f"{spans[CodeSpan.end_us].iloc[i] - lo:,.0f} µs"
            for i in inside[np.argsort(starts[inside])]
        ]
        return f"compiled code in a {hi - lo:,.0f} µs step: " + "; ".join(parts)
    return ""


def _in_gaps(
    facts: TraceFacts, times: npt.NDArray[np.float64], threads: npt.NDArray[np.object_]
) -> npt.NDArray[np.bool_]:
    """Which (time, thread) points fall inside a gap between compiled-code spans."""
    gaps = facts.regions.gaps
    out = np.zeros(len(times), dtype=bool)
    for thread, start, end in zip(
        gaps[Gap.thread], gaps[Gap.start_us], gaps[Gap.end_us], strict=True
    ):
        out |= (threads == thread) & (times > start) & (times < end)
    return out


def _between_evidence(facts: TraceFacts) -> list[Evidence | str]:
    """The kernels (from the gap table) and eager ops that run in the gaps."""
    out: list[Evidence | str] = []
    gaps = facts.regions.gaps
    if gaps[Gap.kernel_count].sum() > 0:
        time_us = facts.per_step(float(gaps[Gap.kernel_time_us].sum()))
        count = facts.per_step(float(gaps[Gap.kernel_count].sum()))
        out += [
            Evidence("kernels between the compiled graphs per step", count, Unit.COUNT),
            Evidence("their time per step", time_us, Unit.US, facts.share(time_us)),
        ]
    ops = _gap_ops(facts)
    if ops:
        out.append("eager ops run between the graphs: " + ops)
    return out


def _gap_ops(facts: TraceFacts) -> str:
    """The outermost namespaced ops (``aten::…``) that start in a gap, by time per step."""
    ops = facts.trace.ops
    names = ops[Ops.name].astype(object).astype(str)
    threads = ops[Ops.thread].astype(object).astype(str).to_numpy()
    inside = _in_gaps(facts, ops[Ops.ts_us].to_numpy(dtype=float), threads)
    inside &= names.str.contains("::", regex=False).to_numpy()
    if not inside.any():
        return ""
    parents = ops[Ops.parent_row].to_numpy(dtype=float, na_value=np.nan)
    parent_inside = np.zeros(len(ops), dtype=bool)
    has_parent = np.isfinite(parents)
    parent_inside[has_parent] = inside[parents[has_parent].astype(np.int64)]
    outer = inside & ~parent_inside
    durs = np.nan_to_num(ops[Ops.dur_us].to_numpy(dtype=float))[outer]
    top = top_names(names[outer], durs, facts.n_steps)
    return ", ".join(f"{short_name(n, 50)} ({_us(t)} per step)" for n, _, t in top)
