"""``traceviz compare DIR_A DIR_B --ranks``: two runs of one job rank by rank — per-rank kernel
counts and speedups, ranks whose compiled regions / graph breaks / recompiles differ from the
others, and each side's stragglers and spread.

DIR_A and DIR_B are ranks datasets made by ``traceviz ingest`` (e.g. the eager and the compiled
run). The JSON form is documented in docs/ranks.md. Imported only when ``--ranks`` is given.
"""

from __future__ import annotations

import argparse

from traceviz.commands.output import emit
from traceviz.commands.ranks_summary import check_format
from traceviz.diagnose import at_least
from traceviz.errors import UsageError
from traceviz.ranks.analyse import analyse_pair
from traceviz.ranks.load import open_dataset
from traceviz.ranks.render import render_pair


def run(args: argparse.Namespace) -> int:
    """Compare the datasets ``args.a`` and ``args.b``; exit status as ``compare``'s."""
    check_format(args.format)
    if args.b is None:
        raise UsageError("compare --ranks needs two ranks datasets: DIR_A DIR_B")
    if args.top < 0:
        raise UsageError("--top must be 0 or more")
    names = tuple(args.names) if args.names else ("a", "b")
    pair = analyse_pair(open_dataset(args.a), open_dataset(args.b), names=names)
    emit(render_pair(pair, args.format, top=args.top), args.output)
    if args.fail_on is None:
        return 0
    return 1 if at_least(pair.findings, args.fail_on) else 0
