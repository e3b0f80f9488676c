"""Fusion map: for each compiled kernel, the eager kernels it replaced — a partition.

:func:`fusion_map` lines up an eager trace and a compiled trace of the same model. First a
guard (:func:`~traceviz.analysis.fusion.comparable.comparability`) checks that they are the same
workload; when they are not, every fusion figure is withheld (empty tables, None headlines)
unless ``force`` is given. Then each eager kernel *instance* is credited to at most one
compiled kernel (:func:`~traceviz.analysis.fusion.match.credit_eager_kernels`: the compiler's
record when there is one, else identical calls one-to-one, aliases, then Inductor kernels by
the ops in their names), so the map's rows add up to at most what the eager trace measured.

Both sides meet through a key per op (:mod:`~traceviz.analysis.fusion.op_keys`: the base
name through :data:`OP_ALIASES`; ops that move no data have none). An Inductor kernel stands
for the ops in its name and is a fusion (``is_fusion``), even when its name is an old mangled
one whose ops are unknown.

Times are exclusive device times (``excl_dur_us``, so a CPU kernel nested in another counts
once). The headline figures are over whole traces, kernels only (no memcpy/memset): eager
kernels per compiled kernel, and the estimated bytes fusion saved (from :func:`memory_traffic`
of both traces; None rather than negative). When both traces have ``ProfilerStep`` spans in
different numbers, the compiled side is scaled to the eager side's step count first.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import pandas as pd

from traceviz import schema
from traceviz.analysis.fusion.by_line import kernel_table_rows
from traceviz.analysis.fusion.comparable import Comparability, comparability
from traceviz.analysis.fusion.inductor_record import (
    NAME_MATCH_UNRECORDED_BASIS,
    UnrecordedKernels,
    unrecorded_inductor_kernels,
)
from traceviz.analysis.fusion.lines import BY_LINE_DTYPES, LineRecord, lines_table
from traceviz.analysis.fusion.match import (
    CREDITS_DTYPES,
    NAME_MATCH_BASIS,
    Credits,
    Outcome,
    credit_eager_kernels,
    mark_unrecorded,
)
from traceviz.analysis.fusion.op_keys import NO_WORK_OPS, OP_ALIASES, name_keys, op_key
from traceviz.analysis.fusion.ops import KERNEL_OPS_DTYPES, kernel_ops
from traceviz.analysis.kernels import classify
from traceviz.analysis.traffic.coverage import traffic_gap_note
from traceviz.analysis.traffic.memory import (
    Basis,
    KernelTraffic,
    MemoryTraffic,
    is_inductor_kernel,
    memory_traffic,
)
from traceviz.analysis.windows import full_steps
from traceviz.schema import ActivityKind, Kernels
from traceviz.trace import Trace

__all__ = [
    "EAGER_LINES_DTYPES",
    "EAGER_ONLY_DTYPES",
    "FUSION_KERNELS_DTYPES",
    "NOT_FUSIONS_DTYPES",
    "NO_WORK_OPS",
    "OP_ALIASES",
    "EagerOnly",
    "FusionKernels",
    "FusionMap",
    "NotFusions",
    "fusion_map",
    "name_keys",
    "op_key",
]


class FusionKernels:
    """Columns of :attr:`FusionMap.kernels`: one row per distinct compiled kernel name."""

    kernel = "kernel"  # compiled kernel name (str)
    source = "source"  # KernelSource value of most of its calls (category)
    is_fusion = "is_fusion"  # an Inductor-generated kernel (bool)
    fused_ops = "fused_ops"  # ops decoded from its name, comma-separated ("" when none)
    op_names = "op_names"  # the compiled trace's op(s) it ran under, comma-separated (str)
    calls = "calls"  # kernels of that name (Int64)
    time_us = "time_us"  # their device time, µs (float64)
    eager_ops = "eager_ops"  # eager ops it replaced, "op (kernels), ...", by eager time (str)
    eager_kernels = "eager_kernels"  # eager kernel instances credited to it (Int64)
    eager_time_us = "eager_time_us"  # their device time, µs, exclusive (float64)
    is_layout = "is_layout"  # prepares a GEMM/conv run as an extern call: no compute credit
    confidence = "confidence"  # credited-time-weighted confidence, 0–1 (float64; NaN: none)
    # "compiler" (the compile log), "name-match", or "name-match (no Inductor kernels
    # recorded)" (a compiled CPU trace without cpp.enable_kernel_profile) (category)
    basis = "basis"


class EagerOnly:
    """Columns of :attr:`FusionMap.eager_only`: eager ops no compiled kernel accounts for."""

    op = "op"  # eager op name (or kernel name when the kernel has no op) (str)
    outcome = "outcome"  # "removed" (moves no data / folded away) or "no counterpart"
    kernels = "kernels"  # its eager kernels credited to nothing (Int64)
    time_us = "time_us"  # their device time, µs, exclusive (float64)


class NotFusions:
    """Columns of :attr:`FusionMap.not_fusions`: compiled kernels Inductor did not generate."""

    kernel = FusionKernels.kernel
    source = FusionKernels.source
    op_names = FusionKernels.op_names
    calls = FusionKernels.calls
    time_us = FusionKernels.time_us


FUSION_KERNELS_DTYPES: dict[str, str] = {
    FusionKernels.kernel: "object",
    FusionKernels.source: schema.CAT,
    FusionKernels.is_fusion: schema.BOOL,
    FusionKernels.fused_ops: "object",
    FusionKernels.op_names: "object",
    FusionKernels.calls: schema.I64,
    FusionKernels.time_us: schema.F64,
    FusionKernels.eager_ops: "object",
    FusionKernels.eager_kernels: schema.I64,
    FusionKernels.eager_time_us: schema.F64,
    FusionKernels.is_layout: schema.BOOL,
    FusionKernels.confidence: schema.F64,
    FusionKernels.basis: schema.CAT,
}
EAGER_ONLY_DTYPES: dict[str, str] = {
    EagerOnly.op: "object",
    EagerOnly.outcome: schema.CAT,
    EagerOnly.kernels: schema.I64,
    EagerOnly.time_us: schema.F64,
}
NOT_FUSIONS_DTYPES: dict[str, str] = {
    NotFusions.kernel: "object",
    NotFusions.source: schema.CAT,
    NotFusions.op_names: "object",
    NotFusions.calls: schema.I64,
    NotFusions.time_us: schema.F64,
}


@dataclass(frozen=True)
class FusionMap:
    """What fusion did between an eager and a compiled trace (see the module docstring).

    Tables, each sorted by device time, largest first: ``kernels`` (:class:`FusionKernels`,
    one row per compiled kernel name), ``eager_only`` (:class:`EagerOnly`, eager ops whose
    instances were credited to nothing), ``not_fusions`` (:class:`NotFusions`, the rows of
    ``kernels`` that are not fusions); ``credits`` (:class:`~traceviz.analysis.fusion.match.
    Credits`, one row per eager kernel instance, in eager-row order) is the partition the other
    tables sum; ``by_line`` (:class:`~traceviz.analysis.fusion.lines.ByLine`) the same per user
    source line, empty when neither trace maps kernels to lines; ``ops``
    (:class:`~traceviz.analysis.fusion.ops.KernelOps`) the matched credits per (compiled
    kernel, eager op), the structured form of ``kernels.eager_ops``. ``eager_lines``
    (:data:`EAGER_LINES_DTYPES`: ``eager_row``, ``file``, ``line``, ``code``) is each eager
    kernel's own source line where it has one (the lines ``by_line`` sums; empty without),
    for the figures other analyses credit per line (the fusion ledger by line).

    ``comparability`` is the guard's verdict; when it withholds the figures (not comparable,
    not forced) every table above is empty and both headline figures are None.
    ``unrecorded`` is set when the compiled trace is a CPU trace whose Inductor kernels were
    not recorded (:mod:`~traceviz.analysis.fusion.inductor_record`) while eager work is left without
    a counterpart: its name-matched rows then have basis ``name-match (no Inductor kernels
    recorded)`` and lower confidence (:func:`~traceviz.analysis.fusion.match.mark_unrecorded`).
    ``eager_kernel_count``/``compiled_kernel_count`` count kernels (not memcpy/memset) of each
    trace; ``eager_kernels_per_compiled_kernel`` is their ratio (None without compiled
    kernels). ``est_bytes_saved`` is the eager trace's estimated kernel traffic minus the
    compiled one's (**estimated**, see :mod:`traceviz.analysis.traffic.memory`), None when either
    side has no estimate, a compiled fusion kernel has none (the difference would then count the
    fused kernels' own traffic as saved), the two sides' estimates cover shares of their kernel
    time too far apart (:func:`~traceviz.analysis.traffic.coverage.traffic_gap_note`: a CUDA-graph
    replay's library kernels have none) or the difference is negative (no saving).
    ``eager_traffic``/``compiled_traffic`` hold the full traffic results. ``step_scale`` is the
    factor applied to the compiled side (eager steps / compiled steps, 1.0 when not both traces
    have steps).
    """

    kernels: pd.DataFrame
    eager_only: pd.DataFrame
    not_fusions: pd.DataFrame
    eager_kernel_count: int
    compiled_kernel_count: int
    eager_kernels_per_compiled_kernel: float | None
    est_bytes_saved: int | None
    eager_traffic: MemoryTraffic
    compiled_traffic: MemoryTraffic
    step_scale: float
    credits: pd.DataFrame = field(default_factory=lambda: _empty(CREDITS_DTYPES))
    by_line: pd.DataFrame = field(default_factory=lambda: _empty(BY_LINE_DTYPES))
    comparability: Comparability = field(default_factory=lambda: Comparability(True))
    ops: pd.DataFrame = field(default_factory=lambda: _empty(KERNEL_OPS_DTYPES))
    unrecorded: UnrecordedKernels | None = None
    eager_lines: pd.DataFrame = field(default_factory=lambda: _empty(EAGER_LINES_DTYPES))


#: Columns of :attr:`FusionMap.eager_lines`: one row per eager kernels-table row with a line.
EAGER_LINES_DTYPES: dict[str, str] = {
    "eager_row": schema.I64,  # row of the eager trace's kernels table
    "file": "object",  # source file, spelled as ``by_line`` spells it
    "line": schema.I64,  # 1-based line number
    "code": "object",  # the line's text ("" when not recorded)
}


def fusion_map(
    eager: Trace,
    compiled: Trace,
    *,
    eager_traffic: MemoryTraffic | None = None,
    compiled_traffic: MemoryTraffic | None = None,
    compiled_classified: pd.DataFrame | None = None,
    compiler: pd.DataFrame | None = None,
    lines: LineRecord | None = None,
    force: bool = False,
) -> FusionMap:
    """Credit each compiled kernel with the eager kernels it replaced (module docstring).

    The keyword arguments pass results already computed for these traces (their
    :func:`memory_traffic` and :func:`~traceviz.analysis.kernels.classify`), so comparing many
    pairs analyses each trace once. ``compiler`` is the compiler's record (``eager_row`` →
    compiled ``kernel``, see :func:`~traceviz.analysis.fusion.lines.compiler_credits`) and
    ``lines`` the source lines of both sides (for ``by_line``); ``force`` computes the figures
    even when the traces are not comparable. Raises ``TypeError`` when either argument is not
    a Trace.
    """
    for label, trace in (("eager", eager), ("compiled", compiled)):
        if not isinstance(trace, Trace):
            raise TypeError(f"fusion_map needs a Trace for {label}, not {type(trace).__name__}")
    verdict = comparability(eager, compiled, force=force)
    eager_traffic = eager_traffic if eager_traffic is not None else memory_traffic(eager)
    if compiled_traffic is None:
        compiled_traffic = memory_traffic(compiled)
    scale = _step_scale(eager, compiled)
    eager_count = _kernel_count(eager)
    compiled_count = _kernel_count(compiled)
    if verdict.withheld:
        return FusionMap(
            kernels=_empty(FUSION_KERNELS_DTYPES),
            eager_only=_empty(EAGER_ONLY_DTYPES),
            not_fusions=_empty(NOT_FUSIONS_DTYPES),
            eager_kernel_count=eager_count,
            compiled_kernel_count=compiled_count,
            eager_kernels_per_compiled_kernel=None,
            est_bytes_saved=None,
            eager_traffic=eager_traffic,
            compiled_traffic=compiled_traffic,
            step_scale=scale,
            comparability=verdict,
        )
    if compiled_classified is None:
        compiled_classified = classify(compiled)
    credits = credit_eager_kernels(
        eager, compiled, compiled_classified=compiled_classified, compiler=compiler
    )
    unrecorded = _unrecorded(compiled, credits)
    if unrecorded is not None:
        credits = mark_unrecorded(credits)
    recorded = set(lines.recorded) if lines is not None else set()
    if compiler is not None and len(compiler):
        recorded |= set(compiler["kernel"].astype(str))
    ops = kernel_ops(credits)
    name_basis = NAME_MATCH_BASIS if unrecorded is None else NAME_MATCH_UNRECORDED_BASIS
    kernels = kernel_table_rows(
        compiled_classified, credits, ops, recorded, FUSION_KERNELS_DTYPES, name_basis=name_basis
    )
    not_fusions = kernels[~kernels[FusionKernels.is_fusion]].reset_index(drop=True)
    by_line = (
        lines_table(credits, compiled_classified, lines)
        if lines is not None
        else _empty(BY_LINE_DTYPES)
    )
    return FusionMap(
        kernels=kernels,
        eager_only=_eager_only(credits),
        not_fusions=schema.conform(not_fusions, NOT_FUSIONS_DTYPES),
        eager_kernel_count=eager_count,
        compiled_kernel_count=compiled_count,
        eager_kernels_per_compiled_kernel=(
            eager_count / (compiled_count * scale) if compiled_count else None
        ),
        est_bytes_saved=_bytes_saved(compiled, eager_traffic, compiled_traffic, scale),
        eager_traffic=eager_traffic,
        compiled_traffic=compiled_traffic,
        step_scale=scale,
        credits=credits,
        by_line=by_line,
        comparability=verdict,
        ops=ops,
        unrecorded=unrecorded,
        eager_lines=_eager_lines(lines),
    )


def _eager_lines(lines: LineRecord | None) -> pd.DataFrame:
    """:attr:`FusionMap.eager_lines` of the line record (empty without one)."""
    if lines is None or lines.eager.empty:
        return _empty(EAGER_LINES_DTYPES)
    table = lines.eager[list(EAGER_LINES_DTYPES)].reset_index(drop=True)
    return schema.conform(table.assign(code=table["code"].fillna("")), EAGER_LINES_DTYPES)


def _unrecorded(compiled: Trace, credits: pd.DataFrame) -> UnrecordedKernels | None:
    """What the compiled trace measured around Inductor kernels it did not record, when it
    ran Inductor graphs, recorded none of their kernels and eager work is left with no
    counterpart (a graph of library calls only, which generated no kernel, leaves none)."""
    missing = unrecorded_inductor_kernels(compiled)
    if missing is None:
        return None
    left = credits[Credits.outcome] == Outcome.NO_COUNTERPART.value
    return missing if bool(left.any()) else None


def _empty(dtypes: dict[str, str]) -> pd.DataFrame:
    """A zero-row table with ``dtypes``: a copy of one built once per dtypes (copying is
    cheaper than building and casting, and a FusionMap holds six)."""
    return _empty_template(tuple(dtypes.items())).copy()


@functools.cache
def _empty_template(dtypes: tuple[tuple[str, str], ...]) -> pd.DataFrame:
    return schema.conform(pd.DataFrame({c: [] for c, _ in dtypes}), dict(dtypes))


# --- the two sides -----------------------------------------------------------------------


def _kernel_count(trace: Trace) -> int:
    return int((trace.kernels[Kernels.activity] == ActivityKind.KERNEL.value).sum())


def _eager_only(credits: pd.DataFrame) -> pd.DataFrame:
    """Eager instances credited to nothing, per (op, outcome)."""
    left = credits[credits[Credits.outcome] != Outcome.MATCHED.value]
    grouped = left.groupby([Credits.op, Credits.outcome], observed=True, sort=False)
    table = grouped[Credits.time_us].agg(["size", "sum"]).reset_index()
    table = table.rename(columns={Credits.op: EagerOnly.op, Credits.outcome: EagerOnly.outcome,
                                  "size": EagerOnly.kernels, "sum": EagerOnly.time_us})  # fmt: skip
    table = table.sort_values(
        [EagerOnly.time_us, EagerOnly.op], ascending=[False, True], kind="stable"
    )
    return schema.conform(table.reset_index(drop=True), EAGER_ONLY_DTYPES)


# --- headline ----------------------------------------------------------------------------


def _step_scale(eager: Trace, compiled: Trace) -> float:
    """Eager steps / compiled steps when both traces have steps, else 1."""
    eager_steps, compiled_steps = len(full_steps(eager)), len(full_steps(compiled))
    return eager_steps / compiled_steps if eager_steps and compiled_steps else 1.0


def _bytes_saved(
    compiled: Trace, eager_traffic: MemoryTraffic, compiled_traffic: MemoryTraffic, scale: float
) -> int | None:
    """Eager estimated bytes − compiled estimated bytes (scaled), or None (see FusionMap)."""
    if eager_traffic.estimated_bytes is None or compiled_traffic.estimated_bytes is None:
        return None
    fused = is_inductor_kernel(compiled.kernels[Kernels.name])
    unestimated = compiled_traffic.per_kernel[KernelTraffic.basis] == Basis.NONE.value
    if (fused & unestimated.to_numpy(dtype=bool)).any():
        return None
    if traffic_gap_note(eager_traffic, compiled_traffic, ("a", "b")) is not None:
        return None  # the difference would count b's unestimated library kernels as saved
    saved = round(eager_traffic.estimated_bytes - compiled_traffic.estimated_bytes * scale)
    return saved if saved >= 0 else None
