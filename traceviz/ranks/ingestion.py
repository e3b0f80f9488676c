"""Trace files of many ranks → a ranks dataset (:mod:`traceviz.ranks.dataset`), one task per
rank, serially or on Dask (:mod:`traceviz.ranks.cluster`).

Each task (:func:`ingest_rank`) runs ``traceviz.load`` on one file, writes that rank's Trace
tables and its :func:`~traceviz.ranks.reduce.reduce_rank` tables, and returns one small
manifest row: the full tables never travel back. Ingest is

- **incremental**: a file whose size, mtime and head hash are those of its ``ok`` manifest row
  (and whose partitions are on disk) is not parsed again;
- **atomic**: each rank's partitions are renamed into place, and the manifest, written last,
  says which ranks are whole;
- **forgiving**: a file that cannot be read, parsed or given a rank, two files claiming one
  rank, and a rank below ``world_size`` that no file provides are each a ``failed`` manifest
  row with its error; the other ranks go on.
"""

from __future__ import annotations

import glob
import hashlib
import os
import socket
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from traceviz._version import __version__
from traceviz.errors import TraceVizError, UsageError
from traceviz.ranks import dataset as ds
from traceviz.ranks.cluster import resolve_where, run_tasks
from traceviz.ranks.detect import (
    compile_rank_regex,
    detect_rank,
    file_identity,
    json_size,
)
from traceviz.ranks.reduce import reduce_rank

M = ds.ManifestColumns
DEFAULT_DATASET_NAME = "traceviz-dataset"
TRACE_SUFFIXES = (".json", ".json.gz")

#: ``progress(done, failed, total)`` after each rank (skipped ranks count as done up front).
Progress = Callable[[int, int, int], None]


@dataclass(frozen=True)
class RankTask:
    """One rank to ingest: the file, its rank and identity, and where the dataset is."""

    source: str
    rank: int
    rank_basis: str
    world_size: int | None
    size: int
    mtime_ns: int
    head_hash: str
    dataset: str
    max_bytes: int | None
    ingested_at: str


@dataclass(frozen=True)
class IngestResult:
    """What an ingest did: the ``dataset`` directory, its ``manifest`` afterwards (columns:
    :class:`~traceviz.ranks.dataset.ManifestColumns`), ranks ``ingested`` (parsed now),
    ``skipped`` (unchanged), ``failed`` (manifest rows that failed), ``where`` the tasks ran
    and the ``wall_s`` seconds it took."""

    dataset: Path
    manifest: pd.DataFrame
    ingested: int
    skipped: int
    failed: int
    where: str
    wall_s: float

    @property
    def ok(self) -> int:
        """Ranks in the dataset."""
        return len(ds.ok_ranks(self.manifest))


# --- the task --------------------------------------------------------------------------------


def ingest_rank(task: RankTask) -> dict[str, Any]:
    """Parse one rank's trace, write its tables, return its manifest row. Never raises for a
    bad trace: the row says ``failed`` with the error (runs on a Dask worker)."""
    from traceviz.parse import load_trace

    row = _task_row(task)
    root = Path(task.dataset)
    start = time.perf_counter()
    try:
        # the dataset is this trace's cache: no second copy in the parse cache
        trace = load_trace(task.source, max_bytes=task.max_bytes, cache=False)
    except (TraceVizError, OSError, MemoryError) as err:
        return _failed(row, err)
    except Exception as err:  # a bug in the parser: this rank fails, the job goes on
        return _failed(row, err, bug=True)
    row[M.parse_s] = time.perf_counter() - start
    row[M.events] = trace.stats.events_in
    start = time.perf_counter()
    try:
        small = reduce_rank(trace, task.rank, task.source)
        tables = {
            **trace.tables(),
            "summary": small.summary,
            "kernel_summary": small.kernel_summary,
            "collectives": small.collectives,
        }
        meta = {"meta": trace.meta.to_json(), "stats": trace.stats.to_json()}
        row[M.bytes_written] = ds.write_rank(root, task.rank, tables, meta)
    except Exception as err:  # reduce or write failed: no half rank is left behind
        ds.remove_rank(root, task.rank)
        return _failed(row, err, bug=not isinstance(err, TraceVizError | OSError))
    row[M.write_s] = time.perf_counter() - start
    row[M.status] = ds.Status.ok
    row.update(_worker())
    return row


