"""The on-disk layout of a ranks dataset: one partitioned Parquet table per kind, table first,
so that any engine (Dask, DuckDB, Spark, Polars, pyarrow) reads one table across ranks::

    DATASET/
      _dataset.json                     marker: format version, traceviz version
      _ranks.parquet                    the manifest: one row per input file (ManifestColumns)
      runs.parquet                      the catalogue: one row per ingest (RunColumns)
      kernels/rank=00007/part-0.parquet the Trace tables: kernels, ops, launches, regions,
      ...                               memory, spans, steps (columns: traceviz.schema)
      summary/rank=00007/part-0.parquet the per-rank reductions (traceviz.ranks.reduce):
      kernel_summary/…  collectives/…   summary, kernel_summary, collectives
      meta/rank=00007/meta.json         TraceMeta and ParseStats of the rank

The ``rank`` is the hive partition key: it is in the directory name, not in the files, and
:func:`read_table` adds it back as the first column (int64). Categorical columns (names) are
stored dictionary-encoded and read back as pandas categoricals.

Writes are atomic per rank and table: a rank's files are written under ``.tmp/`` and then
renamed into place; the manifest, written last (also by rename), is what says which ranks are
whole. Readers read only the ranks the manifest lists as ``ok``. Writers take turns: an ingest
holds :func:`writer_lock` from reading the manifest to appending its run, so two ingests into
one dataset (every rank of a job ingesting its own file) both land instead of one manifest
replacing the other.

The Parquet files need pyarrow, the ``ranks`` extra (``pip install 'traceviz[ranks]'``), imported
only when a file is read or written: without it, those functions raise :class:`UsageError`
naming the extra (:func:`require_pyarrow`); the paths and the marker need none.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

import numpy as np
import pandas as pd

from traceviz import schema
from traceviz._version import __version__
from traceviz.errors import TraceFormatError, UsageError

FORMAT_VERSION = 1
MARKER = "_dataset.json"
MANIFEST = "_ranks.parquet"
RUNS = "runs.parquet"
META = "meta"
META_FILE = "meta.json"
PART = "part-0.parquet"
TMP = ".tmp"
LOCK = ".ingest.lock"
TRACE_TABLES: tuple[str, ...] = tuple(schema.TABLE_DTYPES)  # kernels, ops, launches, ...
RANK_TABLES: tuple[str, ...] = ("summary", "kernel_summary", "collectives")
TABLES: tuple[str, ...] = TRACE_TABLES + RANK_TABLES
RANK_KEY = "rank"
# Uncompressed, like Trace.save: reloads ~4x faster than snappy (benchmarks/RESULTS.md).
COMPRESSION: Literal["snappy", "zstd"] | None = None
# String columns of the per-rank tables read dictionary-encoded when stored as plain strings.
DICTIONARY_COLUMNS = ("name", "node", "stream", "dtype", "source", "kind")
#: The extra that brings pyarrow, which reads and writes the dataset's Parquet files.
EXTRA_HINT = "pip install 'traceviz[ranks]'"


class Status:
    """A manifest row's ``status``."""

    ok = "ok"  # the rank's tables are in the dataset
    failed = "failed"  # unreadable, corrupt, no rank, duplicate rank, or missing: see error


class ManifestColumns:
    """``_ranks.parquet``: one row per input file (and one per rank of ``world_size`` that no
    file provided, ``source`` empty). Units in the names."""

    source = "source"  # absolute path of the trace file (str; "" for a missing rank)
    rank = "rank"  # the rank (Int64; <NA> when it could not be told)
    rank_basis = "rank_basis"  # "distributedInfo" | "path" (str; <NA> when unknown)
    world_size = "world_size"  # distributedInfo.world_size (Int64; <NA> when absent)
    status = "status"  # Status: "ok" | "failed" (str)
    error = "error"  # why it failed, one line (str; "" when ok)
    size = "size"  # file bytes as stored (Int64)
    mtime_ns = "mtime_ns"  # file modification time, ns since the epoch (Int64)
    head_hash = "head_hash"  # BLAKE2b-128 of the file's first 64 KiB as stored (str)
    events = "events"  # trace events parsed (Int64; <NA> when not parsed)
    parse_s = "parse_s"  # wall seconds of traceviz.load for this rank (float64)
    write_s = "write_s"  # wall seconds of reducing and writing its tables (float64)
    bytes_written = "bytes_written"  # bytes of the rank's files in the dataset (Int64)
    worker = "worker"  # "host:pid" of the process that ingested it (str)
    worker_peak_rss_bytes = "worker_peak_rss_bytes"  # that process's peak RSS so far (Int64)
    ingested_at = "ingested_at"  # UTC time of the ingest, ISO 8601 (str)


