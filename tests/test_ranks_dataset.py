"""The ranks dataset (traceviz.ranks: detect, dataset, ingest, load, cluster; `traceviz ingest`).

Jobs of 8 ranks are made in the test from real traces (traceviz.ranks.synth): each rank its
own distributedInfo and clock offset, rank 5 planted as a straggler (its collectives start
late, its compute is slower). ``nccl_job`` is made from the corpus trace with NCCL kernels
(skipped without the corpus); ``sample_job`` from a sample run (always there).

Where ranks are ingested (traceviz.ranks.cluster): the rule that picks serial, a LocalCluster
or a running scheduler, and that Dask writes byte for byte the dataset a serial run writes
(on ``sample_job``: Dask start-up dominates). The scheduler + worker pair that
``TRACEVIZ_CLUSTER`` selects is started here as subprocesses on 127.0.0.1 and stopped in the
fixture's finally.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

pytest.importorskip("pyarrow", reason="pyarrow not installed (ranks extra)")

import pyarrow.parquet as pq

import traceviz
from tests.conftest import CORPUS, SAMPLES, corpus_params, load_trace
from traceviz.cli import main
from traceviz.errors import TraceFormatError, UsageError
from traceviz.ranks import dataset as ds
from traceviz.ranks.cluster import (
    CLUSTER_ENV,
    DASK_ENV,
    MIN_WORKER_BYTES,
    Kind,
    resolve_where,
    run_tasks,
    worker_memory_limit,
)
from traceviz.ranks.detect import RankBasis, detect_rank, read_prefix
from traceviz.ranks.ingestion import IngestResult, ingest
from traceviz.ranks.load import load_ranks, open_dataset
from traceviz.ranks.reduce import plain, reduce_rank
from traceviz.ranks.synth import make_ranks
from traceviz.settings import MAX_BYTES_ENV

NCCL_TRACE = CORPUS / "nvidia" / "a100_eager_nccl_rank.json.gz"
SAMPLE_TRACE = SAMPLES / "mlp" / "eager.pt.trace.json.gz"
WORLD = 8
STRAGGLER = 5
M = ds.ManifestColumns
# Per-process facts, not table contents: they differ between runs by nature.
VOLATILE = [M.parse_s, M.write_s, M.worker, M.worker_peak_rss_bytes, M.ingested_at]
needs_dask = pytest.mark.skipif(
    importlib.util.find_spec("distributed") is None, reason="distributed not installed"
)


@pytest.fixture(autouse=True)
def no_cluster_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Serial unless a test says otherwise, and the default size cap."""
    for name in (CLUSTER_ENV, DASK_ENV, MAX_BYTES_ENV):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def nccl_job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not NCCL_TRACE.is_file():
        pytest.skip(f"corpus trace {NCCL_TRACE} not found")
    out = tmp_path_factory.mktemp("nccl_job")
    make_ranks(NCCL_TRACE, out, WORLD, straggler=STRAGGLER, seed=7, hosts=2)
    return out


@pytest.fixture(scope="session")
def sample_job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sample_job")
    make_ranks(SAMPLE_TRACE, out, WORLD, straggler=STRAGGLER, seed=3)
    return out


@pytest.fixture(scope="session")
def nccl_ranks(nccl_job: Path, tmp_path_factory: pytest.TempPathFactory) -> traceviz.Ranks:
    return load_ranks(nccl_job, tmp_path_factory.mktemp("nccl_ds") / "ds")


# --- rank detection --------------------------------------------------------------------------


@pytest.mark.parametrize("path", corpus_params())
def test_detected_rank_is_the_parsed_headers_rank(path: Path) -> None:
    trace = load_trace(path)
    info = detect_rank(path)
    rank = trace.meta.distributed.get("rank")
    if rank is not None:
        assert (info.rank, info.basis) == (int(rank), RankBasis.header)
        assert info.world_size == trace.meta.distributed.get("world_size")
    else:
        assert info.rank is None  # corpus names carry no "rank<N>": no false match either


