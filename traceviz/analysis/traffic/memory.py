"""Memory traffic: bytes each kernel moved, measured or estimated, and the allocator's figures.

:func:`memory_traffic` gives every row of ``Trace.kernels`` a byte count and says where it came
from (:class:`Basis`):

- **measured**: memcpy/memset rows, their ``bytes`` exactly as the trace gives them (the copy
  size; a device-to-device copy reads and writes it, so its DRAM traffic is twice that);
- **estimated**: kernels whose launching op (``Kernels.op_row`` → ``Trace.ops``, the innermost
  enclosing op; on CPU-only traces the kernel's own op) can be estimated:

  - an Inductor kernel's launch op (named like the kernel, e.g. ``triton_poi_fused_add_0``,
    or carrying ``kernel_backend``): Inductor's ``kernel_num_gb × 1e9`` where present, else the
    sum of its tensor arguments (:func:`~traceviz.analysis.traffic.estimates.estimate_triton_bytes`;
    outputs are among the arguments; each argument counts once, since the trace does not say
    which buffers are read *and* written);
  - any other op: the documented output-size rules of
    :func:`~traceviz.analysis.traffic.estimates.estimate_op_bytes` from its ``Input Dims``/``Input
    type``/ ``Concrete Inputs``;
  - ``aten::_foreach_copy_``, whose ``TensorList`` inputs record shapes but no dtype: its
    lists' shapes in the types its ``multi_tensor_apply_kernel`` names give
    (:mod:`~traceviz.analysis.traffic.foreach`);

  when one op launches several kernels, its bytes are split over them in proportion to their
  durations (evenly when a duration is missing), rounded so that they add up to the op's bytes;
  a kernel whose trace records the sizes of its tensors (an ONNX Runtime node:
  ``Kernels.bytes`` = activation + parameter sizes read, output size written, see
  :mod:`traceviz.parse.ort_profile`) takes that sum, rule ``tensor_sizes``, before any op rule;
- **compiler**: with a compile log (``provenance``, see
  :func:`traceviz.analysis.provenance.compiled_kernel_provenance`), a kernel row the rules above
  leave without a figure and that is an Inductor kernel call gets Inductor's own estimate
  (``GraphLowering.count_bytes``: the bytes its buffers read and write per call). Counted once
  per call: only the row that is the call itself (``primary``), never the work nested in it.
  This covers the CPU ``graph_N_cpp_fused_…`` kernels, whose trace ops carry no shapes, and
  the Triton kernels of a CUDA-graph replay (``mode="reduce-overhead"``: no launching op).
  The library kernels of a replay (cuBLAS GEMMs, attention) take the logged bytes of the
  library calls replayed between their two neighbouring generated kernels, split by duration
  (:mod:`traceviz.analysis.traffic.graph_replay`);
- **none**: everything else (no linked op, no rule for the op, shapes not recorded).

Achieved bandwidth is bytes / duration wherever both are known. Totals are given by kind, with
the device time no estimate covers, so a reader knows how much of the picture the bytes cover.

The allocator figures come from ``[memory]`` events (``Trace.memory``), per device: peak
``total_allocated_bytes``, and bytes allocated per step (the positive ``bytes`` inside each
``ProfilerStep#N`` window, summed, divided by the number of steps).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np
import numpy.typing as npt
import pandas as pd

from traceviz import schema
from traceviz.analysis.inductor_names import fused_kernel_ops
from traceviz.analysis.kernel_kinds import KernelKind, trace_kinds
from traceviz.analysis.provenance import compiled_kernel_provenance
from traceviz.analysis.traffic.estimates import (
    Traffic,
    TrafficRule,
    estimate_op_bytes,
    estimate_triton_bytes,
)
from traceviz.analysis.traffic.foreach import foreach_copy_kernels
from traceviz.analysis.traffic.graph_replay import graph_library_bytes
from traceviz.analysis.windows import full_steps
from traceviz.dense import unique_inverse
from traceviz.parse.compile_log import CompileLog
from traceviz.schema import ActivityKind, DeviceKind, KernelProvenance, Kernels, Memory, Ops, Steps
from traceviz.trace import Trace

__all__ = [
    "ALLOCATOR_DTYPES",
    "BY_KIND_DTYPES",
    "KERNEL_TRAFFIC_DTYPES",
    "RULES",
    "AllocatorUse",
    "Basis",
    "KernelTraffic",
    "MemoryTraffic",
    "TrafficByKind",
    "allocator_use",
    "is_inductor_kernel",
    "kernel_traffic",
    "memory_traffic",
    "op_estimates",
    "peak_allocated",
    "split_bytes",
]


class Basis(str, Enum):
    """Where a kernel's byte count comes from."""

    MEASURED = "measured"  # memcpy/memset bytes from the trace
    ESTIMATED = "estimated"  # estimated from the launching op's shapes
    NONE = "none"  # no figure
    COMPILER = "compiler"  # Inductor's own per-kernel estimate, from the compile log


