"""A ranks dataset read back: :func:`load_ranks` → :class:`Ranks` (the small cross-rank tables
in memory, any rank's full :class:`~traceviz.trace.Trace` on demand).

Only the ranks the manifest lists as ``ok`` are read (:mod:`traceviz.ranks.dataset`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from traceviz import schema
from traceviz.errors import TraceFormatError, UsageError
from traceviz.ranks import dataset as ds
from traceviz.ranks.ingestion import DEFAULT_DATASET_NAME, Progress, ingest
from traceviz.ranks.reduce import (
    COLLECTIVES_DTYPES,
    KERNEL_SUMMARY_DTYPES,
    SUMMARY_DTYPES,
    range_text,
)
from traceviz.trace import ParseStats, Trace, TraceMeta

if TYPE_CHECKING:
    from traceviz.ranks.stragglers import Stragglers

M = ds.ManifestColumns
RANK_TABLE_DTYPES: dict[str, dict[str, str]] = {
    "summary": SUMMARY_DTYPES,
    "kernel_summary": KERNEL_SUMMARY_DTYPES,
    "collectives": COLLECTIVES_DTYPES,
}


@dataclass(frozen=True)
class Ranks:
    """A ranks dataset: its ``manifest`` (:class:`~traceviz.ranks.dataset.ManifestColumns`)
    and the small per-rank tables of its ``ok`` ranks, concatenated in rank order —
    ``summary`` (one row per rank), ``kernel_summary`` (rank × kernel name) and
    ``collectives`` (one row per collective kernel); columns and units:
    :mod:`traceviz.ranks.reduce`. Name columns (``name``, ``node``, ...) are categorical
    (dictionary-encoded on disk)."""

    dataset: Path
    manifest: pd.DataFrame
    summary: pd.DataFrame
    kernel_summary: pd.DataFrame
    collectives: pd.DataFrame
    _traces: dict[int, Trace] = field(default_factory=dict, repr=False, compare=False)

    @property
    def ranks(self) -> list[int]:
        """The ranks whose tables are in the dataset, ascending."""
        return ds.ok_ranks(self.manifest)

    @property
    def failed(self) -> pd.DataFrame:
        """Manifest rows that failed: ``source``, ``rank`` (<NA> when unknown), ``error``."""
        rows = self.manifest[self.manifest[M.status] == ds.Status.failed]
        return rows.loc[:, [M.source, M.rank, M.error]].reset_index(drop=True)

    @property
    def runs(self) -> pd.DataFrame:
        """The ingests of this dataset (:class:`~traceviz.ranks.dataset.RunColumns`)."""
        return ds.read_runs(self.dataset)

    def trace(self, rank: int) -> Trace:
        """Rank ``rank``'s full Trace, read from the dataset (cached on this object)."""
        if rank not in self._traces:
            self._traces[rank] = load_rank_trace(self.dataset, rank, manifest=self.manifest)
        return self._traces[rank]

    def table(self, name: str) -> pd.DataFrame:
        """A Trace table (``kernels``, ``ops``, ...) across every ok rank, with ``rank`` first.
        All of it in memory: for a few ranks; for many, read the Parquet with Dask/DuckDB."""
        if name not in ds.TRACE_TABLES:
            raise UsageError(f"{name!r} is not a trace table ({', '.join(ds.TRACE_TABLES)})")
        return ds.read_table(self.dataset, name, self.ranks)

    def stragglers(self, **options: Any) -> Stragglers:
        """The slow ranks every collective waits for
        (:func:`traceviz.ranks.stragglers.find_stragglers` of the summary and collectives)."""
        from traceviz.ranks.stragglers import find_stragglers

        return find_stragglers(self.summary, self.collectives, **options)

    def __repr__(self) -> str:
        failed = int((self.manifest[M.status] == ds.Status.failed).sum())
        return f"Ranks({str(self.dataset)!r}, ranks={len(self.ranks)}, failed={failed})"


