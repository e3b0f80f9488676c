"""Compiled regions: which frames ran compiled, how often, what ran outside them, and the
graph breaks and recompiles the trace shows.

Read from the trace (measured):

- ``frames``: one row per Dynamo frame/recompile ``X/Y`` of ``Torch-Compiled Region: X/Y``;
- kernels **outside** every compiled region: eager leftovers (their count and device time);
- **graph breaks visible in the trace**: a step that runs several compiled frames has a break
  between each two; eager kernels issued between two regions of one step are what the break
  costs on the device. ``gaps`` (:func:`graph_break_gaps`) is the one table of those gaps:
  the graph-break finding and the regions figure both read it;
- **recompiles**: frames seen with Y > 0;
- forward/backward: ``CompiledFunction`` / ``CompiledFunctionBackward`` calls.

With a runner's ``run.json`` the Dynamo facts (graph count, break reasons) come from Dynamo
itself and are attached as they are (see :func:`region_stats`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from traceviz.analysis.kernels import issue_us, issued_inside
from traceviz.analysis.regions_graphs import FRAME, GraphPart, graph_parts
from traceviz.analysis.timing.launch import step_windows
from traceviz.runs.runinfo import DynamoFacts
from traceviz.schema import ActivityKind, Kernels, RegionKind, Regions
from traceviz.trace import Trace


class Frame:
    """Columns of :attr:`RegionStats.frames`."""

    frame_id = "frame_id"  # X (Int32)
    recompile_id = "recompile_id"  # Y (Int32)
    calls = "calls"  # region spans
    wall_us = "wall_us"  # summed CPU wall time, µs
    kernel_count = "kernel_count"  # kernels issued inside, not in a region nested in it
    kernel_time_us = "kernel_time_us"  # their exclusive device time (excl_dur_us), µs
    graph_keys = "graph_keys"  # FX graph keys called inside, comma-separated
    # "frame": a Torch-Compiled Region X/Y; "backward"/"forward"/"graph": compiled graphs run
    # outside every frame (CompiledFunctionBackward, CompiledFunction, FX-graph calls alone;
    # X/Y <NA>), so that the rows' kernels and outside_kernels add up to the trace's kernels
    # (traceviz.analysis.regions_graphs)
    kind = "kind"


class Gap:
    """Columns of :attr:`RegionStats.gaps` (:func:`graph_break_gaps`): one row per stretch of a
    step, on one thread, between two consecutive compiled-code spans (a graph break)."""

    thread = "thread"  # "pid/tid"
    step = "step"  # index of the step window (position in ``step_windows``)
    start_us = "start_us"  # end of the compiled code before the gap, µs (trace clock)
    end_us = "end_us"  # start of the compiled code after it, µs
    wall_us = "wall_us"  # end_us − start_us, µs
    kernel_count = "kernel_count"  # kernels (not memcpy/memset) issued inside, on that thread
    kernel_time_us = "kernel_time_us"  # their exclusive device time (excl_dur_us), µs


class CodeSpan:
    """Columns of :func:`code_spans`: where compiled code runs."""

    thread = "thread"  # "pid/tid"
    start_us = "start_us"  # µs (trace clock)
    end_us = "end_us"  # µs
    frame = "frame"  # the innermost Torch-Compiled Region holding it, "X/Y" ("" if none)


@dataclass(frozen=True)
class RegionStats:
    """Compiled-region facts of one trace (see the module docstring)."""

    frames: pd.DataFrame  # columns: Frame
    region_calls: int  # Torch-Compiled Region spans
    fx_graph_calls: int  # "## Call CompiledFxGraph ##" spans
    forward_calls: int  # CompiledFunction
    backward_calls: int  # CompiledFunctionBackward
    distinct_frames: int
    graph_breaks: int  # most compiled frames in one step, minus one
    recompiles: int  # distinct frames with Y > 0
    inside_kernels: int
    inside_time_us: float
    outside_kernels: int  # eager leftovers: kernels issued outside every compiled region
    outside_time_us: float
    between_kernels: int  # eager kernels issued between two compiled regions of one step
    between_time_us: float  # their exclusive device time, µs (= gaps' kernel_time_us summed)
    # A partition of all kernel time (µs): the three add up to inside + outside. Gap kernels
    # can be inside a region (a resumed frame nests in the one that broke), so inside_time_us
    # and between_time_us overlap; these do not.
    code_time_us: float  # inside a compiled region, not in a graph-break gap
    other_time_us: float  # outside every compiled region and every gap
    gaps: pd.DataFrame  # columns: Gap
    dynamo: DynamoFacts | None = None  # run.json's Dynamo facts when given

    @property
    def compiled(self) -> bool:
        return self.region_calls + self.fx_graph_calls + self.forward_calls > 0


def region_stats(trace: Trace, *, dynamo: DynamoFacts | None = None) -> RegionStats:
    """Compiled-region facts of ``trace``; ``dynamo`` is run.json's Dynamo section, if any."""
    regions = trace.regions
    kind = regions[Regions.kind].astype(str)
    compiled = regions[kind == RegionKind.COMPILED_REGION.value]
    # every compiled-region marker: an FX-graph call outside the others is compiled code too
    # (its kernels are a "graph" row of frames)
    inside_mask = issued_inside(trace, regions)
    gaps, gap_of = _gap_table(trace)
    kernels = trace.kernels
    is_kernel = (kernels[Kernels.activity] == ActivityKind.KERNEL.value).to_numpy()
    durs = np.nan_to_num(kernels[Kernels.excl_dur_us].to_numpy(dtype=float))
    outside = is_kernel & ~inside_mask
    in_gap = gap_of >= 0
    return RegionStats(
        frames=_with_graphs(_frames(regions, compiled), graph_parts(trace)),
        region_calls=len(compiled),
        fx_graph_calls=int((kind == RegionKind.FX_GRAPH_CALL.value).sum()),
        forward_calls=int((kind == RegionKind.COMPILED_FUNCTION.value).sum()),
        backward_calls=int((kind == RegionKind.COMPILED_FUNCTION_BACKWARD.value).sum()),
        distinct_frames=int(compiled[Regions.frame_id].nunique()),
        graph_breaks=_graph_breaks(trace, compiled),
        recompiles=int(
            compiled.loc[compiled[Regions.recompile_id] > 0, Regions.frame_id].nunique()
        ),
        inside_kernels=int((is_kernel & inside_mask).sum()),
        inside_time_us=float(durs[is_kernel & inside_mask].sum()),
        outside_kernels=int(outside.sum()),
        outside_time_us=float(durs[outside].sum()),
        between_kernels=int(gaps[Gap.kernel_count].sum()),
        between_time_us=float(gaps[Gap.kernel_time_us].sum()),
        code_time_us=float(durs[is_kernel & inside_mask & ~in_gap].sum()),
        other_time_us=float(durs[outside & ~in_gap].sum()),
        gaps=gaps,
        dynamo=dynamo,
    )