MANIFEST_DTYPES: dict[str, str] = {
    ManifestColumns.source: "string",
    ManifestColumns.rank: "Int64",
    ManifestColumns.rank_basis: "string",
    ManifestColumns.world_size: "Int64",
    ManifestColumns.status: "string",
    ManifestColumns.error: "string",
    ManifestColumns.size: "Int64",
    ManifestColumns.mtime_ns: "Int64",
    ManifestColumns.head_hash: "string",
    ManifestColumns.events: "Int64",
    ManifestColumns.parse_s: "float64",
    ManifestColumns.write_s: "float64",
    ManifestColumns.bytes_written: "Int64",
    ManifestColumns.worker: "string",
    ManifestColumns.worker_peak_rss_bytes: "Int64",
    ManifestColumns.ingested_at: "string",
}


class RunColumns:
    """``runs.parquet``: one row per ingest into this dataset, appended, for comparison over
    time. ``run_id`` is a hash of the ok ranks' (rank, size, head hash): an ingest of the same
    files gives the same id."""

    run_id = "run_id"  # 16 hex digits (str)
    ingested_at = "ingested_at"  # UTC, ISO 8601 (str)
    dataset = "dataset"  # absolute path of the dataset (str)
    inputs = "inputs"  # the paths or glob given, "; "-joined (str)
    ranks_ok = "ranks_ok"  # ranks in the dataset after this ingest (int64)
    ranks_failed = "ranks_failed"  # manifest rows that failed (int64)
    ranks_ingested = "ranks_ingested"  # ranks parsed by this ingest (int64)
    ranks_skipped = "ranks_skipped"  # unchanged ranks this ingest did not parse again (int64)
    world_size = "world_size"  # largest distributedInfo.world_size seen (Int64)
    events = "events"  # trace events of the ok ranks (int64)
    wall_s = "wall_s"  # wall seconds of the ingest (float64)
    where = "where"  # where the tasks ran: "serial", "LocalCluster(2 workers)", an address
    traceviz_version = "traceviz_version"  # (str)


RUN_DTYPES: dict[str, str] = {
    RunColumns.run_id: "string",
    RunColumns.ingested_at: "string",
    RunColumns.dataset: "string",
    RunColumns.inputs: "string",
    RunColumns.ranks_ok: "int64",
    RunColumns.ranks_failed: "int64",
    RunColumns.ranks_ingested: "int64",
    RunColumns.ranks_skipped: "int64",
    RunColumns.world_size: "Int64",
    RunColumns.events: "int64",
    RunColumns.wall_s: "float64",
    RunColumns.where: "string",
    RunColumns.traceviz_version: "string",
}


def require_pyarrow() -> ModuleType:
    """``pyarrow.parquet``, imported; a :class:`UsageError` naming the ``ranks`` extra when
    pyarrow is not installed (every read and write of the dataset's Parquet files checks here,
    before its own error handling could take the missing package for a damaged file)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise UsageError(f"a ranks dataset (Parquet files) needs pyarrow: {EXTRA_HINT}") from None
    return pq


# --- paths -----------------------------------------------------------------------------------


def partition_name(rank: int) -> str:
    """``rank=00007``: the hive partition directory of a rank (zero-padded, so names sort)."""
    return f"{RANK_KEY}={int(rank):05d}"


def rank_dir(root: Path, table: str, rank: int) -> Path:
    """The directory holding ``table``'s file(s) for ``rank``."""
    return root / table / partition_name(rank)


def is_dataset(path: str | Path) -> bool:
    """Whether ``path`` is a ranks dataset directory (it holds :data:`MARKER`)."""
    root = Path(path)
    return root.is_dir() and (root / MARKER).is_file()


