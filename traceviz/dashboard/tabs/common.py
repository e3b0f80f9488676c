"""What every dashboard tab shares: sizing, the stylesheet, figure and HTML panes, tables
with a CSV download; and the two tabs that are figures above a metrics table (Launch overhead,
Memory)."""

from __future__ import annotations

import html
import io
import re
from collections.abc import Callable, Iterable
from typing import Any

import pandas as pd
import panel as pn
from bokeh.models.widgets.tables import NumberFormatter

from traceviz.analysis.compare import Comparison, Metric
from traceviz.errors import TraceVizError
from traceviz.report import figures
from traceviz.report.snippet import view_html
from traceviz.report.views import View, metrics_view

STRETCH = "stretch_width"


_CSS = """
.tv-cards { display: flex; flex-wrap: wrap; gap: 10px; }
.tv-card { border: 1px solid #ddd; border-radius: 6px; padding: 8px 12px; min-width: 150px; }
.tv-card .v { font-size: 1.15em; font-weight: 600; } .tv-card .d { color: #555; font-size: .85em; }
.tv-tag { font-size: .75em; color: #777; } table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 2px 8px; text-align: left; } th { background: #f5f5f5; }
.finding { margin: 6px 0; padding: 4px 10px; border-left: 4px solid #888; }
.sev-error { border-color: #d62728; } .sev-warning { border-color: #ff7f0e; }
.sev-info { border-color: #1f77b4; }
.tv-seg { display: flex; height: 10px; margin: 3px 0 1px; border-radius: 2px; overflow: hidden; }
.tv-seg .est { background: #4C78A8; } .tv-seg .unk { background: repeating-linear-gradient(
  45deg, #bbb, #bbb 3px, #e4e4e4 3px, #e4e4e4 6px); }
.tv-partial { color: #b35900; font-weight: 600; }
td { max-width: 30em; overflow-wrap: anywhere; }
"""

#: Widest a name column of a Tabulator gets (px): longer names end in an ellipsis, the full
#: name shows on hover and when the row is selected.
NAME_WIDTH = 300


def plot(fig: Any) -> pn.pane.Plotly:
    """A figure from :mod:`traceviz.report.figures` as a Panel pane."""
    height = int(fig.layout.height or 380)
    return pn.pane.Plotly(
        fig, sizing_mode=STRETCH, height=height, config={"displaylogo": False, "responsive": True}
    )


def html_pane(text: str, *css: str) -> pn.pane.HTML:
    """``text`` in an HTML pane styled by the common stylesheet and ``css``."""
    return pn.pane.HTML(text, sizing_mode=STRETCH, stylesheets=[_CSS, *css])


def tab_class(title: str) -> str:
    """The CSS class of a tab's content (``"Ranks: fast"`` → ``tv-tab-ranks-fast``), for pages
    and tests to find a tab's content once it is built."""
    return "tv-tab-" + "-".join(title.lower().replace(":", "").split())


def tab_slots(titles: Iterable[str]) -> dict[str, pn.Column]:
    """An empty slot per tab title, each carrying its :func:`tab_class`."""
    return {t: pn.Column(sizing_mode=STRETCH, name=t, css_classes=[tab_class(t)]) for t in titles}


def failed_tab(title: str, err: Exception) -> pn.pane.HTML:
    """What a tab whose builder failed shows: its message, not a traceback."""
    return html_pane(f"<p>{html.escape(title)}: {html.escape(str(err))}</p>")


def build_later(slot: pn.Column, build: Callable[[], None]) -> None:
    """Run ``build`` now (a notebook, a test), or on the next tick of a served page with
    ``slot``'s loading indicator shown meanwhile (the browser gets the indicator first)."""
    doc = pn.state.curdoc
    if doc is None or doc.session_context is None:
        build()
        return
    slot.loading = True

    def run() -> None:
        try:
            build()
        finally:
            slot.loading = False

    doc.add_next_tick_callback(run)