def _with_graphs(frames: pd.DataFrame, parts: list[GraphPart]) -> pd.DataFrame:
    """The frames' rows (kind "frame"), then one row per compiled graph part outside them."""
    frames = frames.assign(**{Frame.kind: FRAME})
    if not parts:
        return frames
    rows = pd.DataFrame(
        {
            Frame.frame_id: pd.array([None] * len(parts), dtype="Int32"),
            Frame.recompile_id: pd.array([None] * len(parts), dtype="Int32"),
            Frame.calls: [p.calls for p in parts],
            Frame.wall_us: [p.wall_us for p in parts],
            Frame.kernel_count: pd.array([p.kernel_count for p in parts], dtype="Int64"),
            Frame.kernel_time_us: [p.kernel_time_us for p in parts],
            Frame.graph_keys: [", ".join(p.graph_keys) for p in parts],
            Frame.kind: [p.label for p in parts],
        }
    )
    if frames.empty:
        return rows
    return pd.concat([frames, rows.astype(frames.dtypes.to_dict())], ignore_index=True)


def _frames(regions: pd.DataFrame, compiled: pd.DataFrame) -> pd.DataFrame:
    columns = [Frame.frame_id, Frame.recompile_id, Frame.calls, Frame.wall_us,
               Frame.kernel_count, Frame.kernel_time_us, Frame.graph_keys]  # fmt: skip
    if compiled.empty:
        return pd.DataFrame({c: [] for c in columns})
    grouped = compiled.groupby([Regions.frame_id, Regions.recompile_id], observed=True)
    table = pd.DataFrame(
        {
            Frame.calls: grouped.size(),
            Frame.wall_us: grouped[Regions.dur_us].sum(),
            Frame.kernel_count: grouped[Regions.kernel_count].sum(),
            Frame.kernel_time_us: grouped[Regions.kernel_time_us].sum(),
        }
    ).reset_index()
    table[Frame.graph_keys] = [
        ", ".join(_graph_keys_inside(regions, compiled, int(f), int(r)))
        for f, r in zip(table[Regions.frame_id], table[Regions.recompile_id], strict=True)
    ]
    return table.loc[:, columns]


