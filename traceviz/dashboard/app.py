"""The dashboard: one :class:`Dashboard` viewer, the same in ``traceviz dashboard``,
``panel serve`` and a notebook.

It shows a :class:`~traceviz.report.bundle.Report` (comparison and findings, made by
:mod:`traceviz.pipeline`) in tabs (:data:`views.VIEWS`, those :func:`views.views_for` the
report); a tab is built when it is first opened, so the first chart does not wait for the
others. It loads new traces uploaded in the
page: a bad file gives a message in the page (never a traceback), parsing runs in a worker
thread behind a progress indicator, and parsed traces are
cached (:mod:`traceviz.dashboard.loading`).
"""

from __future__ import annotations

import asyncio
import html
import logging
from functools import partial
from typing import Any

import panel as pn
import param

from traceviz.analysis.compare import Side
from traceviz.dashboard.loading import DEFAULT_MAX_UPLOAD_MB, load_upload, upload_label
from traceviz.dashboard.tabs.common import LazyTabs, failed_tab, tab_slots
from traceviz.dashboard.views import STRETCH, VIEWS, Component, html_pane, views_for
from traceviz.errors import TraceVizError
from traceviz.pipeline import Report, compare
from traceviz.trace import Trace
from traceviz.units import fmt_bytes

#: Panel extensions the dashboard needs (``pn.extension(*EXTENSIONS)``).
EXTENSIONS = ("plotly", "tabulator", "filedropper")
SIDES = ("a", "b")
RESET_DELAY_MS = 2000  # after a failed upload, until its drop zone is replaced
log = logging.getLogger(__name__)


def build_view(comparison: Report, title: str) -> Component:
    """One tab's component; a builder that fails gives a message in the tab, not a traceback."""
    try:
        return VIEWS[title](comparison)
    except TraceVizError as err:
        return failed_tab(title, err)


