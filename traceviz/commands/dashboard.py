"""Open a run directory, two traces or a ranks dataset in a web dashboard (Panel).

Overview and findings, kernels (both traces side by side), timeline, fusion, launch overhead,
memory and compiled regions, with traces uploadable in the page. Each tab is built when first
opened; every table downloads as CSV.

RUN_DIR is a run directory made by `traceviz run`; A and B are two trace files (.json /
.json.gz). With neither, the page starts empty and both traces are uploaded in it. The traces
are read and analysed once Panel has started.

DATASET is a ranks dataset made by `traceviz ingest` (one trace per rank of a job): the Ranks
tab comes first (per-rank bars of compute, collective transfer and waiting per step, the
stragglers outlined, findings, the per-rank table), and the Rank trace tab shows the summary
views of the rank selected there (read from the dataset when shown). Two datasets (e.g. the
eager and the compiled run of one job) open on Compare ranks: per-rank kernels, median steps
and speedup, ranks compiled differently, then each side's Ranks tab (a dataset needs the
ranks extra too: pip install 'traceviz[ranks]'). Serves on
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
import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import traceviz
from traceviz.commands.collector import collector_off
from traceviz.gc_pause import collector_paused

if TYPE_CHECKING:
    from traceviz.pipeline import Report

#: What ``pip install 'traceviz[dashboard]'`` brings: looked for before any work starts.
EXTRA = ("panel", "plotly")


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
    """Check the arguments; import Panel and warm it up, then read and analyse the traces (a
    run directory, A B, or ranks datasets); then serve. Panel first: a missing or broken Panel
    is said before any trace is read. (Not on a worker thread beside Panel's import: both hold
    the GIL.)"""
    if len(args.paths) > 2:
        raise traceviz.UsageError(
            "give a run directory, two trace files (A B), or one or two ranks datasets"
        )
    if not 0 < args.port < 65536:
        raise traceviz.UsageError(f"--port must be 1–65535, not {args.port}")
    if args.max_upload_mb < 1:
        raise traceviz.UsageError("--max-upload-mb must be 1 or more")
    check_extra()
    comparison_from_args = prepare_load()
    from traceviz.ranks.dataset import is_dataset  # light once the loader is imported

    if args.paths:
        print(f"traceviz dashboard: parsing {' '.join(args.paths)} …", file=sys.stderr, flush=True)
    names = tuple(args.names) if args.names else None
    serving: dict[str, Any] = {"port": args.port, "host": args.host, "show": args.show}
    if any(is_dataset(Path(path).expanduser()) for path in args.paths):
        # ranks datasets, read after Panel is imported; without pyarrow, the ranks extra's
        # UsageError before Panel's import
        from traceviz.ranks.dataset import require_pyarrow

        require_pyarrow()
        prepare_panel()
        from traceviz.dashboard.ranks_app import RanksDashboard, ranks_args, ranks_data
        from traceviz.dashboard.serve import serve

        ranks_args(args.paths)  # a mix of datasets and trace files: UsageError
        data = ranks_data(*args.paths, names=names)
        return serve(None, app=lambda: RanksDashboard(data), warm=False, **serving)
    prepare_panel()
    comparison = comparison_from_args(args.paths, names=names) if args.paths else None
    from traceviz.dashboard.serve import serve

    return serve(comparison, max_upload_mb=args.max_upload_mb, warm=False, **serving)


def prepare_load() -> Callable[..., Report | None]:
    """:func:`~traceviz.dashboard.loading.comparison_from_args`, imported (pandas, the
    pipeline; no Panel) with the collector off (:mod:`traceviz.commands.collector`)."""
    with collector_off():  # made before the collector's freeze
        from traceviz.dashboard.loading import comparison_from_args
    return comparison_from_args


def check_extra() -> None:
    """:class:`~traceviz.UsageError` naming the dashboard extra when a package of it is not
    installed (found without importing it, before any trace is read)."""
    for name in EXTRA:
        if importlib.util.find_spec(name) is None:
            raise _extra_missing(name)


def _extra_missing(name: str | None) -> traceviz.UsageError:
    return traceviz.UsageError(
        f"the dashboard needs panel and plotly ({name} is missing): "
        "pip install 'traceviz[dashboard]'"
    )


def prepare_panel() -> None:
    """Import the dashboard's Panel modules and warm Panel up
    (:func:`traceviz.dashboard.serve.prepare`), the collector paused (:mod:`traceviz.gc_pause`:
    what the imports make lives as long as the server)."""
    with collector_paused():
        try:
            from traceviz.dashboard.serve import prepare
        except ImportError as err:
            raise _extra_missing(err.name) from err
        prepare()
