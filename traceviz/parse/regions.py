"""Compiled regions and profiler steps, found among the CPU ops by name.

Markers (see :class:`traceviz.schema.RegionKind`):

- ``Torch-Compiled Region: X/Y`` — Dynamo frame X, recompile Y (Y > 0 means a recompile);
- ``## Call CompiledFxGraph <key> ##`` — one call of an Inductor graph;
- ``CompiledFunction`` / ``CompiledFunctionBackward`` — AOTAutograd forward / backward.

Each region gets the number and device time of the kernels issued inside it: kernels (not
memcpy/memset) whose launch call — or, for CPU kernels, the op itself — starts within the
region's span on the region's thread.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from traceviz.parse import nesting
from traceviz.schema import (
    REGIONS_DTYPES,
    STEPS_DTYPES,
    ActivityKind,
    Kernels,
    Ops,
    RegionKind,
    Regions,
    Steps,
    conform,
)

COMPILED_REGION = re.compile(r"^Torch-Compiled Region: (\d+)/(\d+)$")
FX_GRAPH_CALL = re.compile(r"^## Call CompiledFxGraph (\S+) ##$")
PROFILER_STEP = re.compile(r"^ProfilerStep#(\d+)$")
COMPILED_FUNCTION_NAMES = {
    "CompiledFunction": RegionKind.COMPILED_FUNCTION,
    "CompiledFunctionBackward": RegionKind.COMPILED_FUNCTION_BACKWARD,
}


def _region_marker(name: str) -> tuple[RegionKind, int | None, int | None, str | None] | None:
    """(kind, frame, recompile, graph key) when ``name`` is a compiled-region marker."""
    if match := COMPILED_REGION.match(name):
        return RegionKind.COMPILED_REGION, int(match.group(1)), int(match.group(2)), None
    if match := FX_GRAPH_CALL.match(name):
        key = match.group(1)  # torch 2.13 on CPU writes the literal "None" when it has no key
        return RegionKind.FX_GRAPH_CALL, None, None, None if key == "None" else key
    if name in COMPILED_FUNCTION_NAMES:
        return COMPILED_FUNCTION_NAMES[name], None, None, None
    return None


def region_table(ops: pd.DataFrame, kernels: pd.DataFrame) -> pd.DataFrame:
    """One row per compiled-region span in ``ops`` (columns: :class:`traceviz.schema.Regions`)."""
    names = ops[Ops.name].cat.categories
    markers = {code: m for code, name in enumerate(names) if (m := _region_marker(str(name)))}
    rows = np.flatnonzero(np.isin(np.asarray(ops[Ops.name].cat.codes), list(markers)))
    found = [markers[code] for code in np.asarray(ops[Ops.name].cat.codes)[rows]]
    spans = ops.iloc[rows]
    table = pd.DataFrame(
        {
            Regions.kind: [m[0].value for m in found],
            Regions.name: spans[Ops.name].astype(str).to_numpy(),
            Regions.frame_id: pd.array([m[1] for m in found], dtype="Int32"),
            Regions.recompile_id: pd.array([m[2] for m in found], dtype="Int32"),
            Regions.graph_key: [m[3] for m in found],
            Regions.thread: spans[Ops.thread].to_numpy(),
            Regions.ts_us: spans[Ops.ts_us].to_numpy(),
            Regions.dur_us: spans[Ops.dur_us].to_numpy(),
            Regions.op_row: pd.array(rows, dtype="Int64"),
        }
    )
    counts, times = _kernels_inside(table, kernels, ops[Ops.thread].cat.categories)
    table[Regions.kernel_count] = pd.array(counts, dtype="Int64")
    table[Regions.kernel_time_us] = times
    table = table.sort_values(Regions.ts_us, kind="stable").reset_index(drop=True)
    return conform(table, REGIONS_DTYPES)


def _kernels_inside(
    regions: pd.DataFrame, kernels: pd.DataFrame, thread_labels: pd.Index
) -> tuple[np.ndarray, np.ndarray]:
    """Count and summed device time of kernels issued inside each region (same thread)."""
    if regions.empty or kernels.empty:
        return np.zeros(len(regions), dtype=np.int64), np.zeros(len(regions))
    is_kernel = (kernels[Kernels.activity] == ActivityKind.KERNEL.value).to_numpy()
    issue_ts = kernels[Kernels.launch_ts_us].fillna(kernels[Kernels.ts_us]).to_numpy()
    thread_of = {label: code for code, label in enumerate(thread_labels)}
    k_threads = _codes_in(kernels[Kernels.thread], thread_of)
    usable = is_kernel & (k_threads >= 0) & np.isfinite(issue_ts)
    r_threads = _codes_in(regions[Regions.thread].astype("category"), thread_of)
    r_start = regions[Regions.ts_us].to_numpy()
    r_end = r_start + np.nan_to_num(regions[Regions.dur_us].to_numpy())
    timeline = nesting.Timeline.covering(
        np.concatenate([issue_ts[usable], r_start]), np.concatenate([issue_ts[usable], r_end])
    )
    keys = timeline.keys(k_threads[usable], issue_ts[usable])
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    durs = np.nan_to_num(kernels[Kernels.dur_us].to_numpy()[usable][order])
    cumulative = np.concatenate([[0.0], np.cumsum(durs)])
    lo = np.searchsorted(keys, timeline.keys(r_threads, r_start), side="left")
    hi = np.searchsorted(keys, timeline.keys(r_threads, r_end), side="right")
    return (hi - lo).astype(np.int64), cumulative[hi] - cumulative[lo]


def _codes_in(column: pd.Series, thread_of: dict[str, int]) -> np.ndarray:
    labels = column.cat.categories
    lookup = np.array([thread_of.get(str(label), -1) for label in labels] + [-1], dtype=np.int64)
    return lookup[np.asarray(column.cat.codes)]


def step_table(ops: pd.DataFrame) -> pd.DataFrame:
    """``ProfilerStep#N`` spans, ordered by start (columns: :class:`traceviz.schema.Steps`)."""
    names = ops[Ops.name].cat.categories
    step_of = {
        code: int(match.group(1))
        for code, name in enumerate(names)
        if (match := PROFILER_STEP.match(str(name)))
    }
    codes = np.asarray(ops[Ops.name].cat.codes)
    rows = np.flatnonzero(np.isin(codes, list(step_of)))
    table = pd.DataFrame(
        {
            Steps.step: pd.array([step_of[c] for c in codes[rows]], dtype="Int64"),
            Steps.ts_us: ops[Ops.ts_us].to_numpy()[rows],
            Steps.dur_us: ops[Ops.dur_us].to_numpy()[rows],
        }
    )
    table = table.sort_values(Steps.ts_us, kind="stable").reset_index(drop=True)
    return conform(table, STEPS_DTYPES)
