"""One rank's Trace → three small tables, computed while that rank is in memory.

:func:`reduce_rank` runs the single-trace analyses (:mod:`traceviz.analysis.timing.launch` for busy,
idle and launch figures, :mod:`traceviz.analysis.regions` for compiled regions) and keeps what
the cross-rank analyses (:mod:`traceviz.ranks.stragglers`, ``collectives``, ``spread``,
``compare``) need: a one-row **summary**, a **kernel summary** (one row per kernel name) and
the **collectives** (one row per collective kernel). All figures are measured on this rank's
trace, on its own clock; column classes below name every column and its unit.

A collective is a device kernel whose name is NCCL's or RCCL's (``ncclKernel_*``,
``ncclDevKernel_*``, ``rccl*``, ``msccl*``, vLLM's ``cross_device_reduce*``). Its message
size and dtype come from the kernel's arguments or those of the ``record_param_comms`` op
that launched it (:mod:`traceviz.ranks.comm_args`), when the trace has them; else they are
missing (``<NA>``), never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from traceviz.analysis.regions import region_stats
from traceviz.analysis.timing.launch import StepOverhead, launch_overhead
from traceviz.analysis.windows import full_steps, step_windows
from traceviz.errors import TraceVizError
from traceviz.ranks.comm_args import DTYPE_BYTES, CommArgs, collective_args
from traceviz.ranks.detect import int_or_none
from traceviz.schema import ActivityKind, Kernels, Ops, Steps, conform
from traceviz.trace import Trace

__all__ = [
    "COLLECTIVES_DTYPES",
    "KERNEL_SUMMARY_DTYPES",
    "SUMMARY_DTYPES",
    "Collectives",
    "KernelSummary",
    "RankSummary",
    "RankTables",
    "canonical_collective",
    "is_collective_kernel",
    "node_of",
    "plain",
    "range_text",
    "reduce_rank",
]


class RankSummary:
    """Columns of :attr:`RankTables.summary`: one row per rank. Times are µs, summed over the
    trace's step windows (``ProfilerStep#N``; the whole trace as one window when it has none).
    """

    rank = "rank"  # the rank (Int64)
    source = "source"  # the trace file it was reduced from (object)
    node = "node"  # host: distributedInfo host, else the Kineto file name's host, else "" (object)
    world_size = "world_size"  # distributedInfo.world_size (Int64; NA when absent)
    device = "device"  # DeviceKind value: cuda / rocm / cpu / other (object)
    steps = "steps"  # ProfilerStep spans (Int64)
    step_mean_us = "step_mean_us"  # mean step wall time, µs (float64; NaN without steps)
    step_p50_us = "step_p50_us"  # median step wall time, µs (float64; NaN without steps)
    step_p95_us = "step_p95_us"  # 95th percentile step wall time, µs (float64; NaN without steps)
    wall_us = "wall_us"  # summed wall time of the step windows, µs (float64)
    kernels = "kernels"  # device kernels, not memcpy/memset (Int64)
    kernel_time_us = "kernel_time_us"  # their summed exclusive time (excl_dur_us), µs
    comm_kernels = "comm_kernels"  # collective kernels among them (Int64)
    comm_time_us = "comm_time_us"  # their summed duration, µs (float64)
    compute_time_us = "compute_time_us"  # kernel_time_us − comm_time_us, µs (float64)
    busy_us = "busy_us"  # union of device activity inside the step windows, µs (float64)
    idle_us = "idle_us"  # wall_us − busy_us, µs (float64)
    cpu_wait_us = "cpu_wait_us"  # idle time waiting for the CPU to issue work, µs (float64)
    # idle time while the CPU was blocked in a sync call on this rank (IdleParts.blocked_us),
    # µs; waiting for other ranks inside collectives is cross-rank: stragglers' wait_us
    wait_time_us = "wait_time_us"
    launch_calls = "launch_calls"  # kernel/graph launch API calls in the windows (Int64)
    launch_overhead_us = "launch_overhead_us"  # CPU time inside those calls, µs (float64)
    compiled_regions = "compiled_regions"  # Torch-Compiled Region spans (Int64)
    compiled_frames = "compiled_frames"  # distinct Dynamo frames X among them (Int64)
    graph_breaks = "graph_breaks"  # most compiled frames entered in one step − 1 (Int64)
    recompiles = "recompiles"  # distinct frames seen with recompile id Y > 0 (Int64)
    events = "events"  # events in the trace file (Int64)


class KernelSummary:
    """Columns of :attr:`RankTables.kernel_summary`: one row per (rank, kernel name); device
    kernels only (not memcpy/memset); times are exclusive (``excl_dur_us``), µs."""

    rank = "rank"  # (Int64)
    name = "name"  # kernel name as the trace gives it (object)
    calls = "calls"  # kernels of that name (Int64)
    total_us = "total_us"  # summed duration, µs (float64)
    mean_us = "mean_us"  # total_us / calls, µs (float64)
    p50_us = "p50_us"  # median duration, µs (float64)
    max_us = "max_us"  # longest, µs (float64)


class Collectives:
    """Columns of :attr:`RankTables.collectives`: one row per collective kernel of a rank.

    ``seq`` numbers a rank's collectives of one ``name`` on one ``channel`` within one
    ``step`` in start order, so ``(step, channel, name, seq)`` names the same collective
    instance on every rank of the group. Times are µs on this rank's own clock.
    """

    rank = "rank"  # (Int64)
    seq = "seq"  # order within (step, channel, name), from 0 (Int64)
    name = "name"  # canonical collective: all_reduce, all_gather, reduce_scatter, … (object)
    kernel = "kernel"  # the kernel's name (object)
    stream = "stream"  # device stream (Int64)
    channel = "channel"  # process group ("pg 0") when recorded, else "stream N" (object)
    step = "step"  # ProfilerStep number the collective was issued in (Int64; NA: none)
    ts_us = "ts_us"  # kernel start, µs, this rank's clock (float64)
    dur_us = "dur_us"  # kernel duration, µs (float64)
    end_us = "end_us"  # ts_us + dur_us, µs (float64)
    bytes = "bytes"  # message size as nccl-tests counts it: max(in, out) elements × dtype
    # size, bytes (Int64; NA when the trace does not record it)
    dtype = "dtype"  # element type, c10 name such as "Float" (object; NA when unrecorded)
    group_size = "group_size"  # ranks in the process group (Int64; NA when unrecorded)


I64, F64, OBJ = "Int64", "float64", "object"
SUMMARY_DTYPES: dict[str, str] = {
    RankSummary.rank: I64, RankSummary.source: OBJ, RankSummary.node: OBJ,
    RankSummary.world_size: I64, RankSummary.device: OBJ, RankSummary.steps: I64,
    RankSummary.step_mean_us: F64, RankSummary.step_p50_us: F64, RankSummary.step_p95_us: F64,
    RankSummary.wall_us: F64, RankSummary.kernels: I64, RankSummary.kernel_time_us: F64,
    RankSummary.comm_kernels: I64, RankSummary.comm_time_us: F64,
    RankSummary.compute_time_us: F64, RankSummary.busy_us: F64, RankSummary.idle_us: F64,
    RankSummary.cpu_wait_us: F64, RankSummary.wait_time_us: F64,
    RankSummary.launch_calls: I64, RankSummary.launch_overhead_us: F64,
    RankSummary.compiled_regions: I64, RankSummary.compiled_frames: I64,
    RankSummary.graph_breaks: I64, RankSummary.recompiles: I64, RankSummary.events: I64,
}  # fmt: skip
KERNEL_SUMMARY_DTYPES: dict[str, str] = {
    KernelSummary.rank: I64, KernelSummary.name: OBJ, KernelSummary.calls: I64,
    KernelSummary.total_us: F64, KernelSummary.mean_us: F64, KernelSummary.p50_us: F64,
    KernelSummary.max_us: F64,
}  # fmt: skip
COLLECTIVES_DTYPES: dict[str, str] = {
    Collectives.rank: I64, Collectives.seq: I64, Collectives.name: OBJ,
    Collectives.kernel: OBJ, Collectives.stream: I64, Collectives.channel: OBJ,
    Collectives.step: I64, Collectives.ts_us: F64, Collectives.dur_us: F64,
    Collectives.end_us: F64, Collectives.bytes: I64, Collectives.dtype: OBJ,
    Collectives.group_size: I64,
}  # fmt: skip


@dataclass(frozen=True)
class RankTables:
    """One rank's small tables (columns: :class:`RankSummary`, :class:`KernelSummary`,
    :class:`Collectives`)."""

    summary: pd.DataFrame
    kernel_summary: pd.DataFrame
    collectives: pd.DataFrame


#: Device kernel names that are collectives (NCCL, RCCL, MSCCL, vLLM's custom all-reduce).
COLLECTIVE_KERNEL = re.compile(
    r"^(?:nccl|rccl|msccl)|nccl(?:Dev)?Kernel|cross_device_reduce", re.IGNORECASE
)
#: Name fragments → canonical collective, tried in order on the recorded name or kernel name.
_CANONICAL = (
    ("reduce_scatter", r"reduce_?scatter"),
    ("all_reduce", r"all_?reduce|cross_device_reduce"),
    ("all_gather", r"all_?gather"),
    ("all_to_all", r"all_?to_?all"),
    ("send_recv", r"send_?recv|\bsend\b|\brecv\b|_send|_recv|^send|^recv"),
    ("broadcast", r"broadcast|bcast"),
    ("reduce", r"reduce"),
    ("gather", r"gather"),
    ("scatter", r"scatter"),
    ("barrier", r"barrier"),
)
_CANONICAL_RE = tuple((name, re.compile(p, re.IGNORECASE)) for name, p in _CANONICAL)
#: Kineto's default file name: ``<host>_<pid>.<timestamp>.pt.trace.json[.gz]``.
_KINETO_FILE = re.compile(r"^(?P<host>.+)_\d+\.\d+\.pt\.trace\.json(\.gz)?$")


def reduce_rank(trace: Trace, rank: int, source: str) -> RankTables:
    """The small tables of one rank's ``trace`` (read from ``source``, a trace file path)."""
    comms = _collectives(trace, rank, source)
    return RankTables(
        summary=_summary(trace, rank, source, comms),
        kernel_summary=_kernel_summary(trace, rank),
        collectives=comms,
    )


