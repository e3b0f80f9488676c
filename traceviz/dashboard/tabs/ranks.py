"""The Ranks view: one job's ranks — per-rank bars of compute, collective transfer and waiting
per step (stragglers outlined), the findings, the per-rank table; selecting a rank shows its own
figures (summary row, its slowest kernels, its collectives against the job's).

:class:`RanksView` takes a :class:`~traceviz.ranks.analyse.RanksAnalysis` (``RanksView.of(
ranks)`` analyses a :class:`~traceviz.ranks.Ranks` first); it works in a notebook
(``pn.panel(RanksView.of(traceviz.load_ranks("job.ds")))``) and as a dashboard tab for a
report that carries ranks (:func:`has_ranks`, :func:`ranks`). Selecting a rank reads only the
small tables already in memory: the rank's full trace stays on disk
(``traceviz.load(dataset, rank=N)`` opens it for the single-trace views).
"""

from __future__ import annotations

import html
from typing import Any

import pandas as pd
import panel as pn
import param

from traceviz.dashboard.tabs.common import STRETCH, html_pane, plot, selectable_table, table_csv
from traceviz.dashboard.tabs.findings import findings_pane
from traceviz.ranks.analyse import RanksAnalysis, analyse_ranks
from traceviz.ranks.reduce import Collectives, KernelSummary
from traceviz.ranks.render import per_rank_table
from traceviz.report.figures.ranks import ranks_figure
from traceviz.units import fmt_us

#: Per-rank table columns shown (the CSV download has every column).
SHOWN = (
    "rank", "node", "step_p50_us", "step_p95_us", "compute_time_us", "comm_time_us",
    "collective_wait_us", "lateness_p50_us", "arrived_last_share", "graph_breaks",
    "recompiles", "straggler", "slow_step",
)  # fmt: skip
TOP_KERNELS = 10


class RanksView(pn.viewable.Viewer):
    """The ranks of one job (see the module docstring)."""

    analysis = param.Parameter(doc="a traceviz.ranks.analyse.RanksAnalysis")
    rank = param.Integer(default=None, allow_None=True, doc="the selected rank")

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        table = per_rank_table(self.analysis)
        self._table = table
        shown = table.loc[:, [c for c in SHOWN if c in table.columns]]
        self._grid = selectable_table(shown, name="ranks", formatters=_number_formats(shown))
        self._grid.param.watch(self._on_select, "selection")
        self._detail = pn.Column(sizing_mode=STRETCH)
        stragglers = self.analysis.stragglers.ranks
        self.rank = stragglers[0] if stragglers else None
        self._show_rank()
        self.param.watch(lambda _: self._show_rank(), "rank")

    @classmethod
    def of(cls, ranks: Any) -> RanksView:
        """The view of a :class:`~traceviz.ranks.Ranks` (or its tables), analysed here."""
        return cls(analysis=analyse_ranks(ranks))

    def __panel__(self) -> pn.viewable.Viewable:
        return pn.Column(
            plot(ranks_figure(self._table)),
            findings_pane(self.analysis.findings, empty="No findings for these ranks."),
            self._grid,
            table_csv(self._grid, "ranks.csv"),
            self._detail,
            sizing_mode=STRETCH,
            name="ranks",
        )

    def _on_select(self, event: param.parameterized.Event) -> None:
        if event.new:
            self.rank = int(self._grid.value.iloc[event.new[0]]["rank"])  # watched: shows it

    def _show_rank(self) -> None:
        self._detail.objects = [] if self.rank is None else rank_detail(self.analysis, self.rank)


def rank_detail(analysis: RanksAnalysis, rank: int) -> list[Any]:
    """One rank's panes: its summary line, its slowest kernels, its collectives."""
    summary = analysis.summary[analysis.summary["rank"] == rank]
    if summary.empty:
        return [html_pane(f"<p>No rank {rank} in this dataset.</p>")]
    row = summary.iloc[0]
    late = analysis.stragglers.per_rank.set_index("rank")
    lateness = late["lateness_p50_us"].get(rank) if rank in late.index else None
    lines = [
        f"node {html.escape(str(row['node']) or 'unknown')}, {int(row['steps'])} steps, "
        f"median step {fmt_us(float(row['step_p50_us']))}",
        f"kernels {int(row['kernels'])} ({fmt_us(float(row['kernel_time_us']))}), of which "
        f"collectives {int(row['comm_kernels'])} ({fmt_us(float(row['comm_time_us']))})",
        f"median lateness at collectives: {fmt_us(float(lateness))}"
        if lateness is not None and lateness == lateness
        else "no collective matched across ranks",
        f"compiled regions {int(row['compiled_regions'])}, graph breaks "
        f"{int(row['graph_breaks'])}, recompiles {int(row['recompiles'])}",
    ]
    kernels = analysis.kernel_summary[analysis.kernel_summary[KernelSummary.rank] == rank]
    kernels = kernels.sort_values(KernelSummary.total_us, ascending=False).head(TOP_KERNELS)
    comms = analysis.collectives[analysis.collectives[Collectives.rank] == rank]
    parts: list[Any] = [
        html_pane(
            f"<h4>Rank {rank}</h4><ul>{''.join(f'<li>{line}</li>' for line in lines)}</ul>"
            "<p class='tv-tag'>Its full trace: the Rank trace tab of `traceviz dashboard "
            f"DATASET`, or traceviz.load(DATASET, rank={rank}) — every single-trace view works "
            "on it.</p>"
        ),
    ]
    grid = selectable_table(_plain(kernels), names=(KernelSummary.name,), name="kernels")
    parts += [grid, table_csv(grid, f"rank{rank}-kernels.csv")]
    if len(comms):
        grid = selectable_table(_plain(comms), names=(Collectives.kernel,), name="collectives")
        parts += [grid, table_csv(grid, f"rank{rank}-collectives.csv")]
    return parts


def has_ranks(report: Any) -> bool:
    """Whether a report carries a job's ranks (an ``ranks`` attribute holding an analysis)."""
    return isinstance(getattr(report, "ranks", None), RanksAnalysis)


def ranks(report: Any) -> RanksView:
    """The Ranks tab of a report that carries ranks (:func:`has_ranks`)."""
    return RanksView(analysis=report.ranks)


def _number_formats(frame: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Tabulator formatters of a table's float columns: µs to one decimal, shares to two (the
    CSV download keeps every digit)."""
    return {
        c: {"type": "money", "precision": 1 if c.endswith("_us") else 2, "symbol": ""}
        for c in frame.columns
        if pd.api.types.is_float_dtype(frame[c])
    }


def _plain(frame: pd.DataFrame) -> pd.DataFrame:
    """Categorical columns as text (Tabulator shows them as codes otherwise)."""
    cats = [c for c in frame.columns if isinstance(frame[c].dtype, pd.CategoricalDtype)]
    return frame.assign(**{c: frame[c].astype(str) for c in cats}).reset_index(drop=True)
