"""Two analysed traces side by side: :func:`analyze` one trace into a :class:`Side`, then
:func:`compare_sides` two sides into a :class:`Comparison` (tables only: no findings, no
rendering, no file reading; :mod:`traceviz.pipeline` does those on top).

The main case is eager (a) versus compiled (b) of one model, but any pair works: two eager
traces before/after a change, two GPUs, two vendors. Every front end (CLI text, JSON,
Markdown, HTML, dashboard, notebook widgets) renders the same comparison, bundled with its
findings as a :class:`traceviz.report.bundle.Report`.

Labels are fields (``Comparison.names``); tables that hold both traces have a ``side``
column with ``"a"`` or ``"b"``, never the labels in column names.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from traceviz.analysis import kernels as kernel_analysis
from traceviz.analysis.device import NOT_ANALYSED, is_analysed
from traceviz.analysis.fusion.fusion_map import FusionMap, fusion_map
from traceviz.analysis.fusion.line_transfer import LineTransfer
from traceviz.analysis.fusion.lines import fusion_evidence, read_log
from traceviz.analysis.regions import RegionStats, region_stats
from traceviz.analysis.summary import TraceSummary, summarize
from traceviz.analysis.timing.launch import LaunchOverhead, launch_overhead
from traceviz.analysis.timing.profiled import ProfiledVsTimed, profiled_vs_timed
from traceviz.analysis.traffic.coverage import traffic_gap_note
from traceviz.analysis.traffic.memory import MemoryTraffic, memory_traffic
from traceviz.runs.runinfo import DynamoFacts, RunInfo
from traceviz.schema import DeviceKind
from traceviz.trace import Trace

SIDES = ("a", "b")


class Metric:
    """Columns of :attr:`Comparison.metrics` (one row per headline figure)."""

    name = "name"  # stable id, e.g. kernel_count
    unit = "unit"  # "count", "us", "bytes", "ratio"
    a = "a"  # value for trace a (float; NaN when not available)
    b = "b"  # value for trace b
    delta = "delta"  # b − a
    ratio = "ratio"  # b / a (NaN when a is 0 or missing)
    basis = "basis"  # "measured" (read from the trace), "estimated" (modelled), or
    # "not-analysed" (a side's device has no model in traceviz: its value is null)
    description = "description"  # one line for people


@dataclass(frozen=True)
class Side:
    """Everything computed for one trace of the pair."""

    name: str
    trace: Trace
    summary: TraceSummary
    kernels: pd.DataFrame  # the kernels table + kind/source/in_region (analysis.kernels)
    launch: LaunchOverhead
    regions: RegionStats
    traffic: MemoryTraffic


@dataclass(frozen=True)
class Comparison:
    """Two traces compared (see the module docstring). Tables:

    - ``metrics``: columns :class:`Metric`;
    - ``kinds``: ``side``, ``kind``, ``source``, ``count``, ``time_us`` (device time, µs);
    - ``regions``: ``side`` plus :class:`traceviz.analysis.regions.Frame` columns;
    - ``fusion``: the fusion map of a → b (:class:`traceviz.analysis.fusion.fusion_map.FusionMap`).

    Findings are not part of it: :class:`traceviz.report.bundle.Report` (a subclass) adds them.
    """

    names: tuple[str, str]
    a: Side
    b: Side
    metrics: pd.DataFrame
    kinds: pd.DataFrame
    regions: pd.DataFrame
    fusion: FusionMap
    run_info: RunInfo | None = None  # the run directory's run.json, typed
    # a's source lines read from a separate lines trace: how many a kernels had a twin there
    line_transfer: LineTransfer | None = None
    # each side's profiled step median against run.json's timed median (None without timing)
    profiled_timing: ProfiledVsTimed | None = None

    def side(self, which: str) -> Side:
        if which not in SIDES:
            raise ValueError(f"side must be 'a' or 'b', not {which!r}")
        return self.a if which == "a" else self.b

    def metric(self, name: str) -> pd.Series:
        """One row of ``metrics`` by name (KeyError if absent)."""
        rows = self.metrics[self.metrics[Metric.name] == name]
        if rows.empty:
            raise KeyError(name)
        return rows.iloc[0]


def compare_sides(
    a: Side,
    b: Side,
    *,
    run_info: RunInfo | None = None,
    compile_log: Any = None,
    force: bool = False,
    eager_lines: Trace | None = None,
) -> Comparison:
    """Compare two analysed traces (lets callers analyse each trace once for many pairs).
    ``compile_log`` is b's compile log (read by :func:`~traceviz.analysis.fusion.lines.read_log`)
    for a fusion map on the compiler's record; ``force`` computes the fusion figures even when
    the traces are not the same workload; ``eager_lines`` is a's lines trace (a run's eager
    steps profiled again under the line marks), where a's kernels find their source lines
    (:func:`~traceviz.analysis.fusion.line_transfer.transfer_lines`; else in a itself)."""
    compiler, lines = fusion_evidence(a.trace, b.trace, compile_log, eager_lines=eager_lines)
    fusion = fusion_map(
        a.trace,
        b.trace,
        eager_traffic=a.traffic,
        compiled_traffic=b.traffic,
        compiled_classified=b.kernels,
        compiler=compiler,
        lines=lines,
        force=force,
    )
    return Comparison(
        names=(a.name, b.name),
        a=a,
        b=b,
        metrics=_metrics(a, b, fusion),
        kinds=_both(kernel_analysis.kind_table(a.kernels), kernel_analysis.kind_table(b.kernels)),
        regions=_both(a.regions.frames, b.regions.frames),
        fusion=fusion,
        run_info=run_info,
        line_transfer=lines.transfer if lines is not None else None,
        profiled_timing=profiled_vs_timed(
            a.trace, b.trace, names=(a.name, b.name), run_info=run_info
        ),
    )


def analyze(
    trace: Trace, *, name: str, dynamo: DynamoFacts | None = None, compile_log: Any = None
) -> Side:
    """Everything the comparison needs from one trace; ``dynamo`` is run.json's Dynamo facts,
    ``compile_log`` its structured compile log (Inductor's byte estimates fill memory traffic
    for the kernels whose shapes the trace lacks)."""
    kernels = kernel_analysis.classify(trace)
    # the kernel kinds are classify's (not classified twice)
    kinds = kernels[kernel_analysis.Classified.kind]
    traffic = memory_traffic(trace, compile_log=read_log(compile_log), kinds=kinds)
    return Side(
        name=name,
        trace=trace,
        # the allocator's peak is the same figure the traffic read: not read twice
        summary=summarize(trace, peak_allocated_bytes=traffic.peak_allocated_bytes),
        kernels=kernels,
        launch=launch_overhead(trace),
        regions=region_stats(trace, dynamo=dynamo),
        traffic=traffic,
    )


def _both(table_a: pd.DataFrame, table_b: pd.DataFrame) -> pd.DataFrame:
    """Stack two per-trace tables with a leading ``side`` column."""
    parts = [t.assign(side=s) for t, s in ((table_a, "a"), (table_b, "b"))]
    stacked = pd.concat(parts, ignore_index=True)
    return stacked.loc[:, ["side", *[c for c in stacked.columns if c != "side"]]]


@dataclass(frozen=True)
class MetricSpec:
    """How one metric row is computed from each side."""

    name: str
    unit: str
    description: str
    get: Callable[[Side], Any]
    basis: str = "measured"


METRICS: list[MetricSpec] = [
    MetricSpec(
        "kernel_count",
        "count",
        "device kernels (CPU ops that compute on CPU traces)",
        lambda s: s.summary.kernel_count,
    ),
    MetricSpec(
        "kernel_time_us",
        "us",
        "summed kernel device time",
        lambda s: s.summary.kernel_time_us,
    ),
    MetricSpec(
        "step_count",
        "count",
        "ProfilerStep spans (model_run calls in an ONNX Runtime profile)",
        lambda s: s.summary.step_count,
    ),
    MetricSpec(
        "step_time_us",
        "us",
        "mean step wall time (ProfilerStep; model_run for ONNX Runtime)",
        lambda s: s.summary.step_mean_us,
    ),
    MetricSpec(
        "kernels_per_step",
        "count",
        "kernels per step",
        lambda s: _per_step(s, s.summary.kernel_count),
    ),
    MetricSpec(
        "kernel_time_per_step_us",
        "us",
        "kernel device time per step",
        lambda s: _per_step(s, s.summary.kernel_time_us),
    ),
    MetricSpec(
        "memcpy_count",
        "count",
        "device memcpy activities",
        lambda s: s.summary.memcpy_count,
    ),
    MetricSpec(
        "memcpy_bytes",
        "bytes",
        "bytes moved by memcpy",
        lambda s: s.summary.memcpy_bytes,
    ),
    MetricSpec(
        "memset_count",
        "count",
        "device memset activities",
        lambda s: s.summary.memset_count,
    ),
    MetricSpec(
        "launch_count",
        "count",
        "kernel and graph launch API calls",
        lambda s: s.launch.launch_calls,
    ),
    MetricSpec(
        "launch_api_time_us",
        "us",
        "CPU time inside launch API calls",
        lambda s: s.launch.launch_api_us,
    ),
    MetricSpec(
        "launch_delay_p50_us",
        "us",
        "median kernel launch delay (device start − launch end)",
        lambda s: s.launch.delay_p50_us,
    ),
    MetricSpec(
        "short_kernels",
        "count",
        "kernels shorter than their own launch call",
        lambda s: s.launch.short_kernels,
    ),
    MetricSpec(
        "device_idle_us",
        "us",
        "step wall time with no device activity (CPU: framework overhead)",
        lambda s: s.launch.idle_us,
    ),
    MetricSpec(
        "cpu_wait_us",
        "us",
        "device idle waiting for the CPU to issue work (step edges in, sync-blocked time out)",
        lambda s: s.launch.cpu_wait_us,
    ),
    MetricSpec(
        "est_bytes",
        "bytes",
        "bytes read + written by kernels (memcpy/memset exact)",
        lambda s: s.traffic.total_bytes,
        "estimated",
    ),
    MetricSpec(
        "unestimated_time_share",
        "ratio",
        "share of kernel time with no traffic estimate",
        lambda s: s.traffic.unestimated_time_share,
    ),
    MetricSpec(
        "peak_allocated_bytes",
        "bytes",
        "peak allocated memory ([memory] events)",
        lambda s: s.traffic.peak_allocated_bytes,
    ),
    MetricSpec(
        "compiled_regions",
        "count",
        "Torch-Compiled Region calls",
        lambda s: s.regions.region_calls,
    ),
    MetricSpec(
        "compiled_frames",
        "count",
        "distinct compiled frames",
        lambda s: s.regions.distinct_frames,
    ),
    MetricSpec(
        "graph_breaks",
        "count",
        "graph breaks visible in the trace (frames per step − 1)",
        lambda s: s.regions.graph_breaks,
    ),
    MetricSpec(
        "recompiles",
        "count",
        "frames recompiled (Torch-Compiled Region X/Y with Y > 0)",
        lambda s: s.regions.recompiles,
    ),
    MetricSpec(
        "kernels_outside_regions",
        "count",
        "kernels issued outside every compiled region",
        lambda s: s.regions.outside_kernels,
    ),
]


def _per_step(side: Side, value: float) -> float | None:
    steps = side.summary.step_count
    return value / steps if steps else None


#: Metrics read from the CPU side of a trace (steps, compiled regions, allocator events): they
#: stay measured on a device traceviz does not model; every other metric needs the device model.
HOST_METRICS = frozenset(
    {"step_count", "step_time_us", "peak_allocated_bytes", "compiled_regions",
     "compiled_frames", "graph_breaks", "recompiles"}
)  # fmt: skip


#: Metrics of what only a device with a launch API and copies has: a CPU trace cannot have them,
#: so a CPU side's value is null (not 0) and the row's basis ``not-applicable``.
DEVICE_ONLY_METRICS = frozenset(
    {"memcpy_count", "memcpy_bytes", "memset_count", "launch_count", "launch_api_time_us",
     "launch_delay_p50_us", "short_kernels", "cpu_wait_us"}
)  # fmt: skip
NOT_APPLICABLE = "not-applicable"


def _metrics(side_a: Side, side_b: Side, fusion: FusionMap) -> pd.DataFrame:
    """One row per :data:`METRICS` entry plus the fusion headline rows. A device metric of a
    side whose device traceviz does not model is null, and its row's basis ``not-analysed``;
    a :data:`DEVICE_ONLY_METRICS` row of a CPU side is null with basis ``not-applicable``."""
    analysed = (is_analysed(side_a.trace), is_analysed(side_b.trace))
    pair = (all(analysed), all(analysed))  # the fusion rows need both sides
    cpu = (side_a.trace.device_kind is DeviceKind.CPU, side_b.trace.device_kind is DeviceKind.CPU)
    rows = [
        _applicable(
            _side_row(
                m.name, m.unit, m.basis, m.description, m.get(side_a), m.get(side_b), analysed
            ),
            cpu,
        )
        for m in METRICS
    ]
    _guard_traffic(rows, side_a, side_b)
    rows.append(
        _side_row(
            "eager_kernels_per_compiled_kernel",
            "ratio",
            "measured",
            "kernels in a per kernel in b (the fusion headline)",
            None,
            fusion.eager_kernels_per_compiled_kernel,
            pair,
        )
    )
    rows.append(
        _side_row(
            "est_bytes_saved",
            "bytes",
            "estimated",
            "estimated traffic of a minus that of b",
            None,
            fusion.est_bytes_saved,
            pair,
        )
    )
    return pd.DataFrame(rows, columns=[
        Metric.name, Metric.unit, Metric.a, Metric.b, Metric.delta, Metric.ratio,
        Metric.basis, Metric.description,
    ])  # fmt: skip


def _guard_traffic(rows: list[list[Any]], side_a: Side, side_b: Side) -> None:
    """Withhold the ``est_bytes`` row's Δ and ratio (NaN), saying why in its description,
    when the two sides' estimates cover different shares of their kernel time
    (:func:`~traceviz.analysis.traffic.coverage.traffic_gap_note`)."""
    why = traffic_gap_note(side_a.traffic, side_b.traffic, (side_a.name, side_b.name))
    if why is None:
        return
    for row in rows:
        if row[0] == "est_bytes" and row[6] != NOT_ANALYSED:
            row[4], row[5], row[7] = math.nan, math.nan, f"{row[7]}; {why}"


def _side_row(
    name: str, unit: str, basis: str, text: str, a: Any, b: Any, analysed: tuple[bool, bool]
) -> list[Any]:
    """:func:`_row`, with the values of unanalysed sides nulled for device metrics."""
    if name in HOST_METRICS or all(analysed):
        return _row(name, unit, basis, text, a, b)
    a, b = (value if ok else None for value, ok in zip((a, b), analysed, strict=True))
    return _row(name, unit, NOT_ANALYSED, text, a, b)


def _applicable(row: list[Any], cpu: tuple[bool, bool]) -> list[Any]:
    """``row`` with its CPU sides nulled when it is a :data:`DEVICE_ONLY_METRICS` row."""
    name, unit, a, b, _, _, basis, text = row
    if name not in DEVICE_ONLY_METRICS or not any(cpu) or basis == NOT_ANALYSED:
        return row
    a, b = (None if is_cpu else value for value, is_cpu in zip((a, b), cpu, strict=True))
    return _row(name, unit, NOT_APPLICABLE, text, a, b)


def _row(name: str, unit: str, basis: str, text: str, a: Any, b: Any) -> list[Any]:
    va, vb = _number(a), _number(b)
    delta = vb - va if not (math.isnan(va) or math.isnan(vb)) else math.nan
    ratio = vb / va if not (math.isnan(va) or math.isnan(vb)) and va != 0 else math.nan
    return [name, unit, va, vb, delta, ratio, basis, text]


def _number(value: Any) -> float:
    if value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan
