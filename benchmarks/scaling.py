"""Scaling benchmark: traceviz.load and HTA side by side at 0.1×, 1×, 10× and 30× of a trace.

The inputs are the corpus trace ``nvidia/a100_compiled_cudagraph_train_2023.json.gz`` (108,936
events) as uncompressed JSON: 1×, 10× and 30× replicated by ``make_large_trace.py`` (each copy
after the previous one, ids shifted), and 0.1× its first tenth of events in start-time order
(metadata events kept; links that cross the cut are simply missing). Every run is a fresh
process (``_contenders.py``, the same children as ``parse.py``); per size and contender it
records:

- **in-process s / CPU s**: the one call from path to parsed result (imports excluded);
- **process s**: the whole process, interpreter start-up and imports included;
- **peak RSS** (``ru_maxrss`` of the child) and the RSS right after the imports.

Then it fits ``time ∝ events^k`` and ``(peak RSS − RSS after imports) ∝ events^k`` by least
squares on the log-log points and prints each exponent ``k`` (1 = linear). HTA at 30× (about
3.3M events) needs several GiB and minutes; ``--hta-max-factor`` caps the sizes HTA runs at.

    .venv/bin/python benchmarks/scaling.py [--sizes 0.1,1,10,30] [--repeat 1]
        [--contenders traceviz,hta] [--json out.json] [--merge a.json b.json]

Exits 0 whatever the numbers (a measurement, not a test).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from make_large_trace import DEFAULT_SOURCE, make_large_trace  # noqa: E402
from parse import HTA_PYTHON, machine, run_child  # noqa: E402

DATA = HERE / "data"
CONTENDERS = {"traceviz": sys.executable, "hta": str(HTA_PYTHON)}


def fraction_trace(source: Path, part: float = 0.1) -> tuple[Path, int]:
    """The first ``part`` of ``source``'s events in start-time order (metadata kept), as JSON."""
    import msgspec
    from make_large_trace import _read_source

    out = DATA / f"{source.name.split('.')[0]}_x{part:g}.json"
    doc = msgspec.json.decode(_read_source(source))
    events = doc if isinstance(doc, list) else doc["traceEvents"]
    body = sorted(
        (e for e in events if e.get("ph") != "M"),
        key=lambda e: e["ts"] if isinstance(e.get("ts"), int | float) else 0,
    )
    kept = [e for e in events if e.get("ph") == "M"] + body[: round(part * len(body))]
    if not out.exists():
        doc_out = dict(doc, traceEvents=kept) if isinstance(doc, dict) else kept
        DATA.mkdir(exist_ok=True)
        out.write_bytes(msgspec.json.encode(doc_out))
    return out, len(kept)


def inputs(sizes: list[float]) -> dict[float, tuple[Path, int]]:
    """size -> (path, events), made in a child process: Linux carries a process's peak RSS
    over into the children it starts, so this process must never hold a decoded trace."""
    import subprocess

    argv = [sys.executable, __file__, "--prepare", "--sizes", ",".join(f"{s:g}" for s in sizes)]
    done = subprocess.run(argv, check=True, capture_output=True, text=True)
    made = {float(k): (Path(p), n) for k, (p, n) in json.loads(done.stdout).items()}
    for size, (path, events) in made.items():
        print(f"# {size:g}×: {path.name}, {events:,} events", flush=True)
    return made


def prepare(sizes: list[float]) -> dict[float, tuple[Path, int]]:
    """size -> (path, events); integer sizes are replicas, fractions are cuts."""
    made: dict[float, tuple[Path, int]] = {}
    for size in sizes:
        if size < 1:
            made[size] = fraction_trace(DEFAULT_SOURCE, size)
        else:
            info = make_large_trace(DEFAULT_SOURCE, int(size))
            made[size] = (Path(info.path), info.events)
    return made


def measure(
    sizes: dict[float, tuple[Path, int]],
    contenders: list[str],
    repeat: int,
    hta_max: float,
    timeout: float,
) -> list[dict[str, Any]]:
    """One record per (size, contender, round)."""
    records = []
    for size, (path, events) in sizes.items():
        for _ in range(repeat):
            for name in contenders:
                if name == "hta" and size > hta_max:
                    continue
                python = CONTENDERS[name]
                if not Path(python).exists():
                    print(f"# {name}: no interpreter at {python}", flush=True)
                    continue
                start = time.perf_counter()
                rec = run_child(python, name, str(path), timeout)
                process_s = time.perf_counter() - start
                row = {"size": size, "events": events, "contender": name, "process_s": process_s}
                if "error" in rec:
                    row["error"] = rec["error"]
                else:
                    row.update(
                        seconds=rec["seconds"],
                        cpu_seconds=rec["cpu_seconds"],
                        peak_rss_mib=rec["peak_rss_kb"] / 1024,
                        rss_after_import_mib=rec["rss_after_import_kb"] / 1024,
                    )
                records.append(row)
                print(f"# {json.dumps(row)}", flush=True)
    return records


def exponent(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of log(y) on log(x)."""
    pts = [(math.log(x), math.log(y)) for x, y in points if x > 0 and y > 0]
    if len(pts) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sxx if sxx else None


def best(records: list[dict[str, Any]]) -> dict[tuple[float, str], dict[str, Any]]:
    """Per (size, contender): least times and largest peak RSS over the rounds."""
    out: dict[tuple[float, str], dict[str, Any]] = {}
    for r in records:
        if "error" in r:
            continue
        key = (r["size"], r["contender"])
        b = out.setdefault(key, dict(r))
        for k in ("seconds", "cpu_seconds", "process_s"):
            b[k] = min(b[k], r[k])
        b["peak_rss_mib"] = max(b["peak_rss_mib"], r["peak_rss_mib"])
    return out


def report(records: list[dict[str, Any]]) -> str:
    table = best(records)
    sizes = sorted({s for s, _ in table})
    names = [n for n in CONTENDERS if any(c == n for _, c in table)]
    lines = [
        "| size | events | contender | in-process s | CPU s | process s | peak RSS MiB "
        "| RSS after imports MiB |",
        "|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for size in sizes:
        for name in names:
            r = table.get((size, name))
            if r is None:
                lines.append(f"| {size:g}× | | {name} | not run | | | | |")
                continue
            lines.append(
                f"| {size:g}× | {r['events']:,} | {name} | {r['seconds']:.2f} "
                f"| {r['cpu_seconds']:.2f} | {r['process_s']:.2f} | {r['peak_rss_mib']:.0f} "
                f"| {r['rss_after_import_mib']:.0f} |"
            )
    lines += ["", "HTA ÷ traceviz (same size, same run):", ""]
    for size in sizes:
        tv, hta = table.get((size, "traceviz")), table.get((size, "hta"))
        if tv is None or hta is None:
            continue
        lines.append(
            f"- {size:g}×: in-process {hta['seconds'] / tv['seconds']:.1f}× "
            f"(CPU {hta['cpu_seconds'] / tv['cpu_seconds']:.1f}×), whole process "
            f"{hta['process_s'] / tv['process_s']:.1f}×, peak RSS traceviz/HTA "
            f"{tv['peak_rss_mib'] / hta['peak_rss_mib']:.2f}"
        )
    lines += ["", "Exponent k of a fit y ∝ events^k over the sizes run (1 = linear):", ""]
    for name in names:
        rows = [table[(s, name)] for s in sizes if (s, name) in table]
        fits = {
            "in-process time": exponent([(r["events"], r["seconds"]) for r in rows]),
            "CPU time": exponent([(r["events"], r["cpu_seconds"]) for r in rows]),
            "peak RSS − imports": exponent(
                [(r["events"], r["peak_rss_mib"] - r["rss_after_import_mib"]) for r in rows]
            ),
        }
        text = ", ".join(f"{k} {v:.2f}" for k, v in fits.items() if v is not None)
        lines.append(f"- {name} ({len(rows)} sizes): {text}")
        large = [r for r in rows if r["size"] >= 1]
        if 1 < len(large) < len(rows):  # where per-event work, not fixed cost, dominates
            k = exponent([(r["events"], r["cpu_seconds"]) for r in large])
            lines.append(f"  - sizes ≥ 1× only ({len(large)}): CPU time {k:.2f}")
    lines += ["", "Machine: " + ", ".join(f"{k} {v}" for k, v in machine().items())]
    with contextlib.suppress(OSError):
        lines.append(f"Load average at the end: {os.getloadavg()[0]:.1f} (1 min)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0.1,1,10,30", help="multiples of the trace")
    parser.add_argument("--contenders", default="traceviz,hta", help="traceviz and/or hta")
    parser.add_argument("--repeat", type=int, default=1, help="rounds (best time is reported)")
    parser.add_argument("--hta-max-factor", type=float, default=30.0, help="largest size for HTA")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    parser.add_argument("--json", type=Path, help="write the raw records here")
    parser.add_argument("--merge", type=Path, nargs="*", help="report these JSON files together")
    parser.add_argument("--prepare", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.prepare:
        made = prepare([float(s) for s in args.sizes.split(",")])
        print(json.dumps({str(k): (str(p), n) for k, (p, n) in made.items()}))
        return 0
    if args.merge:
        records = [r for f in args.merge for r in json.loads(f.read_text())["records"]]
        print(report(records))
        return 0
    sizes = inputs([float(s) for s in args.sizes.split(",")])
    contenders = [c for c in args.contenders.split(",") if c]
    records = measure(sizes, contenders, args.repeat, args.hta_max_factor, args.timeout)
    if args.json:
        args.json.write_text(json.dumps({"records": records, "machine": machine()}, indent=1))
    print()
    print(report(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
