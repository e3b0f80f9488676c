"""Parse benchmark: traceviz.load against HolisticTraceAnalysis and bare JSON decodes.

Builds (once) a trace of about 1.1M events / 206 MB by replicating a real corpus trace (see
``make_large_trace.py``), then measures every contender on the same file, each run in its own
fresh process so that its peak RSS is its own (read with ``os.wait4``). Runs go round-robin,
``--repeat`` rounds (default 3); the table shows the best time and the largest peak RSS.

    .venv/bin/python benchmarks/parse.py [--repeat 3] [--all] [--only a,b] [--skip a,b] [--json F]

Prints a Markdown table, the ratios the targets are stated in, PASS/FAIL per target, and the
machine and versions; exits 0 whatever the numbers (a measurement, not a test). Contenders
that cannot run here (traceviz.load not written yet, HTA's venv missing) are reported as
unavailable with the reason. See benchmarks/README.md for what each contender does.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CHILD = HERE / "_contenders.py"
sys.path.insert(0, str(HERE))

from make_large_trace import DEFAULT_FACTOR, DEFAULT_SOURCE, make_large_trace  # noqa: E402

HTA_PYTHON = ROOT / ".venv-hta" / "bin" / "python"
HTA_PANDAS2_PYTHON = ROOT / ".venv-hta-pandas2" / "bin" / "python"
# traceviz's core install (`pip install traceviz`, no extras, so no pyarrow), as `make test` builds
# it (`make .venv-core/.installed`).
CORE_PYTHON = ROOT / ".venv-core" / "bin" / "python"

# name -> what it measures (the README repeats these)
DESCRIPTIONS = {
    "io": "read the file's bytes (I/O floor; page cache warm)",
    "orjson": "orjson.loads(bytes) → dicts and lists",
    "msgspec-typed": "msgspec decode → Struct(ph,cat,name,pid,tid,ts,dur,id,args dict) per event",
    "msgspec-typed-nogc": "the same with the cyclic GC disabled during the decode",
    "traceviz": "traceviz.load(json, cache=False) → Trace (all tables, linked; native when built)",
    "traceviz-core": "the same in traceviz's core install (.venv-core: no extras, no pyarrow)",
    "traceviz-python": "the same with TRACEVIZ_NATIVE=0: the Python path (msgspec structs)",
    "traceviz-cache": "traceviz.load(cache dir) → Trace (the NumPy columns Trace.save wrote)",
    "traceviz-decode": "traceviz.load's first phase alone: read + decode to its Event structs",
    "hta": "HTA Trace(...).load_traces(), default parser backend (json)",
    "hta-pandas2": "the same, HTA venv with pandas 2.x",
    "hta-ijson": "HTA, ParserBackend.IJSON_BATCH_AND_COMPRESS (ijson yajl2_c)",
}
# Slow variants of HTA (a minute a run each) that only --all or --only runs.
EXTRA = ("hta-pandas2", "hta-ijson")
ORDER = list(DESCRIPTIONS)

# (label, numerator, denominator, time / process / rss, (comparison, bound)); issue 14.
# The whole-process bound is 10 on the 1M-event trace and 4 on the 1x trace (see target_bound).
TARGETS = [
    ("HTA time / traceviz time (in-process)", "hta", "traceviz", "time", ("≥", 10.0)),
    # Whole process in like environments: HTA's venv and traceviz's core install both have
    # pandas without pyarrow (pandas imports pyarrow at its own import whenever it is there).
    (
        "HTA time / traceviz-core time (whole process)",
        "hta",
        "traceviz-core",
        "process",
        ("≥", 10.0),
    ),
    ("traceviz peak RSS / HTA peak RSS", "traceviz", "hta", "rss", ("≤", 0.5)),
    (
        "traceviz time / msgspec-typed-nogc time",
        "traceviz",
        "msgspec-typed-nogc",
        "time",
        ("≤", 1.5),
    ),
    ("traceviz JSON time / cache reload time", "traceviz", "traceviz-cache", "time", ("≥", 20.0)),
]
SMALL_TRACE_EVENTS = 500_000  # below: the 1x trace, whose whole-process bound is 4
INFO_RATIOS = [
    ("HTA time / traceviz time (whole process, pyarrow)", "hta", "traceviz", "process"),
    ("traceviz time / traceviz-core time (whole process)", "traceviz", "traceviz-core", "process"),
    ("HTA time / traceviz-core time (in-process)", "hta", "traceviz-core", "time"),
    ("traceviz time / msgspec-typed time", "traceviz", "msgspec-typed", "time"),
    ("HTA (ijson) time / traceviz time", "hta-ijson", "traceviz", "time"),
    ("traceviz peak RSS / HTA (ijson) peak RSS", "traceviz", "hta-ijson", "rss"),
    ("HTA (pandas 2) time / traceviz time", "hta-pandas2", "traceviz", "time"),
    ("traceviz peak RSS / HTA (pandas 2) peak RSS", "traceviz", "hta-pandas2", "rss"),
    ("traceviz time / msgspec-typed-nogc time", "traceviz", "msgspec-typed-nogc", "time"),
    (
        "traceviz-decode time / msgspec-typed-nogc time",
        "traceviz-decode",
        "msgspec-typed-nogc",
        "time",
    ),
    ("traceviz time / traceviz-decode time", "traceviz", "traceviz-decode", "time"),
    ("traceviz-python time / traceviz time", "traceviz-python", "traceviz", "time"),
    ("HTA time / traceviz-python time", "hta", "traceviz-python", "time"),
    (
        "traceviz-python time / msgspec-typed-nogc time",
        "traceviz-python",
        "msgspec-typed-nogc",
        "time",
    ),
    ("traceviz-python peak RSS / traceviz peak RSS", "traceviz-python", "traceviz", "rss"),
    ("traceviz peak RSS / msgspec-typed peak RSS", "traceviz", "msgspec-typed", "rss"),
    ("msgspec-typed time / orjson time", "msgspec-typed", "orjson", "time"),
    ("HTA time / msgspec-typed time", "hta", "msgspec-typed", "time"),
]


@dataclass
class Outcome:
    name: str
    python: str
    target: str
    seconds: list[float] = field(default_factory=list)
    cpu_seconds: list[float] = field(default_factory=list)
    process_seconds: list[float] = field(default_factory=list)  # start-up + imports + call
    peak_rss_mib: list[float] = field(default_factory=list)
    rss_after_import_mib: float | None = None
    rows: int | None = None
    detail: str = ""
    versions: str = ""
    error: str | None = None  # set when unavailable or failed
    status: str = "ok"  # ok | unavailable | failed

    @property
    def best(self) -> float | None:
        return min(self.seconds) if self.seconds else None

    @property
    def best_cpu(self) -> float | None:
        return min(self.cpu_seconds) if self.cpu_seconds else None

    @property
    def best_process(self) -> float | None:
        return min(self.process_seconds) if self.process_seconds else None

    @property
    def rss(self) -> float | None:
        return max(self.peak_rss_mib) if self.peak_rss_mib else None


def run_child(python: str, name: str, target: str, timeout: float) -> dict[str, Any]:
    """Run one contender once in a fresh process; return its report plus its peak RSS."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONHASHSEED="0")
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            [python, str(CHILD), name, target], stdout=out, stderr=err, cwd=ROOT, env=env
        )
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        lines = out.read().decode(errors="replace").strip().splitlines()
        stderr_tail = err.read().decode(errors="replace").strip().splitlines()[-8:]
    record: dict[str, Any] = {}
    if lines:
        try:
            record = json.loads(lines[-1])
        except ValueError:
            record = {}
    if not record:
        why = f"exit code {proc.returncode}" + (" (timed out)" if proc.returncode == -9 else "")
        last = stderr_tail[-1] if stderr_tail else ""
        record = {"error": f"no result, {why}: {last}", "kind": "failed"}
    record["peak_rss_kb"] = usage.ru_maxrss  # KiB on Linux
    return record


