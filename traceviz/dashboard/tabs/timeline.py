"""The Timeline tab: one step (or the whole trace) of both traces, aligned, and the
Perfetto export.
"""

from __future__ import annotations

from typing import Any

import panel as pn
import param

from traceviz.dashboard.tabs.common import STRETCH, plot
from traceviz.report import figures
from traceviz.report.bundle import Report


class TimelineView(pn.viewable.Viewer):
    """The timeline of one step (or the whole trace) of both traces, aligned."""

    comparison = param.ClassSelector(class_=Report)
    step: Any = param.Selector(default=0, objects=[0], doc="position of the step (-1: all)")
    max_marks = param.Integer(default=figures.MAX_MARKS, bounds=(100, 200_000))

    def __init__(self, comparison: Report, **params: Any) -> None:
        super().__init__(comparison=comparison, **params)
        self._c = comparison
        labels = figures.step_labels(comparison)
        options = {label: i for i, label in enumerate(labels)}
        options["whole trace"] = -1
        self.param.step.objects = list(options.values())
        self.param.step.names = options
        if not labels:
            self.step = -1
        self._pane = plot(self._figure())
        self.param.watch(self._update, ["step", "max_marks"])

    def _figure(self) -> Any:
        step = None if self.step == -1 else self.step
        return figures.timeline_figure(self._c, step=step, max_marks=self.max_marks)

    def _update(self, _: param.parameterized.Event) -> None:
        fig = self._figure()
        self._pane.height = int(fig.layout.height or 380)
        self._pane.object = fig

    def __panel__(self) -> pn.viewable.Viewable:
        select = pn.widgets.Select.from_param(self.param.step, label="window", width=220)
        from traceviz.dashboard.download import perfetto_download

        top = pn.Row(select, perfetto_download(self._c))
        return pn.Column(top, self._pane, sizing_mode=STRETCH, name="timeline")
