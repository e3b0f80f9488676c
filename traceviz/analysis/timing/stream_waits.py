"""Device work held back by a cross-stream dependency: a stream waiting on an event (measured
calls, inferred link).

``cudaStreamWaitEvent`` / ``hipStreamWaitEvent`` / ``cuStreamWaitEvent`` make a stream wait until
the work recorded by an event on another stream is done (``stream.wait_stream(other)``,
``torch.cuda.Event.wait``, NCCL's communication stream waiting for the compute stream). The work
issued on that stream after the call cannot start earlier, however soon its launch returned: idle
time before it is a wait for the other stream, not launch latency.

Most traces do not record which stream a wait call targets, so the link is made by the launching
thread's order: a device-work call (kernel or graph launch, memcpy, memset) is **gated** when a
stream-wait call was made on its thread after that thread's previous device-work call. This is
how PyTorch issues them: the wait, then the launches on the waiting stream. An activity is gated
when its launch call is and it is the first activity of that call (by start): a graph replay's
later kernels, or a stream's later kernels, queue behind the first, not behind the event.
"""

from __future__ import annotations

import re

import numpy as np
import numpy.typing as npt
import pandas as pd

from traceviz.analysis.timing.blocking import per_name
from traceviz.schema import Kernels, LaunchClass, Launches
from traceviz.trace import Trace

#: The runtime/driver calls that make a stream wait on an event.
STREAM_WAIT = re.compile(r"^(cuda|hip|cu)StreamWaitEvent(_v\d+)?$")
#: Launch classes of the calls that put work on a device stream.
_DEVICE_WORK = (
    LaunchClass.KERNEL_LAUNCH.value,
    LaunchClass.GRAPH_LAUNCH.value,
    LaunchClass.MEMCPY.value,
    LaunchClass.MEMSET.value,
)

BoolArray = npt.NDArray[np.bool_]


def is_stream_wait(names: pd.Series) -> BoolArray:
    """Per API name, whether it is a stream-wait-event call (:data:`STREAM_WAIT`)."""
    return per_name(names, lambda text: text.str.match(STREAM_WAIT))


def gated_launches(trace: Trace) -> BoolArray:
    """Per row of ``trace.launches``: a device-work call made after a stream-wait call on its
    thread, with no device-work call on that thread in between (see the module docstring)."""
    launches = trace.launches
    n = len(launches)
    if n == 0:
        return np.zeros(0, dtype=bool)
    wait = is_stream_wait(launches[Launches.name])
    if not wait.any():
        return np.zeros(n, dtype=bool)
    work = launches[Launches.launch_class].isin(_DEVICE_WORK).to_numpy(dtype=bool)
    thread, _ = pd.factorize(launches[Launches.thread])
    ts = launches[Launches.ts_us].to_numpy(dtype=float)
    order = np.lexsort((ts, thread))  # by thread, then time (stable: ties in row order)
    t, w, k = thread[order], wait[order], work[order]
    at = np.arange(n)
    new_thread = np.ones(n, dtype=bool)
    new_thread[1:] = t[1:] != t[:-1]
    thread_start = np.maximum.accumulate(np.where(new_thread, at, 0))
    last_wait = np.maximum.accumulate(np.where(w, at, -1))
    last_work = np.maximum.accumulate(np.where(k, at, -1))
    previous_work = np.concatenate([[-1], last_work[:-1]])  # before this row
    gated_sorted = k & (last_wait >= thread_start) & (last_wait > previous_work)
    gated = np.zeros(n, dtype=bool)
    gated[order] = gated_sorted
    return gated


def gated_activities(trace: Trace) -> BoolArray:
    """Per row of ``trace.kernels``: the first activity (by start) of a gated launch call
    (:func:`gated_launches`)."""
    kernels = trace.kernels
    n = len(kernels)
    gated_calls = gated_launches(trace)
    if n == 0 or not gated_calls.any():
        return np.zeros(n, dtype=bool)
    row = kernels[Kernels.launch_row].to_numpy(dtype=float, na_value=np.nan)
    known = np.isfinite(row) & (row >= 0) & (row < gated_calls.size)
    safe = np.where(known, row, 0).astype(np.int64)
    gated = known & gated_calls[safe]
    call = np.where(known, safe, -1)
    ts = kernels[Kernels.ts_us].to_numpy(dtype=float)
    order = np.lexsort((ts, call))  # by launch call, then start
    first = np.ones(n, dtype=bool)
    first[1:] = call[order][1:] != call[order][:-1]
    is_first = np.zeros(n, dtype=bool)
    is_first[order] = first
    return gated & is_first