def _task_row(task: RankTask) -> dict[str, Any]:
    return {
        M.source: task.source,
        M.rank: task.rank,
        M.rank_basis: task.rank_basis,
        M.world_size: task.world_size,
        M.status: ds.Status.failed,
        M.error: "",
        M.size: task.size,
        M.mtime_ns: task.mtime_ns,
        M.head_hash: task.head_hash,
        M.ingested_at: task.ingested_at,
    }


def _failed(row: dict[str, Any], err: BaseException, *, bug: bool = False) -> dict[str, Any]:
    text = str(err) if isinstance(err, TraceVizError) else f"{type(err).__name__}: {err}"
    if bug:
        text = f"internal error (please report): {text}"
    return {**row, M.status: ds.Status.failed, M.error: " ".join(text.split()), **_worker()}


def _worker() -> dict[str, Any]:
    """This process's name and peak RSS so far (Linux reports KiB, macOS bytes)."""
    peak: int | None = None
    try:
        import resource

        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        peak = int(rss if sys.platform == "darwin" else rss * 1024)
    except (ImportError, OSError):
        pass
    return {M.worker: f"{socket.gethostname()}:{os.getpid()}", M.worker_peak_rss_bytes: peak}


def lost_task(task: RankTask, err: BaseException) -> dict[str, Any]:
    """The manifest row of a task Dask lost (its worker died, e.g. out of memory)."""
    ds.remove_rank(Path(task.dataset), task.rank)
    row = _task_row(task)
    message = " ".join(f"{type(err).__name__}: {err}".split())
    return {**row, M.error: f"worker lost: {message}"}


# --- inputs ----------------------------------------------------------------------------------


def expand_inputs(inputs: str | Path | Sequence[str | Path]) -> list[Path]:
    """Trace files from paths, directories (searched recursively for ``*.json``,
    ``*.json.gz``, skipping ranks datasets) and globs; absolute, sorted, unique.
    :class:`UsageError` when no file is there (a missing one among others becomes a failed
    manifest row)."""
    items = [inputs] if isinstance(inputs, str | Path) else list(inputs)
    found: set[Path] = set()
    for item in items:
        text = str(item)
        path = Path(text).expanduser()
        if ds.is_dataset(path):
            raise UsageError(f"{text}: is a ranks dataset already; give the trace files")
        if path.is_dir():
            found.update(p for p in path.rglob("*") if p.name.endswith(TRACE_SUFFIXES)
                         and p.is_file() and not _inside_dataset(p))  # fmt: skip
        elif glob.has_magic(text):
            matches = [Path(m) for m in glob.glob(os.path.expanduser(text), recursive=True)]
            found.update(m for m in matches if m.is_file() and not _inside_dataset(m))
        else:
            found.add(path)  # a missing file becomes a failed manifest row
    if not any(p.exists() for p in found):
        raise UsageError(f"no trace files (*.json, *.json.gz) in {', '.join(map(str, items))}")
    return sorted(p.absolute() for p in found)


def _inside_dataset(path: Path) -> bool:
    return any(ds.is_dataset(parent) for parent in path.parents)


# --- planning ---------------------------------------------------------------------------------


@dataclass
class _Plan:
    tasks: list[RankTask]
    kept: list[dict[str, Any]]  # manifest rows carried over unchanged (skipped ranks)
    failed: list[dict[str, Any]]  # rows failed before any task ran