def _graph_keys_inside(
    regions: pd.DataFrame, compiled: pd.DataFrame, frame: int, recompile: int
) -> list[str]:
    spans = compiled[
        (compiled[Regions.frame_id] == frame) & (compiled[Regions.recompile_id] == recompile)
    ]
    calls = regions[regions[Regions.kind] == RegionKind.FX_GRAPH_CALL.value]
    call_threads = calls[Regions.thread].astype(object).to_numpy()
    call_starts = calls[Regions.ts_us].to_numpy(dtype=float)
    call_keys = calls[Regions.graph_key].astype(object).to_numpy()
    keys: set[str] = set()
    for thread, start, dur in zip(
        spans[Regions.thread].astype(object), spans[Regions.ts_us], spans[Regions.dur_us],
        strict=True,
    ):  # fmt: skip
        end = float(start) + float(dur)
        hit = (call_threads == thread) & (call_starts >= float(start)) & (call_starts <= end)
        keys.update(str(k) for k in call_keys[hit] if k is not None and k == k)
    return sorted(keys)


def code_spans(trace: Trace) -> pd.DataFrame:
    """Where compiled code runs (columns: :class:`CodeSpan`): the FX-graph calls made inside
    Torch-Compiled Regions — a resumed frame's region nests inside the region of the frame
    that broke, so only the graph calls show where compiled code stops — else the regions."""
    regions = trace.regions
    kind = regions[Regions.kind].astype(object).to_numpy()
    frames = regions[kind == RegionKind.COMPILED_REGION.value]
    spans = _span_frame(regions[kind == RegionKind.FX_GRAPH_CALL.value], frames)
    spans = spans[spans[CodeSpan.frame] != ""]
    return spans if len(spans) else _span_frame(frames, frames)


def _span_frame(spans: pd.DataFrame, frames: pd.DataFrame) -> pd.DataFrame:
    """``spans`` with the innermost compiled region (frame X/Y) holding each one."""
    start = spans[Regions.ts_us].to_numpy(dtype=float)
    end = start + np.nan_to_num(spans[Regions.dur_us].to_numpy(dtype=float))
    thread = spans[Regions.thread].astype(object).astype(str).to_numpy()
    f_start = frames[Regions.ts_us].to_numpy(dtype=float)
    f_end = f_start + np.nan_to_num(frames[Regions.dur_us].to_numpy(dtype=float))
    f_thread = frames[Regions.thread].astype(object).astype(str).to_numpy()
    f_name = frames[Regions.name].astype(object).astype(str).str.removeprefix(
        "Torch-Compiled Region: ").to_numpy()  # fmt: skip
    labels = []
    for s, e, t in zip(start, end, thread, strict=True):
        holds = np.flatnonzero((f_thread == t) & (f_start <= s) & (f_end >= e))
        labels.append(str(f_name[holds[np.argmax(f_start[holds])]]) if len(holds) else "")
    return pd.DataFrame(
        {CodeSpan.thread: thread, CodeSpan.start_us: start, CodeSpan.end_us: end,
         CodeSpan.frame: labels}
    )  # fmt: skip


def graph_break_gaps(trace: Trace) -> pd.DataFrame:
    """The step time between consecutive compiled-code spans (:func:`code_spans`) of one step
    and thread, and the kernels issued there (columns: :class:`Gap`). A span belongs to the
    step window its start falls in; spans outside every step are not gaps' ends."""
    return _gap_table(trace)[0]