def test_rank_from_the_path_when_the_header_has_none(tmp_path: Path) -> None:
    doc = {"schemaVersion": 1, "traceEvents": []}
    path = tmp_path / "job_RANK-12" / "worker3.json"
    path.parent.mkdir()
    path.write_text(json.dumps(doc))
    assert (detect_rank(path).rank, detect_rank(path).basis) == (12, RankBasis.path)
    assert detect_rank(path, rank_regex=r"worker(\d+)").rank == 3
    assert detect_rank(path, rank_regex=r"nothing(\d+)").rank is None
    with pytest.raises(UsageError, match="group"):
        detect_rank(path, rank_regex=r"worker\d+")
    with pytest.raises(UsageError, match="not a regular expression"):
        detect_rank(path, rank_regex=r"worker(\d+")


def test_header_rank_wins_over_the_path_and_survives_a_truncated_gzip(tmp_path: Path) -> None:
    doc = {"schemaVersion": 1, "distributedInfo": {"rank": 6, "world_size": 8}}
    doc["traceEvents"] = [{"ph": "X", "name": "x" * 100, "ts": i, "dur": 1} for i in range(5000)]
    whole = gzip.compress(json.dumps(doc).encode())
    path = tmp_path / "rank2.json.gz"
    path.write_bytes(whole[: len(whole) // 3])  # cut off: only the head inflates
    info = detect_rank(path)
    assert (info.rank, info.world_size, info.basis) == (6, 8, RankBasis.header)
    assert len(read_prefix(path, limit=4096)) == 4096


# --- ingest and read back ----------------------------------------------------------------------


def test_ingest_round_trips_every_rank(nccl_job: Path, nccl_ranks: traceviz.Ranks) -> None:
    assert nccl_ranks.ranks == list(range(WORLD))
    assert nccl_ranks.failed.empty
    for rank in (0, STRAGGLER):
        source = nccl_job / f"rank{rank}.pt.trace.json.gz"
        parsed = traceviz.load(source)
        stored = nccl_ranks.trace(rank)
        for name, table in parsed.tables().items():
            pd.testing.assert_frame_equal(stored.tables()[name], table, obj=name)
        assert stored.meta == parsed.meta and stored.stats == parsed.stats
        small = reduce_rank(parsed, rank, str(source))
        for name in ("summary", "kernel_summary", "collectives"):
            got = getattr(nccl_ranks, name)
            got = got[got["rank"] == rank].reset_index(drop=True)
            pd.testing.assert_frame_equal(
                plain(got), plain(getattr(small, name)), obj=name, check_dtype=False
            )
    via_load = traceviz.load(nccl_ranks.dataset, rank=3)
    pd.testing.assert_frame_equal(via_load.kernels, nccl_ranks.trace(3).kernels)


def test_credits_add_up_to_what_was_parsed(nccl_job: Path, nccl_ranks: traceviz.Ranks) -> None:
    manifest = nccl_ranks.manifest
    events = {
        int(r): traceviz.load(nccl_job / f"rank{int(r)}.pt.trace.json.gz").stats.events_in
        for r in (0, STRAGGLER)
    }
    for rank, count in events.items():
        assert int(manifest.loc[manifest[M.rank] == rank, M.events].iloc[0]) == count
    run = nccl_ranks.runs.iloc[-1]
    assert run[ds.RunColumns.events] == manifest[M.events].sum()
    kernels = nccl_ranks.table("kernels")
    per_rank = kernels.groupby("rank").size()
    assert sorted(per_rank.index) == nccl_ranks.ranks
    assert per_rank.sum() == sum(len(nccl_ranks.trace(r).kernels) for r in nccl_ranks.ranks)
    comm = nccl_ranks.collectives.groupby("rank")["dur_us"].sum()
    summary = nccl_ranks.summary.set_index("rank")
    # what the small tables credit to each rank adds up to what its summary measured
    assert comm.to_numpy() == pytest.approx(summary["comm_time_us"].to_numpy())
    per_kernel = nccl_ranks.kernel_summary.groupby("rank", observed=True)["total_us"].sum()
    assert per_kernel.to_numpy() == pytest.approx(summary["kernel_time_us"].to_numpy())
    stored = sum(p.stat().st_size for p in _partitions(nccl_ranks.dataset))
    assert manifest[M.bytes_written].sum() == stored


def _partitions(root: Path) -> list[Path]:
    """Every file under a ``rank=`` partition of the dataset at ``root``."""
    return [p for p in root.rglob("*") if p.is_file() and p.parent.name.startswith("rank=")]


def test_names_are_dictionary_encoded_on_disk_and_categorical_in_memory(
    nccl_ranks: traceviz.Ranks,
) -> None:
    part = ds.rank_dir(nccl_ranks.dataset, "kernels", 0) / ds.PART
    assert str(pq.read_schema(part).field("name").type).startswith("dictionary")
    assert isinstance(nccl_ranks.table("kernels")["name"].dtype, pd.CategoricalDtype)
    assert isinstance(nccl_ranks.kernel_summary["name"].dtype, pd.CategoricalDtype)
    assert "rank" not in pq.read_schema(part).names  # the partition key lives in the path


def test_the_planted_straggler_is_found(nccl_ranks: traceviz.Ranks) -> None:
    found = nccl_ranks.stragglers()
    flagged = found.per_rank.loc[found.per_rank["straggler"], "rank"].tolist()
    assert flagged == [STRAGGLER]


def test_reingest_skips_unchanged_ranks(sample_job: Path, tmp_path: Path) -> None:
    job = shutil.copytree(sample_job, tmp_path / "job")
    first = ingest(job, tmp_path / "ds")
    part = ds.rank_dir(first.dataset, "ops", 2) / ds.PART
    written = part.stat().st_mtime_ns
    again = ingest(job, tmp_path / "ds")
    assert (first.ingested, again.ingested, again.skipped) == (WORLD, 0, WORLD)
    assert part.stat().st_mtime_ns == written
    assert again.manifest.equals(first.manifest)
    # the same size and mtime but another head: the hash sees it
    target = job / "rank4.pt.trace.json.gz"
    stat = target.stat()
    doc = json.loads(gzip.decompress(target.read_bytes()))
    doc["distributedInfo"]["backend"] = "gloo"
    data = gzip.compress(json.dumps(doc).encode(), compresslevel=1)
    target.write_bytes(data[: stat.st_size].ljust(stat.st_size, b"\0"))  # corrupt, same size
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    third = ingest(job, tmp_path / "ds")
    assert (third.ingested + third.failed, third.skipped) == (1, WORLD - 1)
    runs = open_dataset(first.dataset).runs
    assert len(runs) == 3
    assert runs[ds.RunColumns.run_id].iloc[0] == runs[ds.RunColumns.run_id].iloc[1]
    assert runs[ds.RunColumns.run_id].iloc[2] != runs[ds.RunColumns.run_id].iloc[0]


def test_corrupt_missing_unranked_and_duplicate_ranks_are_rows(
    sample_job: Path, tmp_path: Path
) -> None:
    job = shutil.copytree(sample_job, tmp_path / "job")
    ok = ingest(job, tmp_path / "ds")
    assert ok.failed == 0 and ds.has_rank(ok.dataset, 7)
    seven = job / "rank7.pt.trace.json.gz"
    seven.write_bytes(seven.read_bytes()[:3000])  # truncated: header readable, body not
    (job / "rank2.pt.trace.json.gz").unlink()  # missing
    (job / "notes.json").write_text("{not json")  # no rank, not a trace
    shutil.copy(job / "rank3.pt.trace.json.gz", job / "copy_of_rank3.pt.trace.json.gz")
    result = ingest(job, tmp_path / "ds")
    manifest = result.manifest
    failed = manifest[manifest[M.status] == ds.Status.failed].set_index(M.source)[[M.error]]
    errors = dict(zip(failed.index, failed[M.error], strict=True))
    assert str(seven) in errors and str(seven) in errors[str(seven)]
    assert errors[""].startswith("missing: no trace file for rank 2")
    assert errors[str(job / "notes.json")].startswith("no rank")
    assert "rank 3 is claimed by 2 files" in errors[str(job / "copy_of_rank3.pt.trace.json.gz")]
    assert result.failed == len(failed) == 5
    ranks = open_dataset(result.dataset)
    assert ranks.ranks == [0, 1, 4, 5, 6]
    assert not ds.has_rank(result.dataset, 7)  # a rank that now fails leaves no stale tables
    assert set(ranks.summary["rank"]) == set(ranks.ranks)
    assert not (result.dataset / ds.TMP).exists() or not any((result.dataset / ds.TMP).iterdir())


def test_a_failed_write_leaves_the_old_partitions(tmp_path: Path) -> None:
    trace = load_trace(SAMPLE_TRACE)
    small = reduce_rank(trace, 0, str(SAMPLE_TRACE))
    tables = {**trace.tables(), "summary": small.summary}
    root = tmp_path / "ds"
    ds.ensure_dataset(root)
    ds.write_rank(root, 0, tables, {"meta": trace.meta.to_json(), "stats": {}})
    before = ds.read_rank_table(root, "ops", 0)
    broken = dict(tables, spans="not a table")
    with pytest.raises(AttributeError):
        ds.write_rank(root, 0, broken, {"meta": {}, "stats": {}})  # type: ignore[arg-type]
    pd.testing.assert_frame_equal(ds.read_rank_table(root, "ops", 0), before)
    assert not any((root / ds.TMP).iterdir())


def test_bad_dataset_directories_are_one_clear_error(sample_job: Path, tmp_path: Path) -> None:
    other = tmp_path / "not_a_dataset"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    with pytest.raises(TraceFormatError, match="not a traceviz ranks dataset"):
        ingest(sample_job, other)
    with pytest.raises(TraceFormatError, match="not a traceviz ranks dataset"):
        open_dataset(other)
    with pytest.raises(UsageError, match="no trace files"):
        ingest(tmp_path / "nowhere" / "*.json.gz", tmp_path / "ds")
    assert not (tmp_path / "ds").exists()


def test_load_without_a_rank_on_a_dataset_says_so(sample_job: Path, tmp_path: Path) -> None:
    result = ingest(sample_job, tmp_path / "ds")
    assert traceviz._is_ranks_dataset(result.dataset)
    assert (result.dataset / ds.MARKER).is_file()
    with pytest.raises(UsageError, match="rank="):
        traceviz.load(result.dataset)
    with pytest.raises(UsageError, match=r"no rank 9 .*ranks: 0-7"):
        traceviz.load(result.dataset, rank=9)


def test_cli_ingest_reports_and_exits_1_when_a_rank_failed(
    sample_job: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = shutil.copytree(sample_job, tmp_path / "job")
    dataset = tmp_path / "ds"
    assert main(["ingest", str(job), "--cache", str(dataset), "--quiet"]) == 0
    assert f"{dataset}: {WORLD} ranks ({WORLD} ingested, 0 unchanged), 0 failed" in (
        capsys.readouterr().out
    )
    (job / "rank1.pt.trace.json.gz").write_bytes(b"\x1f\x8b broken")
    assert main(["ingest", str(job / "*.json.gz"), "--cache", str(dataset)]) == 1
    captured = capsys.readouterr()
    assert "7 unchanged" in captured.out and "failed: rank 1: " in captured.out
    assert "rank1.pt.trace.json.gz" in captured.out
    assert "ranks 7/8 done, 1 failed" in captured.err
    assert main(["ingest", str(tmp_path / "none*.json"), "--cache", str(dataset)]) == 2
    assert "traceviz ingest: error: no trace files" in capsys.readouterr().err
    assert main(["ingest", str(job), "--workers", "two"]) == 2
    small = tmp_path / "small"
    assert main(["ingest", str(job), "--cache", str(small), "--max-bytes", "1000", "--quiet"]) == 1
    errors = open_dataset(small).failed[M.error]
    assert len(errors) == WORLD  # rank 1 is corrupt (above), the others too large
    assert errors.str.contains("more than the limit of 1,000 bytes").sum() == WORLD - 1


def test_a_damaged_dataset_file_is_one_clear_error(sample_job: Path, tmp_path: Path) -> None:
    result = ingest(sample_job, tmp_path / "ds")
    part = ds.rank_dir(result.dataset, "kernels", 3) / ds.PART
    part.write_bytes(b"PAR1 not parquet")
    with pytest.raises(TraceFormatError, match=r"rank=00003.*unreadable dataset table kernels"):
        traceviz.load(result.dataset, rank=3)
    (ds.rank_dir(result.dataset, ds.META, 2) / ds.META_FILE).write_text("{")
    with pytest.raises(TraceFormatError, match="unreadable rank meta"):
        traceviz.load(result.dataset, rank=2)
    (ds.rank_dir(result.dataset, "summary", 1) / ds.PART).unlink()
    with pytest.raises(TraceFormatError, match="unreadable dataset table summary"):
        open_dataset(result.dataset)
    (result.dataset / ds.MANIFEST).write_bytes(b"")
    with pytest.raises(TraceFormatError, match="unreadable manifest"):
        open_dataset(result.dataset)
    assert main(["summary", str(result.dataset)]) == 2


def test_an_ingest_waits_for_the_one_writing_the_dataset(sample_job: Path, tmp_path: Path) -> None:
    import threading

    first = ingest(sample_job / "rank0.pt.trace.json.gz", tmp_path / "ds")
    released = threading.Event()
    seen: list[bool] = []
    real_read_manifest = ds.read_manifest

    def read_manifest(root: Path) -> pd.DataFrame:
        seen.append(released.is_set())  # False: it read while another writer held the lock
        return real_read_manifest(root)

    outcome: list[object] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ds, "read_manifest", read_manifest)
        with ds.writer_lock(first.dataset):
            second = threading.Thread(
                target=lambda: outcome.append(
                    ingest(sample_job / "rank1.pt.trace.json.gz", first.dataset)
                )
            )
            second.start()
            second.join(timeout=0.5)
            assert second.is_alive()  # it cannot finish while the lock is held
            released.set()
        second.join()
    assert seen == [True]
    assert ds.ok_ranks(outcome[0].manifest) == [0, 1]  # type: ignore[attr-defined]


def test_two_ingests_at_once_into_one_new_dataset_both_land(
    sample_job: Path, tmp_path: Path
) -> None:
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    dataset = tmp_path / "ds"
    jobs = [
        context.Process(
            target=ingest, args=(str(sample_job / f"rank{k}.pt.trace.json.gz"), str(dataset))
        )
        for k in (2, 3)
    ]
    for job in jobs:
        job.start()
    for job in jobs:
        job.join(timeout=300)
        assert job.exitcode == 0
    assert ds.ok_ranks(ds.read_manifest(dataset)) == [2, 3]
    assert not list(dataset.glob(f".{ds.MARKER}.*"))


def test_ranks_ingest_stays_the_function_after_its_module_is_imported() -> None:
    """``traceviz.ranks.ingest`` is the documented function; importing the module that holds
    it (as load_ranks does) must not replace it with a module of the same name."""
    import importlib

    import traceviz.ranks
    import traceviz.ranks.load  # imports the module that holds ingest

    importlib.import_module("traceviz.ranks.ingestion")
    assert callable(traceviz.ranks.ingest)
    assert traceviz.ranks.ingest is ingest


@pytest.fixture(scope="module")
def serial(sample_job: Path, tmp_path_factory: pytest.TempPathFactory) -> IngestResult:
    for name in (CLUSTER_ENV, DASK_ENV):  # module scope: monkeypatch is per test
        if os.environ.get(name):
            pytest.skip(f"{name} is set in the environment; this test needs a serial run")
    return ingest(sample_job, tmp_path_factory.mktemp("serial") / "ds")


# --- where ranks are ingested: the rule -----------------------------------------------------------


def test_first_match_wins() -> None:
    env = {CLUSTER_ENV: "tcp://127.0.0.1:1", DASK_ENV: "tcp://127.0.0.1:2"}
    assert resolve_where("tcp://127.0.0.1:9", 4, environ=env).address == "tcp://127.0.0.1:9"
    assert (resolve_where(None, 4, environ=env).chosen_by, resolve_where(None, 4, environ=env)
            .address) == (CLUSTER_ENV, "tcp://127.0.0.1:1")  # fmt: skip
    only_dask = resolve_where(None, 4, environ={DASK_ENV: "tcp://127.0.0.1:2"})
    assert (only_dask.kind, only_dask.chosen_by) == (Kind.cluster, DASK_ENV)
    local = resolve_where(None, 3, environ={}, largest_json_bytes=10 * 2**20)
    assert (local.kind, local.workers) == (Kind.local, 3)
    assert resolve_where(None, None, environ={}).kind == Kind.serial
    client = object()
    given = resolve_where(client, 2, environ=env)
    assert (given.kind, given.client) == (Kind.client, client)


def test_workers_auto_and_bad_values() -> None:
    auto = resolve_where(None, "auto", environ={}, tasks=64)
    assert auto.kind in (Kind.local, Kind.serial)
    if auto.kind == Kind.local:
        assert 2 <= (auto.workers or 0) <= (os.cpu_count() or 1)
    assert resolve_where(None, "auto", environ={}, tasks=1).kind == Kind.serial
    for bad in ("two", "0", -1, 0, True):
        with pytest.raises(UsageError, match="--workers"):
            resolve_where(None, bad, environ={})  # type: ignore[arg-type]


def test_worker_memory_is_sized_from_the_largest_trace() -> None:
    assert worker_memory_limit(0) == MIN_WORKER_BYTES
    small, big = worker_memory_limit(200 * 2**20), worker_memory_limit(400 * 2**20)
    assert small < big and big - small == 6 * 200 * 2**20


def test_asking_for_dask_without_the_extra_names_it(
    monkeypatch: pytest.MonkeyPatch, sample_job: Path, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(UsageError, match=r"traceviz\[distributed\]"):
        ingest(sample_job, tmp_path / "ds", workers=2)


@needs_dask
def test_an_unreachable_scheduler_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch, sample_job: Path, tmp_path: Path
) -> None:
    monkeypatch.setattr("traceviz.ranks.cluster.CONNECT_TIMEOUT_S", 1)
    with pytest.raises(UsageError, match=r"cannot reach the Dask scheduler 'tcp://127.0.0.1:9'"):
        ingest(sample_job, tmp_path / "ds", cluster="tcp://127.0.0.1:9")


# --- on Dask -----------------------------------------------------------------------------------


def assert_same_dataset(a: IngestResult, b: IngestResult) -> None:
    """Every rank's files byte for byte the same, the small tables equal, and the manifests
    equal but for per-process facts."""
    pd.testing.assert_frame_equal(
        a.manifest.drop(columns=VOLATILE), b.manifest.drop(columns=VOLATILE)
    )
    files_a, files_b = _partition_files(a.dataset), _partition_files(b.dataset)
    assert len(files_a) == (len(ds.TABLES) + 1) * WORLD
    assert files_a == files_b
    ranks_a, ranks_b = open_dataset(a.dataset), open_dataset(b.dataset)
    assert ranks_a.ranks == ranks_b.ranks == list(range(WORLD))
    for name in ("summary", "kernel_summary", "collectives"):
        pd.testing.assert_frame_equal(getattr(ranks_a, name), getattr(ranks_b, name), obj=name)
    pd.testing.assert_frame_equal(ranks_a.table("kernels"), ranks_b.table("kernels"))


def _partition_files(root: Path) -> dict[str, str]:
    """Every file under a ``rank=`` partition: its path in the dataset → a hash of its bytes."""
    return {
        str(p.relative_to(root)): hashlib.blake2b(p.read_bytes()).hexdigest()
        for p in _partitions(root)
    }


@needs_dask
def test_local_cluster_gives_the_serial_dataset(
    sample_job: Path, serial: IngestResult, tmp_path: Path
) -> None:
    progress: list[tuple[int, int, int]] = []
    local = ingest(sample_job, tmp_path / "ds", workers=2, progress=lambda *p: progress.append(p))
    assert local.where.startswith("LocalCluster(2 workers, 1 thread")
    assert_same_dataset(serial, local)
    assert len(set(local.manifest[M.worker])) == 2  # both workers took ranks
    assert progress[-1] == (WORLD, 0, WORLD) and len(progress) == WORLD + 1
    assert serial.where == "serial"


def test_a_given_client_runs_tasks_and_a_lost_task_is_a_row() -> None:
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, host="127.0.0.1", dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        where = resolve_where(client, None)
        lost: list[int] = []

        def on_lost(task: int, err: BaseException) -> int:
            lost.append(task)
            return -task

        results = run_tasks(_square_or_fail, [1, 2, 3], where, on_lost=on_lost)
        assert results == [1, -2, 9] and lost == [2]
        assert client.status == "running"  # a given Client is left open


def _square_or_fail(value: int) -> int:
    if value == 2:
        raise RuntimeError("this task is lost")
    return value * value


@pytest.fixture
def scheduler_file(tmp_path: Path) -> Any:
    """A `dask scheduler --scheduler-file` and one `dask worker` on 127.0.0.1."""
    path = tmp_path / "scheduler.json"
    common = ["--no-dashboard", "--host", "127.0.0.1"]
    procs = []
    try:
        procs.append(_start("distributed.cli.dask_scheduler", "--scheduler-file", path,
                            "--port", "0", *common))  # fmt: skip
        deadline = time.monotonic() + 30
        while not path.is_file() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert path.is_file(), "the scheduler did not write its file"
        procs.append(_start("distributed.cli.dask_worker", "--scheduler-file", path,
                            "--nthreads", "1", "--memory-limit", "2GiB", *common))  # fmt: skip
        import distributed

        with distributed.Client(scheduler_file=str(path), timeout="30s") as client:
            client.wait_for_workers(1, timeout=30)
        yield path
    finally:
        for proc in reversed(procs):
            _stop(proc)


def _start(module: str, *args: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", module, *map(str, args)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group this test started, SIGKILL it if it lingers."""
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


@needs_dask
def test_traceviz_cluster_selects_a_running_scheduler(
    sample_job: Path,
    serial: IngestResult,
    scheduler_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(CLUSTER_ENV, str(scheduler_file))
    remote = ingest(sample_job, tmp_path / "ds", workers=2)  # the variable wins over workers=
    assert remote.where == f"cluster {scheduler_file} ({CLUSTER_ENV})"
    assert_same_dataset(serial, remote)
    assert len(set(remote.manifest[M.worker])) == 1
    assert set(remote.manifest[M.worker]) != set(serial.manifest[M.worker])


@pytest.mark.filterwarnings("ignore:The inplace keyword:Warning")  # inside dask, on pandas 3
def test_any_engine_reads_one_table_across_ranks(serial: IngestResult) -> None:
    """The layout is plain hive partitioning: Dask and pyarrow read it with no traceviz code."""
    dd = pytest.importorskip("dask.dataframe")
    import pyarrow.dataset as pads

    ours = open_dataset(serial.dataset).table("kernels")
    theirs = dd.read_parquet(str(serial.dataset / "kernels")).compute()
    assert len(theirs) == len(ours) > 0
    assert sorted(int(r) for r in theirs["rank"].unique()) == list(range(WORLD))
    summary = pads.dataset(serial.dataset / "summary", partitioning="hive").to_table()
    assert sorted(summary.column("rank").to_pylist()) == list(range(WORLD))