#: Values of the ``rule`` column: the estimate's :class:`TrafficRule`, or the activity
#: (``memcpy``/``memset``) for measured rows.
RULES: tuple[str, ...] = (
    *(r.value for r in TrafficRule),
    ActivityKind.MEMCPY.value,
    ActivityKind.MEMSET.value,
)


class KernelTraffic:
    """Columns of :attr:`MemoryTraffic.per_kernel`, one row per ``Trace.kernels`` row."""

    est_bytes = Traffic.est_bytes  # bytes read + written (Int64; <NA>: no figure)
    basis = "basis"  # Basis value (category)
    rule = Traffic.rule  # a RULES value (category; <NA>: no figure)
    bandwidth_gbps = "bandwidth_gbps"  # est_bytes / dur_us, GB/s (float64; NaN if unknown)


class TrafficByKind:
    """Columns of :attr:`MemoryTraffic.by_kind`, one row per kernel kind present."""

    kind = "kind"  # KernelKind value (category)
    count = "count"  # rows of that kind (Int64)
    est_bytes = "est_bytes"  # measured + estimated bytes (Int64; <NA>: none known)
    measured_bytes = "measured_bytes"  # measured bytes (Int64; <NA>: none measured)
    estimated_bytes = "estimated_bytes"  # estimated bytes, compiler's included (Int64; <NA>)
    compiler_bytes = "compiler_bytes"  # the part Inductor estimated (Int64; <NA>: none)
    time_us = "time_us"  # device time, µs (float64)
    unestimated_time_us = "unestimated_time_us"  # device time of rows with no figure, µs


class AllocatorUse:
    """Columns of :attr:`MemoryTraffic.allocator`, one row per (device type, device)."""

    device_type = "device_type"  # "cpu" / "cuda" / ... as in Trace.memory (category)
    device = "device"  # device index (Int32)
    events = "events"  # [memory] events (Int64)
    peak_allocated_bytes = "peak_allocated_bytes"  # max total_allocated_bytes (Int64)
    allocated_bytes = "allocated_bytes"  # sum of positive bytes over the trace (Int64)
    allocated_bytes_per_step = "allocated_bytes_per_step"  # inside steps / steps (float64)


KERNEL_TRAFFIC_DTYPES: dict[str, str] = {
    KernelTraffic.est_bytes: schema.I64,
    KernelTraffic.basis: schema.CAT,
    KernelTraffic.rule: schema.CAT,
    KernelTraffic.bandwidth_gbps: schema.F64,
}
BY_KIND_DTYPES: dict[str, str] = {
    TrafficByKind.kind: schema.CAT,
    TrafficByKind.count: schema.I64,
    TrafficByKind.est_bytes: schema.I64,
    TrafficByKind.measured_bytes: schema.I64,
    TrafficByKind.estimated_bytes: schema.I64,
    TrafficByKind.compiler_bytes: schema.I64,
    TrafficByKind.time_us: schema.F64,
    TrafficByKind.unestimated_time_us: schema.F64,
}
ALLOCATOR_DTYPES: dict[str, str] = {
    AllocatorUse.device_type: schema.CAT,
    AllocatorUse.device: schema.I32,
    AllocatorUse.events: schema.I64,
    AllocatorUse.peak_allocated_bytes: schema.I64,
    AllocatorUse.allocated_bytes: schema.I64,
    AllocatorUse.allocated_bytes_per_step: schema.F64,
}


