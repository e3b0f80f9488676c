"""Compare benchmark: does comparing two 1M-event traces cost at most 2× loading them?

Uses the same two ~1.1M-event traces as ``dashboard.py`` (the A100 eager training step and
the A100 compiled + CUDA-graph training step, each replicated 10 times; made on first use by
``make_large_trace.py``). In one process it measures:

1. **load**: ``traceviz.load`` of each JSON file, one after the other;
2. **compare**: ``traceviz.compare`` on the two loaded traces — analysis of both sides
   (kinds, launch overhead, blocking calls, idle split, regions, memory traffic), the fusion
   map (forced: the two traces are different models), the metrics and the diagnosis;
3. **from the files**: ``traceviz.compare(A, B, force=True)`` given the two paths, the parse
   and report caches off (what ``traceviz compare A B --no-cache`` computes), with the sides
   one after the other (``TRACEVIZ_CONCURRENT=0``) and then at once (side b loaded and
   analysed on a worker thread, the default).

Prints the best of each, the ratio compare / load against the target (≤ 2), PASS/FAIL, the
files' time at once against one after the other and against load + compare, and the machine;
exits 0 whatever the numbers (a measurement, not a test).

``--second-look`` measures the caches instead: the whole ``traceviz compare A B`` command four
times, each a fresh process, the cache empty before the first; the second writes the first
one's stored output (the rendered-output cache; target: second ≤ 10% of first), the third
reads the report cache and renders (output entries deleted), the fourth the parse cache alone
(output and report entries deleted).

    .venv/bin/python benchmarks/compare.py [--repeat 3] [--second-look]
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


SECOND_LOOK_TARGET = 0.10


def second_look(paths: dict[str, Path]) -> None:
    """`traceviz compare A B` four times, each a fresh process, the cache empty before the
    first: the first parses and writes the parse, report and output caches; the second
    writes the stored output (issue 14: ≤ 10% of the first; it skips the parse, the
    analysis, pandas and the render, not the interpreter, rich, the key's stat and small-file
    hashes); the third, with the output entries deleted, reads the report back and renders it;
    the fourth, with the report entries deleted too, shows what the parse cache alone gives."""
    import shutil
    import subprocess
    import tempfile

    exe = Path(sys.executable).with_name("traceviz")
    argv = [str(exe), "compare", str(paths["a"]), str(paths["b"]), "--force"]
    cache = Path(tempfile.mkdtemp(prefix="traceviz-bench-cache-"))
    env = dict(os.environ, TRACEVIZ_CACHE_DIR=str(cache))
    env.pop("TRACEVIZ_NO_CACHE", None)
    try:
        times = []
        # what goes before each round: nothing, nothing, the stored outputs, the reports too
        dropped: list[tuple[str, ...]] = [(), (), ("output-*",), ("output-*", "report-*")]
        sizes: dict[str, int] = {}
        for round_, patterns in enumerate(dropped):
            for entry in (e for pattern in patterns for e in cache.glob(pattern)):
                shutil.rmtree(entry)
            start = time.perf_counter()
            subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)
            times.append(time.perf_counter() - start)
            if round_ == 1:  # every cache written
                for kind, pattern in (("parse", "[0-9a-f]*"), ("report", "report-*"),
                                      ("output", "output-*")):  # fmt: skip
                    files = (f for d in cache.glob(pattern) for f in d.iterdir())
                    sizes[kind] = sum(f.stat().st_size for f in files)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    ratio = times[1] / times[0]
    report_only, parse_only = times[2] / times[0], times[3] / times[0]
    verdict = "PASS" if ratio <= SECOND_LOOK_TARGET else "FAIL"
    print(f"traceviz compare, first (parse + caches written): {times[0]:.2f} s; second (output "
          f"cache): {times[1]:.3f} s; third (report cache, rendered): {times[2]:.2f} s; fourth "
          f"(parse cache only): {times[3]:.2f} s")  # fmt: skip
    print(f"second / first = {ratio:.3f}  target <= {SECOND_LOOK_TARGET}  {verdict}; "
          f"report cache only / first = {report_only:.2f}; parse cache only / first = "
          f"{parse_only:.2f}")  # fmt: skip
    print(f"cache on disk: parse entries {sizes['parse'] / 1e6:.0f} MB, report entry "
          f"{sizes['report'] / 1e6:.0f} MB, output entry {sizes['output'] / 1e3:.0f} kB; "
          f"machine load average {os.getloadavg()[0]:.1f}")  # fmt: skip


SIDES = {"0": "one after the other", "1": "at once"}


def from_files(paths: dict[str, Path], concurrent: str) -> float:
    """Seconds of ``traceviz.compare(A, B, force=True)`` from the two files, the parse and
    report caches off, the sides at once (``concurrent`` "1") or one after the other
    (``TRACEVIZ_CONCURRENT=0``)."""
    import traceviz

    saved = {k: os.environ.get(k) for k in ("TRACEVIZ_NO_CACHE", "TRACEVIZ_CONCURRENT")}
    os.environ.update(TRACEVIZ_NO_CACHE="1", TRACEVIZ_CONCURRENT=concurrent)
    try:
        start = time.perf_counter()
        traceviz.compare(paths["a"], paths["b"], names=("eager", "compiled"), force=True)
        return time.perf_counter() - start
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="rounds (best time is reported)")
    parser.add_argument(
        "--second-look",
        action="store_true",
        help="instead: time `traceviz compare A B` in fresh processes: caches cold, report cache "
        "warm, parse cache only",
    )
    args = parser.parse_args()
    if args.second_look:
        paths = {side: Path(make_large_trace(src, 10).path) for side, src in SOURCES.items()}
        second_look(paths)
        return 0
    import traceviz

    paths = {side: Path(make_large_trace(source, 10).path) for side, source in SOURCES.items()}
    best_load = best_compare = float("inf")
    best_files = {"0": float("inf"), "1": float("inf")}
    for round_ in range(1, args.repeat + 1):
        start = time.perf_counter()
        a, b = traceviz.load(paths["a"], cache=False), traceviz.load(paths["b"], cache=False)
        load_s = time.perf_counter() - start
        start = time.perf_counter()
        # The two traces are different models (the guard says so): force the fusion map, so
        # its cost is measured too.
        comparison = traceviz.compare(a, b, names=("eager", "compiled"), force=True)
        compare_s = time.perf_counter() - start
        print(f"# round {round_}: load {load_s:.2f} s, compare {compare_s:.2f} s, "
              f"{len(comparison.findings)} findings")  # fmt: skip
        best_load, best_compare = min(best_load, load_s), min(best_compare, compare_s)
        del comparison
        for concurrent in ("0", "1"):  # the sides one after the other, then at once
            files_s = from_files(paths, concurrent)
            print(f"#   from the files, {SIDES[concurrent]}: {files_s:.2f} s")
            best_files[concurrent] = min(best_files[concurrent], files_s)
    ratio = best_compare / best_load
    verdict = "PASS" if ratio <= TARGET_RATIO else "FAIL"
    events = f"{len(a.kernels):,} + {len(b.kernels):,} device activities"
    print(f"load both (best): {best_load:.2f} s; compare (best): {best_compare:.2f} s ({events})")
    print(f"compare / load = {ratio:.2f}  target <= {TARGET_RATIO}  {verdict}")
    before, after = best_files["0"], best_files["1"]
    print(f"from the files (traceviz.compare(A, B), caches off, best): sides one after the "
          f"other {before:.2f} s, at once {after:.2f} s = {after / before:.2f} x; at once / "
          f"(load both + compare) = {after / (best_load + best_compare):.2f}")  # fmt: skip
    print(f"machine: {os.cpu_count()} cpus, {platform.processor() or platform.machine()}, "
          f"python {platform.python_version()}, traceviz {traceviz.__version__}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