class Dashboard(LazyTabs, pn.viewable.Viewer):
    """Eager vs compiled (or any two traces), in tabs; upload traces to replace either side."""

    comparison = param.ClassSelector(
        class_=Report,
        default=None,
        allow_None=True,
        doc="""
        What is shown; None until two traces are loaded.""",
    )
    names = param.Tuple(default=("eager", "compiled"), length=2, doc="labels for uploads")
    max_upload_mb = param.Integer(default=DEFAULT_MAX_UPLOAD_MB, bounds=(1, None))
    busy = param.Boolean(default=False, doc="parsing or comparing right now")
    error = param.String(default="", doc="the last problem, shown in the page")

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._pending: dict[str, Trace | Side] = {}
        self._pending_names: dict[str, str] = {}
        self._seen: dict[str, tuple[str, int]] = {}
        self._uploads = {side: self._dropper(side) for side in SIDES}
        self._upload_names = {side: pn.pane.HTML("") for side in SIDES}
        self._upload_slots = {
            side: pn.Column(self._upload_names[side], self._uploads[side]) for side in SIDES
        }
        self._alert = pn.pane.Alert(
            self.error,
            alert_type="danger",
            visible=bool(self.error),
            sizing_mode=STRETCH,
            name="error",
        )
        self._spinner = pn.indicators.LoadingSpinner(value=True, size=22, visible=False)
        self._status = pn.pane.HTML("", name="status")
        self._tabs = pn.Tabs(dynamic=True, sizing_mode=STRETCH)
        self._slots = {}
        self._tabs.param.watch(self._on_tab, "active")
        self._show(self.comparison)
        self._layout = pn.Column(
            pn.Row(
                pn.pane.HTML("<h2 style='margin:4px 0'>traceviz</h2>"),
                self._spinner,
                self._status,
                sizing_mode=STRETCH,
            ),
            self._alert,
            pn.Card(
                self._upload_row(),
                title="Load traces (.json / .json.gz)",
                collapsed=self.comparison is not None,
                sizing_mode=STRETCH,
            ),
            self._tabs,
            sizing_mode=STRETCH,
        )

    def __panel__(self) -> pn.viewable.Viewable:
        return self._layout

    # --- showing -------------------------------------------------------------------------

    def _dropper(self, side: str) -> pn.widgets.FileDropper:
        widget = pn.widgets.FileDropper(
            accepted_filetypes=[".json", ".gz", "application/json", "application/gzip"],
            max_file_size=f"{self.max_upload_mb}MB",
            multiple=False,
            width=320,
        )
        widget.param.watch(partial(self._on_upload, side), "value")
        return widget

    def _reset_upload(self, side: str) -> None:
        """A fresh, empty drop zone for ``side`` (the browser's tile of a file that could not
        be loaded must not stay green with "Upload complete"); the file is forgotten. In a
        served page the zone is swapped :data:`RESET_DELAY_MS` later: FilePond is still
        finishing the upload in the browser when a bad file is already rejected, and a zone
        removed under it raises a script error there."""
        self._seen.pop(side, None)
        self._pending.pop(side, None)
        self._pending_names.pop(side, None)
        self._refresh_labels()
        old = self._uploads[side]

        def swap() -> None:
            if self._uploads[side] is old:  # no newer upload replaced it meanwhile
                self._uploads[side] = self._dropper(side)
                self._upload_slots[side][1] = self._uploads[side]

        doc = pn.state.curdoc
        if doc is None or doc.session_context is None:
            swap()
        else:
            doc.add_timeout_callback(swap, RESET_DELAY_MS)

    def _upload_row(self) -> pn.viewable.Viewable:
        self._refresh_labels()
        limit = f"up to {self.max_upload_mb} MB each"
        return pn.Row(
            self._upload_slots["a"],
            self._upload_slots["b"],
            html_pane(
                f"<p class='tv-tag'>Upload either side to replace it ({limit}); "
                "parsed traces are cached.</p>"
            ),
        )

    def _refresh_labels(self) -> None:
        for side, label in zip(SIDES, self._labels(), strict=True):
            self._upload_names[side].object = f"<b>{side.upper()}</b> ({html.escape(label)})"

    def _labels(self) -> tuple[str, str]:
        """The sides' labels: an uploaded trace's own (its file name), else the ones shown."""
        shown = self.comparison.names if self.comparison is not None else self.names
        a, b = (
            self._pending_names.get(side, name) for side, name in zip(SIDES, shown, strict=True)
        )
        return a, b

    def _show(self, comparison: Report | None, built: dict[str, Component] | None = None) -> None:
        """Show ``comparison``'s tabs: each an empty slot until first opened, except the active
        one (built now, or taken from ``built``)."""
        if comparison is None:
            self._slots = {}
            self._tabs[:] = [
                (
                    "Start",
                    html_pane(
                        "<p>Upload two traces above — <b>A</b> (e.g. eager) and <b>B</b> "
                        "(e.g. compiled) — or start with <code>traceviz dashboard RUN_DIR</code> / "
                        "<code>traceviz dashboard A.json.gz B.json.gz</code>.</p>"
                    ),
                )
            ]
            return
        titles = views_for(comparison)
        active = min(self._tabs.active, len(titles) - 1)
        self.comparison = comparison
        self._slots = tab_slots(titles)
        for title, component in (built or {}).items():
            if title in self._slots:
                self._slots[title][:] = [component]
        self._fill(titles[active])
        self._showing = True  # replacing the tabs may move `active` on the way: build nothing
        try:
            self._tabs[:] = list(self._slots.items())
            self._tabs.active = active
        finally:
            self._showing = False

    def _build(self, title: str) -> Component:
        assert self.comparison is not None  # no slots without one
        return build_view(self.comparison, title)

    def _set_error(self, message: str) -> None:
        self.error = message
        self._alert.object = message
        self._alert.visible = bool(message)

    def _set_busy(self, busy: bool, message: str = "") -> None:
        self.busy = busy
        self._spinner.visible = busy
        self._status.object = message
        self._tabs.loading = busy

    # --- loading -------------------------------------------------------------------------

    async def _on_upload(self, side: str, event: param.parameterized.Event) -> None:
        files = event.new or {}
        if not files:
            return
        filename, data = list(files.items())[-1]
        if self._seen.get(side) == (filename, len(data)):
            return
        self._seen[side] = (filename, len(data))
        await self.load_upload(side, filename, data)

    async def load_upload(self, side: str, filename: str, data: bytes | str) -> None:
        """Parse an uploaded trace for ``side`` ("a" or "b") and compare it with the other
        side; problems end up in :attr:`error`, shown in the page."""
        self._set_error("")
        self._set_busy(True, f"Parsing {filename} ({fmt_bytes(len(data))})…")
        try:
            trace = await asyncio.to_thread(
                load_upload, filename, data, max_bytes=self.max_upload_mb * 2**20
            )
            other = "b" if side == "a" else "a"
            self._pending[side] = trace
            labels = dict(zip(SIDES, self._labels(), strict=True))
            self._pending_names[side] = upload_label(filename, labels[other])
            self._refresh_labels()
            other_side = self._pending.get(other)
            if other_side is None and self.comparison is not None:
                other_side = self.comparison.side(other)
            if other_side is None:
                self._set_busy(False, f"Loaded {filename}; now upload the {other.upper()} trace.")
                return
            self._set_busy(True, f"Comparing with {filename}…")
            pair = (trace, other_side) if side == "a" else (other_side, trace)
            comparison, built = await asyncio.to_thread(self._compare_and_build, *pair)
            self._show(comparison, built)
            self._pending.clear()
            self._pending_names.clear()
            self._refresh_labels()
            self._set_busy(False, f"Loaded {filename}.")
        except TraceVizError as err:
            self._set_busy(False)
            self._reset_upload(side)
            text = str(err)
            self._set_error(
                "Could not load " + (text if text.startswith(filename) else f"{filename}: {text}")
            )
        except Exception as err:  # never a traceback in the page; the server log has it
            log.exception("traceviz dashboard: loading %s failed", filename)
            self._set_busy(False)
            self._reset_upload(side)
            self._set_error(f"Could not analyse {filename}: {type(err).__name__}: {err}")

    def _compare_and_build(
        self, a: Trace | Side, b: Trace | Side
    ) -> tuple[Report, dict[str, Component]]:
        """The new report and its active tab, built off the event loop."""
        report = compare(a, b, names=self._labels())
        titles = views_for(report)
        title = titles[min(self._tabs.active, len(titles) - 1)]
        return report, {title: build_view(report, title)}