def prepare_cache(trace_path: Path, cache_dir: Path, timeout: float) -> str | None:
    """Write traceviz's saved trace (Trace.save) of the trace; return an error message or None."""
    shutil.rmtree(cache_dir, ignore_errors=True)
    code = "import sys, traceviz; traceviz.load(sys.argv[1]).save(sys.argv[2])"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code, str(trace_path), str(cache_dir)],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=ROOT,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return f"writing the cache took over {timeout:.0f} s"
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
        return "could not write the cache: " + tail[0]
    return None


def _dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _git_state() -> str:
    """HEAD of the repository, and whether traceviz/ differs from it."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "traceviz"],
            capture_output=True,
            text=True,
            cwd=ROOT,
        ).stdout.strip()
    except OSError:
        return "?"
    return (head or "?") + (" + uncommitted changes in traceviz/" if dirty else "")


def machine() -> dict[str, str]:
    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "?"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 1024**2:.1f} GiB"
                break
    except OSError:
        pass
    return {
        "traceviz commit": _git_state(),
        "cpus": str(os.cpu_count()),
        "cpu": cpu,
        "memory": mem,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
    }


def _fmt(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def ratio(outcomes: dict[str, Outcome], num: str, den: str, kind: str) -> float | None:
    a, b = outcomes.get(num), outcomes.get(den)
    if a is None or b is None:
        return None
    x, y = {
        "time": (a.best, b.best),
        "cpu": (a.best_cpu, b.best_cpu),
        "process": (a.best_process, b.best_process),
        "rss": (a.rss, b.rss),
    }[kind]
    return None if x is None or y is None or y == 0 else x / y


def report(outcomes: dict[str, Outcome], trace_info: dict[str, Any], repeat: int) -> str:
    lines = [
        f"## Parse benchmark: {Path(trace_info['path']).name}",
        "",
        f"{trace_info['events']:,} events, {trace_info['bytes'] / 1e6:.1f} MB "
        f"(source {Path(trace_info['source']).name} × {trace_info['factor']}); "
        f"best of {repeat} runs, each in a fresh process; CPU s is the least CPU time of the runs; "
        "peak RSS is the largest of the runs.",
        "",
        "| contender | what it measures | best s | all runs s | CPU s | process s | peak RSS MiB "
        "| RSS after imports MiB | time ÷ traceviz | result |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    tv = outcomes.get("traceviz")
    for name, o in outcomes.items():
        if o.status != "ok":
            lines.append(
                f"| {name} | {DESCRIPTIONS[name]} | – | {o.status}: {o.error} | | | | | | |"
            )
            continue
        runs = ", ".join(f"{s:.2f}" for s in o.seconds)
        vs_tv = (
            f"{o.best / tv.best:.2f}×"
            if tv is not None and tv.best and o.best is not None and tv.status == "ok"
            else "–"
        )
        result = f"{o.rows:,}: {o.detail}" if o.rows is not None else o.detail
        lines.append(
            f"| {name} | {DESCRIPTIONS[name]} | {_fmt(o.best)} | {runs} | {_fmt(o.best_cpu)} "
            f"| {_fmt(o.best_process)} | {_fmt(o.rss, 0)} "
            f"| {_fmt(o.rss_after_import_mib, 0)} | {vs_tv} | {result} |"
        )
    lines += ["", "### Targets", ""]
    for label, num, den, kind, (op, bound) in TARGETS:
        small = 0 < trace_info["events"] < SMALL_TRACE_EVENTS
        if kind == "process" and small:
            bound = 4.0
        value = ratio(outcomes, num, den, kind)
        if kind == "rss" and small and value is not None:  # the RSS target is the 1M trace's
            lines.append(f"- {label} = {value:.2f}  (target {op} {bound} on the 1M-event trace)")
            continue
        if value is None:
            missing = [
                n for n in (num, den) if outcomes.get(n) is None or outcomes[n].status != "ok"
            ]
            lines.append(f"- {label}: n/a ({', '.join(missing)} not measured)  target {op} {bound}")
            continue
        ok = value >= bound if op == "≥" else value <= bound
        cpu = ratio(outcomes, num, den, "cpu") if kind == "time" else None
        by_cpu = f" (by CPU time: {cpu:.2f})" if cpu is not None else ""
        verdict = "PASS" if ok else "FAIL"
        lines.append(f"- {label} = **{value:.2f}**{by_cpu}  target {op} {bound}  **{verdict}**")
    lines += ["", "### Other ratios", ""]
    for label, num, den, kind in INFO_RATIOS:
        value = ratio(outcomes, num, den, kind)
        if value is None:  # a contender not run (or not available) here
            continue
        cpu = ratio(outcomes, num, den, "cpu") if kind == "time" else None
        lines.append(f"- {label} = {value:.2f}" + (f" (by CPU time: {cpu:.2f})" if cpu else ""))
    lines += ["", "### Machine and versions", ""]
    for key, value in machine().items():
        lines.append(f"- {key}: {value}")
    seen: set[str] = set()
    for o in outcomes.values():
        if o.versions and o.versions not in seen:
            seen.add(o.versions)
            lines.append(f"- {o.name}: {o.versions}")
    if "cache_bytes" in trace_info:
        lines.append(f"- traceviz cache: {trace_info['cache_bytes'] / 1e6:.1f} MB on disk")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="rounds (best time is reported)")
    parser.add_argument("--only", help=f"comma-separated contenders, from: {','.join(ORDER)}")
    parser.add_argument("--all", action="store_true", help=f"also run {', '.join(EXTRA)}")
    parser.add_argument("--skip", default="", help="comma-separated contenders to leave out")
    parser.add_argument("--trace", type=Path, help="an existing trace file instead of the big one")
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="trace to replicate")
    parser.add_argument("--factor", type=int, default=DEFAULT_FACTOR, help="copies of --source")
    parser.add_argument("--hta-python", default=str(HTA_PYTHON), help="python of HTA's venv")
    parser.add_argument(
        "--hta-pandas2-python", default=str(HTA_PANDAS2_PYTHON), help="HTA venv with pandas 2"
    )
    parser.add_argument(
        "--core-python", default=str(CORE_PYTHON), help="python of traceviz's core install"
    )
    parser.add_argument("--timeout", type=float, default=900, help="seconds per run")
    parser.add_argument("--json", type=Path, help="also write the raw results here")
    args = parser.parse_args(argv)

    default = [n for n in ORDER if args.all or n not in EXTRA]
    names = args.only.split(",") if args.only else default
    unknown = [n for n in names + [s for s in args.skip.split(",") if s] if n not in DESCRIPTIONS]
    if unknown:
        parser.error(f"unknown contender(s) {unknown}; choose from {ORDER}")
    names = [n for n in ORDER if n in names and n not in args.skip.split(",")]

    if args.trace:
        trace_path = args.trace.resolve()
        size = trace_path.stat().st_size
        trace_info: dict[str, Any] = {
            "path": str(trace_path), "events": 0, "bytes": size,
            "source": str(trace_path), "factor": 1,
        }  # fmt: skip
    else:
        if not args.source.is_file():
            print(f"parse.py: no source trace at {args.source}", file=sys.stderr)
            return 2
        info = make_large_trace(args.source, args.factor)
        trace_path = Path(info.path)
        trace_info = {
            "path": info.path, "events": info.events, "bytes": info.bytes,
            "source": info.source, "factor": info.factor, "sha256": info.sha256,
        }  # fmt: skip
        made = "reused" if info.reused else f"written in {info.seconds:.1f} s"
        print(f"# trace {info.path}: {info.events:,} events, {info.bytes / 1e6:.1f} MB ({made})")

    pythons = {n: sys.executable for n in names}
    for n in ("hta", "hta-ijson"):
        pythons[n] = args.hta_python
    pythons["hta-pandas2"] = args.hta_pandas2_python
    pythons["traceviz-core"] = args.core_python
    cache_dir = trace_path.with_name(trace_path.name.split(".")[0] + ".traceviz-cache")
    outcomes = {
        n: Outcome(n, pythons[n], str(cache_dir if n == "traceviz-cache" else trace_path))
        for n in names
    }
    for o in outcomes.values():
        if not Path(o.python).exists():
            o.status, o.error = "unavailable", f"no interpreter at {o.python} (see README)"

    if "traceviz-cache" in outcomes and outcomes["traceviz-cache"].status == "ok":
        print("# writing the traceviz cache (Trace.save) …", flush=True)
        err = prepare_cache(trace_path, cache_dir, args.timeout)
        if err:
            outcomes["traceviz-cache"].status, outcomes["traceviz-cache"].error = "unavailable", err
        else:
            trace_info["cache_bytes"] = _dir_size(cache_dir)

    for round_ in range(args.repeat):
        for o in outcomes.values():
            if o.status != "ok":
                continue
            t0 = time.perf_counter()
            rec = run_child(o.python, o.name, o.target, args.timeout)
            if "error" in rec:
                o.status, o.error = rec["kind"], rec["error"]
                o.versions = rec.get("versions", o.versions)
                print(f"# {o.name}: {o.status}: {o.error}", flush=True)
                continue
            o.seconds.append(rec["seconds"])
            o.cpu_seconds.append(rec["cpu_seconds"])
            o.process_seconds.append(time.perf_counter() - t0)
            o.peak_rss_mib.append(rec["peak_rss_kb"] / 1024)
            o.rss_after_import_mib = rec["rss_after_import_kb"] / 1024
            o.rows, o.detail, o.versions = rec["rows"], rec["detail"], rec["versions"]
            print(
                f"# round {round_ + 1}/{args.repeat} {o.name}: {rec['seconds']:.2f} s, "
                f"peak RSS {rec['peak_rss_kb'] / 1024:.0f} MiB "
                f"(process {time.perf_counter() - t0:.1f} s)",
                flush=True,
            )

    if not trace_info["events"]:
        counts = [o.rows for n, o in outcomes.items() if n.startswith(("orjson", "msgspec"))]
        trace_info["events"] = next((c for c in counts if c), 0)
    text = report(outcomes, trace_info, args.repeat)
    print()
    print(text)
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "trace": trace_info,
                    "machine": machine(),
                    "repeat": args.repeat,
                    "outcomes": [o.__dict__ for o in outcomes.values()],
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
