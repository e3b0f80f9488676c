"""The timeline's download of both traces as one annotated Perfetto trace
(:mod:`traceviz.report.perfetto`, the file `traceviz export --perfetto` writes)."""

from __future__ import annotations

import io
from pathlib import Path

import panel as pn

from traceviz.errors import TraceVizError
from traceviz.report.bundle import Report

LABEL = "Download for Perfetto (.json.gz)"


def perfetto_download(comparison: Report) -> pn.viewable.Viewable:
    """A button that builds the annotated trace when pressed; when an original trace file is
    gone (an uploaded trace is not kept), a disabled button and a line saying why."""
    sources = [Path(s.trace.meta.source) for s in (comparison.a, comparison.b)]
    missing = [str(p) for p in sources if not p.is_file()]
    names = "-vs-".join(comparison.names).replace("/", "_").replace(" ", "_")
    button = pn.widgets.FileDownload(
        callback=lambda: _build(comparison),
        filename=f"{names}.perfetto.json.gz",
        label=LABEL,
        embed=False,
        disabled=bool(missing),
        button_type="default",
        width=280,
    )
    if not missing:
        return button
    why = (
        "an uploaded trace is not kept on the server, or its file is gone ("
        + ", ".join(missing)
        + "): run `traceviz export --perfetto` on the files"
    )
    return pn.Row(button, pn.pane.Markdown(why))


def _build(comparison: Report) -> io.BytesIO:
    from traceviz.report.perfetto import perfetto_gzip, perfetto_trace

    try:
        return io.BytesIO(perfetto_gzip(perfetto_trace(comparison)))
    except TraceVizError as err:  # the file went away after the view was built
        raise RuntimeError(f"cannot export: {err}") from err