def ensure_dataset(root: Path) -> None:
    """Make ``root`` a dataset directory (marker written once); refuse a non-empty directory
    that is something else, so that an ingest never scatters files into, say, a trace folder."""
    if is_dataset(root):
        check_format(root)
        return
    if root.exists() and (not root.is_dir() or any(map(_foreign, root.iterdir()))):
        raise TraceFormatError(root, "is not empty and not a traceviz ranks dataset")
    root.mkdir(parents=True, exist_ok=True)
    with writer_lock(root):  # two first ingests at once: one writes the marker
        if not is_dataset(root):
            marker = {"format_version": FORMAT_VERSION, "traceviz_version": __version__}
            _write_atomic(root / MARKER, lambda tmp: tmp.write_text(json.dumps(marker, indent=1)))


def _foreign(entry: Path) -> bool:
    """Not a file a starting dataset holds: its lock, or the marker being written."""
    return entry.name != LOCK and not entry.name.startswith(f".{MARKER}.")


@contextmanager
def writer_lock(root: Path) -> Iterator[None]:
    """Hold ``root``'s writer lock (an exclusive ``flock`` on :data:`LOCK`), waiting for
    another ingest that holds it to finish. Readers never take it: the manifest they read is
    replaced by rename. The lock goes with the process, so a killed ingest leaves none behind.
    Without ``fcntl`` (not POSIX) there is no lock."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(root / LOCK, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def check_format(root: Path) -> None:
    """Raise :class:`TraceFormatError` when ``root``'s marker is unreadable or of another
    format version."""
    try:
        marker = json.loads((root / MARKER).read_text())
    except (OSError, ValueError) as err:
        raise TraceFormatError(root, f"unreadable dataset marker {MARKER}: {err}") from err
    version = marker.get("format_version") if isinstance(marker, dict) else None
    if version != FORMAT_VERSION:
        raise TraceFormatError(
            root,
            f"ranks dataset format {version!r} is not {FORMAT_VERSION}; ingest the traces "
            "again into a new directory",
        )


# --- writing one rank ------------------------------------------------------------------------


def write_rank(
    root: Path, rank: int, tables: Mapping[str, pd.DataFrame], meta: Mapping[str, Any]
) -> int:
    """Write ``rank``'s ``tables`` (names from :data:`TABLES`) and its ``meta`` JSON; returns
    the bytes written. Each table's partition is replaced whole (written under ``.tmp/``, then
    renamed), so a reader never sees half a file."""
    unknown = set(tables) - set(TABLES)
    if unknown:
        raise ValueError(f"not dataset tables: {sorted(unknown)}")
    staging = root / TMP / f"{partition_name(rank)}.{uuid.uuid4().hex}"
    written = 0
    try:
        for name, table in tables.items():
            part = staging / name / PART
            part.parent.mkdir(parents=True)
            stored = table.drop(columns=[RANK_KEY]) if RANK_KEY in table.columns else table
            _write_parquet(stored, part)
            written += part.stat().st_size
        meta_file = staging / META / META_FILE
        meta_file.parent.mkdir(parents=True)
        meta_file.write_text(json.dumps(meta, default=str))
        written += meta_file.stat().st_size
        for name in (*tables, META):
            _swap_in(staging / name, rank_dir(root, name, rank))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return written


def _swap_in(new: Path, final: Path) -> None:
    """Put directory ``new`` at ``final``, replacing what is there, by renames only."""
    final.parent.mkdir(parents=True, exist_ok=True)
    old = final.with_name(f".{final.name}.old-{uuid.uuid4().hex}")
    had_old = final.exists()
    if had_old:
        os.rename(final, old)
    os.rename(new, final)
    if had_old:
        shutil.rmtree(old, ignore_errors=True)


def remove_rank(root: Path, rank: int) -> None:
    """Delete every partition of ``rank`` (a rank that failed or went away)."""
    for name in (*TABLES, META):
        shutil.rmtree(rank_dir(root, name, rank), ignore_errors=True)


def stored_ranks(root: Path) -> set[int]:
    """Ranks that have any partition on disk (whatever the manifest says)."""
    ranks: set[int] = set()
    for name in (*TABLES, META):
        folder = root / name
        if folder.is_dir():
            ranks.update(
                int(p.name.split("=", 1)[1])
                for p in folder.iterdir()
                if p.name.startswith(f"{RANK_KEY}=") and p.name.split("=", 1)[1].isdigit()
            )
    return ranks


def has_rank(root: Path, rank: int) -> bool:
    """Whether every table and the meta of ``rank`` are on disk."""
    return (
        all((rank_dir(root, name, rank) / PART).is_file() for name in TABLES)
        and (rank_dir(root, META, rank) / META_FILE).is_file()
    )


# --- reading ---------------------------------------------------------------------------------


def read_rank_table(root: Path, table: str, rank: int) -> pd.DataFrame:
    """One rank's ``table`` as stored (no rank column); Trace tables conformed to their schema."""
    path = rank_dir(root, table, rank) / PART
    require_pyarrow()
    try:
        frame = _read_parquet(path)
    except Exception as err:  # pyarrow raises many types for a damaged or missing file
        raise TraceFormatError(path, f"unreadable dataset table {table}: {err}") from err
    if table in schema.TABLE_DTYPES:
        frame = schema.conform(frame, schema.TABLE_DTYPES[table])
    return frame