def _plan(
    sources: Sequence[Path],
    root: Path,
    previous: pd.DataFrame,
    *,
    rank_regex: str | None,
    max_bytes: int | None,
    now: str,
) -> _Plan:
    regex = compile_rank_regex(rank_regex)
    plan = _Plan([], [], [])
    candidates: list[RankTask] = []
    for source in sources:
        base = {M.source: str(source), M.status: ds.Status.failed, M.ingested_at: now}
        try:
            identity = file_identity(source)
            info = detect_rank(source, rank_regex=regex)
        except OSError as err:
            plan.failed.append({**base, M.error: f"cannot read: {err.strerror or err}"})
            continue
        if info.rank is None:
            error = (
                "no rank: the header has no distributedInfo.rank and the path does not "
                f"match --rank-regex {regex.pattern!r}"
            )
            plan.failed.append({**base, M.error: error, M.size: identity.size})
            continue
        candidates.append(
            RankTask(
                source=str(source),
                rank=info.rank,
                rank_basis=info.basis or "",
                world_size=info.world_size,
                size=identity.size,
                mtime_ns=identity.mtime_ns,
                head_hash=identity.head_hash,
                dataset=str(root),
                max_bytes=max_bytes,
                ingested_at=now,
            )
        )
    claimed: dict[int, list[RankTask]] = {}
    for task in candidates:
        claimed.setdefault(task.rank, []).append(task)
    old = {str(r[M.source]): r for r in _records(previous)}
    for rank, tasks in sorted(claimed.items()):
        if len(tasks) > 1:
            names = ", ".join(t.source for t in tasks)
            error = f"rank {rank} is claimed by {len(tasks)} files ({names})"
            plan.failed.extend({**_task_row(t), M.error: error} for t in tasks)
            continue
        task = tasks[0]
        before = old.get(task.source)
        if before is not None and _unchanged(before, task) and ds.has_rank(root, rank):
            plan.kept.append(before)
        else:
            plan.tasks.append(task)
    return plan


def _unchanged(row: dict[str, Any], task: RankTask) -> bool:
    return (
        row[M.status] == ds.Status.ok
        and _same(row[M.rank], task.rank)
        and _same(row[M.size], task.size)
        and _same(row[M.mtime_ns], task.mtime_ns)
        and row[M.head_hash] == task.head_hash
    )


def _same(value: Any, expected: int) -> bool:
    return _is_int(value) and int(value) == expected


def _carried_over(previous: pd.DataFrame, plan: _Plan) -> list[dict[str, Any]]:
    """Rows of earlier ingests for files not given this time, kept when the file is still
    there and its rank not claimed by a file given now (a rank can be added in pieces); rows
    of files gone and missing-rank rows are dropped (the rank is missing again)."""
    given = {t.source for t in plan.tasks} | {str(r[M.source]) for r in plan.kept + plan.failed}
    ranks_now = {t.rank for t in plan.tasks} | {
        int(r[M.rank]) for r in plan.kept + plan.failed if _is_int(r.get(M.rank))
    }
    kept = []
    for row in _records(previous):
        source = str(row[M.source]) if row[M.source] is not pd.NA else ""
        if not source or source in given or not Path(source).exists():
            continue
        if _is_int(row[M.rank]) and int(row[M.rank]) in ranks_now:
            continue
        kept.append(row)
    return kept


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): v for k, v in row.items()} for row in frame.to_dict("records")]


def _is_int(value: Any) -> bool:
    return (
        value is not None
        and value is not pd.NA
        and not (isinstance(value, float) and value != value)
    )


def _missing_ranks(rows: list[dict[str, Any]], now: str) -> list[dict[str, Any]]:
    """A failed row for each rank below the largest ``world_size`` that no file provides."""
    sizes = [int(r[M.world_size]) for r in rows if _is_int(r.get(M.world_size))]
    if not sizes:
        return []
    world = max(sizes)
    present = {int(r[M.rank]) for r in rows if _is_int(r.get(M.rank))}
    return [
        {
            M.source: "",
            M.rank: rank,
            M.world_size: world,
            M.status: ds.Status.failed,
            M.error: f"missing: no trace file for rank {rank} (world_size {world})",
            M.ingested_at: now,
        }
        for rank in range(world)
        if rank not in present
    ]


# --- the ingest --------------------------------------------------------------------------------


