"""Compiler bytes for the library kernels of a CUDA-graph replay (``mode="reduce-overhead"``).

A replayed graph's kernels have no launching op with shapes, so the shape rules of
:mod:`traceviz.analysis.traffic.memory` give its cuBLAS GEMMs and attention kernels no figure. The
compile log lists every call of the graph in order (``handle``): generated kernels and
library calls (``extern_kernels.mm``, ``aten._scaled_dot_product_efficient_attention``…), each
with Inductor's own byte count (``est_bytes``: the bytes its buffers read and write per call).
A replay runs the graph's kernels on one stream in that order, so the library kernels replayed
between two generated kernels (matched by :mod:`traceviz.analysis.provenance`, handles h1 <
h2) are what the library calls with h1 < handle < h2 launched.

:func:`graph_library_bytes` credits each such run of kernels with the summed bytes of those
calls, split over the run's kernels in proportion to their durations (one call may launch
several kernels, e.g. a GEMM and its split-K reduction; a run may hold several calls), basis
``compiler``. It gives nothing (the rows keep no figure) for a replay whose generated kernels
are not all matched, come from more than one graph or run out of handle order, for the run
after a replay's last generated kernel when that is not its graph's last (the replay was cut
short: the profiler stopped before the graph's last kernels ran), and for a run
with no library call between its bounds, with a call whose bytes were not logged, or holding a
row that already has a figure. A run's bytes are the compiler's for exactly those calls, so the
credited bytes add up to at most the logged bytes of the calls replayed.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pandas as pd

from traceviz.schema import KernelProvenance as KP
from traceviz.schema import Kernels
from traceviz.schema import ProvenanceKernels as P

__all__ = ["graph_library_bytes"]


def graph_library_bytes(
    kernels: pd.DataFrame,
    provenance: pd.DataFrame,
    log_kernels: pd.DataFrame,
    open_rows: npt.NDArray[np.bool_],
    generated: npt.NDArray[np.bool_],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Library kernels of graph replays and the compiler's bytes for them (module docstring).

    ``kernels`` is ``Trace.kernels``, ``provenance`` its
    :func:`~traceviz.analysis.provenance.compiled_kernel_provenance`, ``log_kernels`` the
    log's :class:`~traceviz.schema.ProvenanceKernels` table; ``open_rows`` marks the kernel
    rows with no figure yet, ``generated`` the rows named like an Inductor kernel. Returns
    (rows, group, total): each credited row, its run's label and the run's total bytes (for
    :func:`~traceviz.analysis.traffic.memory.split_bytes`); empty arrays when nothing is credited.
    """
    empty = np.zeros(0, dtype=np.int64)
    replay = kernels[Kernels.graph_launch_row].to_numpy(dtype=np.int64, na_value=-1)
    if (replay < 0).all() or provenance.empty or log_kernels.empty:
        return empty, empty, empty
    info, last, ext = _graph_log(log_kernels)
    primary = provenance[provenance[KP.primary].astype(bool)]
    entry = {
        int(row): info[str(prov)]
        for row, prov in zip(primary[KP.kernel_row], primary[KP.prov_kernel], strict=True)
        if str(prov) in info
    }
    handle_of = np.full(len(kernels), -1, dtype=np.int64)
    graph_of = np.full(len(kernels), -1, dtype=np.int64)
    for row, (graph, handle) in entry.items():
        if 0 <= row < len(kernels):
            graph_of[row], handle_of[row] = graph, handle
    generated = generated | (handle_of >= 0)
    ts = kernels[Kernels.ts_us].to_numpy(dtype=float, na_value=np.nan)
    rows_out: list[int] = []
    group_out: list[int] = []
    total_out: list[int] = []
    for launch in np.unique(replay[replay >= 0]):
        rows = np.flatnonzero(replay == launch)
        rows = rows[np.argsort(ts[rows], kind="stable")]
        runs = _runs(rows, generated, handle_of, graph_of)
        if runs is None:
            continue
        graph, spans = runs
        calls = ext.get(graph)
        if calls is None:
            continue
        for low, high, members in spans:
            if high == np.inf and low != last.get(graph):
                continue  # the replay stops before the graph's last generated kernel: cut
            inside = calls[(calls[:, 0] > low) & (calls[:, 0] < high)]
            if len(inside) == 0 or (inside[:, 1] < 0).any() or not open_rows[members].all():
                continue
            label = members[0]
            rows_out += members.tolist()
            group_out += [label] * len(members)
            total_out += [int(inside[:, 1].sum())] * len(members)
    rows, group, total = (np.asarray(v, dtype=np.int64) for v in (rows_out, group_out, total_out))
    return rows, group, total


def _graph_log(
    log: pd.DataFrame,
) -> tuple[dict[str, tuple[int, int]], dict[int, int], dict[int, npt.NDArray[np.int64]]]:
    """Per generated log entry (its ``prov_kernel``): (graph id, handle); per graph id: the
    handle of its last generated kernel (a replay that ends before it was cut short: its last
    run's calls may never have run), and its library calls as rows (handle, bytes; −1: not
    logged). Graph ids number the (compile id, graph index) pairs in order of appearance."""
    ids: dict[tuple[str, int], int] = {}
    entries: dict[str, tuple[int, int]] = {}
    last: dict[int, int] = {}
    calls: dict[int, list[tuple[int, int]]] = {}
    columns = (P.prov_kernel, P.compile_id, P.graph_index, P.handle, P.est_bytes)
    for (prov, cid, gi, handle, nbytes), extern in zip(
        zip(*(log[c] for c in columns), strict=True), log[P.extern].astype(bool), strict=True
    ):
        graph, handle = ids.setdefault((str(cid), int(gi)), len(ids)), int(handle)
        if extern:
            calls.setdefault(graph, []).append((handle, -1 if pd.isna(nbytes) else int(nbytes)))
        else:
            entries[str(prov)] = (graph, handle)
            last[graph] = max(last.get(graph, handle), handle)
    return entries, last, {g: np.array(c, dtype=np.int64).reshape(-1, 2) for g, c in calls.items()}


def _runs(
    rows: npt.NDArray[np.int64],
    generated: npt.NDArray[np.bool_],
    handle_of: npt.NDArray[np.int64],
    graph_of: npt.NDArray[np.int64],
) -> tuple[int, list[tuple[float, float, npt.NDArray[np.int64]]]] | None:
    """One replay's rows (in time order) as its graph and runs of non-generated rows, each with
    the handles that bound it (−inf/+inf at the ends); None when the replay cannot be read:
    a generated row not matched, generated rows from several graphs or out of handle order."""
    gen = generated[rows]
    if not gen.any():
        return None
    handles, graphs = handle_of[rows[gen]], graph_of[rows[gen]]
    if (handles < 0).any() or len(set(graphs.tolist())) != 1 or (np.diff(handles) <= 0).any():
        return None
    spans = []
    low = -np.inf
    start = 0
    for i, is_gen in enumerate([*gen.tolist(), True]):
        if not is_gen:
            continue
        high = float(handle_of[rows[i]]) if i < len(rows) else np.inf
        if i > start:
            spans.append((low, high, rows[start:i]))
        low, start = high, i + 1
    return int(graphs[0]), spans
