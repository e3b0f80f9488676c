"""Where the per-rank tasks run, and running them there: the only module that imports Dask.

First match wins (:func:`resolve_where`):

1. ``cluster=``: a ``distributed.Client`` (Python), a scheduler address (``tcp://host:8786``)
   or a scheduler file (``scheduler.json``, written by ``dask scheduler --scheduler-file``);
2. the ``TRACEVIZ_CLUSTER`` environment variable (an address or a scheduler file);
3. Dask's own ``DASK_SCHEDULER_ADDRESS``;
4. ``workers=N`` or ``"auto"``: a ``LocalCluster`` of N worker processes, one thread each,
   listening on 127.0.0.1 only, no dashboard, each with a memory limit sized from the largest
   trace (:func:`worker_memory_limit`);
5. else serially, in this process. There is no other pool.

So the same call runs against ``dask scheduler`` on a cluster, Slurm (dask-jobqueue),
Kubernetes (dask-kubernetes) or a hosted Dask by giving its address: the workers there need
traceviz installed and the trace files and the dataset directory at the same paths.
Without the ``distributed`` extra, asking for a cluster is a :class:`UsageError` naming it.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from traceviz.errors import UsageError

CLUSTER_ENV = "TRACEVIZ_CLUSTER"
DASK_ENV = "DASK_SCHEDULER_ADDRESS"
EXTRA_HINT = "pip install 'traceviz[distributed]'"
CONNECT_TIMEOUT_S = 20
# Parsing peaks at ~5x the JSON bytes (benchmarks/RESULTS.md: 999 MiB for 206 MB) on top of
# ~100 MiB of imports; a worker also holds Dask itself.
PARSE_MEMORY_FACTOR = 6
WORKER_BASE_BYTES = 512 * 2**20
MIN_WORKER_BYTES = 1 * 2**30

T = TypeVar("T")
R = TypeVar("R")


class Kind:
    """:attr:`Where.kind`."""

    serial = "serial"
    local = "local"  # a LocalCluster started (and closed) here
    cluster = "cluster"  # a running scheduler, by address or scheduler file
    client = "client"  # a distributed.Client given in Python


@dataclass(frozen=True)
class Where:
    """Where tasks run: ``kind`` (:class:`Kind`), ``address`` (scheduler address or file),
    ``workers`` and ``memory_limit`` (bytes per worker) of a LocalCluster, ``chosen_by`` (which
    rule picked it: ``cluster=``, ``TRACEVIZ_CLUSTER``, ``DASK_SCHEDULER_ADDRESS``,
    ``workers=``, ``default``) and the ``client`` object when one was given."""

    kind: str
    chosen_by: str
    address: str | None = None
    workers: int | None = None
    memory_limit: int | None = None
    client: Any = None

    def describe(self) -> str:
        """One line for progress and the runs catalogue."""
        if self.kind == Kind.serial:
            return "serial"
        if self.kind == Kind.local:
            mib = (self.memory_limit or 0) // 2**20
            return f"LocalCluster({self.workers} workers, 1 thread, {mib} MiB each)"
        if self.kind == Kind.client:
            address = getattr(getattr(self.client, "scheduler", None), "address", None)
            return f"Client({address or type(self.client).__name__})"
        return f"cluster {self.address} ({self.chosen_by})"


def total_memory_bytes() -> int:
    """Physical memory of this machine (0 when the platform does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return 0


def worker_memory_limit(largest_json_bytes: int) -> int:
    """Bytes a worker may use to parse a trace of ``largest_json_bytes`` JSON bytes:
    ``6 × JSON + 512 MiB``, at least 1 GiB, at most this machine's memory."""
    need = max(MIN_WORKER_BYTES, PARSE_MEMORY_FACTOR * largest_json_bytes + WORKER_BASE_BYTES)
    total = total_memory_bytes()
    return min(need, total) if total else need


def parse_workers(value: int | str | None) -> int | str | None:
    """``workers=`` / ``--workers``: a positive int, ``"auto"``, or ``None``."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip().lower()
        if text == "auto":
            return "auto"
        if not text.isdigit():
            raise UsageError(f"--workers {value!r}: give a number of workers or 'auto'")
        value = int(text)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"--workers {value!r}: give 1 or more workers, or 'auto'")
    return value


def resolve_where(
    cluster: Any = None,
    workers: int | str | None = None,
    *,
    tasks: int = 1,
    largest_json_bytes: int = 0,
    environ: Mapping[str, str] | None = None,
) -> Where:
    """Where ``tasks`` per-rank tasks run (module docstring: first match wins). ``auto``
    workers: as many as CPUs, tasks and memory (one :func:`worker_memory_limit` each) allow;
    when that is one, serially."""
    env = os.environ if environ is None else environ
    if cluster is not None and not isinstance(cluster, str | Path):
        return Where(Kind.client, "cluster=", client=cluster)
    if cluster is not None and str(cluster).strip():
        return Where(Kind.cluster, "cluster=", address=str(cluster).strip())
    for name in (CLUSTER_ENV, DASK_ENV):
        if env.get(name, "").strip():
            return Where(Kind.cluster, name, address=env[name].strip())
    count = parse_workers(workers)
    if count is None:
        return Where(Kind.serial, "default")
    limit = worker_memory_limit(largest_json_bytes)
    if count == "auto":
        total = total_memory_bytes()
        by_memory = max(1, total // limit) if total else os.cpu_count() or 1
        count = max(1, min(os.cpu_count() or 1, max(tasks, 1), by_memory))
        if count == 1:
            return Where(Kind.serial, "workers=auto")
    assert isinstance(count, int)
    return Where(Kind.local, "workers=", workers=count, memory_limit=limit)


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise UsageError(
            f"running ranks on Dask needs the distributed extra: {EXTRA_HINT}"
        ) from None
    return distributed


@contextmanager
def dask_client(where: Where) -> Iterator[Any]:
    """A ``distributed.Client`` for ``where`` (not serial); a LocalCluster started here is
    closed on exit, a given Client is left open. :class:`UsageError` when the scheduler cannot
    be reached."""
    if where.kind == Kind.client:
        yield where.client
        return
    distributed = _import_distributed()
    if where.kind == Kind.local:
        import logging

        try:
            with _workers_ignore_interrupts():
                local = distributed.LocalCluster(
                    n_workers=where.workers,
                    threads_per_worker=1,
                    processes=True,
                    memory_limit=where.memory_limit,
                    host="127.0.0.1",
                    dashboard_address=None,
                    silence_logs=logging.ERROR,
                )
        except (RuntimeError, OSError, TimeoutError) as err:
            raise UsageError(
                f"could not start a LocalCluster of {where.workers} workers ({err}); a script "
                "that starts one needs `if __name__ == '__main__':` (workers are spawned)"
            ) from None
        with local, distributed.Client(local) as client:
            yield client
        return
    address = where.address or ""
    options: dict[str, Any] = {"timeout": f"{CONNECT_TIMEOUT_S}s"}
    if Path(address).is_file():
        options["scheduler_file"] = address
    else:
        options["address"] = address
    try:
        client = distributed.Client(**options)
    except (OSError, TimeoutError, ValueError) as err:
        raise UsageError(
            f"cannot reach the Dask scheduler {address!r} ({where.chosen_by}): {err}"
        ) from None
    try:
        yield client
    finally:
        client.close()


@contextmanager
def _workers_ignore_interrupts() -> Iterator[None]:
    """SIGINT ignored while the LocalCluster spawns its worker processes, which inherit that:
    a Ctrl-C in the terminal reaches every process of the foreground group, and each worker
    would print its own KeyboardInterrupt traceback, and a cluster interrupted half-started
    fails again at exit. Only this process then stops, and closes the cluster; a Ctrl-C in
    these seconds of start-up is ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal dispositions are set from the main thread only
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def run_tasks(
    fn: Callable[[T], R],
    tasks: Sequence[T],
    where: Where,
    *,
    on_result: Callable[[int, R], None] | None = None,
    on_lost: Callable[[T, BaseException], R],
) -> list[R]:
    """``[fn(t) for t in tasks]``, run where ``where`` says, results in task order.

    ``on_result(index, result)`` is called as each finishes (in completion order: progress).
    ``fn`` is expected to catch its own errors; a task Dask loses (its worker killed, e.g. for
    memory) becomes ``on_lost(task, error)`` instead of stopping the others.
    """
    if where.kind == Kind.serial or not tasks:
        results: list[R] = []
        for index, task in enumerate(tasks):
            results.append(fn(task))
            if on_result:
                on_result(index, results[-1])
        return results
    distributed = _import_distributed()
    with dask_client(where) as client:
        futures = client.map(fn, list(tasks), pure=False)
        index_of = {future.key: i for i, future in enumerate(futures)}
        done: dict[int, R] = {}
        for future in distributed.as_completed(futures):
            index = index_of[future.key]
            try:
                done[index] = future.result()
            except Exception as err:  # KilledWorker, CommClosedError, ...: the task is lost
                done[index] = on_lost(tasks[index], err)
            if on_result:
                on_result(index, done[index])
        return [done[i] for i in range(len(tasks))]