def ingest(
    inputs: str | Path | Sequence[str | Path],
    cache: str | Path | None = None,
    *,
    cluster: Any = None,
    workers: int | str | None = None,
    rank_regex: str | None = None,
    max_bytes: int | None = None,
    progress: Progress | None = None,
) -> IngestResult:
    """Ingest the trace files ``inputs`` (paths, directories, globs) into the dataset at
    ``cache`` (default: ``traceviz-dataset`` in the files' common folder).

    ``cluster`` / ``workers`` say where the tasks run (:func:`~traceviz.ranks.cluster.
    resolve_where`); ``rank_regex`` reads a rank from a path whose trace header has none
    (default ``rank[-_=]?(\\d+)``); ``max_bytes`` caps each trace's JSON size
    (``traceviz.load``'s). ``progress(done, failed, total)`` is called after each rank.
    Without pyarrow, a :class:`UsageError` naming the ``ranks`` extra before any work.
    """
    from traceviz.parse.read import max_bytes as resolve_max_bytes

    ds.require_pyarrow()  # not a failed row per rank after each parse
    sources = expand_inputs(inputs)
    common = Path(os.path.commonpath([str(p.parent) for p in sources]))  # default: beside them
    root = Path(cache).expanduser().absolute() if cache else common / DEFAULT_DATASET_NAME
    try:
        ds.ensure_dataset(root)
    except OSError as err:
        raise UsageError(f"cannot write the dataset at {root}: {err.strerror or err}") from None
    with ds.writer_lock(root):  # from reading the manifest to appending the run
        started = time.perf_counter()
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        previous = ds.read_manifest(root)
        cap = resolve_max_bytes(max_bytes)
        plan = _plan(sources, root, previous, rank_regex=rank_regex, max_bytes=cap, now=now)
        where = resolve_where(
            cluster,
            workers,
            tasks=len(plan.tasks),
            largest_json_bytes=max((_json_size(t) for t in plan.tasks), default=0),
        )
        counts = {"done": len(plan.kept), "failed": len(plan.failed)}

        def on_result(_index: int, row: dict[str, Any]) -> None:
            counts["done" if row[M.status] == ds.Status.ok else "failed"] += 1
            if progress:
                progress(counts["done"], counts["failed"], len(sources))

        if progress:  # skipped ranks count as done up front
            progress(counts["done"], counts["failed"], len(sources))
        rows = run_tasks(ingest_rank, plan.tasks, where, on_result=on_result, on_lost=lost_task)
        rows += plan.kept + plan.failed + _carried_over(previous, plan)
        rows += _missing_ranks(rows, now)
        manifest = ds.manifest_frame(rows)
        for rank in ds.stored_ranks(root) - set(ds.ok_ranks(manifest)):
            ds.remove_rank(root, rank)
        ds.write_manifest(root, manifest)
        result = IngestResult(
            dataset=root,
            manifest=manifest,
            ingested=sum(1 for r in rows[: len(plan.tasks)] if r[M.status] == ds.Status.ok),
            skipped=len(plan.kept),
            failed=int((manifest[M.status] == ds.Status.failed).sum()),
            where=where.describe(),
            wall_s=time.perf_counter() - started,
        )
        ds.append_run(root, _run_row(result, inputs, now))
        return result


def _json_size(task: RankTask) -> int:
    try:
        return json_size(Path(task.source))
    except OSError:
        return 0


def _run_row(result: IngestResult, inputs: Any, now: str) -> dict[str, Any]:
    manifest = result.manifest
    ok = manifest[manifest[M.status] == ds.Status.ok]
    key = ";".join(
        f"{int(r)}:{int(s)}:{h}"
        for r, s, h in zip(ok[M.rank], ok[M.size], ok[M.head_hash], strict=True)
    )
    world = manifest[M.world_size].dropna()
    items = [inputs] if isinstance(inputs, str | Path) else list(inputs)
    return {
        ds.RunColumns.run_id: hashlib.blake2b(key.encode(), digest_size=8).hexdigest(),
        ds.RunColumns.ingested_at: now,
        ds.RunColumns.dataset: str(result.dataset),
        ds.RunColumns.inputs: "; ".join(map(str, items)),
        ds.RunColumns.ranks_ok: len(ok),
        ds.RunColumns.ranks_failed: result.failed,
        ds.RunColumns.ranks_ingested: result.ingested,
        ds.RunColumns.ranks_skipped: result.skipped,
        ds.RunColumns.world_size: int(world.max()) if len(world) else pd.NA,
        ds.RunColumns.events: int(ok[M.events].fillna(0).sum()),
        ds.RunColumns.wall_s: result.wall_s,
        ds.RunColumns.where: result.where,
        ds.RunColumns.traceviz_version: __version__,
    }