def _gap_table(trace: Trace) -> tuple[pd.DataFrame, np.ndarray]:
    """:func:`graph_break_gaps` and, per kernel row, the gap it was issued in (−1: none)."""
    spans = code_spans(trace)
    windows = step_windows(trace)
    starts = spans[CodeSpan.start_us].to_numpy(dtype=float)
    step = np.full(len(spans), -1, dtype=np.int64)
    for i, (_, lo, hi) in enumerate(windows):
        step[(starts >= lo) & (starts < hi) & (step < 0)] = i
    if not _share_a_step(spans[CodeSpan.thread].to_numpy(dtype=object), step):
        # a gap lies between two spans of one step and thread: none here (every eager trace,
        # and a compiled one without graph breaks)
        return _no_gaps(), np.full(len(trace.kernels), -1, dtype=np.int64)
    spans = spans.assign(step=step)
    spans = spans[spans["step"] >= 0].sort_values(
        [CodeSpan.thread, "step", CodeSpan.start_us], kind="stable"
    )
    # group codes, not "thread/step" strings: string concatenation fails on some pandas string
    # dtypes (seen on an H200 machine's pandas: "radd not supported for dtype 'str'")
    group = spans.groupby(
        [CodeSpan.thread, "step"], sort=False, observed=True, dropna=False
    ).ngroup()
    reach = spans[CodeSpan.end_us].groupby(group.to_numpy()).cummax().to_numpy(dtype=float)
    begin = spans[CodeSpan.start_us].to_numpy(dtype=float)
    codes = group.to_numpy()
    same = (codes[1:] == codes[:-1]) & (begin[1:] > reach[:-1])
    gaps = pd.DataFrame(
        {
            Gap.thread: spans[CodeSpan.thread].to_numpy()[:-1][same],
            Gap.step: spans["step"].to_numpy()[:-1][same],
            Gap.start_us: reach[:-1][same],
            Gap.end_us: begin[1:][same],
        }
    )
    gaps[Gap.wall_us] = gaps[Gap.end_us] - gaps[Gap.start_us]
    gaps = gaps.reset_index(drop=True)
    gap_of = _gap_of_kernels(trace, gaps)
    held = gap_of >= 0
    excl = np.nan_to_num(trace.kernels[Kernels.excl_dur_us].to_numpy(dtype=float))
    gaps[Gap.kernel_count] = np.bincount(gap_of[held], minlength=len(gaps)).astype(np.int64)
    gaps[Gap.kernel_time_us] = np.bincount(gap_of[held], weights=excl[held], minlength=len(gaps))
    return gaps, gap_of


def _share_a_step(threads: np.ndarray, steps: np.ndarray) -> bool:
    """Whether two spans (their threads and steps; step −1: outside every step) fall in one
    step on one thread."""
    inside = steps >= 0
    pairs = list(zip(threads[inside].tolist(), steps[inside].tolist(), strict=True))
    return len(set(pairs)) < len(pairs)


def _no_gaps() -> pd.DataFrame:
    """:func:`_gap_table`'s table when no two spans share a step: its columns and dtypes (as
    the general path gives them: ``kernel_time_us`` of no gaps is numpy's empty bincount,
    int64), no rows."""
    none = np.zeros(0, dtype=np.int64)
    return pd.DataFrame(
        {Gap.thread: np.array([], dtype=object), Gap.step: none, Gap.start_us: np.zeros(0),
         Gap.end_us: np.zeros(0), Gap.wall_us: np.zeros(0), Gap.kernel_count: none,
         Gap.kernel_time_us: np.bincount(none, weights=np.zeros(0), minlength=0)}
    )  # fmt: skip


def _gap_of_kernels(trace: Trace, gaps: pd.DataFrame) -> np.ndarray:
    """Per kernel row, the gap (row of ``gaps``) it was issued strictly inside, on the gap's
    thread, or −1; memcpy/memset are never in a gap. Gaps of one thread do not overlap."""
    kernels = trace.kernels
    gap_of = np.full(len(kernels), -1, dtype=np.int64)
    is_kernel = (kernels[Kernels.activity] == ActivityKind.KERNEL.value).to_numpy()
    issue = issue_us(kernels)
    threads = kernels[Kernels.thread].astype(object).astype(str).to_numpy()
    gap_threads = gaps[Gap.thread].to_numpy()
    for thread in pd.unique(gap_threads):
        rows = np.flatnonzero(gap_threads == thread)
        rows = rows[np.argsort(gaps[Gap.start_us].to_numpy(dtype=float)[rows], kind="stable")]
        lo = gaps[Gap.start_us].to_numpy(dtype=float)[rows]
        hi = gaps[Gap.end_us].to_numpy(dtype=float)[rows]
        mine = np.flatnonzero(is_kernel & (threads == thread) & np.isfinite(issue))
        pos = np.searchsorted(lo, issue[mine], side="right") - 1
        safe = np.maximum(pos, 0)
        hit = (pos >= 0) & (issue[mine] > lo[safe]) & (issue[mine] < hi[safe])
        gap_of[mine[hit]] = rows[pos[hit]]
    return gap_of


def _graph_breaks(trace: Trace, compiled: pd.DataFrame) -> int:
    """Most distinct compiled frames entered within one step, minus one (0 if none)."""
    if compiled.empty:
        return 0
    starts = compiled[Regions.ts_us].to_numpy(dtype=float)
    frames = compiled[Regions.frame_id].to_numpy(dtype=float)
    most = 0
    for _, lo, hi in step_windows(trace):
        in_step = (starts >= lo) & (starts < hi)
        most = max(most, len(np.unique(frames[in_step])))
    return max(most - 1, 0)