def _write_parquet(frame: pd.DataFrame, path: Path) -> None:
    """``frame`` as Parquet, with the categories of its categorical columns that hold no
    values (an empty table, or no categories) in the file's metadata: Parquet keeps no
    categories without values, and a stored table should read back equal to the parsed one."""
    bare = {
        str(c): {
            "values": [str(v) for v in frame[c].cat.categories],
            "dtype": str(frame[c].cat.categories.dtype),
        }
        for c in frame.columns
        if isinstance(frame[c].dtype, pd.CategoricalDtype)
        and (frame.empty or len(frame[c].cat.categories) == 0)
    }
    pq = require_pyarrow()
    import pyarrow as pa

    table = pa.Table.from_pandas(frame, preserve_index=False)
    if bare:
        metadata = dict(table.schema.metadata or {})
        metadata[_BARE_KEY] = json.dumps(bare).encode()
        table = table.replace_schema_metadata(metadata)
    pq.write_table(table, path, compression=COMPRESSION or "none")


_BARE_KEY = b"traceviz.bare_categories"


def _read_parquet(path: Path) -> pd.DataFrame:
    pq = require_pyarrow()
    import pyarrow as pa

    stored = pq.read_schema(path)
    dictionary = [
        c
        for c in DICTIONARY_COLUMNS
        if c in stored.names
        and (
            pa.types.is_string(stored.field(c).type)
            or pa.types.is_large_string(stored.field(c).type)
        )
    ]
    table = pq.read_table(path, read_dictionary=dictionary)
    frame = table.to_pandas()
    bare = json.loads((table.schema.metadata or {}).get(_BARE_KEY, b"{}"))
    for column, kept in bare.items():  # no values: nothing to recode
        categories = pd.Index(kept["values"], dtype=kept["dtype"])
        codes = [-1] * len(frame)
        frame[column] = pd.Categorical.from_codes(codes, categories=categories)
    return frame


def read_table(root: Path, table: str, ranks: Iterable[int]) -> pd.DataFrame:
    """``table`` across ``ranks``, concatenated in rank order, with ``rank`` (int64) as the
    first column. Categorical columns stay categorical (their categories united)."""
    frames = []
    for rank in sorted(set(ranks)):
        frame = read_rank_table(root, table, rank)
        frames.append(frame.assign(**{RANK_KEY: rank}))
    if not frames:
        return pd.DataFrame({RANK_KEY: pd.Series(dtype="int64")})
    out = _concat_keeping_categories(frames)
    out[RANK_KEY] = out[RANK_KEY].astype("int64")
    return out.loc[:, [RANK_KEY, *[c for c in out.columns if c != RANK_KEY]]]


