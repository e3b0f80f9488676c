"""Compiled regions and profiler steps, found among the CPU ops by name.

Markers (see :class:`traceviz.schema.RegionKind`):

- ``Torch-Compiled Region: X/Y`` — Dynamo frame X, recompile Y (Y > 0 means a recompile);
- ``## Call CompiledFxGraph <key> ##`` — one call of an Inductor graph;
- ``CompiledFunction`` / ``CompiledFunctionBackward`` — AOTAutograd forward / backward.

Each region gets the number and device time of the kernels issued inside it: kernels (not
memcpy/memset) whose launch call — or, for CPU kernels, the op itself — starts within the
region's span on the region's thread. Regions nest (after a graph break the resumed frame's
region ``1/0`` runs inside ``0/0``; an FX-graph call runs inside its region), so a kernel is
credited to the **innermost** region of each kind that holds it: the rows of one kind
partition the kernels issued inside that kind's regions, and device time is the kernels'
exclusive time (``excl_dur_us``), so a nested CPU kernel counts once.

Numbers that do not fit the schema's integers are not guessed at: a ``Torch-Compiled Region:
X/Y`` with X or Y beyond 32 bits is still a region (its code ran) with ``frame_id`` /
``recompile_id`` <NA> and the full text in ``name``; a ``ProfilerStep#N`` with N beyond 64 bits
is not a step marker (the span stays an ordinary annotation in ``Trace.ops``).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from traceviz.parse import nesting
from traceviz.parse.columns import used_labels
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


INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


def _bounded(digits: str, most: int) -> int | None:
    """``digits`` as an int, or None when it is above ``most`` (no OverflowError later)."""
    value = int(digits)
    return value if value <= most else None


def _region_marker(name: str) -> tuple[RegionKind, int | None, int | None, str | None] | None:
    """(kind, frame, recompile, graph key) when ``name`` is a compiled-region marker."""
    if match := COMPILED_REGION.match(name):
        frame, recompile = (_bounded(match.group(i), INT32_MAX) for i in (1, 2))
        return RegionKind.COMPILED_REGION, frame, recompile, None
    if match := FX_GRAPH_CALL.match(name):
        key = match.group(1)  # torch 2.13 on CPU writes the literal "None" when it has no key
        return RegionKind.FX_GRAPH_CALL, None, None, None if key == "None" else key
    if name in COMPILED_FUNCTION_NAMES:
        return COMPILED_FUNCTION_NAMES[name], None, None, None
    return None


def region_table(ops: pd.DataFrame, kernels: pd.DataFrame) -> pd.DataFrame:
    """One row per compiled-region span in ``ops`` (columns: :class:`traceviz.schema.Regions`),
    ordered by start (ties in ``ops`` order).

    Built in its final order and dtypes from ``ops``' codes and arrays (categories: the labels
    used, sorted, as ``astype("category")`` gives), so that :func:`conform` has nothing to cast."""
    names = ops[Ops.name].cat.categories
    markers = {code: m for code, name in enumerate(names) if (m := _region_marker(str(name)))}
    codes = np.asarray(ops[Ops.name].cat.codes)
    rows = np.flatnonzero(_among(codes, list(markers), len(names)))
    rows = rows[np.argsort(ops[Ops.ts_us].to_numpy()[rows], kind="stable")]
    found = [markers[code] for code in codes[rows].tolist()]
    threads = ops[Ops.thread].array
    thread_codes = np.asarray(threads.codes)[rows]
    table = pd.DataFrame(
        {
            Regions.kind: _sorted_categorical([m[0].value for m in found]),
            Regions.name: used_labels(codes[rows], names),
            Regions.frame_id: pd.array([m[1] for m in found], dtype="Int32"),
            Regions.recompile_id: pd.array([m[2] for m in found], dtype="Int32"),
            Regions.graph_key: _sorted_categorical([m[3] for m in found]),
            Regions.thread: used_labels(thread_codes, threads.categories),
            Regions.ts_us: ops[Ops.ts_us].to_numpy()[rows],
            Regions.dur_us: ops[Ops.dur_us].to_numpy()[rows],
            Regions.op_row: pd.array(rows, dtype="Int64"),
        }
    )
    counts, times = _kernels_inside(
        np.array([m[0].value for m in found], dtype=object),
        thread_codes,
        table[Regions.ts_us].to_numpy(),
        table[Regions.dur_us].to_numpy(),
        kernels,
        threads.categories,
    )
    table[Regions.kernel_count] = pd.array(counts, dtype="Int64")
    table[Regions.kernel_time_us] = times
    return conform(table, REGIONS_DTYPES)


def _sorted_categorical(values: list[str | None]) -> pd.Categorical:
    """``values`` (text or None) as the categorical ``astype("category")`` makes of a column
    holding them: the distinct texts sorted; no text at all gives object categories."""
    labels = sorted({v for v in values if v is not None})
    code_of = {label: code for code, label in enumerate(labels)}
    codes = np.array([-1 if v is None else code_of[v] for v in values], dtype=np.int64)
    categories = pd.Index(labels) if labels else pd.Index([], dtype=object)
    return pd.Categorical.from_codes(codes, categories=categories)


def _among(codes: np.ndarray, chosen: list[int], n_categories: int) -> np.ndarray:
    """Boolean per row: its category code is one of ``chosen`` (−1, missing, never is); a
    look-up table over the few categories instead of ``np.isin`` over every row."""
    table = np.zeros(n_categories + 1, dtype=bool)
    table[chosen] = True
    return table[codes]


def _kernels_inside(
    kinds: np.ndarray,
    r_threads: np.ndarray,
    r_start: np.ndarray,
    r_dur: np.ndarray,
    kernels: pd.DataFrame,
    thread_labels: pd.Index,
) -> tuple[np.ndarray, np.ndarray]:
    """Count and summed exclusive device time (µs) of the kernels credited to each region:
    per region kind, each kernel goes to the innermost region of that kind, on its thread,
    whose span holds its issue time. Per region: ``kinds`` (RegionKind values), ``r_threads``
    (its thread as a code into ``thread_labels``, the ops' thread categories; −1 none),
    ``r_start`` and ``r_dur`` (µs, float64)."""
    counts = np.zeros(len(kinds), dtype=np.int64)
    times = np.zeros(len(kinds))
    if not len(kinds) or kernels.empty:
        return counts, times
    is_kernel = (kernels[Kernels.activity] == ActivityKind.KERNEL.value).to_numpy()
    issue_ts = kernels[Kernels.launch_ts_us].fillna(kernels[Kernels.ts_us]).to_numpy()
    thread_of = {label: code for code, label in enumerate(thread_labels)}
    k_threads = _codes_in(kernels[Kernels.thread], thread_of)
    usable = is_kernel & (k_threads >= 0) & np.isfinite(issue_ts)
    excl = np.nan_to_num(kernels[Kernels.excl_dur_us].to_numpy(dtype=float)[usable])
    r_dur = np.nan_to_num(r_dur)
    for kind in pd.unique(kinds):
        rows = np.flatnonzero((kinds == kind) & (r_threads >= 0) & np.isfinite(r_start))
        owner = _innermost(
            r_threads[rows], r_start[rows], r_dur[rows], k_threads[usable], issue_ts[usable]
        )
        held = owner >= 0
        counts[rows] = np.bincount(owner[held], minlength=len(rows))
        times[rows] = np.bincount(owner[held], weights=excl[held], minlength=len(rows))
    return counts, times


def _innermost(
    threads: np.ndarray,
    starts: np.ndarray,
    durs: np.ndarray,
    k_threads: np.ndarray,
    k_ts: np.ndarray,
) -> np.ndarray:
    """Per kernel (thread code, issue time), the position in ``starts`` of the innermost span
    on its thread holding that time (ends included), or −1."""
    if len(starts) == 0:
        return np.full(len(k_ts), -1, dtype=np.int64)
    order = nesting.sort_order(threads, starts, durs)
    s, d, t = starts[order], durs[order], threads[order]
    timeline = nesting.Timeline.covering(np.concatenate([s, k_ts]), np.concatenate([s + d, k_ts]))
    start_keys, end_keys = timeline.keys(t, s), timeline.keys(t, s + d)
    parent = nesting.parents(nesting.depths(start_keys, end_keys, d), t)
    k_keys = timeline.keys(k_threads, k_ts)
    found = nesting.innermost_enclosing(
        start_keys, end_keys, parent, np.ones(len(s), dtype=bool), k_keys, k_keys
    )
    return np.where(found >= 0, order[np.maximum(found, 0)], -1)


def _codes_in(column: pd.Series, thread_of: dict[str, int]) -> np.ndarray:
    labels = column.cat.categories
    lookup = np.array([thread_of.get(str(label), -1) for label in labels] + [-1], dtype=np.int64)
    return lookup[np.asarray(column.cat.codes)]


def step_table(ops: pd.DataFrame) -> pd.DataFrame:
    """``ProfilerStep#N`` spans, ordered by start (columns: :class:`traceviz.schema.Steps`).

    A marker whose N does not fit in 64 bits is not a step (see the module docstring)."""
    names = ops[Ops.name].cat.categories
    step_of = {
        code: step
        for code, name in enumerate(names)
        if (match := PROFILER_STEP.match(str(name)))
        and (step := _bounded(match.group(1), INT64_MAX)) is not None
    }
    codes = np.asarray(ops[Ops.name].cat.codes)
    rows = np.flatnonzero(_among(codes, list(step_of), len(names)))
    table = pd.DataFrame(
        {
            Steps.step: pd.array([step_of[c] for c in codes[rows]], dtype="Int64"),
            Steps.ts_us: ops[Ops.ts_us].to_numpy()[rows],
            Steps.dur_us: ops[Ops.dur_us].to_numpy()[rows],
        }
    )
    table = table.sort_values(Steps.ts_us, kind="stable").reset_index(drop=True)
    return conform(table, STEPS_DTYPES)
