"""Where ranks are ingested (traceviz.ranks.cluster): the rule that picks serial, a
LocalCluster or a running scheduler, and that Dask gives the same dataset as a serial run.

The job is 8 small ranks made from a sample run, rank 5 a planted straggler (Dask start-up
dominates; the NCCL job's collectives are tested serially in test_ranks_dataset.py, and Dask
writes byte-identical files, which these tests check). The scheduler + worker pair that
``TRACEVIZ_CLUSTER`` selects is started here as subprocesses on 127.0.0.1 and stopped in the
fixture's finally.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.test_ranks_dataset import SAMPLE_TRACE, STRAGGLER, WORLD
from traceviz.errors import UsageError
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
from traceviz.ranks.ingestion import IngestResult, ingest
from traceviz.ranks.load import open_dataset
from traceviz.ranks.synth import make_ranks

pytest.importorskip("distributed")

M = ds.ManifestColumns
# Per-process facts, not table contents: they differ between runs by nature.
VOLATILE = [M.parse_s, M.write_s, M.worker, M.worker_peak_rss_bytes, M.ingested_at]


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cluster_job")
    make_ranks(SAMPLE_TRACE, out, WORLD, straggler=STRAGGLER, seed=11)
    return out


@pytest.fixture(scope="module")
def serial(job: Path, tmp_path_factory: pytest.TempPathFactory) -> IngestResult:
    for name in (CLUSTER_ENV, DASK_ENV):  # module scope: monkeypatch is per test
        if os.environ.get(name):
            pytest.skip(f"{name} is set in the environment; this test needs a serial run")
    return ingest(job, tmp_path_factory.mktemp("serial") / "ds")


@pytest.fixture(autouse=True)
def no_cluster_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CLUSTER_ENV, raising=False)
    monkeypatch.delenv(DASK_ENV, raising=False)


# --- the rule ---------------------------------------------------------------------------------


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
    monkeypatch: pytest.MonkeyPatch, job: Path, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(UsageError, match=r"traceviz\[distributed\]"):
        ingest(job, tmp_path / "ds", workers=2)


def test_an_unreachable_scheduler_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch, job: Path, tmp_path: Path
) -> None:
    monkeypatch.setattr("traceviz.ranks.cluster.CONNECT_TIMEOUT_S", 1)
    with pytest.raises(UsageError, match=r"cannot reach the Dask scheduler 'tcp://127.0.0.1:9'"):
        ingest(job, tmp_path / "ds", cluster="tcp://127.0.0.1:9")


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
        for p in root.rglob("*")
        if p.is_file() and p.parent.name.startswith("rank=")
    }


def test_local_cluster_gives_the_serial_dataset(
    job: Path, serial: IngestResult, tmp_path: Path
) -> None:
    progress: list[tuple[int, int, int]] = []
    local = ingest(job, tmp_path / "ds", workers=2, progress=lambda *p: progress.append(p))
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


def test_traceviz_cluster_selects_a_running_scheduler(
    job: Path,
    serial: IngestResult,
    scheduler_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(CLUSTER_ENV, str(scheduler_file))
    remote = ingest(job, tmp_path / "ds", workers=2)  # the variable wins over workers=
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
