"""Memory traffic of CUDA-graph replays (``torch.compile(mode="reduce-overhead")``): the
compiled kernels hang off one ``cudaGraphLaunch`` per step, with no launching op of their own,
so their bytes come from the compile log (basis ``compiler``)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

import traceviz
from tests.conftest import SAMPLES
from traceviz.analysis.fusion.lines import read_log
from traceviz.analysis.provenance import compiled_kernel_provenance
from traceviz.analysis.traffic.memory import Basis, KernelTraffic, memory_traffic
from traceviz.parse.compile_log import CompileLog
from traceviz.schema import KernelProvenance as KP
from traceviz.schema import Kernels
from traceviz.schema import ProvenanceKernels as P

RO = SAMPLES / "h200" / "gpt2-reduce-overhead"


def _load(run: str) -> tuple[traceviz.Trace, CompileLog]:
    trace = traceviz.load(SAMPLES / "h200" / run / "compiled.pt.trace.json.gz")
    return trace, read_log(SAMPLES / "h200" / run / "compile_log.jsonl.gz")


def _generated_rows(trace: traceviz.Trace, log: CompileLog) -> np.ndarray:
    """Rows of ``trace.kernels`` named like one of the log's generated kernels."""
    names = set(log.kernels.loc[~log.kernels[P.extern], P.kernel].astype(str))
    return np.flatnonzero(trace.kernels[Kernels.name].astype(str).isin(names).to_numpy())


def test_every_replayed_triton_call_finds_its_log_entry() -> None:
    """A kernel called at two sites of the graph (one per GPT-2 layer) is the k-th entry for
    its k-th launch in each replay, not only in the first one."""
    trace, log = _load("gpt2-reduce-overhead")
    rows = _generated_rows(trace, log)
    prov = compiled_kernel_provenance(trace, log)
    matched = prov[prov[KP.kernel_row].isin(rows)]
    assert len(rows) > 0 and sorted(matched[KP.kernel_row]) == sorted(rows.tolist())
    names = trace.kernels[Kernels.name].astype(str).to_numpy()[matched[KP.kernel_row]]
    assert (names == matched[KP.kernel].astype(str).to_numpy()).all()
    # the same call site in every replay: each entry matched once per replay
    replays = trace.kernels[Kernels.launch_row].to_numpy()[matched[KP.kernel_row]]
    per_entry = pd.Series(replays).groupby(matched[KP.prov_kernel].to_numpy()).nunique()
    assert (per_entry == pd.Series(replays).nunique()).all()


def test_replayed_triton_calls_take_the_compilers_bytes() -> None:
    trace, log = _load("gpt2-reduce-overhead")
    traffic = memory_traffic(trace, compile_log=log)
    rows = _generated_rows(trace, log)
    per_kernel = traffic.per_kernel.iloc[rows]
    assert (per_kernel[KernelTraffic.basis] == Basis.COMPILER.value).all()
    entries = log.kernels[~log.kernels[P.extern]].groupby(P.kernel)[P.est_bytes].agg(set)
    for name, nbytes in zip(
        trace.kernels[Kernels.name].iloc[rows], per_kernel[KernelTraffic.est_bytes], strict=True
    ):
        assert nbytes in entries[str(name)]
    replay = trace.kernels[Kernels.graph_launch_row].iloc[rows]
    sums = per_kernel[KernelTraffic.est_bytes].groupby(replay.to_numpy()).sum()
    assert (sums == log.kernels.loc[~log.kernels[P.extern], P.est_bytes].sum()).all()