@dataclass(frozen=True)
class MemoryTraffic:
    """Bytes moved by one trace's kernels, and its allocator figures.

    ``per_kernel`` (:class:`KernelTraffic`) is aligned with ``Trace.kernels``; ``by_kind``
    (:class:`TrafficByKind`) totals it per kernel kind, sorted by device time; ``allocator``
    (:class:`AllocatorUse`) has one row per device with ``[memory]`` events.

    Byte totals are None when no row has a figure of that basis; ``estimated_bytes`` counts
    both estimated bases (shapes and compiler), ``compiler_bytes`` the compiler's part.
    ``kernel_time_us`` is the
    summed device time of every row (kernels, memcpy, memset), µs; ``unestimated_time_us`` the
    part with no figure; ``unestimated_time_share`` their ratio (None without device time).
    ``peak_allocated_bytes`` (the largest peak of one device) and ``allocated_bytes_per_step``
    (summed over devices) cover the devices the kernels ran on: the ``cpu`` events of a CPU-only
    trace, the other devices' otherwise; None without such events (or, per step, without steps).
    """

    per_kernel: pd.DataFrame
    by_kind: pd.DataFrame
    allocator: pd.DataFrame
    total_bytes: int | None
    measured_bytes: int | None
    estimated_bytes: int | None
    kernel_time_us: float
    unestimated_time_us: float
    unestimated_time_share: float | None
    peak_allocated_bytes: int | None
    allocated_bytes_per_step: float | None
    compiler_bytes: int | None = None


def memory_traffic(
    trace: Trace,
    *,
    compile_log: CompileLog | None = None,
    provenance: pd.DataFrame | None = None,
    kinds: pd.Series | None = None,
) -> MemoryTraffic:
    """Bytes per kernel (measured or estimated), totals by kind, allocator figures.

    The rules are in the module docstring. ``compile_log`` (the compiled trace's structured
    compile log) or ``provenance`` (``compiled_kernel_provenance(trace, log)``, when the caller
    has it already) adds the compiler's estimates. ``kinds`` is
    :func:`~traceviz.analysis.kernel_kinds.trace_kinds` of ``trace`` when the caller has it
    (``classify``'s kind column: not classified twice). Raises ``TypeError`` when ``trace``
    is not a Trace.
    """
    if not isinstance(trace, Trace):
        raise TypeError(f"memory_traffic needs a Trace, not {type(trace).__name__}")
    if provenance is None and compile_log is not None:
        provenance = compiled_kernel_provenance(trace, compile_log)
    log_kernels = compile_log.kernels if compile_log is not None else None
    per_kernel = kernel_traffic(trace, provenance=provenance, log_kernels=log_kernels)
    kernels = trace.kernels
    dur = kernels[Kernels.excl_dur_us].to_numpy(dtype=float, na_value=np.nan)
    kinds = trace_kinds(trace) if kinds is None else kinds
    by_kind = _by_kind(per_kernel, kinds, dur)
    unestimated = (per_kernel[KernelTraffic.basis] == Basis.NONE.value).to_numpy(dtype=bool)
    time_us = float(np.nansum(dur))
    unestimated_us = float(np.nansum(dur[unestimated]))
    allocator = allocator_use(trace)
    own = _own_devices(allocator, trace.device_kind)
    return MemoryTraffic(
        per_kernel=per_kernel,
        by_kind=by_kind,
        allocator=allocator,
        total_bytes=_sum_or_none(per_kernel, None),
        measured_bytes=_sum_or_none(per_kernel, Basis.MEASURED),
        estimated_bytes=_sum_or_none(per_kernel, Basis.ESTIMATED, Basis.COMPILER),
        compiler_bytes=_sum_or_none(per_kernel, Basis.COMPILER),
        kernel_time_us=time_us,
        unestimated_time_us=unestimated_us,
        unestimated_time_share=unestimated_us / time_us if time_us > 0 else None,
        peak_allocated_bytes=_max_or_none(own[AllocatorUse.peak_allocated_bytes]),
        allocated_bytes_per_step=_fsum_or_none(own[AllocatorUse.allocated_bytes_per_step]),
    )


