"""Cross-rank aggregation benchmark: every ranks analysis over synthetic small tables of a
1,024-rank job (issue 12).

The rows are what each rank's ingest task writes (:mod:`traceviz.ranks.reduce`): one summary
row per rank, ``--collectives`` collectives per step × ``--steps`` steps per rank, and
``--kernels`` kernel names per rank. One rank is planted as a straggler (it arrives
``--late-us`` late at every collective), clocks get random offsets; the run checks that the
straggler is found and the offsets recovered, then times, best of ``--repeat``:

- ``stragglers``: match collectives, align clocks, wait vs transfer, the robust rule;
- ``step spread`` and ``kernel spread``;
- ``analyse_ranks``: all of them plus the findings (what ``summary --ranks`` runs);
- ``render json``: the JSON of ``summary --ranks``.

    .venv/bin/python benchmarks/ranks_aggregate.py [--ranks 1024] [--repeat 3]

Prints a Markdown table (seconds; rows in; peak traced memory of the step, MiB).
"""

from __future__ import annotations

import argparse
import platform
import time
import tracemalloc
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd

from traceviz.ranks.analyse import analyse_ranks
from traceviz.ranks.reduce import (
    COLLECTIVES_DTYPES,
    KERNEL_SUMMARY_DTYPES,
    SUMMARY_DTYPES,
    Collectives,
    KernelSummary,
    RankSummary,
)
from traceviz.ranks.render import ranks_json
from traceviz.ranks.spread import kernel_spread, step_spread
from traceviz.ranks.stragglers import find_stragglers
from traceviz.schema import conform


def synthetic(ranks: int, steps: int, per_step: int, kernels: int, late_us: float, seed: int
              ) -> tuple[SimpleNamespace, int, np.ndarray]:  # fmt: skip
    """The three tables of a job, the planted straggler and the planted offsets (µs)."""
    rng = np.random.default_rng(seed)
    straggler = int(rng.integers(ranks))
    offsets = rng.uniform(-5e4, 5e4, ranks)
    n = steps * per_step
    transfer = 200.0
    ready = 1e6 + np.arange(n)[None, :] * 2_000.0 + rng.uniform(0, 20, (ranks, n))
    ready[straggler] += late_us
    end = ready.max(axis=0) + transfer
    start = ready
    dur = end[None, :] - start
    rank = np.repeat(np.arange(ranks), n)
    colls = pd.DataFrame(
        {
            Collectives.rank: rank,
            Collectives.seq: np.tile(np.arange(n) % per_step, ranks),
            Collectives.name: "all_reduce",
            Collectives.kernel: "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
            Collectives.stream: 20,
            Collectives.channel: "pg 0",
            Collectives.step: np.tile(np.arange(n) // per_step, ranks),
            Collectives.ts_us: (start + offsets[:, None]).ravel(),
            Collectives.dur_us: dur.ravel(),
            Collectives.end_us: (end[None, :] + offsets[:, None]).ravel(),
            Collectives.bytes: 64 * 2**20,
            Collectives.dtype: "BFloat16",
            Collectives.group_size: ranks,
        }
    )
    step_us = 2_000.0 * per_step
    summary = pd.DataFrame(
        {
            RankSummary.rank: np.arange(ranks), RankSummary.source: "synthetic",
            RankSummary.node: [f"node{r // 8:03d}" for r in range(ranks)],
            RankSummary.world_size: ranks, RankSummary.device: "cuda",
            RankSummary.steps: steps, RankSummary.step_mean_us: step_us,
            RankSummary.step_p50_us: step_us + rng.uniform(0, 5, ranks),
            RankSummary.step_p95_us: step_us * 1.01, RankSummary.wall_us: step_us * steps,
            RankSummary.kernels: kernels * 10, RankSummary.kernel_time_us: step_us * steps * 0.8,
            RankSummary.comm_kernels: n, RankSummary.comm_time_us: dur.sum(axis=1),
            RankSummary.compute_time_us: step_us * steps * 0.5, RankSummary.busy_us: 0.0,
            RankSummary.idle_us: 0.0, RankSummary.cpu_wait_us: 0.0, RankSummary.wait_time_us: 0.0,
            RankSummary.launch_calls: kernels * 10, RankSummary.launch_overhead_us: 0.0,
            RankSummary.compiled_regions: steps, RankSummary.compiled_frames: 1,
            RankSummary.graph_breaks: 0, RankSummary.recompiles: 0, RankSummary.events: 100_000,
        }
    )  # fmt: skip
    means = rng.uniform(5, 500, kernels)
    mean = means[None, :] * rng.uniform(0.98, 1.02, (ranks, kernels))
    ks = pd.DataFrame(
        {
            KernelSummary.rank: np.repeat(np.arange(ranks), kernels),
            KernelSummary.name: np.tile([f"triton_poi_fused_{i}" for i in range(kernels)], ranks),
            KernelSummary.calls: 10,
            KernelSummary.total_us: (mean * 10).ravel(),
            KernelSummary.mean_us: mean.ravel(),
            KernelSummary.p50_us: mean.ravel(),
            KernelSummary.max_us: mean.ravel() * 1.1,
        }
    )
    tables = SimpleNamespace(
        summary=conform(summary, SUMMARY_DTYPES),
        collectives=conform(colls, COLLECTIVES_DTYPES),
        kernel_summary=conform(ks, KERNEL_SUMMARY_DTYPES),
    )
    return tables, straggler, offsets


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    """Best wall seconds of ``repeat`` calls, the peak traced MiB of one, the last result."""
    best = float("inf")
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return best, peak, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--collectives", type=int, default=40, help="per step")
    parser.add_argument("--kernels", type=int, default=200, help="kernel names per rank")
    parser.add_argument("--late-us", type=float, default=500.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    tables, straggler, offsets = synthetic(
        args.ranks, args.steps, args.collectives, args.kernels, args.late_us, args.seed
    )
    rows = {k: len(getattr(tables, k)) for k in ("summary", "collectives", "kernel_summary")}
    s, c, k = tables.summary, tables.collectives, tables.kernel_summary
    steps: list[tuple[str, Callable[[], Any], int]] = [
        ("stragglers", lambda: find_stragglers(s, c), rows["summary"] + rows["collectives"]),
        ("step spread", lambda: step_spread(s), rows["summary"]),
        ("kernel spread", lambda: kernel_spread(k), rows["kernel_summary"]),
        ("analyse_ranks", lambda: analyse_ranks(tables), sum(rows.values())),
    ]
    results = {}
    print(f"# ranks aggregation: {args.ranks} ranks, rows {rows}")
    print(f"python {platform.python_version()}, pandas {pd.__version__}, numpy {np.__version__}")
    print("\n| step | rows in | best s | peak MiB |\n|---|---:|---:|---:|")
    for name, fn, n in steps:
        best, peak, results[name] = timed(fn, args.repeat)
        print(f"| {name} | {n:,} | {best:.3f} | {peak:.0f} |")
    analysis = results["analyse_ranks"]
    best, peak, _ = timed(lambda: ranks_json(analysis), args.repeat)
    print(f"| render json | {args.ranks:,} ranks | {best:.3f} | {peak:.0f} |")
    found = results["stragglers"]
    got = found.match.offsets.sort_values("rank")["offset_us"].to_numpy()
    error = np.abs((got - got[0]) - (offsets - offsets[0])).max()
    print(f"\nplanted straggler {straggler}: found {found.ranks}; "
          f"largest offset error {error:.3g} µs")  # fmt: skip


if __name__ == "__main__":
    main()
