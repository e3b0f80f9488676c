"""Open a run directory, two traces or a ranks dataset in a web dashboard (Panel).

Overview and findings, kernels (both traces side by side), timeline, fusion, launch overhead,
memory and compiled regions, with traces uploadable in the page. Each tab is built when first
opened; every table downloads as CSV.

RUN_DIR is a run directory made by `traceviz run`; A and B are two trace files (.json /
.json.gz). With neither, the page starts empty and both traces are uploaded in it.

DATASET is a ranks dataset made by `traceviz ingest` (one trace per rank of a job): the Ranks
tab comes first (per-rank bars of compute, collective transfer and waiting per step, the
stragglers outlined, findings, the per-rank table), and the Rank trace tab shows the summary
views of the rank selected there (read from the dataset when shown). Two datasets (e.g. the
eager and the compiled run of one job) open on Compare ranks: per-rank kernels, median steps
and speedup, ranks compiled differently, then each side's Ranks tab. Serves on
the loopback interface by default; Ctrl-C stops it. Needs the dashboard extra:
pip install 'traceviz[dashboard]'. The same app runs under Panel's own server:
panel serve traceviz/dashboard/panel_app.py --args RUN_DIR

examples:
  traceviz dashboard runs/pointwise
  traceviz dashboard eager.json.gz compiled.json.gz --names eager compiled
  traceviz dashboard job42.ds                          # a job's ranks (traceviz ingest)
  traceviz dashboard eager.ds compiled.ds --names eager compiled   # two runs, rank by rank
  traceviz dashboard --port 8080 --no-show
  traceviz dashboard runs/mlp --host 0.0.0.0 --port 5006   # reachable from other machines
"""

from __future__ import annotations

import argparse
import sys

import traceviz


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="RUN_DIR | A B | DATASET [DATASET_B]",
        help="run directory, two traces, or one or two ranks datasets (traceviz ingest)",
    )
    parser.add_argument("--port", type=int, default=5006, help="port to serve on (5006)")
    parser.add_argument("--host", default="127.0.0.1", help="interface to serve on (127.0.0.1)")
    parser.add_argument(
        "--show",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="open a browser tab (--show)",
    )
    parser.add_argument("--names", nargs=2, metavar=("A_NAME", "B_NAME"), help="labels")
    parser.add_argument(
        "--max-upload-mb",
        type=int,
        default=512,
        metavar="MB",
        help="largest trace accepted by upload in the page (512)",
    )


def run(args: argparse.Namespace) -> int:
    if len(args.paths) > 2:
        raise traceviz.UsageError(
            "give a run directory, two trace files (A B), or one or two ranks datasets"
        )
    if not 0 < args.port < 65536:
        raise traceviz.UsageError(f"--port must be 1–65535, not {args.port}")
    if args.max_upload_mb < 1:
        raise traceviz.UsageError("--max-upload-mb must be 1 or more")
    try:
        from traceviz.dashboard.loading import comparison_from_args
        from traceviz.dashboard.ranks_app import RanksDashboard, ranks_args, ranks_data
        from traceviz.dashboard.serve import serve
    except ImportError as err:
        raise traceviz.UsageError(
            f"the dashboard needs panel and plotly ({err.name} is missing): "
            "pip install 'traceviz[dashboard]'"
        ) from err
    if args.paths:
        print(f"traceviz dashboard: parsing {' '.join(args.paths)} …", file=sys.stderr, flush=True)
    names = tuple(args.names) if args.names else None
    if ranks_args(args.paths):
        data = ranks_data(*args.paths, names=names)
        return serve(
            None, port=args.port, host=args.host, show=args.show, app=lambda: RanksDashboard(data)
        )
    comparison = comparison_from_args(args.paths, names=names)
    return serve(
        comparison, port=args.port, host=args.host, show=args.show, max_upload_mb=args.max_upload_mb
    )
