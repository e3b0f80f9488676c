"""Compiled graphs that run outside every ``Torch-Compiled Region`` frame.

A training step's backward is compiled too, but autograd runs it after the frame has
returned, on its own thread: the trace marks it ``CompiledFunctionBackward`` (under
``autograd::engine::evaluate_function: CompiledFunctionBackward``) with the graph's
``## Call CompiledFxGraph <key> ##`` inside, and no ``Torch-Compiled Region``. Traces of
torch before the region marker (the 2023 A100 and V100 cudagraph runs of the corpus) mark
even the forward only by ``CompiledFunction``. Their kernels are compiled code, issued inside
a compiled-region marker, so they are not outside the compiled regions; a table of frames
alone then leaves them out of both sides of the account (the H200 attention-train run: 85
kernels in frame 0/0, 20 outside, and the 180 backward kernels in neither).

:func:`graph_parts` credits each such kernel to one part, so that the frames' kernels, these
parts' and the kernels outside every marker add up to the trace's kernels (count and time):

- ``backward``: issued inside a ``CompiledFunctionBackward`` span, in no frame;
- ``forward``: inside a ``CompiledFunction`` span, in no frame and no backward;
- ``graph``: inside an FX-graph call only (``## Call CompiledFxGraph ##``, as some ROCm
  traces have them alone).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from traceviz.analysis.kernels import covered, issued_inside
from traceviz.schema import ActivityKind, Kernels, RegionKind, Regions
from traceviz.trace import Trace

__all__ = ["FRAME", "PARTS", "GraphPart", "graph_parts"]

#: The kind of a ``Torch-Compiled Region`` frame's row.
FRAME = "frame"
#: (label, the region kind whose spans hold the part), in the order kernels are credited.
PARTS = (
    ("backward", RegionKind.COMPILED_FUNCTION_BACKWARD),
    ("forward", RegionKind.COMPILED_FUNCTION),
    ("graph", RegionKind.FX_GRAPH_CALL),
)


@dataclass(frozen=True)
class GraphPart:
    """One part (module docstring): its spans outside every frame and earlier part
    (``calls``, their summed ``wall_us``), the kernels credited to it (``kernel_count``, their
    exclusive device time ``kernel_time_us``) and the FX graph keys called in its spans."""

    label: str
    calls: int
    wall_us: float
    kernel_count: int
    kernel_time_us: float
    graph_keys: list[str]


def graph_parts(trace: Trace) -> list[GraphPart]:
    """The parts (module docstring) of ``trace`` that have a span or a kernel, in order."""
    regions = trace.regions
    kind = regions[Regions.kind].astype(object).to_numpy()
    if not (kind != RegionKind.COMPILED_REGION.value).any():
        return []
    kernels = trace.kernels
    is_kernel = (kernels[Kernels.activity] == ActivityKind.KERNEL.value).to_numpy()
    excl = np.nan_to_num(kernels[Kernels.excl_dur_us].to_numpy(dtype=float))
    frames = regions[kind == RegionKind.COMPILED_REGION.value]
    taken = issued_inside(trace, frames)
    held = [_spans(frames)]
    parts = []
    for label, region_kind in PARTS:
        spans = regions[kind == region_kind.value]
        if spans.empty:
            continue
        free = spans[~_inside(_spans(spans), held)]
        inside = issued_inside(trace, spans)
        mine = is_kernel & ~taken & inside
        taken |= inside
        held.append(_spans(spans))
        if free.empty and not mine.any():
            continue
        parts.append(
            GraphPart(
                label=label,
                calls=len(free),
                wall_us=float(np.nan_to_num(free[Regions.dur_us].to_numpy(dtype=float)).sum()),
                kernel_count=int(mine.sum()),
                kernel_time_us=float(excl[mine].sum()),
                graph_keys=_keys_inside(regions, free),
            )
        )
    return parts


Spans = tuple[np.ndarray, np.ndarray, np.ndarray]


def _spans(table: pd.DataFrame) -> Spans:
    """Rows of a regions table as (thread, start, end) arrays."""
    starts = table[Regions.ts_us].to_numpy(dtype=float)
    ends = starts + np.nan_to_num(table[Regions.dur_us].to_numpy(dtype=float))
    return table[Regions.thread].astype(object).to_numpy(), starts, ends


def _inside(spans: Spans, holders: list[Spans]) -> np.ndarray:
    """Per span: it starts inside one of ``holders`` on its thread."""
    threads, starts, _ = spans
    out = np.zeros(len(starts), dtype=bool)
    h_threads = np.concatenate([h[0] for h in holders]) if holders else np.array([], dtype=object)
    if not len(h_threads):
        return out
    h_starts = np.concatenate([h[1] for h in holders])
    h_ends = np.concatenate([h[2] for h in holders])
    for thread in pd.unique(threads):
        mine = threads == thread
        theirs = h_threads == thread
        out[mine] = covered(starts[mine], h_starts[theirs], h_ends[theirs])
    return out


def _keys_inside(regions: pd.DataFrame, spans: pd.DataFrame) -> list[str]:
    """The FX graph keys of the graph calls that start inside ``spans`` (sorted)."""
    calls = regions[regions[Regions.kind].astype(object) == RegionKind.FX_GRAPH_CALL.value]
    keys = calls[Regions.graph_key].astype(object)
    known = calls[keys.notna().to_numpy()]
    if known.empty or spans.empty:
        return []
    hit = _inside(_spans(known), [_spans(spans)])
    return sorted({str(k) for k in known[Regions.graph_key].astype(object)[hit]})