def test_no_traffic_saved_while_the_replayed_library_kernels_have_no_figure() -> None:
    """Every fused kernel with the compiler's bytes but the replayed GEMMs and attention with
    none (their rows alone, no log table): eager − compiled would count their traffic as saved,
    so there is no figure; with their bytes from the log there is one."""
    from traceviz.analysis.fusion.fusion_map import _bytes_saved
    from traceviz.analysis.traffic.memory import is_inductor_kernel
    from traceviz.pipeline import compare_run

    report = compare_run(RO)
    trace, log = report.b.trace, read_log(RO / "compile_log.jsonl.gz")
    partial = memory_traffic(trace, provenance=compiled_kernel_provenance(trace, log))
    basis = partial.per_kernel[KernelTraffic.basis].to_numpy()
    fused = is_inductor_kernel(trace.kernels[Kernels.name])
    assert fused.any() and not (basis[fused] == Basis.NONE.value).any()
    assert (basis[~fused] == Basis.NONE.value).any()
    assert _bytes_saved(trace, report.a.traffic, partial, 1.0) is None
    saved = _bytes_saved(trace, report.a.traffic, report.b.traffic, 1.0)
    assert report.a.traffic.estimated_bytes is not None
    assert report.b.traffic.estimated_bytes is not None
    assert saved == report.a.traffic.estimated_bytes - report.b.traffic.estimated_bytes


def test_replayed_library_kernels_take_the_logged_calls_bytes() -> None:
    """Each replay's library kernels carry exactly the bytes of the graph's library calls
    (credits add up to what the log holds, never more), and the whole compiled run the
    compiler's bytes of every logged call once per replay."""
    trace, log = _load("gpt2-reduce-overhead")
    traffic = memory_traffic(trace, compile_log=log)
    per_kernel = traffic.per_kernel
    replay = trace.kernels[Kernels.graph_launch_row]
    generated = np.zeros(len(trace.kernels), dtype=bool)
    generated[_generated_rows(trace, log)] = True
    library = replay.notna().to_numpy() & ~generated
    assert library.any()
    assert (per_kernel[KernelTraffic.basis].to_numpy()[library] == Basis.COMPILER.value).all()
    calls = log.kernels[log.kernels[P.extern].astype(bool)][P.est_bytes].sum()
    sums = per_kernel[KernelTraffic.est_bytes][library].groupby(replay[library]).sum()
    assert len(sums) == replay.nunique() and (sums == calls).all()
    everything = int(log.kernels[P.est_bytes].sum()) * replay.nunique()
    assert traffic.compiler_bytes == everything


def test_reduce_overhead_matches_the_default_mode_compiler_bytes() -> None:
    """Same model, same steps: the CUDA-graph run's compiler bytes equal the compiler's bytes
    of the default-mode run's matched calls, and both cover almost all kernel time."""
    ro_trace, ro_log = _load("gpt2-reduce-overhead")
    ro = memory_traffic(ro_trace, compile_log=ro_log)
    trace, log = _load("gpt2")
    prov = compiled_kernel_provenance(trace, log)
    primary = prov[prov[KP.primary].astype(bool)]
    assert ro.compiler_bytes == int(primary[KP.est_bytes].sum())
    assert ro.unestimated_time_share is not None and ro.unestimated_time_share < 0.05


# --- graph_library_bytes on made tables: replays the sample runs do not show (cut short: the
# profiler stopped before the graph's last kernels ran; two graphs with the same kernel names
# and handles; a graph replayed several times). A run's bytes are only those of the calls its
# kernels can have made, and every replay's credits add up to at most its graph's logged calls.

# one graph: generated g (handle 1), library calls 2 (100 B) and 3 (50 B), generated h (4),
# library call 5 (30 B); a second graph "1/0" with the same names and handles, other bytes
GRAPH = [("g", False, 1, 10), ("ext.mm", True, 2, 100), ("ext.sdpa", True, 3, 50),
         ("h", False, 4, 20), ("ext.addmm", True, 5, 30)]  # fmt: skip
