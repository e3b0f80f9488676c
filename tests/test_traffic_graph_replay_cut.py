"""graph_library_bytes on made replays the sample runs do not show: a replay cut short (the
profiler stopped before the graph's last kernels ran: a loop without a closing sync), two
graphs with the same kernel names and handles, a graph replayed several times. A run's bytes
are only those of the calls its kernels can have made, and every replay's credits add up to
at most its graph's logged library calls."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from traceviz.analysis.traffic.graph_replay import graph_library_bytes
from traceviz.schema import KernelProvenance as KP
from traceviz.schema import Kernels
from traceviz.schema import ProvenanceKernels as P

# one graph: generated g (handle 1), library calls 2 (100 B) and 3 (50 B), generated h (4),
# library call 5 (30 B); a second graph "1/0" with the same names and handles, other bytes
GRAPH = [("g", False, 1, 10), ("ext.mm", True, 2, 100), ("ext.sdpa", True, 3, 50),
         ("h", False, 4, 20), ("ext.addmm", True, 5, 30)]  # fmt: skip
OTHER = [(k, e, h, None if b is None else b * 7) for k, e, h, b in GRAPH]


def _log(graphs: dict[str, list[tuple[str, bool, int, int | None]]]) -> pd.DataFrame:
    rows = [(cid, *entry) for cid, entries in graphs.items() for entry in entries]
    return pd.DataFrame(
        {
            P.prov_kernel: [f"{cid}:{k}:{h}" for cid, k, _, h, _ in rows],
            P.compile_id: [cid for cid, *_ in rows],
            P.graph_index: [0] * len(rows),
            P.kernel: [k for _, k, *_ in rows],
            P.handle: [h for _, _, _, h, _ in rows],
            P.est_bytes: pd.array([b for *_, b in rows], dtype="Int64"),
            P.extern: [e for _, _, e, _, _ in rows],
        }
    )


def _credit(
    replays: list[tuple[str, list[str]]], log: pd.DataFrame
) -> tuple[dict[int, tuple[int, int]], list[str]]:
    """Credits per kernel row of the replays (compile id, kernel names in order), each named
    generated kernel matched to its graph's entry as the matcher would."""
    names: list[str] = []
    launch: list[int] = []
    prov: list[tuple[int, str]] = []
    for replay, (cid, kernels) in enumerate(replays):
        for name in kernels:
            if name in ("g", "h"):
                handle = next(h for k, _, h, _ in GRAPH if k == name)
                prov.append((len(names), f"{cid}:{name}:{handle}"))
            names.append(name)
            launch.append(replay)
    table = pd.DataFrame(
        {
            Kernels.name: names,
            Kernels.ts_us: np.arange(len(names), dtype=float),
            Kernels.graph_launch_row: pd.array(launch, dtype="Int64"),
        }
    )
    provenance = pd.DataFrame(
        {
            KP.kernel_row: [r for r, _ in prov],
            KP.prov_kernel: [p for _, p in prov],
            KP.primary: [True] * len(prov),
        }
    )
    generated = table[Kernels.name].isin(["g", "h"]).to_numpy()
    open_rows = np.ones(len(names), dtype=bool)
    rows, group, total = graph_library_bytes(table, provenance, log, open_rows, generated)
    credit = {int(r): (int(g), int(t)) for r, g, t in zip(rows, group, total, strict=True)}
    return credit, names


def test_a_replay_cut_short_credits_no_calls_it_did_not_reach() -> None:
    """The profiler stopped after the first GEMM: the calls after it (sdpa, h, addmm) never
    ran in this trace, so the GEMM must not take their bytes."""
    credit, _ = _credit([("0/0", ["g", "gemm"])], _log({"0/0": GRAPH}))
    assert credit.get(1, (1, 0))[1] <= 100
    # the whole replay still takes every call's bytes
    credit, _ = _credit([("0/0", ["g", "gemm", "fmha", "h", "gemm2"])], _log({"0/0": GRAPH}))
    assert credit == {1: (1, 150), 2: (1, 150), 4: (4, 30)}


def test_two_graphs_with_the_same_names_each_take_their_own_calls() -> None:
    log = _log({"0/0": GRAPH, "1/0": OTHER})
    whole = ["g", "gemm", "fmha", "h", "gemm2"]
    credit, _ = _credit([("0/0", whole), ("1/0", whole)], log)
    assert credit == {
        1: (1, 150), 2: (1, 150), 4: (4, 30),
        6: (6, 1050), 7: (6, 1050), 9: (9, 210),
    }  # fmt: skip


def test_each_replay_takes_at_most_its_graphs_logged_calls() -> None:
    log = _log({"0/0": GRAPH})
    logged = sum(b for _, e, _, b in GRAPH if e and b is not None)
    replays = [("0/0", ["g", "gemm", "fmha", "h", "gemm2"])] * 3 + [("0/0", ["g", "gemm"])]
    credit, names = _credit(replays, log)
    starts = np.cumsum([0] + [len(k) for _, k in replays])
    for first, end in itertools.pairwise(starts):
        runs = {g: t for r, (g, t) in credit.items() if first <= r < end}
        assert sum(runs.values()) <= logged
    assert len(names) == starts[-1]
