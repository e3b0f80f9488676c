"""traceviz.analysis.timeline_events as it was before issue 14's views work (the whole
kernels and launches tables filtered, every row's texts spelled by pandas), kept as the
reference the column-picking form is tested against (tests/test_views_fast.py).

What the timeline draws for one window of one trace: one row per event, by lane.

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

from traceviz.analysis.blocking import BlockingColumns
from traceviz.analysis.compare import Side
from traceviz.analysis.kernels import Classified

# Unchanged by the column-picking form: taken from it. Only window_events is the old one.
from traceviz.analysis.timeline_events import WindowEvent, _regions
from traceviz.schema import DeviceKind, Kernels, Launches


def window_events(
    side: Side, start: float, end: float, launch_classes: Collection[str]
) -> pd.DataFrame:
    """The events of ``side`` starting in ``[start, end)`` µs (module docstring); columns
    :class:`WindowEvent`, device activities first, then launch calls, then regions."""
    k = side.kernels
    ts = k[Kernels.ts_us].to_numpy(dtype=float)
    pick = (ts >= start) & (ts < end)
    k = k[pick]
    if side.trace.device_kind is DeviceKind.CPU:
        lanes = "CPU ops " + k[Kernels.thread].astype(str)
    else:
        lanes = (
            "device " + k[Kernels.device].astype(str) + " stream " + k[Kernels.stream].astype(str)
        )
    kernels = pd.DataFrame(
        {
            WindowEvent.lane: lanes.to_numpy(),
            WindowEvent.ts: k[Kernels.ts_us].to_numpy(dtype=float),
            WindowEvent.dur: k[Kernels.dur_us].to_numpy(dtype=float, na_value=0.0),
            WindowEvent.kind: k[Classified.kind].astype(str).to_numpy(),
            WindowEvent.name: k[Kernels.name].astype(str).to_numpy(),
            WindowEvent.op: k[Kernels.op_name].astype(object).fillna("–").astype(str).to_numpy(),
        }
    )
    launches = side.trace.launches
    lts = launches[Launches.ts_us].to_numpy(dtype=float)
    blocking = np.zeros(len(launches), dtype=bool)
    blocking[side.launch.blocking.calls[BlockingColumns.launch_row].to_numpy(dtype=np.int64)] = True
    pick = (lts >= start) & (lts < end)
    pick &= launches[Launches.launch_class].isin(list(launch_classes)).to_numpy() | blocking
    lau = launches[pick]
    calls = pd.DataFrame(
        {
            WindowEvent.lane: ("CPU launches " + lau[Launches.thread].astype(str)).to_numpy(),
            WindowEvent.ts: lau[Launches.ts_us].to_numpy(dtype=float),
            WindowEvent.dur: lau[Launches.dur_us].to_numpy(dtype=float, na_value=0.0),
            WindowEvent.kind: np.where(blocking[pick], "blocking call", "launch call"),
            WindowEvent.name: lau[Launches.name].astype(str).to_numpy(),
            WindowEvent.op: "–",
        }
    )
    return pd.concat([kernels, calls, _regions(side, start, end)], ignore_index=True)