OTHER = [(k, e, h, None if b is None else b * 7) for k, e, h, b in GRAPH]
WHOLE = ["g", "gemm", "fmha", "h", "gemm2"]  # one whole replay of GRAPH


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
    replays: list[tuple[str, list[str]]],
    log: pd.DataFrame | None = None,
    unmatched: tuple[int, ...] = (),
    closed: tuple[int, ...] = (),
    replayed: bool = True,
) -> dict[int, tuple[int, int]]:
    """Credits per kernel row of the replays (compile id, kernel names in order), each named
    generated kernel matched to its graph's entry as the matcher would (but the ``unmatched``
    rows); ``closed`` rows already have a figure; ``replayed``: the kernels are in replays."""
    from traceviz.analysis.traffic.graph_replay import graph_library_bytes

    names: list[str] = []
    launch: list[int | None] = []
    prov: list[tuple[int, str]] = []
    for replay, (cid, kernels) in enumerate(replays):
        for name in kernels:
            if name in ("g", "h") and len(names) not in unmatched:
                handle = next(h for k, _, h, _ in GRAPH if k == name)
                prov.append((len(names), f"{cid}:{name}:{handle}"))
            names.append(name)
            launch.append(replay if replayed else None)
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
    open_rows = ~np.isin(np.arange(len(names)), closed)
    log = _log({"0/0": GRAPH}) if log is None else log
    rows, group, total = graph_library_bytes(table, provenance, log, open_rows, generated)
    return {int(r): (int(g), int(t)) for r, g, t in zip(rows, group, total, strict=True)}


def test_library_runs_take_the_calls_between_their_bounds() -> None:
    credit = _credit([("0/0", ["g", "gemm", "splitk", "fmha", "h", "gemm2"])])
    assert credit == {1: (1, 150), 2: (1, 150), 3: (1, 150), 5: (5, 30)}


def test_unreadable_replays_and_runs_get_nothing() -> None:
    # generated kernels out of handle order: the replay is not the log's order
    assert _credit([("0/0", ["h", "gemm", "g"])]) == {}
    # a generated kernel the matcher left out: its run cannot be bounded
    replay = [("0/0", ["g", "gemm", "h", "gemm2"])]
    assert _credit(replay, unmatched=(2,)) == {}
    # a run that already has a figure is left alone, the other run still credited
    assert _credit(replay, closed=(1,)) == {3: (3, 30)}
    # a library call without logged bytes: its run gets nothing
    entries = [e if e[2] != 5 else (e[0], e[1], e[2], None) for e in GRAPH]
    assert _credit(replay, _log({"0/0": entries})) == {1: (1, 150)}
    # no library call between the bounds: nothing to credit (the kernels keep no figure)
    entries = [e for e in GRAPH if e[2] != 5]
    assert _credit([("0/0", ["g", "h", "copy"])], _log({"0/0": entries})) == {}


def test_kernels_outside_replays_are_never_credited() -> None:
    assert _credit([("0/0", ["g", "gemm", "h"])], replayed=False) == {}


def test_a_replay_cut_short_credits_no_calls_it_did_not_reach() -> None:
    """The profiler stopped after the first GEMM: the calls after it (sdpa, h, addmm) never
    ran in this trace, so the GEMM must not take their bytes."""
    assert _credit([("0/0", ["g", "gemm"])]).get(1, (1, 0))[1] <= 100
    # the whole replay still takes every call's bytes
    assert _credit([("0/0", WHOLE)]) == {1: (1, 150), 2: (1, 150), 4: (4, 30)}


def test_two_graphs_with_the_same_names_each_take_their_own_calls() -> None:
    credit = _credit([("0/0", WHOLE), ("1/0", WHOLE)], _log({"0/0": GRAPH, "1/0": OTHER}))
    assert credit == {
        1: (1, 150), 2: (1, 150), 4: (4, 30),
        6: (6, 1050), 7: (6, 1050), 9: (9, 210),
    }  # fmt: skip


def test_each_replay_takes_at_most_its_graphs_logged_calls() -> None:
    logged = sum(b for _, e, _, b in GRAPH if e and b is not None)
    replays = [("0/0", WHOLE)] * 3 + [("0/0", ["g", "gemm"])]
    credit = _credit(replays)
    starts = np.cumsum([0] + [len(k) for _, k in replays])
    assert credit
    for first, end in itertools.pairwise(starts):
        runs = {g: t for r, (g, t) in credit.items() if first <= r < end}  # a total per run
        assert sum(runs.values()) <= logged