class LazyTabs:
    """Tabs each built when first opened: ``_slots`` (title → its :func:`tab_slots` slot) are
    the pages of ``_tabs``, whose ``active`` is watched with :meth:`_on_tab`; :meth:`_build`
    makes a tab's component."""

    _slots: dict[str, pn.Column]
    _showing = False  # the tabs are being replaced: opening one builds nothing

    @property
    def built_tabs(self) -> list[str]:
        """The titles of the tabs built so far (the others are built when first opened)."""
        return [t for t, slot in self._slots.items() if len(slot)]

    def _build(self, title: str) -> Any:
        raise NotImplementedError

    def _reopened(self, title: str) -> None:
        """A tab built before was opened again."""

    def _fill(self, title: str) -> None:
        """Build the tab ``title`` into its slot unless it was built already; a builder that
        fails gives a message in the tab, not a traceback."""
        slot = self._slots.get(title)
        if slot is None or len(slot):
            return
        try:
            slot[:] = [self._build(title)]
        except TraceVizError as err:
            slot[:] = [failed_tab(title, err)]

    def _on_tab(self, event: Any) -> None:
        """A tab was opened: build it. In a served page the build runs on the next tick, so the
        browser first gets the slot's loading indicator (a notebook or a test builds at once)."""
        titles = list(self._slots)
        if self._showing or not 0 <= event.new < len(titles):
            return
        title = titles[event.new]
        if len(self._slots[title]):
            self._reopened(title)
        else:
            build_later(self._slots[title], lambda: self._fill(title))


def selectable_table(
    data: Any, *, names: tuple[str, ...] = (), **options: Any
) -> pn.widgets.Tabulator:
    """A read-only, paginated Tabulator whose rows are selected one at a time (the tabs watch
    ``selection`` to explain a row); ``options`` add formatters, filters, titles.

    ``names`` are the columns holding kernel, op or source names: each gets a fixed width
    (:data:`NAME_WIDTH`) with an ellipsis, so the numbers beside them stay in view however
    long a name is. Every cell shows its full text as a tooltip; the columns fit the page
    (no sideways scrolling); headers are readable, units in brackets (:func:`column_title`)
    unless ``titles`` names them."""
    widths = {name: NAME_WIDTH for name in names} | options.pop("widths", {})
    columns = [
        {"field": str(name), "tooltip": True, "headerWordWrap": True} for name in data.columns
    ]
    titles = {str(col): column_title(str(col)) for col in data.columns}
    options["titles"] = titles | options.get("titles", {})
    options["formatters"] = cell_formats(data, options.get("formatters", {}))
    return pn.widgets.Tabulator(
        data,
        pagination="remote",
        page_size=15,
        show_index=False,
        disabled=True,
        selectable=1,
        sizing_mode=STRETCH,
        layout="fit_columns",
        widths=widths,
        configuration={"columns": columns},
        **options,
    )


#: A yes/no column: a tick for yes, nothing for no (not the words "true"/"false").
YES_NO = {"type": "tickCross", "crossElement": False}


def cell_formats(data: pd.DataFrame, given: dict[str, Any]) -> dict[str, Any]:
    """Tabulator formatters for ``data``: ``given`` ones first, with each ``money`` format
    made a number format that shows a missing value as ``–`` (not ``NaN``); yes/no columns
    as :data:`YES_NO`; other float columns with thousands separators, at most 3 decimals,
    and ``–`` for a missing value."""
    formats: dict[str, Any] = {}
    for column in data.columns:
        name, dtype = str(column), data[column].dtype
        spec = given.get(name)
        if isinstance(spec, dict) and spec.get("type") == "money":
            digits = int(spec.get("precision", 2))
            spec = NumberFormatter(format="0,0." + "0" * digits if digits else "0,0",
                                   nan_format="–")  # fmt: skip
        elif spec is None and pd.api.types.is_bool_dtype(dtype):
            spec = YES_NO
        elif spec is None and pd.api.types.is_float_dtype(dtype):
            spec = NumberFormatter(format="0,0.[000]", nan_format="–")
        if spec is not None:
            formats[name] = spec
    return formats | {k: v for k, v in given.items() if k not in formats}


