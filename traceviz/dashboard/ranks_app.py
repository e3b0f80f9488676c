"""The dashboard of a ranks dataset (``traceviz ingest``): ``traceviz dashboard DATASET`` and
``traceviz dashboard DATASET_A DATASET_B``, ``traceviz.widgets.ranks``.

One dataset: the **Ranks** tab first (:class:`~traceviz.dashboard.tabs.ranks.RanksView`:
per-rank bars, stragglers outlined, findings, the per-rank table), then **Rank trace**: the
summary views of the rank selected there (:mod:`~traceviz.dashboard.tabs.trace_summary`),
read with ``traceviz.load(DATASET, rank=N)`` only when that tab is shown (the last few are
kept, :data:`RANK_TRACES`). Two datasets (e.g. eager and compiled runs of one job): first
**Compare ranks** (:func:`~traceviz.ranks.compare.compare_ranks` per rank: kernels, median
steps, speedup, odd compile shapes, and the pair's findings), then each side's Ranks tab,
then Rank trace with a choice of side.

The analyses (:func:`~traceviz.ranks.analyse.analyse_ranks`) run once, in
:func:`ranks_data`; a served page builds one :class:`RanksDashboard` per browser session on
that shared, read-only :class:`RanksData`.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import panel as pn
import param

from traceviz.dashboard.loading import TraceCache
from traceviz.dashboard.tabs.common import (
    STRETCH,
    LazyTabs,
    build_later,
    html_pane,
    plot,
    selectable_table,
    tab_slots,
    table_csv,
)
from traceviz.dashboard.tabs.findings import findings_pane
from traceviz.dashboard.tabs.ranks import RanksView
from traceviz.dashboard.tabs.trace_summary import trace_summary
from traceviz.diagnose.finding import Finding
from traceviz.errors import TraceVizError, UsageError
from traceviz.ranks import dataset as ds
from traceviz.ranks.analyse import RanksAnalysis, RanksPair, analyse_pair, analyse_ranks
from traceviz.ranks.compare import RankPair
from traceviz.ranks.load import Ranks, load_rank_trace, open_dataset
from traceviz.report.figures.ranks import rank_pair_figure
from traceviz.trace import Trace

#: Full rank traces kept in memory by the dashboards of this process (least recently used
#: go first): a rank's trace can be large, the per-rank tables are not.
RANK_TRACES = TraceCache(entries=4)
RANKS_TAB, TRACE_TAB, PAIR_TAB = "Ranks", "Rank trace", "Compare ranks"


@dataclass(frozen=True)
class RanksSide:
    """One dataset shown: its label, the :class:`~traceviz.ranks.Ranks` and their analysis."""

    name: str
    ranks: Ranks
    analysis: RanksAnalysis


@dataclass(frozen=True)
class RanksData:
    """What a ranks dashboard shows: one or two sides, and their comparison for two."""

    sides: tuple[RanksSide, ...]
    pair: RanksPair | None = None


def is_ranks_dataset(path: str | Path) -> bool:
    """Whether ``path`` is a ranks dataset made by ``traceviz ingest`` (its marker file)."""
    return ds.is_dataset(Path(path).expanduser())


def ranks_args(paths: Sequence[str | Path]) -> bool:
    """Whether the dashboard's paths are ranks datasets (all of them; one or two). A mix of
    datasets and trace files is a :class:`UsageError`."""
    found = [is_ranks_dataset(p) for p in paths]
    if not any(found):
        return False
    if not all(found) or len(paths) > 2:
        raise UsageError(
            "give one ranks dataset, or two to compare (DATASET_A DATASET_B), not a mix of "
            "datasets and trace files: " + " ".join(str(p) for p in paths)
        )
    return True


def _ranks_of(source: Ranks | str | Path) -> Ranks:
    if isinstance(source, Ranks):
        return source
    if isinstance(source, str | Path) and is_ranks_dataset(source):
        return open_dataset(source)
    raise UsageError(
        f"{source} is not a ranks dataset: make one with `traceviz ingest 'job/*.json.gz' "
        "--cache DIR` (or give traceviz.load_ranks(...))"
    )


def ranks_data(
    a: Ranks | str | Path,
    b: Ranks | str | Path | None = None,
    *,
    names: Sequence[str] | None = None,
) -> RanksData:
    """Read (a dataset path) and analyse one or two sets of ranks. ``names`` label the sides
    (default: the datasets' directory names, ``a`` / ``b`` when they are equal)."""
    sources = [_ranks_of(a)] + ([] if b is None else [_ranks_of(b)])
    labels = list(names) if names else [r.dataset.name for r in sources]
    if len(labels) != len(sources):
        raise UsageError(f"give {len(sources)} names, not {len(labels)}")
    if len(labels) == 2 and labels[0] == labels[1]:
        labels = ["a", "b"]
    if len(sources) == 1:
        side = RanksSide(labels[0], sources[0], analyse_ranks(sources[0]))
        return RanksData((side,))
    pair = analyse_pair(sources[0], sources[1], names=(labels[0], labels[1]))
    sides = tuple(
        RanksSide(label, r, analysis)
        for label, r, analysis in zip(labels, sources, (pair.a, pair.b), strict=True)
    )
    return RanksData(sides, pair)


def rank_trace(ranks: Ranks, rank: int, *, cache: TraceCache = RANK_TRACES) -> Trace:
    """Rank ``rank``'s full Trace from its dataset (``traceviz.load(dataset, rank=rank)``),
    kept in ``cache`` under the dataset, the rank and its manifest's mtime."""
    manifest = ranks.dataset / ds.MANIFEST
    try:
        stamp = manifest.stat().st_mtime_ns
    except OSError:
        stamp = 0
    key = f"rank:{ranks.dataset}:{rank}:{stamp}"
    return cache.get_or_load(key, lambda: load_rank_trace(ranks.dataset, rank))


def pair_view(pair: RanksPair) -> pn.viewable.Viewable:
    """The Compare ranks tab: the median speedup and its range, each rank's median step on both
    sides (a chart), the pair's findings (one line each, led by the dataset they are about),
    and the per-rank table (:class:`~traceviz.ranks.compare.RankPair`) with CSV."""
    cmp = pair.comparison
    a, b = cmp.names
    low, high = cmp.speedup_range()
    lines = [
        f"{len(cmp.per_rank)} ranks on both sides; median speedup {_x(cmp.median_speedup)} "
        f"(range {_x(low)} – {_x(high)}; {html.escape(a)}'s median step / "
        f"{html.escape(b)}'s, > 1: {html.escape(b)} faster, measured)",
    ]
    if cmp.only_a or cmp.only_b:
        lines.append(f"only in {html.escape(a)}: {cmp.only_a or 'none'}; only in "
                     f"{html.escape(b)}: {cmp.only_b or 'none'}")  # fmt: skip
    grid = selectable_table(
        cmp.per_rank,
        name="compare-ranks",
        formatters={
            c: {"type": "money", "precision": 1, "symbol": ""}
            for c in (
                RankPair.step_a_us,
                RankPair.step_b_us,
                RankPair.comm_a_us,
                RankPair.comm_b_us,
            )
        },
    )
    return pn.Column(
        html_pane(
            f"<h3>{html.escape(a)} → {html.escape(b)}, rank by rank</h3><ul>"
            + "".join(f"<li>{line}</li>" for line in lines)
            + "</ul>"
        ),
        plot(rank_pair_figure(cmp.per_rank, (a, b))),
        findings_pane(named_findings(pair.findings), empty="No findings for these ranks."),
        grid,
        table_csv(grid, "compare-ranks.csv"),
        sizing_mode=STRETCH,
        name="compare-ranks",
    )


def named_findings(findings: list[Finding]) -> list[Finding]:
    """Each finding's title led by the dataset (and rank) it is about, its ``trace`` label,
    so a finding of two datasets says which one it means."""
    return [
        replace(f, title=f"{f.trace}: {f.title}")
        if f.trace and not f.title.startswith(f.trace)
        else f
        for f in findings
    ]


def _x(value: float) -> str:
    return f"{value:.2f}×" if value == value else "n/a"


class RanksDashboard(LazyTabs, pn.viewable.Viewer):
    """One or two ranks datasets in tabs (see the module docstring); each tab is built when
    first opened, the rank trace when its tab is shown."""

    side: Any = param.Selector(default=None, objects=[], doc="the side of the rank trace shown")
    rank = param.Integer(default=None, allow_None=True, doc="the rank whose trace is shown")

    def __init__(self, data: RanksData, **params: Any) -> None:
        super().__init__(**params)
        self.data = data
        self._views: dict[str, RanksView] = {}
        names = [s.name for s in data.sides]
        self.param.side.objects = names
        first = data.sides[0]
        self.side = first.name
        stragglers = first.analysis.stragglers.ranks
        ok = first.ranks.ranks
        self.rank = stragglers[0] if stragglers else (ok[0] if ok else None)
        builders: dict[str, Callable[[], Any]] = {}
        if data.pair is not None:
            builders[PAIR_TAB] = partial(pair_view, data.pair)
        for side in data.sides:
            title = RANKS_TAB if len(data.sides) == 1 else f"{RANKS_TAB}: {side.name}"
            builders[title] = partial(self._ranks_view, side)
        builders[TRACE_TAB] = self._trace_tab
        self._builders = builders
        self._slots = tab_slots(builders)
        self._trace = pn.Column(sizing_mode=STRETCH, css_classes=["tv-rank-trace"])
        self._tabs = pn.Tabs(*self._slots.items(), dynamic=True, sizing_mode=STRETCH)
        self._tabs.param.watch(self._on_tab, "active")
        self.param.watch(self._on_choice, ["side", "rank"])
        self._fill(next(iter(builders)))

    def __panel__(self) -> pn.viewable.Viewable:
        names = " vs ".join(html.escape(s.name) for s in self.data.sides)
        return pn.Column(
            html_pane(f"<h2 style='margin:4px 0'>traceviz — ranks of {names}</h2>"),
            self._tabs,
            sizing_mode=STRETCH,
        )

    @property
    def trace_shown(self) -> tuple[str, int] | None:
        """(side, rank) of the rank trace in the Rank trace tab, None before one is shown."""
        return getattr(self, "_shown", None)

    # --- tabs ----------------------------------------------------------------------------

    def _ranks_view(self, side: RanksSide) -> RanksView:
        view = RanksView(analysis=side.analysis)
        self._views[side.name] = view
        view.param.watch(lambda e, s=side.name: self._pick(s, e.new), "rank")
        return view

    def _pick(self, side: str, rank: int | None) -> None:
        """A rank was selected in a side's Ranks view: it is the rank trace to show."""
        if rank is not None:
            self.param.update(side=side, rank=rank)

    def _trace_tab(self) -> pn.viewable.Viewable:
        side = pn.widgets.Select.from_param(self.param.side, label="side", width=200)
        side.visible = len(self.data.sides) > 1
        rank = pn.widgets.Select(label="rank", options=self._side().ranks.ranks, width=140)
        rank.value = self.rank
        rank.link(self, value="rank")
        self._rank_select = rank
        self._show_trace()
        return pn.Column(pn.Row(side, rank), self._trace, sizing_mode=STRETCH)

    def _side(self) -> RanksSide:
        return next(s for s in self.data.sides if s.name == self.side)

    def _on_choice(self, *events: param.parameterized.Event) -> None:
        select = getattr(self, "_rank_select", None)
        if select is not None:
            if any(e.name == "side" for e in events):
                select.options = self._side().ranks.ranks
            if select.value != self.rank and self.rank in select.options:
                select.value = self.rank
        view = self._views.get(str(self.side))
        if view is not None and view.rank != self.rank:
            view.rank = self.rank  # the Ranks view shows the same rank's details
        if self._active() == TRACE_TAB and len(self._slots[TRACE_TAB]):
            build_later(self._trace, self._show_trace)

    def _show_trace(self) -> None:
        """The rank trace's summary views in the Rank trace tab (read now if not cached)."""
        side, rank = self._side(), self.rank
        if rank is None:
            self._trace[:] = [html_pane("<p>Select a rank in the Ranks tab.</p>")]
            return
        if self.trace_shown == (side.name, rank):
            return
        try:
            trace = rank_trace(side.ranks, rank)
            title = f"Rank {rank}" + (f" of {side.name}" if len(self.data.sides) > 1 else "")
            self._trace[:] = [trace_summary(trace, title=title)]
        except TraceVizError as err:
            self._trace[:] = [html_pane(f"<p>Rank {rank}: {html.escape(str(err))}</p>")]
        self._shown = (side.name, rank)

    def _active(self) -> str:
        return list(self._slots)[self._tabs.active]

    def _build(self, title: str) -> Any:
        return self._builders[title]()

    def _reopened(self, title: str) -> None:
        if title == TRACE_TAB:  # the side or rank may have changed meanwhile
            build_later(self._trace, self._show_trace)
