"""Jupyter widgets: the dashboard's components inline in a notebook (needs the ``dashboard``
extra: panel, plotly).

::

    import traceviz.widgets as tw
    tw.compare("runs/pointwise")                        # the whole dashboard, from a run dir
    tw.compare("eager.json.gz", "compiled.json.gz")     # or two traces (paths or Trace objects)
    tw.compare(comparison)                               # or a Comparison you already made
    tw.view(comparison, "Timeline")                      # one view: Overview, Kernels, ...
    tw.ranks("job42.ds")                                 # a job's ranks (traceviz ingest)
    tw.ranks(traceviz.load_ranks("job42.ds"))            # or Ranks you already loaded
    tw.ranks("eager.ds", "compiled.ds", names=("eager", "compiled"))  # two runs, rank by rank

A report (``traceviz.compare(...)``, a :class:`~traceviz.report.bundle.Report`) displayed by
itself still shows its tables (``_repr_html_``); these functions get their report from
:mod:`traceviz.pipeline` like every front end, and add the figures and the interactive
parts. Nothing here shows a figure by itself: the returned objects display when they are a
cell's value. The JavaScript the widgets need is loaded inline (:func:`extension`), never
from a CDN: they work offline.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import panel as pn

from traceviz.analysis.compare import Comparison
from traceviz.dashboard.app import EXTENSIONS, Dashboard
from traceviz.dashboard.loading import load_path
from traceviz.dashboard.ranks_app import RanksDashboard, ranks_data
from traceviz.dashboard.views import VIEWS, Component
from traceviz.errors import UsageError
from traceviz.pipeline import open_report, report_of
from traceviz.runs.runinfo import RunInfo
from traceviz.trace import Trace

if TYPE_CHECKING:
    from traceviz.ranks.load import Ranks

__all__ = ["VIEW_NAMES", "compare", "extension", "ranks", "view"]

VIEW_NAMES = tuple(VIEWS)
_loaded = False


def extension() -> None:
    """Load Panel's notebook support with the extensions the widgets need (once), their
    JavaScript and CSS inline in the notebook (Bokeh, Panel, plotly.js, Tabulator, FilePond:
    about 17 MB), so the widgets draw offline and in a saved notebook, with no CDN."""
    global _loaded
    if not _loaded:
        pn.extension(*EXTENSIONS, inline=True)
        _loaded = True


def compare(
    a: Comparison | Trace | str | Path | Any,
    b: Trace | str | Path | None = None,
    *,
    names: tuple[str, str] | None = None,
    run_info: RunInfo | dict[str, Any] | None = None,
    compile_log: Any = None,
) -> Dashboard:
    """The dashboard for ``a`` vs ``b`` (traces or paths), a run directory or ``traceviz.Run``
    (``a`` alone), or a ready :class:`Comparison` (``a`` alone). ``compile_log``: b's compile
    log (a TORCH_TRACE directory) for two traces; a run directory uses its own."""
    extension()
    report = open_report(
        a, b, names=names, run_info=run_info, compile_log=compile_log, load=load_path
    )
    return Dashboard(comparison=report)


def view(comparison: Comparison, name: str) -> Component:
    """One view of the dashboard (:data:`VIEW_NAMES`: Overview, Kernels, Timeline, Fusion,
    Launch overhead, Memory, Regions) for ``comparison``."""
    if name not in VIEWS:
        raise UsageError(f"unknown view {name!r}; views are {', '.join(VIEW_NAMES)}")
    extension()
    return VIEWS[name](report_of(comparison))  # a plain comparison gets its findings


def ranks(
    a: Ranks | str | Path,
    b: Ranks | str | Path | None = None,
    *,
    names: Sequence[str] | None = None,
) -> RanksDashboard:
    """The ranks dashboard of a job: ``a`` is a ranks dataset (a path made by ``traceviz
    ingest``) or :class:`~traceviz.ranks.Ranks` (``traceviz.load_ranks(...)``). The Ranks tab
    (per-rank bars, the stragglers outlined, findings, the per-rank table), and Rank trace:
    the summary views of the rank selected there. With ``b``, the two are compared rank by
    rank first (Compare ranks); ``names`` label the sides."""
    extension()
    return RanksDashboard(ranks_data(a, b, names=names))