def open_dataset(path: str | Path) -> Ranks:
    """Read the dataset at ``path`` (no ingest). ``path`` may also be the traces' folder that a
    default ``traceviz ingest DIR`` wrote its dataset into (``DIR/traceviz-dataset``);
    :class:`TraceFormatError` when it is neither."""
    root = Path(path).expanduser().absolute()
    if not ds.is_dataset(root) and ds.is_dataset(root / DEFAULT_DATASET_NAME):
        root = root / DEFAULT_DATASET_NAME
    elif not ds.is_dataset(root):
        raise TraceFormatError(
            root,
            "is not a traceviz ranks dataset, nor a folder holding one "
            f"({DEFAULT_DATASET_NAME}/); make one: traceviz ingest",
        )
    ds.check_format(root)
    manifest = ds.read_manifest(root)
    ranks = ds.ok_ranks(manifest)
    return Ranks(
        dataset=root,
        manifest=manifest,
        summary=read_rank_tables(root, "summary", ranks),
        kernel_summary=read_rank_tables(root, "kernel_summary", ranks),
        collectives=read_rank_tables(root, "collectives", ranks),
    )


def read_rank_tables(root: Path, name: str, ranks: Sequence[int]) -> pd.DataFrame:
    """A per-rank reduction table across ``ranks``, in the dtypes of
    :mod:`traceviz.ranks.reduce`, except that name columns stay categorical."""
    dtypes = RANK_TABLE_DTYPES[name]
    frame = ds.read_table(root, name, ranks)
    if not ranks:
        return schema.empty_table(dtypes)
    keep = {
        c: str(frame[c].dtype)
        for c in ds.DICTIONARY_COLUMNS
        if c in frame.columns and isinstance(frame[c].dtype, pd.CategoricalDtype)
    }
    return schema.conform(frame, {**dtypes, **keep})


def load_ranks(
    paths_or_glob: str | Path | Sequence[str | Path],
    cache: str | Path | None = None,
    *,
    cluster: Any = None,
    workers: int | str | None = None,
    rank_regex: str | None = None,
    max_bytes: int | None = None,
    progress: Progress | None = None,
) -> Ranks:
    """The ranks of a job. ``paths_or_glob`` is a ranks dataset directory (read as is), or
    trace files, directories or globs: ingested first into ``cache`` (incrementally: unchanged
    ranks are not parsed again) by :func:`~traceviz.ranks.ingestion.ingest`, whose ``cluster``,
    ``workers``, ``rank_regex``, ``max_bytes`` and ``progress`` these are."""
    single = paths_or_glob if isinstance(paths_or_glob, str | Path) else None
    if single is not None and ds.is_dataset(Path(single).expanduser()):
        if cache is not None:
            raise UsageError(f"{single} is a ranks dataset already; cache= is for trace files")
        return open_dataset(single)
    ingested = ingest(paths_or_glob, cache, cluster=cluster, workers=workers,
                      rank_regex=rank_regex, max_bytes=max_bytes, progress=progress)  # fmt: skip
    return open_dataset(ingested.dataset)


def load_rank_trace(path: str | Path, rank: int, *, manifest: pd.DataFrame | None = None) -> Trace:
    """Rank ``rank``'s Trace from the dataset at ``path`` (``traceviz.load(path, rank=)``).
    :class:`UsageError` when the dataset has no ok rank ``rank``."""
    root = Path(path).expanduser().absolute()
    if not ds.is_dataset(root):
        raise TraceFormatError(root, "is not a traceviz ranks dataset, so rank= does not apply")
    ds.check_format(root)
    if isinstance(rank, bool) or not isinstance(rank, int):
        raise UsageError(f"rank must be an int, not {rank!r}")
    ranks = ds.ok_ranks(ds.read_manifest(root) if manifest is None else manifest)
    if rank not in ranks:
        shown = range_text(ranks) or "none"
        raise UsageError(f"{root}: no rank {rank} in this dataset (ranks: {shown})")
    header = ds.read_meta(root, rank)
    tables = {name: ds.read_rank_table(root, name, rank) for name in ds.TRACE_TABLES}
    try:
        meta = TraceMeta.from_json(header["meta"])
        stats = ParseStats(**header["stats"])
    except (KeyError, TypeError, ValueError) as err:
        raise TraceFormatError(root, f"rank {rank}: unreadable meta: {err}") from err
    return Trace(meta=meta, stats=stats, **tables)
