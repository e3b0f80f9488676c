"""The two sides of a comparison loaded and analysed at once (traceviz/pipeline.py,
traceviz/concurrent_sides.py): side b on the worker, really concurrent, errors in the
sequential order, Ctrl-C, and what the worker thread shares (the dashboard's TraceCache, the
parse's collector pause, the parse cache's deletions).

Each side's share of the diagnosis is done on the side's own thread (``pipeline._side``,
:func:`traceviz.diagnose.diagnose_side`): side b's single-trace rules run on the worker beside
side a's analysis, none after the join, and the report is the one the plain library path gives
(sides analysed, then compared, then diagnosed) on one sample run per code path and corpus
pair, with and without the sides at once; a side diagnosed ahead in another role is diagnosed
again in its own."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import traceviz
from tests.conftest import CORPUS, REPO, SAMPLES, kernel, launch, op
from tests.real_data import CORPUS_PAIRS, SAMPLE_RUNS
from traceviz import diagnose as diagnose_module
from traceviz import pipeline
from traceviz.analysis.compare import Side, analyze
from traceviz.analysis.fusion.lines import read_log
from traceviz.concurrent_sides import side_by_side
from traceviz.dashboard.loading import TraceCache, load_path
from traceviz.diagnose import diagnose_side
from traceviz.diagnose.facts import facts_of_side, side_facts
from traceviz.diagnose.rules import TRACE_RULES
from traceviz.errors import TraceFormatError
from traceviz.gc_pause import collector_paused
from traceviz.parse import cache as parse_cache
from traceviz.pipeline import compare, compare_run, compare_sides
from traceviz.report.formats import renderer
from traceviz.rundir import RunDir, read_run_dir
from traceviz.settings import CONCURRENT_ENV
from traceviz.trace import Trace

WORKER = pipeline.WORKER
NAMES = ("eager", "compiled")
WAIT_S = 30.0  # a barrier or event that should open at once; a sequential run times out


@pytest.fixture(autouse=True)
def any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sides at once whatever the files' sizes (the sample runs and the made traces are
    under the threshold: test_small_files_stay_on_one_thread checks it)."""
    monkeypatch.setattr(pipeline, "OVERLAP_MIN_BYTES", 0)


class Recorder:
    """A loader (``traceviz.load``) that notes which thread loaded which file."""

    def __init__(self) -> None:
        self.threads: dict[str, str] = {}
        self._lock = threading.Lock()

    def __call__(self, path: Path) -> Trace:
        with self._lock:
            self.threads[Path(path).name] = threading.current_thread().name
        return traceviz.load(path)


def _json(report: Any) -> str:
    return str(renderer("json").comparison(report, top=20))


@pytest.mark.parametrize("run", SAMPLE_RUNS)
def test_sample_runs_load_side_b_on_the_worker(run: str) -> None:
    """Side b (compiled) and the lines trace load on the worker, side a here (the report is
    the one-after-the-other one: the same-report tests below, both ways)."""
    directory = SAMPLES / run
    recorder = Recorder()
    compare_run(directory, load=recorder)
    assert recorder.threads["compiled.pt.trace.json.gz"] == WORKER
    assert recorder.threads["eager.pt.trace.json.gz"] == threading.current_thread().name
    if (directory / "eager_lines.pt.trace.json.gz").exists():
        assert recorder.threads["eager_lines.pt.trace.json.gz"] == WORKER


def test_default_loader_same_report_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's way in (the parser, the report cache off): the same JSON both ways."""
    monkeypatch.setenv("TRACEVIZ_NO_CACHE", "1")
    directory = SAMPLES / "h200" / "gpt2"
    monkeypatch.setenv(CONCURRENT_ENV, "0")
    sequential = _json(compare_run(directory))
    monkeypatch.delenv(CONCURRENT_ENV)
    assert _json(compare_run(directory)) == sequential


# --- really at once -------------------------------------------------------------------------


def _pair(tmp_trace: Callable[..., Path]) -> tuple[Path, Path]:
    """Two tiny traces of one kernel each."""
    paths = []
    for name in ("add", "mul"):
        events = [
            op(f"aten::{name}", 0, 20),
            launch("cudaLaunchKernel", 2, 5, 1),
            kernel(f"{name}_kernel", 10, 4, 1),
        ]
        paths.append(tmp_trace(events))
    return paths[0], paths[1]


