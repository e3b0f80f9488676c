"""Ranks ingest benchmark: 64 ranks made from one corpus trace, ingested serially and on a
LocalCluster of 2 workers (``traceviz ingest --workers 2``).

Builds (once) 64 rank files under ``benchmarks/data/ranks64/`` from
``../shared/corpus/nvidia/a100_eager_nccl_rank.json.gz`` (A100, NCCL all-reduces, 40,573
events, 9.8 MB of JSON; :func:`traceviz.ranks.synth.make_ranks`: each rank its own
distributedInfo and clock offset, rank 5 a planted straggler, gzip level 1). Then each mode
runs in its own fresh process (``--child``), round-robin, ``--repeat`` rounds, each into an
empty dataset directory. Measured per run:

- wall seconds of ``ingest(...)`` (imports and interpreter start excluded; LocalCluster start
  and close included, since a user pays them);
- CPU seconds of the process and the descendants it reaped (``os.wait4``: LocalCluster
  workers included), to show Dask's own cost apart from a busy machine's;
- peak RSS of the process that called ``ingest`` (its own ``ru_maxrss``) and of every worker
  process (the manifest's ``worker_peak_rss_bytes``: each worker's ``ru_maxrss`` after its
  last rank; serially the calling process is the worker);
- dataset bytes (every file of the dataset) against the input's gzip and JSON bytes.

    .venv/bin/python benchmarks/ranks_ingest.py [--ranks 64] [--repeat 2] [--json F]

Prints a Markdown table, the ratios, and the machine; exits 0 whatever the numbers.
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
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CORPUS = Path(os.environ.get("TRACEVIZ_CORPUS") or ROOT.parent / "shared" / "corpus")
DEFAULT_BASE = CORPUS / "nvidia" / "a100_eager_nccl_rank.json.gz"
DATA = HERE / "data"
MODES = {"serial": None, "workers-2": 2}
SEED = 64
STRAGGLER = 5


def make_input(base: Path, ranks: int) -> Path:
    """The rank files (made once; remade when the base, count or seed changed)."""
    from traceviz.ranks.synth import make_ranks

    out = DATA / f"ranks{ranks}"
    stamp = DATA / f"ranks{ranks}.made"  # beside the rank files: a .json inside would be read
    want = {"base": str(base), "size": base.stat().st_size, "ranks": ranks, "seed": SEED}
    if stamp.is_file() and json.loads(stamp.read_text()) == want:
        return out
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    make_ranks(base, out, ranks, straggler=STRAGGLER, seed=SEED, hosts=max(1, ranks // 8))
    stamp.write_text(json.dumps(want))
    print(f"made {ranks} ranks from {base.name} in {time.perf_counter() - started:.1f} s")
    return out


def child(job: Path, dataset: Path, workers: int | None, result: Path) -> None:
    """One measured ingest, in this fresh process; writes its facts as JSON to ``result``."""
    import resource

    from traceviz.ranks import dataset as ds
    from traceviz.ranks.ingestion import ingest

    imported = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    started = time.perf_counter()
    done = ingest(job, dataset, workers=workers)
    wall = time.perf_counter() - started
    manifest = done.manifest
    per_worker = manifest.groupby(ds.ManifestColumns.worker)[
        ds.ManifestColumns.worker_peak_rss_bytes
    ].max()
    facts = {
        "wall_s": wall,
        "ok": done.ok,
        "failed": done.failed,
        "where": done.where,
        "rss_after_imports": imported,
        "client_peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "worker_peak_rss": {str(k): int(v) for k, v in per_worker.items()},
        "ranks_per_worker": {
            str(k): int(v) for k, v in manifest[ds.ManifestColumns.worker].value_counts().items()
        },
        "parse_s_sum": float(manifest[ds.ManifestColumns.parse_s].sum()),
        "write_s_sum": float(manifest[ds.ManifestColumns.write_s].sum()),
        "events": int(manifest[ds.ManifestColumns.events].sum()),
        "dataset_bytes": ds.dataset_bytes(dataset),
    }
    result.write_text(json.dumps(facts))


def run_child(job: Path, workers: int | None, scratch: Path, tag: str) -> dict[str, Any]:
    dataset = scratch / f"ds-{tag}"
    result = scratch / f"{tag}.json"
    cmd = [sys.executable, __file__, "--child", str(job), str(dataset), str(workers or 0),
           str(result)]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{tag} failed (exit {os.waitstatus_to_exitcode(status)})")
    facts = json.loads(result.read_text())
    # wait4's usage covers the process and the descendants it reaped (LocalCluster workers):
    # CPU seconds summed over them, peak RSS the largest single one of them.
    facts["peak_rss"] = usage.ru_maxrss * 1024
    facts["cpu_s"] = usage.ru_utime + usage.ru_stime
    shutil.rmtree(dataset, ignore_errors=True)
    return facts


def mib(n: float) -> str:
    return f"{n / 2**20:,.0f}"


def report(job: Path, runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    files = sorted(p for p in job.iterdir() if p.name.endswith(".json.gz"))
    gz = sum(p.stat().st_size for p in files)
    from traceviz.ranks.detect import json_size

    json_bytes = sum(json_size(p) for p in files)
    print(f"\ninput: {len(files)} ranks, {gz / 1e6:,.1f} MB gzip, {json_bytes / 1e6:,.1f} MB JSON")
    print("\n| mode | where | best s | all runs s | CPU s (all processes) "
          "| calling process peak RSS MiB | worker peak RSS MiB (max of workers) "
          "| ranks per worker | dataset MB | Σ parse s | Σ reduce+write s |")  # fmt: skip
    print("|---|---|---:|---|---:|---:|---:|---|---:|---:|---:|")
    best: dict[str, dict[str, Any]] = {}
    for mode, results in runs.items():
        top = min(results, key=lambda r: r["wall_s"])
        best[mode] = top
        workers = max(max(r["worker_peak_rss"].values()) for r in results)
        per = sorted(top["ranks_per_worker"].values(), reverse=True)
        walls = ", ".join(f"{r['wall_s']:.1f}" for r in results)
        print(
            f"| {mode} | {top['where']} | {top['wall_s']:.1f} | "
            f"{walls} | {top['cpu_s']:.1f} | "
            f"{mib(max(r['client_peak_rss'] for r in results))} | {mib(workers)} | "
            f"{'/'.join(map(str, per))} | {top['dataset_bytes'] / 1e6:,.1f} | "
            f"{top['parse_s_sum']:.1f} | {top['write_s_sum']:.1f} |"
        )
    serial, local = best["serial"], best["workers-2"]
    ratios = {
        "serial_s_over_workers2_s": serial["wall_s"] / local["wall_s"],
        "workers2_cpu_over_serial_cpu": local["cpu_s"] / serial["cpu_s"],
        "dataset_over_gzip": serial["dataset_bytes"] / gz,
        "dataset_over_json": serial["dataset_bytes"] / json_bytes,
        "worker_peak_over_serial_peak": max(local["worker_peak_rss"].values())
        / serial["client_peak_rss"],
    }
    print("\nratios:")
    print(f"- serial time / --workers 2 time = **{ratios['serial_s_over_workers2_s']:.2f}**")
    print(f"- --workers 2 CPU s / serial CPU s = {ratios['workers2_cpu_over_serial_cpu']:.2f}")
    print(f"- dataset bytes / input gzip bytes = {ratios['dataset_over_gzip']:.2f}; "
          f"/ input JSON bytes = {ratios['dataset_over_json']:.3f}")  # fmt: skip
    print(f"- largest worker peak RSS / serial process peak RSS = "
          f"{ratios['worker_peak_over_serial_peak']:.2f}")  # fmt: skip
    return {"input": {"ranks": len(files), "gzip": gz, "json": json_bytes}, "runs": runs,
            "ratios": ratios}  # fmt: skip


def machine() -> str:
    import dask
    import pandas
    import pyarrow

    load = os.getloadavg() if hasattr(os, "getloadavg") else ("?",)
    return (
        f"{platform.node()}: {os.cpu_count()} CPUs, {platform.platform()}, Python "
        f"{platform.python_version()}, pandas {pandas.__version__}, pyarrow "
        f"{pyarrow.__version__}, dask/distributed {dask.__version__}; load average "
        f"{', '.join(f'{x:.2f}' for x in load)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, default=DEFAULT_BASE, help="the trace to copy")
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--json", type=Path, help="write the measurements here too")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        job, dataset, workers, result = args.child
        child(Path(job), Path(dataset), int(workers) or None, Path(result))
        return
    if not args.base.is_file():
        raise SystemExit(f"base trace {args.base} not found (set TRACEVIZ_CORPUS)")
    job = make_input(args.base, args.ranks)
    print(f"machine: {machine()}")
    runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory(prefix="ranks-bench-", dir=DATA) as scratch:
        for round_ in range(args.repeat):
            for mode, workers in MODES.items():
                facts = run_child(job, workers, Path(scratch), f"{mode}-{round_}")
                print(f"round {round_ + 1} {mode}: {facts['wall_s']:.1f} s, "
                      f"{facts['ok']} ok, {facts['failed']} failed")  # fmt: skip
                runs[mode].append(facts)
    out = report(job, runs)
    out["machine"] = machine()
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
