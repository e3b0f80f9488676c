"""``--ranks`` of ``traceviz summary`` and ``traceviz compare``: one job's ranks (stragglers,
collective waiting, step and kernel spread, failed ranks, findings), or two runs of one job
rank by rank (per-rank kernel counts and speedups, ranks whose compiled regions / graph breaks
/ recompiles differ from the others, and each side's stragglers and spread).

Each path is a ranks dataset made by ``traceviz ingest``. The JSON forms are documented in
docs/ranks.md. Imported only when ``--ranks`` is given.
"""

from __future__ import annotations

import argparse

from traceviz.commands.output import emit
from traceviz.diagnose import at_least
from traceviz.errors import UsageError
from traceviz.ranks.analyse import analyse_pair, analyse_ranks
from traceviz.ranks.load import open_dataset
from traceviz.ranks.render import check_format, render_pair, render_ranks


def summary(args: argparse.Namespace) -> int:
    """Render ``args.trace`` (a ranks dataset) in ``args.format``, ``args.top`` rows."""
    _check(args)
    analysis = analyse_ranks(open_dataset(args.trace))
    emit(render_ranks(analysis, args.format, top=args.top), getattr(args, "output", None))
    return 0


def compare(args: argparse.Namespace) -> int:
    """Compare the datasets ``args.a`` and ``args.b``; exit status as ``compare``'s."""
    _check(args)
    if args.b is None:
        raise UsageError("compare --ranks needs two ranks datasets: DIR_A DIR_B")
    names = tuple(args.names) if args.names else ("a", "b")
    pair = analyse_pair(open_dataset(args.a), open_dataset(args.b), names=names)
    emit(render_pair(pair, args.format, top=args.top), args.output)
    if args.fail_on is None:
        return 0
    return 1 if at_least(pair.findings, args.fail_on) else 0


def _check(args: argparse.Namespace) -> None:
    """A UsageError before any work when ``--ranks`` cannot render ``--format`` or ``--top``."""
    check_format(args.format)
    if args.top < 0:
        raise UsageError("--top must be 0 or more")
