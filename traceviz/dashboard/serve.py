"""Serve the dashboard on one host and port (what ``traceviz dashboard`` runs)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TextIO

import panel as pn

from traceviz.dashboard.app import EXTENSIONS, Dashboard
from traceviz.dashboard.loading import DEFAULT_MAX_UPLOAD_MB
from traceviz.errors import UsageError
from traceviz.report.bundle import Report

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def websocket_origins(host: str, port: int) -> list[str]:
    """The origins whose pages may open the app's websocket: the served host and port (and
    its loopback aliases); every host only when serving on all interfaces."""
    if host in ("0.0.0.0", "::", ""):
        return ["*"]
    if host in LOOPBACK:
        return [f"{name}:{port}" for name in ("127.0.0.1", "localhost")]
    return [f"{host}:{port}"]


def warm_up() -> None:
    """Make the Bokeh models of each kind of component once, so that the first browser session
    does not pay Panel's and Bokeh's one-time set-up (seconds) on top of its own."""
    import pandas as pd
    import plotly.graph_objects as go

    parts = [
        pn.pane.HTML("<p></p>"),
        pn.pane.Plotly(go.Figure()),
        pn.widgets.Tabulator(pd.DataFrame({"a": [1]})),
    ]
    pn.Column(*parts).get_root()


def prepare() -> None:
    """What serving needs once per process, before the first session: Panel's extensions
    (:data:`EXTENSIONS`) and its one-time set-up (:func:`warm_up`). ``traceviz dashboard``
    runs it while the traces load (:mod:`traceviz.commands.dashboard`), then
    ``serve(..., warm=False)``."""
    pn.extension(*EXTENSIONS)
    warm_up()


def serve(
    comparison: Report | None,
    *,
    port: int = 5006,
    host: str = "127.0.0.1",
    show: bool = True,
    max_upload_mb: int = DEFAULT_MAX_UPLOAD_MB,
    out: TextIO = sys.stderr,
    app: Callable[[], pn.viewable.Viewer] | None = None,
    warm: bool = True,
) -> int:
    """Serve a :class:`Dashboard` per browser session until Ctrl-C; returns 0.

    ``comparison`` is shared read-only by every session (None: start empty, upload in the page).
    ``app``, when given, makes each session's page instead (the ranks dashboard). ``warm``:
    run :func:`prepare` first (False: the caller has run it already).
    """
    if warm:
        prepare()

    session = app or (lambda: Dashboard(comparison=comparison, max_upload_mb=max_upload_mb))

    # Uploads arrive in chunks (FileDropper, 10 MB each): allow messages a little larger.
    try:
        server = pn.serve(
            {"/": session},
            port=port,
            address=host,
            websocket_origin=websocket_origins(host, port),
            show=False,
            start=False,
            title="traceviz",
            verbose=False,
            websocket_max_message_size=64 * 2**20,
        )
    except OSError as err:  # port taken, address not on this machine, ...
        raise UsageError(f"cannot serve on {host}:{port}: {err.strerror or err}") from err
    url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::', '') else host}:{port}/"
    print(f"traceviz dashboard: serving on {url} (Ctrl-C stops it)", file=out, flush=True)
    server.start()
    if show:
        server.io_loop.add_callback(server.show, "/")
    try:
        server.io_loop.start()
    except KeyboardInterrupt:
        print("traceviz dashboard: stopped", file=out, flush=True)
    finally:
        server.stop()
    return 0