def _concat_keeping_categories(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """``pd.concat``, except that a column categorical in every frame stays categorical."""
    from pandas.api.types import union_categoricals

    categorical = [
        c
        for c in frames[0].columns
        if all(c in f.columns and isinstance(f[c].dtype, pd.CategoricalDtype) for f in frames)
    ]
    out = pd.concat(frames, ignore_index=True)
    for column in categorical:
        out[column] = union_categoricals([f[column] for f in frames], ignore_order=True)
    return out


def read_meta(root: Path, rank: int) -> dict[str, Any]:
    """The rank's ``{"meta": TraceMeta JSON, "stats": ParseStats JSON, ...}``."""
    path = rank_dir(root, META, rank) / META_FILE
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise TraceFormatError(path, f"unreadable rank meta: {err}") from err
    if not isinstance(data, dict) or "meta" not in data or "stats" not in data:
        raise TraceFormatError(path, "rank meta lacks 'meta' or 'stats'")
    return data


# --- manifest and catalogue --------------------------------------------------------------------


def manifest_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Manifest rows (dicts keyed by :class:`ManifestColumns`) as a typed table, sorted by
    rank then source; absent keys and None are <NA> (NaN for floats)."""
    if not rows:
        return schema.empty_table(MANIFEST_DTYPES)
    frame = pd.DataFrame(
        {c: _typed_column([r.get(c) for r in rows], dt) for c, dt in MANIFEST_DTYPES.items()}
    )
    order = frame.sort_values(
        [ManifestColumns.rank, ManifestColumns.source], na_position="last", kind="stable"
    )
    return order.reset_index(drop=True)


def _typed_column(values: list[Any], dtype: str) -> pd.Series:
    """``values`` (with None / NA / NaN for missing) as a Series of ``dtype``, exactly
    (int64 nanoseconds do not pass through float)."""
    missing = [v is None or v is pd.NA or (isinstance(v, float) and v != v) for v in values]
    if dtype == "float64":
        return pd.Series(
            [float("nan") if m else float(v) for v, m in zip(values, missing, strict=True)],
            dtype=dtype,
        )
    if dtype == "Int64":
        ints = [0 if m else int(v) for v, m in zip(values, missing, strict=True)]
        return pd.Series(pd.arrays.IntegerArray(np.array(ints, dtype=np.int64), np.array(missing)))
    return pd.Series(
        [None if m else str(v) for v, m in zip(values, missing, strict=True)], dtype=dtype
    )


def read_manifest(root: Path) -> pd.DataFrame:
    """The manifest, or an empty one when the dataset has none yet. Every reader and writer of
    a dataset reads it first: without pyarrow, a :class:`UsageError` (:func:`require_pyarrow`)
    even when there is none yet."""
    require_pyarrow()
    path = root / MANIFEST
    if not path.is_file():
        return schema.empty_table(MANIFEST_DTYPES)
    try:
        frame = pd.read_parquet(path)
    except Exception as err:  # pyarrow raises many types for a damaged file
        raise TraceFormatError(path, f"unreadable manifest: {err}") from err
    for column in MANIFEST_DTYPES:
        if column not in frame.columns:
            frame[column] = pd.NA
    return schema.conform(frame, MANIFEST_DTYPES)


def write_manifest(root: Path, manifest: pd.DataFrame) -> None:
    """Replace the manifest by rename (readers see the old one or the new one, never half)."""
    _write_atomic_parquet(root / MANIFEST, schema.conform(manifest, MANIFEST_DTYPES))


def ok_ranks(manifest: pd.DataFrame) -> list[int]:
    """The ranks whose tables are in the dataset, ascending."""
    rows = manifest[manifest[ManifestColumns.status] == Status.ok]
    return sorted(int(r) for r in rows[ManifestColumns.rank].dropna().unique())


def read_runs(root: Path) -> pd.DataFrame:
    """The catalogue of ingests (empty when none)."""
    path = root / RUNS
    if not path.is_file():
        return schema.empty_table(RUN_DTYPES)
    require_pyarrow()
    try:
        return schema.conform(pd.read_parquet(path), RUN_DTYPES)
    except Exception as err:  # a damaged file
        raise TraceFormatError(path, f"unreadable runs catalogue: {err}") from err


def append_run(root: Path, row: Mapping[str, Any]) -> pd.DataFrame:
    """Append one ingest's row (keyed by :class:`RunColumns`) to ``runs.parquet``."""
    new = schema.conform(pd.DataFrame([dict(row)]), RUN_DTYPES)
    old = read_runs(root)
    runs = new if old.empty else pd.concat([old, new], ignore_index=True)
    runs = schema.conform(runs, RUN_DTYPES)
    _write_atomic_parquet(root / RUNS, runs)
    return runs


def dataset_bytes(root: Path) -> int:
    """Bytes of every file in the dataset (the benchmark's dataset size)."""
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def _write_atomic_parquet(path: Path, frame: pd.DataFrame) -> None:
    require_pyarrow()
    _write_atomic(path, lambda tmp: frame.to_parquet(tmp, index=False))


def _write_atomic(path: Path, write: Callable[[Path], object]) -> None:
    """``write`` a file beside ``path``, then rename it into place (readers never see half)."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
