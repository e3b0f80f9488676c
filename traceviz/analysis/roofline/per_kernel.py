"""The roofline per kernel: how close each kernel ran to its device's memory or compute limit.

For every row of ``Trace.kernels`` (:class:`RooflineColumns`, one row per kernel, same index):

- **FLOPs**: the launching op's (``Kernels.op_row``) FLOPs from its shapes
  (:func:`traceviz.analysis.roofline.flops.op_flops`: GEMM, convolution, attention), split over the
  op's kernels in proportion to their durations as the bytes are, so that an op's kernels add up to
  the op; other kernels (pointwise, reductions, norms, copies, Inductor's Triton kernels) have
  none (NaN): their roof is memory bandwidth; the precision is the op's
  (:func:`~traceviz.analysis.roofline.flops.precision_of`), except that a CPU trace's float32
  convolution is ``fp32`` (TF32 is cuDNN's default, not the CPU's);
- **bytes**: the memory-traffic figure of :func:`traceviz.analysis.traffic.memory.kernel_traffic`
  (measured for memcpy/memset, else estimated from shapes or by the compiler; ``bytes_basis``
  says which), except that a device-to-device memcpy moves its size twice (read and write);
- **achieved**: ``achieved_tbps`` = bytes / duration (TB/s), ``achieved_tflops`` = FLOPs /
  duration (TFLOP/s); ``intensity`` = FLOPs / byte;
- **roof**: with the device's peaks (:func:`traceviz.analysis.roofline.peaks.device_peaks`), the
  attainable throughput of a kernel of that intensity, ``min(peak TFLOP/s, intensity ×
  peak TB/s)``; ``pct_of_roof`` is the achieved FLOP/s over it (kernels without FLOPs: the
  achieved bandwidth over the peak bandwidth), in %;
- **bound**: ``latency`` when the kernel is shorter than :data:`LATENCY_US` or reaches less than
  :data:`LATENCY_SHARE` of both roofs it has; else ``compute`` when its intensity is at or past
  the ridge point (peak TFLOP/s / peak TB/s), ``memory`` below it or without FLOPs;
  ``transfer`` for host↔device copies (the link, not the device memory, limits them);
  ``unknown`` without FLOPs and bytes; ``no-peak`` on every row when the device has no peaks
  (the achieved figures stay; nothing is compared with a guessed roof).

All figures are per kernel execution; durations are device time (``excl_dur_us``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from traceviz import schema
from traceviz.analysis.device import is_analysed
from traceviz.analysis.kernels import Classified, classify
from traceviz.analysis.roofline.flops import FlopRule, OpFlops, op_flops
from traceviz.analysis.roofline.peaks import PRECISIONS, DevicePeaks, PeakLookup, device_peaks
from traceviz.analysis.traffic.memory import (
    KernelTraffic,
    MemoryTraffic,
    memory_traffic,
    split_bytes,
)
from traceviz.dense import unique_inverse
from traceviz.runs.runinfo import HostPeaks
from traceviz.schema import (
    ActivityKind,
    Category,
    DeviceKind,
    Float,
    Int,
    Kernels,
    Ops,
    Text,
    dtypes,
)
from traceviz.trace import Trace

if TYPE_CHECKING:
    from traceviz.analysis.compare import Side

__all__ = [
    "BY_NAME_DTYPES",
    "LATENCY_SHARE",
    "LATENCY_US",
    "ROOFLINE_DTYPES",
    "Bound",
    "Roofline",
    "RooflineByName",
    "RooflineColumns",
    "kernel_roofline",
    "side_roofline",
    "trace_roofline",
]

#: A kernel shorter than this (µs) is latency bound: about what one launch costs end to end.
LATENCY_US = 5.0
#: A kernel reaching less than this share of every roof it has is latency bound.
LATENCY_SHARE = 0.10


class Bound(str, Enum):
    """What limits a kernel (see the module docstring)."""

    MEMORY = "memory"
    COMPUTE = "compute"
    LATENCY = "latency"
    TRANSFER = "transfer"
    UNKNOWN = "unknown"
    NO_PEAK = "no-peak"


class RooflineColumns:
    """Columns of :attr:`Roofline.per_kernel`, one row per ``Trace.kernels`` row."""

    name: Category = "name"  # kernel name (category)
    kind: Category = "kind"  # KernelKind value (category)
    dur_us: Float = "dur_us"  # device time, µs (float64)
    flops: Float = "flops"  # floating-point operations, FLOP (float64; NaN: no FLOP rule)
    flop_rule: Category = "flop_rule"  # FlopRule value (category; <NA>: no FLOPs)
    precision: Category = "precision"  # fp32/tf32/bf16/fp16/fp8 of the FLOPs (<NA>: unknown)
    bytes: Int = "bytes"  # bytes read + written (Int64; <NA>: no figure)
    bytes_basis: Category = "bytes_basis"  # memory.Basis value of the bytes (category)
    achieved_tbps: Float = "achieved_tbps"  # bytes / dur, TB/s (float64; NaN)
    achieved_tflops: Float = "achieved_tflops"  # flops / dur, TFLOP/s (float64; NaN)
    intensity: Float = "intensity"  # flops / bytes, FLOP/byte (float64; NaN)
    peak_tflops: Float = "peak_tflops"  # the device's dense peak at that precision, TFLOP/s (NaN)
    roof_tflops: Float = "roof_tflops"  # min(peak_tflops, intensity × peak TB/s), TFLOP/s (NaN)
    pct_of_roof: Float = "pct_of_roof"  # achieved over the roof, % (float64; NaN without a roof)
    bound: Category = "bound"  # Bound value (category)


ROOFLINE_DTYPES: dict[str, str] = dtypes(RooflineColumns)


Count = Annotated[str, "int64"]  # a column of non-nullable integers (others: traceviz.schema)


class RooflineByName:
    """Columns of :attr:`Roofline.by_name`: one row per kernel name, most device time first."""

    name: Text = "name"  # kernel name
    kind: Text = "kind"  # KernelKind value
    count: Count = "count"  # executions (int64)
    time_us: Float = "time_us"  # summed device time, µs
    flops: Float = "flops"  # summed FLOPs (float64; NaN: none known)
    bytes: Float = "bytes"  # summed bytes (float64; NaN: none known)
    # summed bytes / summed time of the rows with bytes, TB/s
    achieved_tbps: Float = "achieved_tbps"
    achieved_tflops: Float = "achieved_tflops"  # the same for FLOPs, TFLOP/s
    intensity: Float = "intensity"  # summed FLOPs / summed bytes, FLOP/byte
    pct_of_roof: Float = "pct_of_roof"  # time-weighted mean of the rows' pct_of_roof, %
    bound: Text = "bound"  # the bound with the most device time among its rows


BY_NAME_DTYPES: dict[str, str] = dtypes(RooflineByName)


@dataclass(frozen=True)
class Roofline:
    """One trace's roofline: ``per_kernel`` (:class:`RooflineColumns`, aligned with
    ``Trace.kernels``), ``by_name`` (:class:`RooflineByName`), the peaks used (``peaks``:
    basis ``table``, ``measured``, ``file`` or ``no-peak``), and the device time per bound
    (``time_by_bound``: Bound value → µs)."""

    per_kernel: pd.DataFrame
    by_name: pd.DataFrame
    peaks: PeakLookup
    time_by_bound: dict[str, float]

    def to_json(self, *, top: int = 20) -> dict[str, object]:
        """The JSON form: peaks, time per bound, the ``top`` kernel names by device time."""
        from traceviz.records import records

        return {
            **self.peaks.to_json(),
            "latency_us": LATENCY_US,
            "time_by_bound": [
                {"bound": bound, "time_us": time_us}
                for bound, time_us in self.time_by_bound.items()
            ],
            "kernels": records(self.by_name, limit=top),
        }


def kernel_roofline(
    trace: Trace, *, kinds: pd.Series, traffic: MemoryTraffic, peaks: PeakLookup
) -> Roofline:
    """The roofline of every kernel of ``trace`` (rules: module docstring). ``kinds`` is the
    KernelKind per kernel row (``classify``'s kind column), ``traffic`` the trace's memory
    traffic, ``peaks`` its device's peaks
    (:func:`~traceviz.analysis.roofline.peaks.device_peaks`)."""
    kernels = trace.kernels
    dur = kernels[Kernels.excl_dur_us].to_numpy(dtype=float, na_value=np.nan)
    flops, rule, precision = _kernel_flops(trace, dur)
    nbytes = _kernel_bytes(kernels, traffic.per_kernel)
    with np.errstate(divide="ignore", invalid="ignore"):
        good = dur > 0
        tbps = np.where(good, nbytes / dur * 1e-6, np.nan)
        tflops = np.where(good, flops / dur * 1e-6, np.nan)
        intensity = np.where(nbytes > 0, flops / nbytes, np.nan)
    table = pd.DataFrame(
        {
            RooflineColumns.name: kernels[Kernels.name].array,
            RooflineColumns.kind: np.asarray(kinds, dtype=object),
            RooflineColumns.dur_us: dur,
            RooflineColumns.flops: flops,
            RooflineColumns.flop_rule: rule,
            RooflineColumns.precision: precision,
            RooflineColumns.bytes: pd.arrays.IntegerArray(
                np.where(np.isnan(nbytes), 0, nbytes).astype(np.int64), np.isnan(nbytes)
            ),
            RooflineColumns.bytes_basis: traffic.per_kernel[KernelTraffic.basis].array,
            RooflineColumns.achieved_tbps: tbps,
            RooflineColumns.achieved_tflops: tflops,
            RooflineColumns.intensity: intensity,
        },
        index=kernels.index,
    )
    # memcpy rows that cross the host link (HtoD, DtoH, peer): not bound by device memory
    memcpy = (kernels[Kernels.activity] == ActivityKind.MEMCPY.value).to_numpy(dtype=bool)
    dtod = (kernels[Kernels.copy_kind].astype(object) == "DtoD").to_numpy(dtype=bool)
    _roofs(table, peaks.peaks, memcpy & ~dtod)
    table = schema.conform(table, ROOFLINE_DTYPES)
    times = table.groupby(RooflineColumns.bound, observed=True)[RooflineColumns.dur_us].sum()
    return Roofline(
        per_kernel=table,
        by_name=_by_name(table),
        peaks=peaks,
        time_by_bound={str(k): float(v) for k, v in times.items()},
    )


# --- FLOPs and bytes per kernel ---------------------------------------------------------


def _kernel_flops(
    trace: Trace, dur: npt.NDArray[np.float64]
) -> tuple[npt.NDArray[np.float64], pd.Categorical[str], pd.Categorical[str]]:
    """FLOPs per kernel row (NaN: none), the rule and the precision (categoricals)."""
    kernels = trace.kernels
    n = len(kernels)
    flops = np.full(n, np.nan)
    rule_codes = np.full(n, -1, dtype=np.int64)
    precision_codes = np.full(n, -1, dtype=np.int64)
    rule_values = [r.value for r in FlopRule]
    is_kernel = (kernels[Kernels.activity] == ActivityKind.KERNEL.value).to_numpy(dtype=bool)
    op_row = kernels[Kernels.op_row].to_numpy(dtype=np.int64, na_value=-1)
    rows = np.flatnonzero(is_kernel & (op_row >= 0))
    if rows.size:
        ops, back, _ = unique_inverse(op_row[rows])
        per_op = _op_flops(trace.ops, ops)
        known = np.array([f is not None for f in per_op], dtype=bool)[back]
        rows, back = rows[known], back[known]
        totals = np.array([f.flops if f else 0 for f in per_op], dtype=np.int64)[back]
        flops[rows] = split_bytes(op_row[rows], totals, dur[rows]).astype(float)
        op_rule = [rule_values.index(f.rule.value) if f else -1 for f in per_op]
        op_precision = [
            PRECISIONS.index(f.precision) if f and f.precision in PRECISIONS else -1 for f in per_op
        ]
        rule_codes[rows] = np.asarray(op_rule, dtype=np.int64)[back]
        precision_codes[rows] = np.asarray(op_precision, dtype=np.int64)[back]
    if trace.device_kind is DeviceKind.CPU:  # TF32 is cuDNN's default; a CPU conv computes fp32
        precision_codes[precision_codes == PRECISIONS.index("tf32")] = PRECISIONS.index("fp32")
    return (
        flops,
        pd.Categorical.from_codes(rule_codes, categories=pd.Index(rule_values)),
        pd.Categorical.from_codes(precision_codes, categories=pd.Index(PRECISIONS)),
    )


def _op_flops(ops: pd.DataFrame, rows: npt.NDArray[np.integer[Any]]) -> list[OpFlops | None]:
    """:func:`op_flops` of the given ops-table rows, each distinct input combination once."""
    columns = [Ops.name, Ops.input_dims, Ops.input_types, Ops.concrete_inputs]
    picked = ops[columns].iloc[rows]
    codes = [pd.factorize(picked[c], use_na_sentinel=True) for c in columns]
    key = np.zeros(len(picked), dtype=np.int64)
    for code, uniques in codes:
        key, _ = pd.factorize(key * (len(uniques) + 1) + (np.asarray(code) + 1))
    groups, first = np.unique(key, return_index=True)
    values = [picked[c].to_numpy(dtype=object)[first] for c in columns]  # each group's first
    results: dict[int, OpFlops | None] = {}
    for group, name, dims, types, concrete in zip(groups.tolist(), *values, strict=True):
        text = [v if isinstance(v, str) else None for v in (dims, types, concrete)]
        results[group] = op_flops(name if isinstance(name, str) else "", *text)
    return [results[k] for k in key.tolist()]


def _kernel_bytes(kernels: pd.DataFrame, per_kernel: pd.DataFrame) -> npt.NDArray[np.float64]:
    """Bytes per kernel row (NaN: none); a device-to-device memcpy counts its size twice."""
    est = per_kernel[KernelTraffic.est_bytes].to_numpy(dtype=float, na_value=np.nan)
    dtod = (kernels[Kernels.activity] == ActivityKind.MEMCPY.value).to_numpy(dtype=bool) & (
        kernels[Kernels.copy_kind].astype(object) == "DtoD"
    ).to_numpy(dtype=bool)
    return np.where(dtod, est * 2, est)


# --- roofs and bounds --------------------------------------------------------------------


def _roofs(table: pd.DataFrame, peaks: DevicePeaks | None, host: npt.NDArray[np.bool_]) -> None:
    """Fill ``peak_tflops``, ``roof_tflops``, ``pct_of_roof`` and ``bound`` in place."""
    c = RooflineColumns
    n = len(table)
    flops = table[c.flops].to_numpy(dtype=float)
    nbytes = table[c.bytes].to_numpy(dtype=float, na_value=np.nan)
    dur = table[c.dur_us].to_numpy(dtype=float)
    if peaks is None:
        table[c.peak_tflops] = np.nan
        table[c.roof_tflops] = np.nan
        table[c.pct_of_roof] = np.nan
        table[c.bound] = np.full(n, Bound.NO_PEAK.value, dtype=object)
        return
    lookup = {p: (peaks.tflops(p) or np.nan) for p in PRECISIONS}
    precision = table[c.precision].astype(object).to_numpy()
    peak = np.array([lookup.get(p, np.nan) if isinstance(p, str) else np.nan for p in precision])
    intensity = table[c.intensity].to_numpy(dtype=float)
    achieved_tflops = table[c.achieved_tflops].to_numpy(dtype=float)
    achieved_tbps = table[c.achieved_tbps].to_numpy(dtype=float)
    roof = np.fmin(peak, intensity * peaks.hbm_tbps)  # NaN only where both are NaN
    roof = np.where(np.isnan(peak) | np.isnan(intensity), np.nan, roof)
    memory_share = achieved_tbps / peaks.hbm_tbps
    compute_share = achieved_tflops / peak
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(np.isnan(roof), memory_share, achieved_tflops / roof)
    table[c.peak_tflops] = peak
    table[c.roof_tflops] = roof
    table[c.pct_of_roof] = np.where(host, np.nan, share * 100.0)
    best = np.fmax(memory_share, compute_share)  # NaN only where both are unknown
    ridge = peak / peaks.hbm_tbps
    bound = np.where(intensity >= ridge, Bound.COMPUTE.value, Bound.MEMORY.value).astype(object)
    known = ~np.isnan(nbytes) | ~np.isnan(flops)
    bound[~known] = Bound.UNKNOWN.value
    slow = known & (best < LATENCY_SHARE)
    bound[slow | (dur < LATENCY_US)] = Bound.LATENCY.value
    bound[~known & ~(dur < LATENCY_US)] = Bound.UNKNOWN.value
    bound[host] = Bound.TRANSFER.value
    table[c.bound] = bound


def _by_name(table: pd.DataFrame) -> pd.DataFrame:
    """:class:`RooflineByName` rows of the per-kernel table, most device time first."""
    c, b = RooflineColumns, RooflineByName
    if table.empty:
        return schema.empty_table(BY_NAME_DTYPES)
    dur = table[c.dur_us].to_numpy(dtype=float)
    flops = table[c.flops].to_numpy(dtype=float)
    nbytes = table[c.bytes].to_numpy(dtype=float, na_value=np.nan)
    pct = table[c.pct_of_roof].to_numpy(dtype=float)
    frame = pd.DataFrame(
        {
            "name": table[c.name].astype(object).to_numpy(),
            "kind": table[c.kind].astype(object).to_numpy(),
            "t": dur,
            "f": flops,
            "fb": np.where(np.isnan(flops), np.nan, dur),
            "by": nbytes,
            "bt": np.where(np.isnan(nbytes), np.nan, dur),
            "pw": np.where(np.isnan(pct), np.nan, pct * dur),
            "pt": np.where(np.isnan(pct), np.nan, dur),
        }
    )
    grouped = frame.groupby("name", sort=False)
    sums = grouped[["t", "f", "fb", "by", "bt", "pw", "pt"]].sum(min_count=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = pd.DataFrame(
            {
                b.name: sums.index.to_numpy(dtype=object),
                b.kind: grouped["kind"].first().to_numpy(dtype=object),
                b.count: grouped.size().to_numpy(dtype=np.int64),
                b.time_us: sums["t"].to_numpy(dtype=float),
                b.flops: sums["f"].to_numpy(dtype=float),
                b.bytes: sums["by"].to_numpy(dtype=float),
                b.achieved_tbps: (sums["by"] / sums["bt"] * 1e-6).to_numpy(dtype=float),
                b.achieved_tflops: (sums["f"] / sums["fb"] * 1e-6).to_numpy(dtype=float),
                b.intensity: (sums["f"] / sums["by"]).to_numpy(dtype=float),
                b.pct_of_roof: (sums["pw"] / sums["pt"]).to_numpy(dtype=float),
                b.bound: _main_bound(table).reindex(sums.index).to_numpy(dtype=object),
            }
        )
    out = out.sort_values(b.time_us, ascending=False, kind="stable").reset_index(drop=True)
    return schema.conform(out, BY_NAME_DTYPES)


def _main_bound(table: pd.DataFrame) -> pd.Series:
    """Per kernel name, the bound with the most device time among its rows."""
    c = RooflineColumns
    frame = pd.DataFrame(
        {
            "name": table[c.name].astype(object).to_numpy(),
            "bound": table[c.bound].astype(object).to_numpy(),
            "t": np.nan_to_num(table[c.dur_us].to_numpy(dtype=float)),
        }
    )
    time = frame.groupby(["name", "bound"], sort=False)["t"].sum().reset_index()
    top = time.sort_values("t", ascending=False, kind="stable").drop_duplicates("name")
    return top.set_index("name")["bound"]


def side_roofline(
    side: Side, *, override: DevicePeaks | None = None, host: HostPeaks | None = None
) -> Roofline:
    """:func:`kernel_roofline` of an analysed side (its kinds and traffic), with the peaks of
    its device, ``override`` (a ``--peaks`` file's, :func:`~traceviz.analysis.roofline.peaks.
    read_peaks_file`) or, for a CPU trace, ``host`` (the CPU peaks its run measured)."""
    trace = side.trace
    return kernel_roofline(
        trace,
        kinds=side.kernels[Classified.kind],
        traffic=side.traffic,
        peaks=device_peaks(trace, override=override, host=host),
    )


def trace_roofline(
    trace: Trace, *, override: DevicePeaks | None = None, host: HostPeaks | None = None
) -> Roofline | None:
    """:func:`kernel_roofline` of one trace on its own (``traceviz summary``): its kernels
    classified and its memory traffic estimated here, the peaks of its device, ``override``
    (a ``--peaks`` file's) or, for a CPU trace, ``host`` (the CPU peaks its run measured).
    None when traceviz does not model the trace's device."""
    if not is_analysed(trace):
        return None
    kinds = classify(trace)[Classified.kind]
    return kernel_roofline(
        trace,
        kinds=kinds,
        traffic=memory_traffic(trace, kinds=kinds),
        peaks=device_peaks(trace, override=override, host=host),
    )
