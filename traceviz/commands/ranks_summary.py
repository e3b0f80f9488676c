"""``traceviz summary DIR --ranks``: one job's ranks — stragglers, collective waiting, step and
kernel spread, failed ranks, findings.

DIR is a ranks dataset made by ``traceviz ingest``. The JSON form is documented in
docs/ranks.md. Imported only when ``--ranks`` is given.
"""

from __future__ import annotations

import argparse

from traceviz.commands.output import emit
from traceviz.errors import UsageError
from traceviz.ranks.analyse import analyse_ranks
from traceviz.ranks.load import open_dataset
from traceviz.ranks.render import FORMATS, render_ranks


def run(args: argparse.Namespace) -> int:
    """Render ``args.trace`` (a ranks dataset) in ``args.format``, ``args.top`` rows."""
    check_format(args.format)
    if args.top < 0:
        raise UsageError("--top must be 0 or more")
    analysis = analyse_ranks(open_dataset(args.trace))
    emit(render_ranks(analysis, args.format, top=args.top), getattr(args, "output", None))
    return 0


def check_format(fmt: str) -> None:
    """A UsageError before any work when ``--ranks`` cannot render ``fmt``."""
    if fmt not in FORMATS:
        raise UsageError(f"--ranks renders --format {', '.join(FORMATS)}, not {fmt}")
