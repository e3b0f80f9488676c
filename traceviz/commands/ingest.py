"""Ingest the traces of many ranks into a partitioned Parquet dataset, serially or on Dask.

TRACES is a directory (searched recursively for *.json / *.json.gz), a glob (quote it) or
several files. Each rank's trace is parsed once, in its own task: its tables and per-rank
summaries are written to DIR (--cache; default: traceviz-dataset beside the traces), so
`traceviz summary DIR --ranks` and traceviz.load(DIR, rank=7) read them back fast. Ingest
is incremental (unchanged files are skipped: size, mtime and a hash of the first 64 KiB)
and atomic per rank; a corrupt, unranked or missing rank is reported, not fatal. The
dataset layout is documented in docs/ranks.md. Its Parquet files need pyarrow, the ranks
extra: pip install 'traceviz[ranks]'.

A file's rank is its header's distributedInfo.rank, else --rank-regex on its path.

Where the tasks run, first match wins: --cluster (a Dask scheduler address or a
scheduler file), $TRACEVIZ_CLUSTER, $DASK_SCHEDULER_ADDRESS, --workers (a LocalCluster
on this machine: N processes, one thread each, loopback only), else serially. Dask needs
the extra: pip install 'traceviz[distributed]'. Workers of a remote cluster must see the
trace files and DIR at the same paths.

Exit code: 0 when every rank was ingested, 1 when some failed (listed), 2 on bad input.

examples:
  traceviz ingest traces/                        # serially, into traces/traceviz-dataset
  traceviz ingest 'job42/*.pt.trace.json.gz' --cache job42.ds --workers auto
  traceviz ingest traces/ --workers 8            # a LocalCluster of 8 worker processes
  traceviz ingest traces/ --cluster tcp://10.0.0.5:8786
  traceviz ingest traces/ --cluster ~/scheduler.json   # written by dask scheduler --scheduler-file
  traceviz ingest logs/ --rank-regex 'worker(\\d+)'    # ranks from paths like logs/worker3.json
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import pandas as pd

from traceviz.ranks import dataset as ds
from traceviz.ranks.detect import DEFAULT_RANK_REGEX
from traceviz.ranks.ingestion import ingest

FAILED_SHOWN = 20  # failed ranks listed one per line; the rest counted


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("traces", nargs="+", help="trace files, directories or globs")
    parser.add_argument(
        "--cache",
        metavar="DIR",
        help="the dataset directory to write (the dataset is the ranks' cache: the parse "
        "cache is not used)",
    )
    parser.add_argument(
        "--workers",
        metavar="N|auto",
        help="run on a local Dask cluster of N worker processes (auto: as CPUs and memory allow)",
    )
    parser.add_argument(
        "--cluster",
        metavar="ADDR|FILE",
        help="run on a running Dask scheduler: tcp://host:port or a scheduler file",
    )
    parser.add_argument(
        "--rank-regex",
        metavar="RE",
        help=f"rank from the path when the header has none (default {DEFAULT_RANK_REGEX!r}, "
        "case-insensitive; group 1 is the rank)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress line")


def run(args: argparse.Namespace) -> int:
    show = _Progress(enabled=not args.quiet)
    try:
        result = ingest(
            args.traces,
            args.cache,
            cluster=args.cluster,
            workers=args.workers,
            rank_regex=args.rank_regex,
            max_bytes=None,  # --max-bytes reaches every load through traceviz.settings
            progress=show,
        )
    finally:
        show.close()
    print(
        f"{result.dataset}: {result.ok} ranks ({result.ingested} ingested, "
        f"{result.skipped} unchanged), {result.failed} failed; {result.wall_s:.1f} s, "
        f"{result.where}"
    )
    failed = result.manifest[result.manifest[ds.ManifestColumns.status] == ds.Status.failed]
    for row in failed.head(FAILED_SHOWN).to_dict("records"):
        print(f"  failed: {_label(row)}")
    if len(failed) > FAILED_SHOWN:
        print(f"  ... and {len(failed) - FAILED_SHOWN} more (the manifest: {ds.MANIFEST})")
    return 0 if result.failed == 0 else 1


class _Progress:
    """``ranks 12/64 done, 1 failed`` on stderr: rewritten in place on a terminal, one line
    per tenth of the way (and the last) otherwise."""

    def __init__(self, *, enabled: bool) -> None:
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        self.shown = -1
        self.open = False

    def __call__(self, done: int, failed: int, total: int) -> None:
        if not self.enabled:
            return
        finished = done + failed
        line = f"ranks {done}/{total} done, {failed} failed"
        if self.tty:
            print(f"\r{line}", end="", file=sys.stderr, flush=True)
            self.open = True
            return
        tenth = finished * 10 // max(total, 1)
        if tenth > self.shown or finished == total:
            self.shown = tenth
            print(line, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.open:
            print(file=sys.stderr, flush=True)
            self.open = False


def _label(row: dict[Any, Any]) -> str:
    """``rank 3 /path: error`` (the path once: most errors start with it)."""
    rank, source = row[ds.ManifestColumns.rank], row[ds.ManifestColumns.source]
    error = str(row[ds.ManifestColumns.error])
    where = "" if pd.isna(rank) else f"rank {rank}"
    if isinstance(source, str) and source and not error.startswith(source):
        where = f"{where} {source}".strip()
    return f"{where}: {error}" if where else error
