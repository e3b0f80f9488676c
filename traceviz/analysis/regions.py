"""Compiled regions: which frames ran compiled, how often, what ran outside them, and the
graph breaks and recompiles the trace shows.

Read from the trace (measured):

- ``frames``: one row per Dynamo frame/recompile ``X/Y`` of ``Torch-Compiled Region: X/Y``;
- kernels **outside** every compiled region: eager leftovers (their count and device time);
- **graph breaks visible in the trace**: a step that runs several compiled frames has a break
  between each two; eager kernels issued between two regions of one step are what the break
  costs on the device;
- **recompiles**: frames seen with Y > 0;
- forward/backward: ``CompiledFunction`` / ``CompiledFunctionBackward`` calls.

With a runner's ``run.json`` the Dynamo facts (graph count, break reasons) come from Dynamo
itself and are attached as they are (see :func:`region_stats`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from traceviz.analysis.kernels import issue_us, issued_inside
from traceviz.analysis.launch import step_windows
from traceviz.schema import ActivityKind, Kernels, RegionKind, Regions
from traceviz.trace import Trace


class Frame:
    """Columns of :attr:`RegionStats.frames`."""

    frame_id = "frame_id"  # X (Int32)
    recompile_id = "recompile_id"  # Y (Int32)
    calls = "calls"  # region spans
    wall_us = "wall_us"  # summed CPU wall time, µs
    kernel_count = "kernel_count"  # kernels issued inside
    kernel_time_us = "kernel_time_us"  # their device time, µs
    graph_keys = "graph_keys"  # FX graph keys called inside, comma-separated


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
    between_time_us: float
    dynamo: dict[str, Any] = field(default_factory=dict)  # from run.json when given

    @property
    def compiled(self) -> bool:
        return self.region_calls + self.fx_graph_calls + self.forward_calls > 0


def region_stats(trace: Trace, *, dynamo: dict[str, Any] | None = None) -> RegionStats:
    """Compiled-region facts of ``trace``; ``dynamo`` is run.json's Dynamo section, if any."""
    regions = trace.regions
    kind = regions[Regions.kind].astype(str)
    compiled = regions[kind == RegionKind.COMPILED_REGION.value]
    inside_mask = issued_inside(trace, regions[kind != RegionKind.FX_GRAPH_CALL.value])
    # A resumed frame's region nests inside the region of the frame that broke, so the break
    # shows between the FX-graph calls, not between the regions.
    calls = regions[kind == RegionKind.FX_GRAPH_CALL.value]
    between_mask = _issued_between(trace, calls if len(calls) else compiled)
    kernels = trace.kernels
    is_kernel = (kernels[Kernels.activity] == ActivityKind.KERNEL.value).to_numpy()
    durs = np.nan_to_num(kernels[Kernels.dur_us].to_numpy(dtype=float))
    outside = is_kernel & ~inside_mask
    return RegionStats(
        frames=_frames(regions, compiled),
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
        between_kernels=int((is_kernel & between_mask).sum()),
        between_time_us=float(durs[is_kernel & between_mask].sum()),
        dynamo=dict(dynamo or {}),
    )


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


def _issued_between(trace: Trace, compiled: pd.DataFrame) -> np.ndarray:
    """Kernels issued after the first and before the last compiled-code span of their step,
    outside every such span: the device cost of graph breaks."""
    issue = issue_us(trace.kernels)
    between = np.zeros(len(issue), dtype=bool)
    if compiled.empty:
        return between
    outside = ~issued_inside(trace, compiled)
    starts = compiled[Regions.ts_us].to_numpy(dtype=float)
    ends = starts + np.nan_to_num(compiled[Regions.dur_us].to_numpy(dtype=float))
    for _, lo, hi in step_windows(trace):
        in_step = (starts >= lo) & (starts < hi)
        if in_step.sum() < 2:
            continue
        first_end, last_start = ends[in_step].min(), starts[in_step].max()
        between |= outside & (issue > first_end) & (issue < last_start)
    return between


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
