"""Every cross-rank analysis of one job, and its findings, in one object for the front ends.

:func:`analyse_ranks` takes a :class:`~traceviz.ranks.Ranks` (or anything with ``summary``,
``collectives``, ``kernel_summary`` and, optionally, ``failed`` tables) and runs the stragglers,
step-time spread and kernel spread analyses and their findings; :func:`analyse_pair` does the
same for two sets and adds :func:`~traceviz.ranks.compare.compare_ranks`. ``traceviz summary
--ranks``, ``traceviz compare --ranks``, the dashboard's ranks view and the widgets read these.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from traceviz.diagnose import sort_findings
from traceviz.diagnose.finding import Finding
from traceviz.errors import UsageError
from traceviz.ranks import findings as rules
from traceviz.ranks.compare import RankComparison, compare_ranks
from traceviz.ranks.reduce import plain
from traceviz.ranks.spread import StepSpread, kernel_spread, step_spread
from traceviz.ranks.stragglers import Stragglers, find_stragglers

#: Version of the ``summary --ranks`` / ``compare --ranks`` JSON (docs/ranks.md).
RANKS_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class RanksAnalysis:
    """One job's ranks analysed: the tables (``summary``, ``collectives``, ``kernel_summary``,
    ``failed``: source, rank, error), :class:`Stragglers`, :class:`StepSpread`, the slow
    kernels (:class:`~traceviz.ranks.spread.SlowKernel` rows) and the findings."""

    label: str
    summary: pd.DataFrame
    collectives: pd.DataFrame
    kernel_summary: pd.DataFrame
    failed: pd.DataFrame
    stragglers: Stragglers
    steps: StepSpread
    slow_kernels: pd.DataFrame
    findings: list[Finding]


@dataclass(frozen=True)
class RanksPair:
    """Two sets of ranks analysed, and their per-rank comparison; ``findings`` hold both
    sides' findings (labelled) and the comparison's."""

    a: RanksAnalysis
    b: RanksAnalysis
    comparison: RankComparison
    findings: list[Finding]


def analyse_ranks(ranks: Any, *, label: str = "") -> RanksAnalysis:
    """Analyse one set of ranks (see the module docstring)."""
    summary = plain(_table(ranks, "summary"))
    collectives = plain(_table(ranks, "collectives"))
    kernels = plain(_table(ranks, "kernel_summary"))
    failed = getattr(ranks, "failed", None)
    no_failures = pd.DataFrame({"source": [], "rank": [], "error": []})
    failed = plain(failed) if isinstance(failed, pd.DataFrame) else no_failures
    stragglers = find_stragglers(summary, collectives)
    steps = step_spread(summary)
    slow = kernel_spread(kernels)
    found = (
        rules.failed_ranks(failed)
        + rules.straggler_findings(stragglers, summary)
        + rules.collective_wait(stragglers, summary)
        + rules.step_time_spread(steps)
        + rules.kernel_spread_findings(slow, summary)
        + rules.compile_differs(summary)
    )
    if label:
        found = [_labelled(f, label) for f in found]
    return RanksAnalysis(
        label=label,
        summary=summary,
        collectives=collectives,
        kernel_summary=kernels,
        failed=failed,
        stragglers=stragglers,
        steps=steps,
        slow_kernels=slow,
        findings=sort_findings(found),
    )


def analyse_pair(a: Any, b: Any, *, names: tuple[str, str] = ("a", "b")) -> RanksPair:
    """Analyse two sets of ranks and compare them rank by rank."""
    side_a = analyse_ranks(a, label=names[0])
    side_b = analyse_ranks(b, label=names[1])
    comparison = compare_ranks(side_a.summary, side_b.summary, names=names)
    # the per-side compile-shape findings are the comparison's (one per side), not repeated
    own = [f for f in side_a.findings + side_b.findings if f.id != "rank-compile-differs"]
    found = own + rules.comparison_findings(comparison)
    return RanksPair(side_a, side_b, comparison, sort_findings(found))


def _table(ranks: Any, name: str) -> pd.DataFrame:
    table = getattr(ranks, name, None)
    if not isinstance(table, pd.DataFrame):
        raise UsageError(f"expected ranks with a {name!r} table (traceviz.ranks.load_ranks)")
    return table


def _labelled(finding: Finding, label: str) -> Finding:
    trace = f"{label} {finding.trace}".strip() if finding.trace else label
    return replace(finding, trace=trace)
