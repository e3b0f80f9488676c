"""CLI start-up benchmark: `traceviz --help` against `import traceviz` and an empty interpreter.

Also timed: building the parser with every command module imported, which is what
`traceviz --help` did before the command registry (issue 13); `traceviz COMMAND` pays that for
its own command only.

Each contender runs as a fresh subprocess, round-robin, ``--repeat`` rounds (default 15); the
best (smallest) wall time of each is the figure, since start-up noise only ever adds time. The
three are measured in the same run, so their differences hold on a busy machine too.

    .venv/bin/python benchmarks/cli_startup.py [--repeat 15]

Also timed (issue 14): `traceviz compare RUN` on the sample run ``sample_traces/pointwise``
(parse cache off) against ``python -c "import traceviz, pandas"`` plus parsing the traces the
command parses, target ≤ 1.5×, with the caches off (the cold cost) and warm (a second look:
the rendered-output cache writes the stored output; neither pandas nor the report is
loaded). The floor is every trace `compare RUN` must parse: the run's eager and compiled
traces and its eager lines trace (the eager steps profiled again under the line marks, where
the eager kernels' source lines come from); the issue's first floor, the two traces only, is
printed beside it.

Prints a Markdown table (best and median, ms; extra over `python -c pass`) and PASS/FAIL of the
issue-13 target (`traceviz --help` at most 0.5 s); exits 0 whatever the numbers (a measurement,
not a test).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
TRACEVIZ = BIN / "traceviz"
TARGET_S = 0.5
SAMPLE_RUN = Path(__file__).resolve().parents[1] / "sample_traces" / "pointwise"
# the caches of the "second look" contender: filled by its warm-up run, removed at the end
REPORT_CACHE = Path(tempfile.gettempdir()) / f"traceviz-bench-cli-cache-{os.getpid()}"

PARSE = [
    sys.executable,
    "-c",
    "import sys, traceviz, pandas; [traceviz.load(p, cache=False) for p in sys.argv[1:]]",
]
#: the traces `traceviz compare RUN` parses: eager, compiled and the eager lines trace
RUN_TRACES = [
    str(SAMPLE_RUN / name)
    for name in (
        "eager.pt.trace.json.gz",
        "compiled.pt.trace.json.gz",
        "eager_lines.pt.trace.json.gz",
    )
]

CONTENDERS: dict[str, list[str]] = {
    "python -c pass": [sys.executable, "-c", "pass"],
    'python -c "import traceviz"': [sys.executable, "-c", "import traceviz"],
    "traceviz --help": [str(TRACEVIZ), "--help"],
    "traceviz --version": [str(TRACEVIZ), "--version"],
    # what `traceviz --help` cost before the lazy registry: every command module imported
    "every command imported": [
        sys.executable,
        "-c",
        "from traceviz.cli import build_parser; build_parser().format_help()",
    ],
    # issue 14: `traceviz compare RUN` against the floor of importing pandas and parsing
    "import traceviz, pandas + parse RUN": [*PARSE, *RUN_TRACES[:2]],
    "import traceviz, pandas + parse RUN's 3 traces": [*PARSE, *RUN_TRACES],
    "traceviz compare RUN": [str(TRACEVIZ), "compare", str(SAMPLE_RUN), "--no-cache"],
    # the same again with the caches on and warm: the stored output is written, nothing rebuilt
    "traceviz compare RUN, second look": [
        str(TRACEVIZ),
        "compare",
        str(SAMPLE_RUN),
        "--cache-dir",
        str(REPORT_CACHE),
    ],
}
COMPARE_TARGET = 1.5  # compare RUN ≤ 1.5 × (import traceviz, pandas + parse)


def time_once(argv: list[str]) -> float:
    """Wall seconds of one run of ``argv`` (output discarded; a failure stops the benchmark)."""
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True)
    return time.perf_counter() - start


def measure(repeat: int) -> dict[str, list[float]]:
    """Seconds per run of every contender, ``repeat`` rounds, round-robin."""
    times: dict[str, list[float]] = {name: [] for name in CONTENDERS}
    for argv in CONTENDERS.values():  # one warm-up each: page cache, .pyc files
        time_once(argv)
    for _ in range(repeat):
        for name, argv in CONTENDERS.items():
            times[name].append(time_once(argv))
    return times


def report(times: dict[str, list[float]]) -> str:
    base = min(times["python -c pass"])
    lines = [
        "| command | best ms | median ms | best − `python -c pass` ms |",
        "|---|---:|---:|---:|",
    ]
    for name, runs in times.items():
        best, median = min(runs), statistics.median(runs)
        lines.append(
            f"| `{name}` | {best * 1e3:.0f} | {median * 1e3:.0f} | {(best - base) * 1e3:.0f} |"
        )
    help_best = min(times["traceviz --help"])
    verdict = "PASS" if help_best <= TARGET_S else "FAIL"
    lines.append("")
    lines.append(f"target `traceviz --help` ≤ {TARGET_S} s: {help_best:.3f} s {verdict}")
    floor = min(times["import traceviz, pandas + parse RUN's 3 traces"])
    two = min(times["import traceviz, pandas + parse RUN"])
    compare = min(times["traceviz compare RUN"])
    verdict = "PASS" if compare <= COMPARE_TARGET * floor else "FAIL"
    lines.append(
        f"target `traceviz compare RUN` ≤ {COMPARE_TARGET} × (import traceviz, pandas + parse "
        f"the 3 traces it parses): {compare:.3f} s / {floor:.3f} s = {compare / floor:.2f} "
        f"{verdict} (caches off; over the 2-trace floor {two:.3f} s: {compare / two:.2f})"
    )
    second = min(times["traceviz compare RUN, second look"])
    verdict = "PASS" if second <= COMPARE_TARGET * floor else "FAIL"
    lines.append(
        f"the same, second look (output cache warm): {second:.3f} s / {floor:.3f} s = "
        f"{second / floor:.2f} {verdict}"
    )
    lines.append(
        f"machine: {platform.machine()}, Python {platform.python_version()}, "
        f"{len(next(iter(times.values())))} rounds"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="rounds (15)")
    args = parser.parse_args(argv)
    if not TRACEVIZ.exists():
        print(f"{TRACEVIZ} not found: install traceviz in this interpreter's environment")
        return 0
    try:
        print(report(measure(max(1, args.repeat))))
    finally:
        shutil.rmtree(REPORT_CACHE, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
