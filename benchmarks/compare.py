"""Compare benchmark: does comparing two 1M-event traces cost at most 2× loading them?

Uses the same two ~1.1M-event traces as ``dashboard.py`` (the A100 eager training step and
the A100 compiled + CUDA-graph training step, each replicated 10 times; made on first use by
``make_large_trace.py``). In one process it measures:

1. **load**: ``traceviz.load`` of each JSON file;
2. **compare**: ``traceviz.compare`` on the two loaded traces — analysis of both sides
   (kinds, launch overhead, blocking calls, idle split, regions, memory traffic), the fusion
   map (forced: the two traces are different models), the metrics and the diagnosis.

Prints both, the ratio compare / load against the target (≤ 2), PASS/FAIL and the machine;
exits 0 whatever the numbers (a measurement, not a test).

    .venv/bin/python benchmarks/compare.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from dashboard import SOURCES  # noqa: E402
from make_large_trace import make_large_trace  # noqa: E402

TARGET_RATIO = 2.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="rounds (best time is reported)")
    args = parser.parse_args()
    import traceviz

    paths = {side: Path(make_large_trace(source, 10).path) for side, source in SOURCES.items()}
    best_load = best_compare = float("inf")
    for round_ in range(1, args.repeat + 1):
        start = time.perf_counter()
        a, b = traceviz.load(paths["a"]), traceviz.load(paths["b"])
        load_s = time.perf_counter() - start
        start = time.perf_counter()
        # The two traces are different models (the guard says so): force the fusion map, so
        # its cost is measured too.
        comparison = traceviz.compare(a, b, names=("eager", "compiled"), force=True)
        compare_s = time.perf_counter() - start
        print(f"# round {round_}: load {load_s:.2f} s, compare {compare_s:.2f} s, "
              f"{len(comparison.findings)} findings")  # fmt: skip
        best_load, best_compare = min(best_load, load_s), min(best_compare, compare_s)
    ratio = best_compare / best_load
    verdict = "PASS" if ratio <= TARGET_RATIO else "FAIL"
    events = f"{len(a.kernels):,} + {len(b.kernels):,} device activities"
    print(f"load both (best): {best_load:.2f} s; compare (best): {best_compare:.2f} s ({events})")
    print(f"compare / load = {ratio:.2f}  target <= {TARGET_RATIO}  {verdict}")
    print(f"machine: {os.cpu_count()} cpus, {platform.processor() or platform.machine()}, "
          f"python {platform.python_version()}, traceviz {traceviz.__version__}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