#: Column-name endings and the unit they stand for (shown in the header in brackets).
UNIT_SUFFIXES = (("_us", "µs"), ("_ms", "ms"), ("_bytes", "bytes"), ("_pct", "%"),
                 ("_gbps", "GB/s"))  # fmt: skip


def column_title(column: str) -> str:
    """A readable header for a table column: ``"eager_time_us"`` → ``"eager time (µs)"``,
    ``"share_pct"`` → ``"share (%)"``, ``"launched_by"`` → ``"launched by"``."""
    for suffix, unit in UNIT_SUFFIXES:
        if column.endswith(suffix) and len(column) > len(suffix):
            return f"{column[: -len(suffix)].replace('_', ' ')} ({unit})"
    return column.replace("_", " ")


def csv_download(
    data: pd.DataFrame | Callable[[], pd.DataFrame], filename: str
) -> pn.widgets.FileDownload:
    """A button that downloads ``data`` (or what the callable returns when pressed, e.g. a
    table's filtered rows) as CSV."""

    def payload() -> io.StringIO:
        frame = data() if callable(data) else data
        return io.StringIO(frame.to_csv(index=False))

    return pn.widgets.FileDownload(
        callback=payload, filename=filename, label="CSV", embed=False, width=80, height=32
    )


def table_csv(table: pn.widgets.Tabulator, filename: str) -> pn.widgets.FileDownload:
    """:func:`csv_download` of the rows a Tabulator shows now (its filters applied)."""
    return csv_download(lambda: table.current_view, filename)


def short_path(path: str, keep: int = 3) -> str:
    """The last ``keep`` parts of a path (``…/block/eager.pt.trace.json.gz``)."""
    parts = path.replace("\\", "/").split("/")
    return path if len(parts) <= keep else "…/" + "/".join(parts[-keep:])


def slug(text: str) -> str:
    """``"Launch overhead (measured)"`` → ``"launch-overhead-measured"`` (for file names)."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "table"


def view_table(view: View, data: pd.DataFrame | None = None) -> pn.viewable.Viewable:
    """A :class:`View` as its HTML table with a CSV download of ``data`` (default: the view's
    own rows)."""
    frame = pd.DataFrame(view.rows, columns=view.columns) if data is None else data
    return pn.Column(
        html_pane(view_html(view)),
        csv_download(frame, f"{slug(view.title)}.csv"),
        sizing_mode=STRETCH,
    )


def metrics_tab(
    c: Comparison, names: tuple[str, ...], title: str, figures: list[Any], name: str
) -> pn.Column:
    """A tab of ``figures`` above the table of the metrics ``names`` (with its CSV download
    of the raw numbers)."""
    table = metrics_view(c, only=names, title=title)
    data = c.metrics[c.metrics[Metric.name].isin(names)]
    return pn.Column(
        *(plot(fig) for fig in figures), view_table(table, data), sizing_mode=STRETCH, name=name
    )


LAUNCH_METRICS = ("launch_count", "launch_api_time_us", "launch_delay_p50_us", "short_kernels",
                  "device_idle_us", "cpu_wait_us")  # fmt: skip
MEMORY_METRICS = ("est_bytes", "unestimated_time_share", "peak_allocated_bytes", "memcpy_bytes",
                  "est_bytes_saved")  # fmt: skip


def launch(c: Comparison) -> pn.Column:
    """The Launch overhead tab: launch delay, device idle, per-step figures and the launch
    metrics (measured)."""
    plots = [figures.launch_delay_figure(c), figures.idle_figure(c), figures.per_step_figure(c)]
    return metrics_tab(c, LAUNCH_METRICS, "Launch overhead (measured)", plots, "launch")


def memory(c: Comparison) -> pn.Column:
    """The Memory tab: traffic by kernel kind, allocated memory, and the memory metrics."""
    plots = [figures.memory_kind_figure(c), figures.allocated_figure(c)]
    return metrics_tab(c, MEMORY_METRICS, "Memory", plots, "memory")
