"""Many ranks of one job: a partitioned Parquet dataset of per-rank tables, ingested serially
or on Dask, and the cross-rank analyses over its small per-rank tables.

The stages, one module each:

- :mod:`~traceviz.ranks.detect`: which rank a trace file is (``distributedInfo.rank`` read
  from a prefix of the file, else a regex on its path).
- :mod:`~traceviz.ranks.reduce`: one rank's Trace → its small tables (summary, kernel summary,
  collectives), computed while that rank is in memory.
- :mod:`~traceviz.ranks.dataset`: the on-disk layout (``<table>/rank=00007/part-0.parquet``,
  the ``_ranks.parquet`` manifest, the ``runs.parquet`` catalogue), written atomically.
- :mod:`~traceviz.ranks.cluster`: where the per-rank tasks run (a Dask cluster, a
  LocalCluster, or serially); the only module that imports Dask.
- :mod:`~traceviz.ranks.ingestion`: one task per rank, incremental, a failed rank a manifest row.
- :mod:`~traceviz.ranks.load`: :func:`load_ranks` → :class:`Ranks`.
- :mod:`~traceviz.ranks.synth`: many ranks made from one real trace (tests, benchmarks).

``import traceviz.ranks`` imports neither Dask nor pandas; the names below load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from traceviz.ranks.detect import detect_rank
    from traceviz.ranks.ingestion import IngestResult, ingest
    from traceviz.ranks.load import Ranks, load_rank_trace, load_ranks

__all__ = [
    "IngestResult",
    "Ranks",
    "detect_rank",
    "ingest",
    "load_rank_trace",
    "load_ranks",
]

_LAZY = {
    "detect_rank": "traceviz.ranks.detect",
    "IngestResult": "traceviz.ranks.ingestion",
    "ingest": "traceviz.ranks.ingestion",
    "Ranks": "traceviz.ranks.load",
    "load_rank_trace": "traceviz.ranks.load",
    "load_ranks": "traceviz.ranks.load",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'traceviz.ranks' has no attribute {name!r}")