def is_collective_kernel(names: pd.Series) -> np.ndarray:
    """Per kernel name, whether it is a collective's kernel (:data:`COLLECTIVE_KERNEL`)."""
    text = names.astype(object).astype(str)
    return text.str.contains(COLLECTIVE_KERNEL).to_numpy(dtype=bool)


def canonical_collective(name: str) -> str:
    """The canonical collective of a recorded or kernel name: ``"all_reduce"`` from
    ``"allreduce"`` or ``"ncclKernel_AllReduce_RING_LL_Sum_float"``, ``"all_gather"`` from
    ``"_allgather_base"``; ``"other"`` when no known collective is named."""
    core = re.sub(r"^(nccl(Dev)?Kernel_?|rccl|msccl)", "", name, flags=re.IGNORECASE)
    for canonical, pattern in _CANONICAL_RE:
        if pattern.search(core):
            return canonical
    return "other"


def node_of(meta_distributed: dict[str, Any], source: str) -> str:
    """The host a rank ran on: ``distributedInfo``'s host/hostname/node, else the host part of
    Kineto's default file name (``<host>_<pid>.<ts>.pt.trace.json``), else ``""``."""
    for key in ("host", "hostname", "node", "host_name"):
        value = meta_distributed.get(key)
        if value:
            return str(value)
    match = _KINETO_FILE.match(Path(source).name)
    return match.group("host") if match else ""