def test_both_loads_run_at_once(tmp_trace: Callable[..., Path]) -> None:
    """Each load waits at a two-party barrier: one after the other, the first would wait
    alone and the barrier break (BrokenBarrierError), so this passes only when they overlap."""
    a, b = _pair(tmp_trace)
    barrier = threading.Barrier(2, timeout=WAIT_S)

    def load(path: Path) -> Trace:
        barrier.wait()
        return traceviz.load(path, cache=False)

    report = compare(a, b, load=load)
    assert report.a.trace.meta.source == str(a) and report.b.trace.meta.source == str(b)


def test_lines_trace_waits_for_side_b(tmp_trace: Callable[..., Path]) -> None:
    """The lines trace is loaded on the worker after side b (so b's error still comes before
    the lines'); side a on the calling thread."""
    a, b = _pair(tmp_trace)
    order: list[tuple[str, str]] = []

    def load(path: Path) -> Trace:
        order.append((path.name, threading.current_thread().name))
        return traceviz.load(path, cache=False)

    compare(a, b, load=load, eager_lines=a)
    here = threading.current_thread().name
    assert sorted(order) == sorted([(a.name, here), (b.name, WORKER), (a.name, WORKER)])
    assert [p for p in order if p[1] == WORKER] == [(b.name, WORKER), (a.name, WORKER)]