# --- per kernel --------------------------------------------------------------------------


def kernel_traffic(
    trace: Trace,
    *,
    provenance: pd.DataFrame | None = None,
    log_kernels: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Bytes per ``Trace.kernels`` row (columns :class:`KernelTraffic`, same index);
    ``provenance`` (:func:`~traceviz.analysis.provenance.compiled_kernel_provenance`) adds the
    compiler's estimate where the trace gives none, and with ``log_kernels`` (the compile log's
    kernels table) the library kernels of CUDA-graph replays
    (:func:`~traceviz.analysis.traffic.graph_replay.graph_library_bytes`)."""
    kernels = trace.kernels
    n = len(kernels)
    est = np.zeros(n, dtype=np.int64)
    has = np.zeros(n, dtype=bool)
    rule = np.full(n, -1, dtype=np.int64)
    activity = kernels[Kernels.activity]
    measured_bytes = kernels[Kernels.bytes]
    for kind in (ActivityKind.MEMCPY, ActivityKind.MEMSET):
        rows = ((activity == kind.value) & measured_bytes.notna()).to_numpy(dtype=bool)
        est[rows] = measured_bytes[rows].to_numpy(dtype=np.int64)
        has[rows] = True
        rule[rows] = RULES.index(kind.value)
    measured = has.copy()
    is_kernel = (activity == ActivityKind.KERNEL.value).to_numpy(dtype=bool)
    sized = is_kernel & measured_bytes.notna().to_numpy(dtype=bool)  # ORT nodes' tensor sizes
    est[sized] = measured_bytes[sized].to_numpy(dtype=np.int64)
    has[sized] = True
    rule[sized] = RULES.index(TrafficRule.TENSOR_SIZES.value)
    _estimate_from_ops(trace, is_kernel & ~sized, est, has, rule)
    _estimate_foreach_copies(trace, is_kernel & ~has, est, has, rule)
    from_compiler = _from_compiler(provenance, n, is_kernel & ~has, est)
    if provenance is not None and log_kernels is not None:
        open_rows = is_kernel & ~has & ~from_compiler
        from_compiler |= _from_graph_replays(trace, provenance, log_kernels, open_rows, est)
    has |= from_compiler
    basis = np.where(measured, 0, np.where(from_compiler, 3, np.where(has, 1, 2)))
    dur = kernels[Kernels.excl_dur_us].to_numpy(dtype=float, na_value=np.nan)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        bandwidth = np.where(has & (dur > 0), est / dur * 1e-3, np.nan)
    est_col = pd.array(est, dtype=pd.Int64Dtype())
    est_col[~has] = pd.NA
    basis_values = pd.Index([b.value for b in Basis])
    return pd.DataFrame(
        {
            KernelTraffic.est_bytes: est_col,
            KernelTraffic.basis: pd.Categorical.from_codes(basis, categories=basis_values),
            KernelTraffic.rule: pd.Categorical.from_codes(rule, categories=pd.Index(RULES)),
            KernelTraffic.bandwidth_gbps: bandwidth,
        },
        index=kernels.index,
    )


def _estimate_from_ops(
    trace: Trace,
    is_kernel: npt.NDArray[np.bool_],
    est: npt.NDArray[np.int64],
    has: npt.NDArray[np.bool_],
    rule: npt.NDArray[np.int64],
) -> None:
    """Fill ``est``/``has``/``rule`` for kernel rows whose launching op has an estimate."""
    op_row = trace.kernels[Kernels.op_row]
    rows = np.flatnonzero(is_kernel & op_row.notna().to_numpy())
    if rows.size == 0:
        return
    kernel_ops = op_row.to_numpy(dtype=np.int64, na_value=-1)[rows]
    unique_ops, back, _ = unique_inverse(kernel_ops)  # np.unique's, without its sort
    op_est = op_estimates(trace.ops[list(_ESTIMATE_COLUMNS)].iloc[unique_ops])  # what it reads
    op_bytes = op_est[Traffic.est_bytes]
    known = op_bytes.notna().to_numpy()[back]
    rows, kernel_ops, back = rows[known], kernel_ops[known], back[known]
    totals = op_bytes.to_numpy(dtype=np.int64, na_value=0)[back]
    _split_into(trace, rows, kernel_ops, totals, est, has)
    rule[rows] = _rule_codes(op_est[Traffic.rule])[back]


def _split_into(
    trace: Trace,
    rows: npt.NDArray[np.int64],
    groups: npt.NDArray[np.int64],
    totals: npt.NDArray[np.int64],
    est: npt.NDArray[np.int64],
    has: npt.NDArray[np.bool_],
) -> None:
    """Fill ``est``/``has`` on kernel ``rows``: each group's total split over its rows by
    their durations (:func:`split_bytes`)."""
    dur = trace.kernels[Kernels.excl_dur_us].to_numpy(dtype=float, na_value=np.nan)[rows]
    est[rows] = split_bytes(groups, totals, dur)
    has[rows] = True


def _estimate_foreach_copies(
    trace: Trace,
    open_rows: npt.NDArray[np.bool_],
    est: npt.NDArray[np.int64],
    has: npt.NDArray[np.bool_],
    rule: npt.NDArray[np.int64],
) -> None:
    """Fill ``est``/``has``/``rule`` for ``open_rows`` launched by ``aten::_foreach_copy_``:
    its lists' shapes, the types its kernels' names give
    (:mod:`~traceviz.analysis.traffic.foreach`), split over its kernels by duration."""
    rows, ops, totals = foreach_copy_kernels(trace.kernels, trace.ops, open_rows)
    _split_into(trace, rows, ops, totals, est, has)
    rule[rows] = RULES.index(TrafficRule.COPY.value)


def _from_compiler(
    provenance: pd.DataFrame | None,
    n: int,
    open_rows: npt.NDArray[np.bool_],
    est: npt.NDArray[np.int64],
) -> npt.NDArray[np.bool_]:
    """Fill ``est`` from Inductor's per-call estimate on ``open_rows`` that are a kernel call
    (``primary``) with a logged estimate; returns the rows filled."""
    filled = np.zeros(n, dtype=bool)
    if provenance is None or provenance.empty:
        return filled
    usable = provenance[provenance[KernelProvenance.primary].astype(bool)]
    usable = usable[usable[KernelProvenance.est_bytes].notna()]
    rows = usable[KernelProvenance.kernel_row].to_numpy(dtype=np.int64)
    inside = (rows >= 0) & (rows < n)
    rows, values = rows[inside], usable[KernelProvenance.est_bytes].to_numpy(dtype=np.int64)
    keep = open_rows[rows]
    est[rows[keep]] = values[inside][keep]
    filled[rows[keep]] = True
    return filled


def _from_graph_replays(
    trace: Trace,
    provenance: pd.DataFrame,
    log_kernels: pd.DataFrame,
    open_rows: npt.NDArray[np.bool_],
    est: npt.NDArray[np.int64],
) -> npt.NDArray[np.bool_]:
    """Fill ``est`` on ``open_rows`` that are library kernels of a CUDA-graph replay with the
    compiler's bytes of the library calls replayed there, split by duration; returns the rows
    filled."""
    kernels = trace.kernels
    filled = np.zeros(len(kernels), dtype=bool)
    if kernels[Kernels.graph_launch_row].isna().all() or not open_rows.any():
        return filled
    generated = is_inductor_kernel(kernels[Kernels.name])
    rows, group, total = graph_library_bytes(kernels, provenance, log_kernels, open_rows, generated)
    _split_into(trace, rows, group, total, est, filled)
    return filled


def _rule_codes(rules: pd.Series) -> npt.NDArray[np.int64]:
    """Index into RULES per row (−1 for <NA>), looking at each distinct value once."""
    codes, uniques = pd.factorize(rules, use_na_sentinel=True)
    lookup = np.array([RULES.index(str(u)) for u in uniques] + [-1], dtype=np.int64)
    return lookup[codes]


#: The ops-table columns :func:`op_estimates` reads.
_ESTIMATE_COLUMNS = (
    Ops.name,
    Ops.input_dims,
    Ops.input_types,
    Ops.concrete_inputs,
    Ops.kernel_backend,
    Ops.kernel_num_gb,
)


def op_estimates(ops: pd.DataFrame) -> pd.DataFrame:
    """Estimated bytes of ops-table rows (columns ``est_bytes``, ``rule``; same index).

    Inductor kernel launch ops (a decodable kernel name or a ``kernel_backend``) use
    :func:`estimate_triton_bytes`; every other op :func:`estimate_op_bytes`.
    """
    names = ops[Ops.name]
    inductor = is_inductor_kernel(names) | ops[Ops.kernel_backend].notna().to_numpy()
    frames = []
    if (~inductor).any():
        plain = ops[~inductor]
        frames.append(
            estimate_op_bytes(
                plain[Ops.name],
                plain[Ops.input_dims],
                plain[Ops.input_types],
                concrete_inputs=plain[Ops.concrete_inputs],
            )
        )
    if inductor.any():
        launch = ops[inductor]
        frames.append(
            estimate_triton_bytes(
                launch[Ops.input_dims], launch[Ops.input_types], launch[Ops.kernel_num_gb]
            )
        )
    if not frames:
        return pd.DataFrame(
            {
                Traffic.est_bytes: pd.Series([], dtype=schema.I64),
                Traffic.rule: pd.Categorical([], categories=[r.value for r in TrafficRule]),
            }
        )
    return pd.concat(frames).loc[ops.index]


def is_inductor_kernel(names: pd.Series) -> npt.NDArray[np.bool_]:
    """Per row: the name decodes as an Inductor kernel name (each distinct name decoded once)."""
    codes, uniques = pd.factorize(names, use_na_sentinel=True)
    flags = np.array([fused_kernel_ops(str(u)) is not None for u in uniques], dtype=bool)
    out = np.zeros(len(codes), dtype=bool)
    out[codes >= 0] = flags[codes[codes >= 0]]
    return out


def split_bytes(
    groups: npt.NDArray[np.int64], totals: npt.NDArray[np.int64], dur: npt.NDArray[np.float64]
) -> npt.NDArray[np.int64]:
    """Split each group's total over its rows, in proportion to ``dur``, exactly.

    ``groups`` labels the rows (the launching op), ``totals`` repeats the group's bytes on each
    of its rows. A group with a missing, negative or all-zero duration is split evenly. The
    shares are cumulative roundings, so each group's shares add up to its total.
    """
    out = np.rint(totals.astype(float)).astype(np.int64)  # a group of one row gets it all
    if groups.size < 2:
        return out
    _, inverse, counts = unique_inverse(groups)  # np.unique's, without its sort
    shared = counts[inverse] > 1
    if shared.any():
        out[shared] = _split_shared(groups[shared], totals[shared], dur[shared])
    return out


def _split_shared(
    groups: npt.NDArray[np.int64], totals: npt.NDArray[np.int64], dur: npt.NDArray[np.float64]
) -> npt.NDArray[np.int64]:
    """:func:`split_bytes` of rows whose group has more than one row (each group independent:
    its shares depend only on its own rows, in order)."""
    d = np.where(dur >= 0, dur, np.nan)
    frame = pd.DataFrame({"g": groups, "d": d, "unknown": np.isnan(d)})
    by = frame.groupby("g", sort=False)
    n = by["d"].transform("size").to_numpy(dtype=float)
    dsum = by["d"].transform("sum").to_numpy(dtype=float)
    even = by["unknown"].transform("max").to_numpy(dtype=bool) | ~(dsum > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        weight = np.where(even, 1.0 / n, d / dsum)
    position = by.cumcount().to_numpy()
    cum = pd.Series(weight).groupby(groups, sort=False).cumsum().to_numpy(dtype=float, copy=True)
    cum[position == n - 1] = 1.0
    before = np.where(position == 0, 0.0, cum - weight)
    totals_f = totals.astype(float)
    return (np.rint(totals_f * cum) - np.rint(totals_f * before)).astype(np.int64)


# --- totals ------------------------------------------------------------------------------


def _sum_or_none(per_kernel: pd.DataFrame, *bases: Basis | None) -> int | None:
    """Sum of ``est_bytes`` on rows of ``bases`` (every row for ``None``); None when no row
    of them has an estimate."""
    est = per_kernel[KernelTraffic.est_bytes].array
    values = est.to_numpy(dtype=np.int64, na_value=0)
    keep = ~est.isna()
    if bases != (None,):
        basis = per_kernel[KernelTraffic.basis].array
        wanted = basis.categories.get_indexer([b.value for b in bases if b])
        keep &= np.isin(basis.codes, wanted[wanted >= 0])
    return int(values[keep].sum()) if keep.any() else None


def _by_kind(
    per_kernel: pd.DataFrame, kinds: pd.Series, dur: npt.NDArray[np.float64]
) -> pd.DataFrame:
    """Totals per kernel kind (columns :class:`TrafficByKind`), by device time, largest first."""
    basis = per_kernel[KernelTraffic.basis]
    est = per_kernel[KernelTraffic.est_bytes]
    frame = pd.DataFrame(
        {
            TrafficByKind.kind: kinds.array,
            TrafficByKind.est_bytes: est.array,
            TrafficByKind.measured_bytes: est.where(basis == Basis.MEASURED.value).array,
            TrafficByKind.estimated_bytes: est.where(
                basis.isin([Basis.ESTIMATED.value, Basis.COMPILER.value])
            ).array,
            TrafficByKind.compiler_bytes: est.where(basis == Basis.COMPILER.value).array,
            TrafficByKind.time_us: dur,
            TrafficByKind.unestimated_time_us: np.where(
                (basis == Basis.NONE.value).to_numpy(dtype=bool), dur, 0.0
            ),
        }
    )
    if frame.empty:
        return schema.empty_table(BY_KIND_DTYPES)
    grouped = frame.groupby(TrafficByKind.kind, observed=True, sort=False)
    table = grouped.sum(min_count=1)
    table[TrafficByKind.time_us] = grouped[TrafficByKind.time_us].sum()
    table[TrafficByKind.unestimated_time_us] = grouped[TrafficByKind.unestimated_time_us].sum()
    table.insert(0, TrafficByKind.count, grouped.size())
    table = table.reset_index().sort_values(TrafficByKind.time_us, ascending=False)
    kind_values = [k.value for k in KernelKind]
    table[TrafficByKind.kind] = pd.Categorical(table[TrafficByKind.kind], categories=kind_values)
    return schema.conform(table.reset_index(drop=True), BY_KIND_DTYPES)


# --- allocator ---------------------------------------------------------------------------


def allocator_use(trace: Trace) -> pd.DataFrame:
    """Allocator figures per (device type, device) from ``Trace.memory`` (:class:`AllocatorUse`).

    ``allocated_bytes_per_step`` sums the positive ``bytes`` of events inside each
    ``ProfilerStep#N`` span and divides by the number of steps; NaN when the trace has no steps.
    """
    memory = trace.memory
    if memory.empty:
        return schema.empty_table(ALLOCATOR_DTYPES)
    steps = full_steps(trace)
    starts = steps[Steps.ts_us].to_numpy(dtype=float, na_value=np.nan)
    ends = starts + np.nan_to_num(steps[Steps.dur_us].to_numpy(dtype=float, na_value=0.0))
    rows = [
        _device_use(device_type, device, events, starts, ends)
        for (device_type, device), events in _by_device(memory)
    ]
    return schema.conform(pd.DataFrame(rows), ALLOCATOR_DTYPES)


def _by_device(memory: pd.DataFrame) -> list[tuple[tuple[object, object], pd.DataFrame]]:
    """``memory`` grouped by (device type, device) as ``groupby`` gives it; a trace whose
    events are all on one device (the usual case) is that one group without the groupby."""
    device_type = memory[Memory.device_type].array
    device = memory[Memory.device].array
    if isinstance(device_type, pd.Categorical) and isinstance(device, pd.arrays.IntegerArray):
        codes = device_type.codes
        values = device.to_numpy(dtype=np.int64, na_value=0)
        one = (codes[0] >= 0) & (codes == codes[0]).all() & (values == values[0]).all()
        if one and not device.isna().any():
            return [((device_type.categories[codes[0]], device[0]), memory)]
    keys = [Memory.device_type, Memory.device]
    return list(memory.groupby(keys, observed=True, dropna=False))  # type: ignore[arg-type]


def _device_use(
    device_type: object,
    device: object,
    events: pd.DataFrame,
    starts: npt.NDArray[np.float64],
    ends: npt.NDArray[np.float64],
) -> dict[str, object]:
    """One :class:`AllocatorUse` row: the figures of one device's memory ``events``."""
    nbytes = events[Memory.bytes].to_numpy(dtype=np.int64, na_value=0)
    positive = np.maximum(nbytes, 0)
    ts = events[Memory.ts_us].to_numpy(dtype=float, na_value=np.nan)
    peak = events[Memory.total_allocated_bytes].max()
    return {
        AllocatorUse.device_type: device_type,
        AllocatorUse.device: device,
        AllocatorUse.events: len(events),
        AllocatorUse.peak_allocated_bytes: None if pd.isna(peak) else int(peak),
        AllocatorUse.allocated_bytes: int(positive.sum()),
        AllocatorUse.allocated_bytes_per_step: _per_step(ts, positive, starts, ends),
    }


