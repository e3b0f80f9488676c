"""What the timeline draws for one window of one trace: one row per event, by lane.

:func:`window_events` picks, among the events starting in ``[start, end)`` µs: the device
activities (one lane per GPU stream, or per thread of a CPU-only trace), the launch calls of
the given launch classes plus every blocking call, and the compiled regions (one lane per
Dynamo frame ``frame/recompile``) and compiled-graph calls (one lane: a gap between two graph
calls of a step is a graph break). Times are as measured, µs.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import pandas as pd

from traceviz.analysis.compare import Side
from traceviz.analysis.kernels import Classified
from traceviz.analysis.timing.blocking import BlockingColumns
from traceviz.schema import DeviceKind, Kernels, Launches, RegionKind, Regions

__all__ = ["WindowEvent", "window_events"]


class WindowEvent:
    """Columns of :func:`window_events`: one row per event of the window."""

    lane = "lane"  # lane label: "device D stream S", "CPU ops T", "CPU launches T", "region F/R",
    #                "compiled graph calls" (str)
    ts = "ts"  # start, µs (float64)
    dur = "dur"  # duration, µs, 0 when missing (float64)
    kind = "kind"  # KernelKind value, "launch call", "blocking call", "compiled region" or
    #                "compiled graph" (str)
    name = "name"  # event name (str)
    op = "op"  # launching op of a device activity, else "–" (str)


def window_events(
    side: Side, start: float, end: float, launch_classes: Collection[str]
) -> pd.DataFrame:
    """The events of ``side`` starting in ``[start, end)`` µs (module docstring); columns
    :class:`WindowEvent`, device activities first, then launch calls, then regions."""
    k = side.kernels
    ts = k[Kernels.ts_us].to_numpy(dtype=float)
    rows = np.flatnonzero((ts >= start) & (ts < end))  # only the columns drawn are picked

    def kcol(name: str) -> pd.Series:
        return k[name].take(rows)

    if side.trace.device_kind is DeviceKind.CPU:
        lanes = "CPU ops " + kcol(Kernels.thread).astype(str)
    else:
        lanes = (
            "device "
            + kcol(Kernels.device).astype(str)
            + " stream "
            + kcol(Kernels.stream).astype(str)
        )
    kernels = pd.DataFrame(
        {
            WindowEvent.lane: lanes.to_numpy(),
            WindowEvent.ts: ts[rows],
            WindowEvent.dur: kcol(Kernels.dur_us).to_numpy(dtype=float, na_value=0.0),
            WindowEvent.kind: _texts(kcol(Classified.kind)),
            WindowEvent.name: _texts(kcol(Kernels.name)),
            WindowEvent.op: _texts(kcol(Kernels.op_name), missing="–"),
        }
    )
    launches = side.trace.launches
    lts = launches[Launches.ts_us].to_numpy(dtype=float)
    blocking = np.zeros(len(launches), dtype=bool)
    blocking[side.launch.blocking.calls[BlockingColumns.launch_row].to_numpy(dtype=np.int64)] = True
    launched = launches[Launches.launch_class].isin(list(launch_classes)).to_numpy(dtype=bool)
    pick = (lts >= start) & (lts < end) & (launched | blocking)
    picked = np.flatnonzero(pick)

    def lcol(name: str) -> pd.Series:
        return launches[name].take(picked)

    calls = pd.DataFrame(
        {
            WindowEvent.lane: ("CPU launches " + lcol(Launches.thread).astype(str)).to_numpy(),
            WindowEvent.ts: lts[picked],
            WindowEvent.dur: lcol(Launches.dur_us).to_numpy(dtype=float, na_value=0.0),
            WindowEvent.kind: np.where(blocking[pick], "blocking call", "launch call"),
            WindowEvent.name: _texts(lcol(Launches.name)),
            WindowEvent.op: "–",
        }
    )
    return pd.concat([kernels, calls, _regions(side, start, end)], ignore_index=True)


def _texts(values: pd.Series, missing: str | float = np.nan) -> np.ndarray:
    """``values.astype(str).to_numpy()`` (a missing value: ``missing``, NaN as pandas leaves
    it); a categorical's labels spelled once each, not once per row."""
    if not isinstance(values.dtype, pd.CategoricalDtype):
        if missing is np.nan:
            return values.astype(str).to_numpy()
        return values.astype(object).fillna(missing).astype(str).to_numpy()
    spelled = np.array([*(str(c) for c in values.cat.categories), missing], dtype=object)
    return spelled[values.cat.codes.to_numpy()]  # code -1 (missing): the last


def _regions(side: Side, start: float, end: float) -> pd.DataFrame:
    """Compiled regions and compiled-graph calls starting in the window."""
    regions = side.trace.regions
    rts = regions[Regions.ts_us].to_numpy(dtype=float)
    kind = regions[Regions.kind].astype(str).to_numpy()
    shown = (kind == RegionKind.COMPILED_REGION.value) | (kind == RegionKind.FX_GRAPH_CALL.value)
    reg = regions[(rts >= start) & (rts < end) & shown]
    is_graph = (reg[Regions.kind].astype(str) == RegionKind.FX_GRAPH_CALL.value).to_numpy()
    frame = (
        "region " + reg[Regions.frame_id].astype(str) + "/" + reg[Regions.recompile_id].astype(str)
    ).to_numpy()
    return pd.DataFrame(
        {
            WindowEvent.lane: np.where(is_graph, "compiled graph calls", frame),
            WindowEvent.ts: reg[Regions.ts_us].to_numpy(dtype=float),
            WindowEvent.dur: reg[Regions.dur_us].to_numpy(dtype=float, na_value=0.0),
            WindowEvent.kind: np.where(is_graph, "compiled graph", "compiled region"),
            WindowEvent.name: reg[Regions.name].astype(str).to_numpy(),
            WindowEvent.op: "–",
        }
    )