def test_no_thread_without_a_file_to_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loaded traces and analysed sides: nothing overlaps, so no worker is started; nor for
    one input given twice, nor beside an analysed side a (only its lines trace to load)."""
    started: list[str] = []
    real = threading.Thread.start

    def start(self: threading.Thread) -> None:
        started.append(self.name)
        real(self)

    trace_a = traceviz.load(SAMPLES / "pointwise" / "eager.pt.trace.json.gz")
    trace_b = traceviz.load(SAMPLES / "pointwise" / "compiled.pt.trace.json.gz")
    report = compare(trace_a, trace_b)
    monkeypatch.setattr(threading.Thread, "start", start)
    compare(trace_a, trace_b)
    compare(report.a, report.b)
    lines = SAMPLES / "pointwise" / "eager.pt.trace.json.gz"
    compare(report.a, SAMPLES / "pointwise" / "compiled.pt.trace.json.gz", eager_lines=lines)
    compare(trace_a, trace_a)
    path = SAMPLES / "pointwise" / "eager.pt.trace.json.gz"
    compare(path, Path(os.path.relpath(path)), load=traceviz.load)
    assert WORKER not in started
    compare(trace_a, SAMPLES / "pointwise" / "compiled.pt.trace.json.gz", load=traceviz.load)
    assert WORKER in started


def _b_on_worker(a: Path, b: Path, eager_lines: Path | None = None) -> bool:
    recorder = Recorder()
    compare(a, b, load=recorder, eager_lines=eager_lines)
    return recorder.threads[b.name] == WORKER


def test_small_files_and_one_cpu_stay_on_one_thread(
    monkeypatch: pytest.MonkeyPatch, tmp_trace: Callable[..., Path]
) -> None:
    """Below OVERLAP_MIN_BYTES of JSON in every file to load, no worker (its start and the
    GIL's hand-offs cost more than the little that overlaps); at it, one. On one CPU, none."""
    a, b = _pair(tmp_trace)
    biggest = max(a.stat().st_size, b.stat().st_size)
    for threshold, thread in ((biggest + 1, False), (biggest, True)):
        monkeypatch.setattr(pipeline, "OVERLAP_MIN_BYTES", threshold)
        assert _b_on_worker(a, b) is thread
    for cpus, thread in ((1, False), (2, True)):
        monkeypatch.setattr(pipeline, "_cpus", lambda n=cpus: n)
        assert _b_on_worker(a, b) is thread


def test_no_worker_when_side_a_cannot_be_read(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, tmp_trace: Callable[..., Path]
) -> None:
    """a missing, empty or unreadable: its error comes first and at once, so b's load and
    analysis would run on in the background for nothing; no worker, a's error as before."""
    a, b = _pair(tmp_trace)
    monkeypatch.setattr(pipeline, "OVERLAP_MIN_BYTES", 1)
    monkeypatch.setattr(pipeline, "_cpus", lambda: 2)
    assert pipeline._overlap(a, b, None)  # readable: a worker
    missing, empty = tmp_path / "missing.json", tmp_path / "empty.json"
    empty.write_bytes(b"")
    for bad in (missing, empty):
        assert not pipeline._overlap(bad, b, None)
        recorder = Recorder()
        with pytest.raises(TraceFormatError, match=bad.name):
            compare(bad, b, load=recorder)
        assert b.name not in recorder.threads  # b never loaded


def test_big_pairs_stay_on_one_thread(
    monkeypatch: pytest.MonkeyPatch, tmp_trace: Callable[..., Path]
) -> None:
    """Two loads at once hold both files' JSON at once: over OVERLAP_MAX_BYTES together (a's
    and b's, or a's and the lines trace's), one after the other."""
    a, b = _pair(tmp_trace)
    lines = tmp_trace([op("aten::add", 0, 20)] * 40)
    size = {p: p.stat().st_size for p in (a, b, lines)}
    assert size[lines] > size[b]
    for limit, eager_lines, thread in (
        (size[a] + size[b] - 1, None, False),
        (size[a] + size[b], None, True),
        (size[a] + size[lines] - 1, lines, False),
        (size[a] + size[lines], lines, True),
    ):
        monkeypatch.setattr(pipeline, "OVERLAP_MAX_BYTES", limit)
        assert _b_on_worker(a, b, eager_lines) is thread


@pytest.mark.parametrize("run", ["h200/gpt2", "gpt2-ort"])
def test_json_bytes_of_a_gzip_trace_is_its_inflated_size(run: str) -> None:
    import gzip

    path = SAMPLES / run / "eager.pt.trace.json.gz"
    assert pipeline._json_bytes(path) == len(gzip.decompress(path.read_bytes()))
    plain = CORPUS / "nvidia" / "v100_small_plain.json"
    if plain.exists():
        assert pipeline._json_bytes(plain) == plain.stat().st_size


# --- errors in the order of one side after the other -----------------------------------------


def _bad(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    path.write_text("this is not a trace")
    return path


@pytest.mark.parametrize("bad", ["a", "b"])
def test_a_side_error_names_its_file(
    tmp_path: Path, tmp_trace: Callable[..., Path], bad: str
) -> None:
    sides = dict(zip("ab", _pair(tmp_trace), strict=True))
    sides[bad] = _bad(tmp_path, f"bad_{bad}.json")
    with pytest.raises(TraceFormatError) as err:
        compare(sides["a"], sides["b"], load=traceviz.load)
    assert err.value.path == str(sides[bad])


def test_both_fail_side_a_error_first(tmp_path: Path) -> None:
    """b fails first (a waits until b's error is raised), yet a's error is the one raised."""
    a, b = _bad(tmp_path, "bad_a.json"), _bad(tmp_path, "bad_b.json")
    b_failed = threading.Event()

    def load(path: Path) -> Trace:
        if path == a:
            assert b_failed.wait(WAIT_S)
            time.sleep(0.05)  # let the worker finish raising (the order does not depend on it)
        else:
            b_failed.set()
        return traceviz.load(path, cache=False)

    with pytest.raises(TraceFormatError) as err:
        compare(a, b, load=load)
    assert err.value.path == str(a)


def test_side_b_error_is_the_same_object(tmp_trace: Callable[..., Path]) -> None:
    a, b = _pair(tmp_trace)
    raised = TraceFormatError(b, "made up")

    def load(path: Path) -> Trace:
        if path == b:
            raise raised
        return traceviz.load(path, cache=False)

    with pytest.raises(TraceFormatError) as err:
        compare(a, b, load=load)
    assert err.value is raised


def test_side_b_error_before_the_lines_trace(
    tmp_path: Path, tmp_trace: Callable[..., Path]
) -> None:
    a, b = _pair(tmp_trace)
    bad_b, bad_lines = _bad(tmp_path, "bad_b.json"), _bad(tmp_path, "bad_lines.json")
    with pytest.raises(TraceFormatError) as err:
        compare(a, bad_b, load=traceviz.load, eager_lines=bad_lines)
    assert err.value.path == str(bad_b)
    with pytest.raises(TraceFormatError) as err:
        compare(a, b, load=traceviz.load, eager_lines=bad_lines)
    assert err.value.path == str(bad_lines)


def test_side_a_error_does_not_wait_for_side_b(
    tmp_path: Path, tmp_trace: Callable[..., Path]
) -> None:
    """A failing side a is raised while side b still runs (b is let go afterwards)."""
    a = _bad(tmp_path, "bad_a.json")
    _, b = _pair(tmp_trace)
    release = threading.Event()

    def load(path: Path) -> Trace:
        if path == b:
            assert release.wait(WAIT_S)
        return traceviz.load(path, cache=False)

    try:
        with pytest.raises(TraceFormatError):
            compare(a, b, load=load)
        assert any(t.name == WORKER for t in threading.enumerate())  # b still running
    finally:
        release.set()


# --- side_by_side itself ----------------------------------------------------------------------


def test_interrupt_here_does_not_wait_for_the_worker() -> None:
    release = threading.Event()

    def here() -> None:
        raise KeyboardInterrupt

    try:
        with pytest.raises(KeyboardInterrupt):
            side_by_side(here, lambda: release.wait(WAIT_S), name="test-worker")
        worker = next(t for t in threading.enumerate() if t.name == "test-worker")
        assert worker.daemon and worker.is_alive()
    finally:
        release.set()


def test_ctrl_c_stops_the_wait_for_the_worker() -> None:
    """A process waiting for a worker that never ends stops on SIGINT with KeyboardInterrupt
    and exits (the daemon worker does not hold the interpreter up)."""
    script = (
        "import sys, threading\n"
        "from traceviz.concurrent_sides import side_by_side\n"
        "forever = threading.Event()\n"
        "side_by_side(lambda: print('waiting', flush=True), forever.wait)\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "waiting\n"
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=WAIT_S)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode != 0 and "KeyboardInterrupt" in stderr


def test_worker_sees_the_callers_context() -> None:
    import contextvars

    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    var.set("caller's")
    assert side_by_side(var.get, var.get) == ("caller's", "caller's")


# --- what the worker shares ---------------------------------------------------------------


class _SlowMoves(OrderedDict[str, Trace]):
    """The cache's dict with a pause inside each move to the end: another thread gets the
    GIL between a put's store (or a get's lookup) and its move, where an unlocked cache
    lets a third evict the key (KeyError) or grow past its bound."""

    def move_to_end(self, key: str, last: bool = True) -> None:
        time.sleep(0.0002)
        super().move_to_end(key, last)


def test_trace_cache_concurrent_put_get() -> None:
    """Six threads putting and getting over a 3-entry cache: no error, never more than 3
    entries, and a hit is the trace that was put under that key."""
    cache = TraceCache(entries=3)
    cache._items = _SlowMoves()
    traces = {f"k{i}": Trace.__new__(Trace) for i in range(6)}
    errors: list[BaseException] = []
    start = threading.Barrier(6, timeout=WAIT_S)

    def work(seed: int) -> None:
        try:
            start.wait()
            for i in range(200):
                key = f"k{(seed + i) % 6}"
                if i % 2:
                    cache.put(key, traces[key])
                else:
                    hit = cache.get(key)
                    assert hit is None or hit is traces[key]
                assert len(cache) <= 3
        except BaseException as err:  # reported by the test
            errors.append(err)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert 0 < len(cache) <= 3


def test_load_path_from_two_threads(tmp_trace: Callable[..., Path]) -> None:
    """The dashboard's loader, two threads at one file at once: both get the file's trace,
    and the cache holds one entry for it."""
    a, _ = _pair(tmp_trace)
    cache = TraceCache()
    barrier = threading.Barrier(2, timeout=WAIT_S)

    def load() -> Trace:
        barrier.wait()
        return load_path(a, cache=cache)

    first, second = side_by_side(load, load)
    assert first.meta.source == second.meta.source == str(a)
    again = load_path(a, cache=cache)
    assert len(cache) == 1 and (again is first or again is second)


def _overlapping_pauses() -> bool:
    """Two threads' collector pauses, the first ending while the second runs: whether the
    collector was on just after the first ended."""
    inside = threading.Barrier(2, timeout=WAIT_S)
    first_done = threading.Event()
    seen: list[bool] = []

    def first() -> None:
        with collector_paused():
            inside.wait()
        first_done.set()

    def second() -> None:
        with collector_paused():
            inside.wait()
            assert first_done.wait(WAIT_S)
            seen.append(gc.isenabled())

    side_by_side(first, second)
    return seen[0]


def test_collector_off_until_the_last_parse_ends() -> None:
    """Two overlapping parses: the collector stays off until the second ends, then is back
    on; one turned off before stays off."""
    assert gc.isenabled()
    assert _overlapping_pauses() is False
    assert gc.isenabled()
    gc.disable()
    try:
        assert _overlapping_pauses() is False
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_parse_cache_deletions_never_share_a_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Two threads deleting cache entries on the same clock tick rename each entry aside under
    its own name (one name for both: the second rename fails and that entry is deleted in
    place, where a reader may see it half gone)."""
    removed: list[Path] = []
    monkeypatch.setattr(parse_cache.time, "monotonic_ns", lambda: 42)
    monkeypatch.setattr(parse_cache.shutil, "rmtree", lambda p, **_: removed.append(Path(p)))
    entries = []
    for name in ("entry1", "entry2"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "entry.json").write_text("{}")
        entries.append(tmp_path / name)
    side_by_side(
        lambda: parse_cache.discard_entry(entries[0]),
        lambda: parse_cache.discard_entry(entries[1]),
    )
    assert len(removed) == 2 and not set(removed) & set(entries)
    assert all(p.name.startswith(".tmp-gone-") for p in removed)


# --- each side's share of the diagnosis on its own thread ----------------------------------


def _run(name: str) -> RunDir:
    path = SAMPLES / name
    if not (path / "run.json").is_file():
        pytest.skip(f"sample run {path} not found")
    return read_run_dir(path)


def _corpus(pair: tuple[str, str]) -> tuple[Path, Path]:
    a, b = (CORPUS / p for p in pair)
    if not (a.exists() and b.exists()):
        pytest.skip(f"corpus not found at {CORPUS}")
    return a, b


def _run_report(run: RunDir) -> Any:
    """A run's two traces through the front door (traces loaded by ``traceviz.load``)."""
    return compare(run.eager, run.compiled, names=NAMES, run_info=run.info,
                   compile_log=run.compile_log, load=traceviz.load,
                   eager_lines=run.eager_lines)  # fmt: skip


def _run_reference(run: RunDir) -> Any:
    """The same report the plain way: fresh sides analysed, compared, then diagnosed after
    (``pipeline.compare_sides``: no side diagnosed ahead)."""
    dynamo = run.info.dynamo if run.info is not None else None
    a = analyze(traceviz.load(run.eager), name=NAMES[0])
    b = analyze(traceviz.load(run.compiled), name=NAMES[1], dynamo=dynamo,
                compile_log=read_log(run.compile_log))  # fmt: skip
    lines = traceviz.load(run.eager_lines) if run.eager_lines is not None else None
    return compare_sides(a, b, run_info=run.info, compile_log=run.compile_log, eager_lines=lines)


def _pair_reference(a: Path, b: Path) -> Any:
    sides = (analyze(traceviz.load(p), name=n) for p, n in zip((a, b), NAMES, strict=True))
    return compare_sides(*sides, force=True)


# --- where each side's share runs -----------------------------------------------------------


class RuleCalls:
    """Every trace rule wrapped: which thread ran it on which side's facts, and whether the
    sides had been joined (the comparison begun) by then."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[str, str, bool]] = []
        self.joined = False
        # the list diagnose_facts reads (traceviz.diagnose's name for it), each rule wrapped
        monkeypatch.setattr(diagnose_module, "TRACE_RULES", [self._wrap(r) for r in TRACE_RULES])
        compare_analysed = pipeline.compare_analysed

        def joined(*args: Any, **kwargs: Any) -> Any:
            self.joined = True
            return compare_analysed(*args, **kwargs)

        monkeypatch.setattr(pipeline, "compare_analysed", joined)

    def _wrap(self, rule: Any) -> Any:
        def wrapped(facts: Any) -> Any:
            thread = threading.current_thread().name
            self.calls.append((thread, facts.name, self.joined))
            return rule(facts)

        return wrapped

    def threads(self, name: str) -> set[str]:
        return {thread for thread, side, _ in self.calls if side == name}


@pytest.mark.parametrize("concurrent", ["1", "0"])
def test_each_sides_share_runs_before_the_join(
    monkeypatch: pytest.MonkeyPatch, concurrent: str
) -> None:
    """At once, b's rules run on the worker beside a's analysis; one after the other, both
    here; either way none after the join, and each rule once a side: nothing redone."""
    monkeypatch.setenv(CONCURRENT_ENV, concurrent)
    calls = RuleCalls(monkeypatch)
    assert _run_report(_run("graph-break")).findings
    here = threading.current_thread().name
    assert calls.threads("compiled") == {WORKER if concurrent == "1" else here}
    assert calls.threads("eager") == {here}
    assert not any(joined for _, _, joined in calls.calls), "a trace rule ran after the join"
    assert len(calls.calls) == 2 * len(TRACE_RULES)


def test_side_returns_with_its_findings_kept() -> None:
    """``_side`` hands back a side whose facts in its role hold the findings and the tables
    the rules derive (the memo the comparison's diagnosis reads)."""
    run = _run("graph-break")
    side = pipeline._side(run.compiled, "compiled", traceviz.load, which="b", run_info=run.info)
    facts = side_facts(side, "b", run_info=run.info)
    assert {"findings", "chain_groups", "kernel_steps"} <= set(facts._memo)
    assert facts.variant == "compiled" and facts.expect_compiled
    assert facts._memo["findings"] == diagnose_side(side, "b", run_info=run.info)


# --- the same findings as the plain path ----------------------------------------------------


@pytest.mark.parametrize("concurrent", ["1", "0"])
@pytest.mark.parametrize("name", SAMPLE_RUNS)
def test_sample_runs_same_report_as_plain(
    monkeypatch: pytest.MonkeyPatch, name: str, concurrent: str
) -> None:
    monkeypatch.setenv(CONCURRENT_ENV, concurrent)
    run = _run(name)
    assert _json(_run_report(run)) == _json(_run_reference(run))


@pytest.mark.parametrize("concurrent", ["1", "0"])
@pytest.mark.parametrize("pair", CORPUS_PAIRS, ids=[a for a, _ in CORPUS_PAIRS])
def test_corpus_pairs_same_report_as_plain(
    monkeypatch: pytest.MonkeyPatch, pair: tuple[str, str], concurrent: str
) -> None:
    monkeypatch.setenv(CONCURRENT_ENV, concurrent)
    a, b = _corpus(pair)
    got = compare(a, b, names=NAMES, force=True, load=traceviz.load)
    assert _json(got) == _json(_pair_reference(a, b))


def test_side_diagnosed_ahead_in_another_role_is_diagnosed_again() -> None:
    """A side's share kept for one role (no run.json, or as side a) is not the comparison's
    when the side takes another: expect_compiled, variant and run.json are the comparison's."""
    run = _run("graph-break")
    assert run.info is not None
    dynamo = run.info.dynamo
    a = analyze(traceviz.load(run.eager), name=NAMES[0])
    b = analyze(traceviz.load(run.compiled), name=NAMES[1], dynamo=dynamo)
    diagnose_side(a, "b", run_info=None)  # the wrong side, no run.json
    diagnose_side(b, "b", run_info=None)  # no run.json
    ahead = side_facts(b, "b", run_info=None)
    report = compare_sides(a, b, run_info=run.info)
    fresh_a = analyze(traceviz.load(run.eager), name=NAMES[0])
    fresh_b = analyze(traceviz.load(run.compiled), name=NAMES[1], dynamo=dynamo)
    assert _json(report) == _json(compare_sides(fresh_a, fresh_b, run_info=run.info))
    assert side_facts(b, "b", run_info=run.info) is not ahead
    assert side_facts(b, "b", run_info=run.info).variant == "compiled"


def test_side_facts_is_the_comparisons() -> None:
    """What a side's thread fills is the very facts object the comparison's rules read."""
    run = _run("pointwise")
    sides = [
        pipeline._side(path, name, traceviz.load, which=which, run_info=run.info)
        for path, name, which in ((run.eager, "eager", "a"), (run.compiled, "compiled", "b"))
    ]
    report = compare_sides(*sides, run_info=run.info)
    for which, side in zip("ab", sides, strict=True):
        assert isinstance(side, Side)
        assert facts_of_side(report, which) is side_facts(side, which, run_info=run.info)
    with pytest.raises(ValueError, match="side must be"):
        side_facts(sides[0], "c", run_info=None)