def _per_step(
    ts: npt.NDArray[np.float64],
    nbytes: npt.NDArray[np.int64],
    starts: npt.NDArray[np.float64],
    ends: npt.NDArray[np.float64],
) -> float:
    """Sum of ``nbytes`` at times inside each [start, end] window, divided by the windows."""
    if starts.size == 0:
        return float("nan")
    order = np.argsort(ts, kind="stable")
    ts, cum = ts[order], np.concatenate([[0], np.cumsum(nbytes[order])])
    inside = cum[np.searchsorted(ts, ends, side="right")] - cum[np.searchsorted(ts, starts)]
    return float(inside.sum()) / starts.size


def peak_allocated(trace: Trace) -> int | None:
    """Peak allocated bytes on the devices the kernels ran on (None without memory events)."""
    own = _own_devices(allocator_use(trace), trace.device_kind)
    return _max_or_none(own[AllocatorUse.peak_allocated_bytes])


def _own_devices(allocator: pd.DataFrame, device_kind: DeviceKind) -> pd.DataFrame:
    """Rows of the devices the kernels ran on: ``cpu`` on a CPU-only trace, else the others."""
    is_cpu = (allocator[AllocatorUse.device_type].astype(object) == "cpu").to_numpy(dtype=bool)
    return allocator[is_cpu if device_kind is DeviceKind.CPU else ~is_cpu]


def _max_or_none(values: pd.Series) -> int | None:
    values = values.dropna()
    return int(values.max()) if len(values) else None


def _fsum_or_none(values: pd.Series) -> float | None:
    values = values.dropna()
    return float(values.sum()) if len(values) else None
