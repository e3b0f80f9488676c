"""The dashboard under Panel's own server::

    panel serve traceviz/dashboard/panel_app.py --args runs/pointwise
    panel serve traceviz/dashboard/panel_app.py --args eager.json.gz compiled.json.gz
    TRACEVIZ_RUN=runs/pointwise panel serve traceviz/dashboard/panel_app.py
    TRACEVIZ_A=eager.json.gz TRACEVIZ_B=compiled.json.gz panel serve traceviz/dashboard/panel_app.py
    panel serve traceviz/dashboard/panel_app.py --args job42.ds      # a ranks dataset (or two)

With no arguments the page starts empty and traces are uploaded in it. A path that cannot be
read gives a message in the page, not a traceback.
"""

from __future__ import annotations

import os
import sys

import panel as pn

from traceviz.dashboard.app import EXTENSIONS, Dashboard
from traceviz.dashboard.loading import comparison_from_args
from traceviz.dashboard.ranks_app import RanksDashboard, ranks_args, ranks_data
from traceviz.errors import TraceVizError


def startup_paths(argv: list[str], environ: dict[str, str]) -> list[str]:
    """Trace paths from ``--args`` (argv), else TRACEVIZ_RUN, else TRACEVIZ_A and TRACEVIZ_B."""
    if argv:
        return list(argv)
    if environ.get("TRACEVIZ_RUN"):
        return [environ["TRACEVIZ_RUN"]]
    return [environ[k] for k in ("TRACEVIZ_A", "TRACEVIZ_B") if environ.get(k)]


def app(argv: list[str] | None = None) -> Dashboard | RanksDashboard:
    """A Dashboard for this session (a RanksDashboard for ranks datasets); the comparison is
    parsed once per server (cached)."""
    pn.extension(*EXTENSIONS)
    paths = startup_paths(sys.argv[1:] if argv is None else argv, dict(os.environ))
    try:
        if ranks_args(paths):
            data = pn.state.as_cached(
                "traceviz-ranks:" + "|".join(paths), lambda: ranks_data(*paths)
            )
            return RanksDashboard(data)
        comparison = pn.state.as_cached(
            "traceviz-startup:" + "|".join(paths), lambda: comparison_from_args(paths)
        )
    except TraceVizError as err:
        return Dashboard(error=f"Could not load {' '.join(paths)}: {err}")
    return Dashboard(comparison=comparison)


if __name__.startswith("bokeh_app"):
    app().servable(title="traceviz")