def plain(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its categorical columns as plain objects (a dataset reads names back
    dictionary-encoded; the cross-rank analyses group and compare them as strings)."""
    cats = [c for c in frame.columns if isinstance(frame[c].dtype, pd.CategoricalDtype)]
    if not cats:
        return frame
    return frame.assign(**{c: frame[c].astype(object) for c in cats})


def range_text(ranks: Iterable[int]) -> str:
    """``0-3, 5, 7-9`` from ranks."""
    runs: list[list[int]] = []
    for r in sorted(set(ranks)):
        if runs and r == runs[-1][-1] + 1:
            runs[-1].append(r)
        else:
            runs.append([r])
    return ", ".join(str(x[0]) if len(x) == 1 else f"{x[0]}-{x[-1]}" for x in runs)


# --- summary --------------------------------------------------------------------------------


def _summary(trace: Trace, rank: int, source: str, comms: pd.DataFrame) -> pd.DataFrame:
    kernels = trace.kernels
    is_kernel = (kernels[Kernels.activity] == ActivityKind.KERNEL.value).to_numpy()
    kernel_time = float(np.nansum(kernels[Kernels.excl_dur_us].to_numpy(dtype=float)[is_kernel]))
    comm_time = float(np.nansum(comms[Collectives.dur_us].to_numpy(dtype=float)))
    steps = full_steps(trace)[Steps.dur_us].to_numpy(dtype=float)  # a cut-off last step left out
    launch = launch_overhead(trace)
    per_step = launch.per_step
    regions = region_stats(trace)
    world = trace.meta.distributed.get("world_size")
    row = {
        RankSummary.rank: rank,
        RankSummary.source: source,
        RankSummary.node: node_of(trace.meta.distributed, source),
        RankSummary.world_size: int_or_none(world),
        RankSummary.device: trace.device_kind.value,
        RankSummary.steps: len(steps),
        RankSummary.step_mean_us: float(steps.mean()) if steps.size else np.nan,
        RankSummary.step_p50_us: float(np.percentile(steps, 50)) if steps.size else np.nan,
        RankSummary.step_p95_us: float(np.percentile(steps, 95)) if steps.size else np.nan,
        RankSummary.wall_us: float(per_step[StepOverhead.wall_us].sum()),
        RankSummary.kernels: int(is_kernel.sum()),
        RankSummary.kernel_time_us: kernel_time,
        RankSummary.comm_kernels: len(comms),
        RankSummary.comm_time_us: comm_time,
        RankSummary.compute_time_us: max(kernel_time - comm_time, 0.0),
        RankSummary.busy_us: float(per_step[StepOverhead.busy_us].sum()),
        RankSummary.idle_us: float(per_step[StepOverhead.idle_us].sum()),
        RankSummary.cpu_wait_us: float(per_step[StepOverhead.cpu_wait_us].sum()),
        RankSummary.wait_time_us: launch.idle.total("blocked_us"),
        RankSummary.launch_calls: int(per_step[StepOverhead.launch_calls].sum()),
        RankSummary.launch_overhead_us: float(per_step[StepOverhead.launch_api_us].sum()),
        RankSummary.compiled_regions: regions.region_calls,
        RankSummary.compiled_frames: regions.distinct_frames,
        RankSummary.graph_breaks: regions.graph_breaks,
        RankSummary.recompiles: regions.recompiles,
        RankSummary.events: trace.stats.events_in,
    }
    return conform(pd.DataFrame([row]), SUMMARY_DTYPES)


# --- kernel summary -------------------------------------------------------------------------


def _kernel_summary(trace: Trace, rank: int) -> pd.DataFrame:
    kernels = trace.kernels
    is_kernel = kernels[Kernels.activity] == ActivityKind.KERNEL.value
    frame = pd.DataFrame(
        {
            KernelSummary.name: kernels.loc[is_kernel, Kernels.name].astype(object).astype(str),
            "dur": kernels.loc[is_kernel, Kernels.excl_dur_us].astype(float),
        }
    )
    grouped = frame.groupby(KernelSummary.name, sort=True)["dur"]
    table = pd.DataFrame(
        {
            KernelSummary.calls: grouped.size(),
            KernelSummary.total_us: grouped.sum(),
            KernelSummary.p50_us: grouped.median(),
            KernelSummary.max_us: grouped.max(),
        }
    ).reset_index()
    table[KernelSummary.mean_us] = table[KernelSummary.total_us] / table[KernelSummary.calls]
    table[KernelSummary.rank] = rank
    table = table.sort_values(KernelSummary.total_us, ascending=False, kind="stable")
    return conform(table.reset_index(drop=True), KERNEL_SUMMARY_DTYPES)


# --- collectives ----------------------------------------------------------------------------


def _collectives(trace: Trace, rank: int, source: str) -> pd.DataFrame:
    kernels = trace.kernels
    is_kernel = (kernels[Kernels.activity] == ActivityKind.KERNEL.value).to_numpy()
    rows = np.flatnonzero(is_kernel & is_collective_kernel(kernels[Kernels.name]))
    if rows.size == 0:
        return conform(pd.DataFrame({c: [] for c in COLLECTIVES_DTYPES}), COLLECTIVES_DTYPES)
    picked = kernels.iloc[rows]
    args = _args_per_kernel(trace, picked, source)
    ts = picked[Kernels.ts_us].to_numpy(dtype=float)
    dur = picked[Kernels.dur_us].to_numpy(dtype=float)
    names = picked[Kernels.name].astype(object).astype(str).to_numpy()
    recorded = args[CommArgs.collective].to_numpy(dtype=object)
    canonical = [
        canonical_collective(str(r)) if isinstance(r, str) else canonical_collective(n)
        for r, n in zip(recorded, names, strict=True)
    ]
    stream = picked[Kernels.stream].astype("Int64").to_numpy(dtype=object)
    groups = args[CommArgs.group].to_numpy(dtype=object)
    channel = [
        f"pg {g}" if isinstance(g, str) else f"stream {s if s is not pd.NA else '?'}"
        for g, s in zip(groups, stream, strict=True)
    ]
    table = pd.DataFrame(
        {
            Collectives.rank: rank,
            Collectives.name: canonical,
            Collectives.kernel: names,
            Collectives.stream: picked[Kernels.stream].to_numpy(),
            Collectives.channel: channel,
            Collectives.step: _issue_steps(trace, picked),
            Collectives.ts_us: ts,
            Collectives.dur_us: dur,
            Collectives.end_us: ts + np.nan_to_num(dur),
            Collectives.bytes: _message_bytes(args),
            Collectives.dtype: args[CommArgs.dtype].to_numpy(dtype=object),
            Collectives.group_size: args[CommArgs.group_size].to_numpy(),
        }
    )
    table = table.sort_values(Collectives.ts_us, kind="stable").reset_index(drop=True)
    keys = [table[Collectives.step].fillna(-1), table[Collectives.channel], table[Collectives.name]]
    table[Collectives.seq] = table.groupby(keys, sort=False).cumcount()
    return conform(table, COLLECTIVES_DTYPES)


def _issue_steps(trace: Trace, picked: pd.DataFrame) -> pd.Series:
    """The ProfilerStep each kernel was issued in (its launch call's start, else its own)."""
    windows = step_windows(trace)
    at = picked[Kernels.launch_ts_us].to_numpy(dtype=float)
    own = picked[Kernels.ts_us].to_numpy(dtype=float)
    at = np.where(np.isfinite(at), at, own)
    index = windows.index_of(at)
    steps = [windows.steps[i] if i >= 0 else None for i in index]
    return pd.Series(steps, dtype="Int64")


def _args_per_kernel(trace: Trace, picked: pd.DataFrame, source: str) -> pd.DataFrame:
    """Per picked kernel (in order), its :class:`CommArgs` row: the kernel's own args, else
    those of the op that launched it (by External id); all missing when unrecorded or unreadable
    (never guessed)."""
    path = Path(source)
    try:  # None when source is no readable trace file (a cache directory, a moved file)
        found = collective_args(path) if path.is_file() else None
    except TraceVizError:
        found = None
    columns = [
        CommArgs.collective, CommArgs.in_nelems, CommArgs.out_nelems,
        CommArgs.dtype, CommArgs.group_size, CommArgs.group,
    ]  # fmt: skip
    out = pd.DataFrame({c: pd.Series([None] * len(picked), dtype=object) for c in columns})
    if found is None or found.empty:
        return _typed(out)
    on_kernel = found[found[CommArgs.on_kernel]].drop_duplicates(CommArgs.correlation)
    by_corr = on_kernel.set_index(CommArgs.correlation)[columns]
    corr = picked[Kernels.correlation].astype("Int64")
    hit = by_corr.reindex(corr.to_numpy()).reset_index(drop=True)
    on_op = found[~found[CommArgs.on_kernel]].drop_duplicates(CommArgs.external_id)
    by_ext = on_op.set_index(CommArgs.external_id)[columns]
    op_rows = picked[Kernels.op_row].to_numpy(dtype=float, na_value=np.nan)
    known = np.isfinite(op_rows)
    ext = trace.ops[Ops.external_id].to_numpy(dtype=float, na_value=np.nan)
    op_ext = np.full(len(picked), np.nan)
    op_ext[known] = ext[op_rows[known].astype(np.int64)]
    via_op = by_ext.reindex(pd.Series(op_ext).astype("Int64").to_numpy()).reset_index(drop=True)
    return _typed(hit.astype(object).combine_first(via_op.astype(object)))


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    for col in (CommArgs.in_nelems, CommArgs.out_nelems, CommArgs.group_size):
        out[col] = pd.to_numeric(out[col], errors="coerce").astype("Int64")
    for col in (CommArgs.collective, CommArgs.dtype, CommArgs.group):
        out[col] = [v if isinstance(v, str) else None for v in out[col]]
    return out


def _message_bytes(args: pd.DataFrame) -> pd.Series:
    """nccl-tests' message size: the larger of the input and output elements × dtype bytes
    (all_gather: the gathered output; reduce_scatter: the scattered input)."""
    nelems = pd.concat([args[CommArgs.in_nelems], args[CommArgs.out_nelems]], axis=1).max(
        axis=1, skipna=True
    )
    size = pd.Series(
        [DTYPE_BYTES.get(d) if isinstance(d, str) else None for d in args[CommArgs.dtype]],
        dtype="Int64",
    )
    return (nelems.astype("Int64") * size).astype("Int64")
