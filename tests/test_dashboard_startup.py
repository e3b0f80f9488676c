"""``traceviz dashboard A B`` starts the load before Panel is imported, and both run at once.

GIVEN the command with a run directory or two traces, WHEN it starts, THEN the traces are read
and analysed on a worker thread that begins before the main thread imports Panel (and warms it
up), each once; a load error is the same one line and exit code 2 as before, and the server
never starts; Ctrl-C stops the command at once, whether Panel is still starting or the load is
still running. By default only traces of 16 MiB of JSON or more load beside Panel (small ones
are mostly Python, which only takes turns with Panel's import); ``TRACEVIZ_DASHBOARD_OVERLAP=0``
does one after the other, Panel first (the order before), ``=1`` always at once.
The order is recorded (which thread did what, in which order), never timed.
"""

from __future__ import annotations

import _thread
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, SAMPLES

pytest.importorskip("panel", reason="panel not installed (dashboard extra)")
pytest.importorskip("plotly", reason="plotly not installed (dashboard extra)")

from traceviz.cli import main
from traceviz.commands import dashboard as command
from traceviz.errors import UsageError

RUN = SAMPLES / "graph-break"
CORPUS_PAIR = ("eager_train_control", "compiled_cudagraph_train_2023")  # A100, 58 MiB of JSON
WAIT_S = 120  # generous: a loaded 2-core machine; a correct run never waits this long

# A fresh interpreter running the console script's main on ARGS, recording in order: the load
# starting and ending (traceviz.dashboard.loading.comparison_from_args, wrapped), the first
# import of Panel, each warm-up of Panel, with the thread of each. With the overlap on, the
# load is held until Panel's import has begun (it must begin while the load runs). The
# events go to stdout as JSON at exit; the test stops the server with SIGINT (Ctrl-C).
CHILD = textwrap.dedent(
    """
    import atexit, builtins, json, os, sys, threading
    events, panel_started = [], threading.Event()
    hold = os.environ.get("TRACEVIZ_DASHBOARD_OVERLAP") == "1"

    def record(what):
        events.append([what, threading.current_thread().name])

    real_import = builtins.__import__

    def probing_import(name, *args, **kwargs):
        if (name == "panel" or name.startswith("panel.")) and not panel_started.is_set():
            if "panel" not in sys.modules:
                record("panel import starts")
            panel_started.set()
        module = real_import(name, *args, **kwargs)
        serve = sys.modules.get("traceviz.dashboard.serve")
        if hasattr(serve, "warm_up") and not hasattr(serve, "_probed"):  # once defined
            serve._probed = True
            warm_up = serve.warm_up

            def counted():
                record("warm-up")
                return warm_up()

            serve.warm_up = counted
        return module

    builtins.__import__ = probing_import
    from traceviz.dashboard import loading

    real_load = loading.comparison_from_args

    def recorded(paths, *, names=None):
        record("load starts")
        if hold:
            panel_started.wait(WAIT_S)
        value = real_load(paths, names=names)
        record("load ends")
        return value

    loading.comparison_from_args = recorded
    atexit.register(lambda: print(json.dumps(events), flush=True))
    from traceviz.cli import main
    sys.exit(main())
    """
).replace("WAIT_S", str(WAIT_S))


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run_child(args: list[str], overlap: str | None) -> tuple[list[list[str]], str, int]:
    """The command in a fresh interpreter until it serves, then Ctrl-C: its recorded events,
    its stderr and its exit code."""
    env = dict(os.environ)
    env.pop(command.OVERLAP_ENV, None)
    if overlap is not None:
        env[command.OVERLAP_ENV] = overlap
    cmd = [sys.executable, "-c", CHILD, "dashboard", *args, "--no-show"]
    cmd += ["--port", str(_free_port())]
    proc = subprocess.Popen(
        cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stderr is not None and proc.stdout is not None
    err: list[str] = []
    try:
        for line in proc.stderr:  # until it serves (or ends)
            err.append(line)
            if ": serving on " in line:
                proc.send_signal(signal.SIGINT)
                break
        out, rest = proc.communicate(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = "".join(err) + rest
    lines = out.strip().splitlines()
    assert lines, stderr
    return json.loads(lines[-1]), stderr, proc.returncode


def _order(events: list[list[str]]) -> list[str]:
    return [what for what, _ in events]


def _thread_of(events: list[list[str]], what: str) -> str:
    return next(thread for name, thread in events if name == what)


PAIR = [str(RUN / "eager.pt.trace.json.gz"), str(RUN / "compiled.pt.trace.json.gz")]


@pytest.mark.parametrize("args", [[str(RUN)], PAIR], ids=["run", "pair"])
def test_the_load_starts_before_panel_is_imported_and_runs_beside_it(args: list[str]) -> None:
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("this process may run on one CPU only: the command does one after the other")
    events, stderr, code = _run_child(args, overlap="1")
    order = _order(events)
    assert order.count("load starts") == order.count("load ends") == 1, events
    assert order.count("warm-up") == 1, events  # nothing runs twice
    # the load began first, and was still running when Panel's import began
    assert (
        order.index("load starts") < order.index("panel import starts") < order.index("load ends")
    ), events
    assert _thread_of(events, "load starts") != "MainThread"
    assert _thread_of(events, "panel import starts") == "MainThread"
    assert _thread_of(events, "warm-up") == "MainThread"
    assert stderr.index(": parsing ") < stderr.index(": serving on "), stderr
    assert code == 0, stderr  # Ctrl-C stopped the server


ONE_AFTER_THE_OTHER = ["panel import starts", "warm-up", "load starts", "load ends"]


def test_the_switch_does_one_after_the_other_panel_first() -> None:
    events, stderr, code = _run_child([str(RUN)], overlap="0")
    assert _order(events) == ONE_AFTER_THE_OTHER, events
    assert {thread for _, thread in events} == {"MainThread"}
    assert code == 0, stderr


def test_by_default_the_load_waits_for_panel_whatever_the_size() -> None:
    """Off by default (measured slower at once on a quiet 2-CPU machine): the graph-break
    sample (a few KB) and the A100 corpus pair (58 MiB of JSON) both one after the other."""
    from tests.conftest import CORPUS

    events, stderr, code = _run_child([str(RUN)], overlap=None)
    assert _order(events) == ONE_AFTER_THE_OTHER and code == 0, (events, stderr)
    pair = [str(CORPUS / "nvidia" / f"a100_{name}.json.gz") for name in CORPUS_PAIR]
    if not all(Path(p).is_file() for p in pair):
        pytest.skip(f"no corpus at {CORPUS}")
    events, stderr, code = _run_child(pair, overlap=None)
    assert _order(events) == ONE_AFTER_THE_OTHER and code == 0, (events, stderr)


# The modules that the load imports on its thread (after the command's own imports before
# it starts) and those that Panel's start imports, each in a fresh interpreter, as JSON.
IMPORTS_CHILD = textwrap.dedent(
    """
    import json, sys
    from traceviz.commands import dashboard
    load = dashboard.prepare_load()
    from traceviz.ranks.dataset import is_dataset
    before = set(sys.modules)
    if sys.argv[1] == "load":
        load(sys.argv[2:])
    else:
        dashboard.prepare_panel()
    print(json.dumps(sorted(set(sys.modules) - before)))
    """
)


def _imported(what: str, paths: list[str], env: dict[str, str]) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", IMPORTS_CHILD, what, *paths],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=WAIT_S,
    ).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


def test_no_module_is_imported_by_both_threads(tmp_path: Path) -> None:
    """Panel's import and the load's first-use imports share no module (the shared ones are
    imported before the worker starts: dashboard.SHARED_IMPORTS), so the two threads never
    import one module, nor two of one import cycle, at once: a run directory and a pair of
    corpus traces (the sides at once, over the overlap size), parse cache off, empty and
    warm."""
    from tests.conftest import CORPUS

    pair = [CORPUS / "nvidia" / f"a100_{name}.json.gz" for name in CORPUS_PAIR]
    inputs = [[str(RUN)]] + ([[str(p) for p in pair]] if all(p.is_file() for p in pair) else [])
    off = dict(os.environ, TRACEVIZ_NO_CACHE="1")
    cached = {k: v for k, v in os.environ.items() if k != "TRACEVIZ_NO_CACHE"}
    cached["TRACEVIZ_CACHE_DIR"] = str(tmp_path / "cache")
    panel = _imported("panel", [], off)
    assert "panel" in panel and "pyarrow.pandas_compat" not in panel  # imported before
    for paths in inputs:
        for env in (off, cached, cached):  # no cache; the cache filled; a warm hit
            by_load = _imported("load", paths, env)
            assert by_load, paths  # the load imports something lazily: the check is alive
            assert not by_load & panel, (paths, sorted(by_load & panel))


# --- in this process: errors, Ctrl-C, the switch ------------------------------------------


@pytest.fixture
def no_server(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """``serve`` replaced by a recorder (no server started); the calls it got."""
    import traceviz.dashboard.serve as serve_module

    calls: list[dict[str, Any]] = []

    def fake_serve(comparison: Any, **options: Any) -> int:
        calls.append({"comparison": comparison, **options})
        return 0

    monkeypatch.setattr(serve_module, "serve", fake_serve)
    return calls


def _bad_json(tmp_path: Path) -> Path:
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [')
    return bad


@pytest.mark.parametrize("overlap", ["1", "0"])
@pytest.mark.parametrize("bad_side", ["a", "b"])
def test_a_load_error_names_the_file_and_nothing_is_served(
    overlap: str,
    bad_side: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    no_server: list[dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(command.OVERLAP_ENV, overlap)
    good, bad = str(RUN / "eager.pt.trace.json.gz"), str(_bad_json(tmp_path))
    paths = [bad, good] if bad_side == "a" else [good, bad]
    assert main(["dashboard", *paths, "--no-show"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"traceviz dashboard: error: {bad}: "), err
    assert not no_server  # the server never started


def test_a_missing_run_directory_is_the_same_error_either_way(
    monkeypatch: pytest.MonkeyPatch,
    no_server: list[dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    errors = []
    for overlap in ("1", "0"):
        monkeypatch.setenv(command.OVERLAP_ENV, overlap)
        assert main(["dashboard", str(SAMPLES / "no-such-run"), "--no-show"]) == 2
        errors.append(capsys.readouterr().err.strip().splitlines()[-1])
    assert errors[0] == errors[1] and "no-such-run" in errors[0]
    assert not no_server


def test_a_missing_extra_is_said_before_any_load(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    from traceviz.dashboard import loading

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "plotly" else real(name, *a)
    )

    def never(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("loaded without the dashboard extra")

    monkeypatch.setattr(loading, "comparison_from_args", never)
    assert main(["dashboard", str(RUN), "--no-show"]) == 2
    err = capsys.readouterr().err
    assert "plotly is missing" in err and "pip install 'traceviz[dashboard]'" in err


def test_the_report_is_served_once_warm_and_unchanged(
    monkeypatch: pytest.MonkeyPatch, no_server: list[dict[str, Any]]
) -> None:
    """The served report is the one the loader made (the same as without the overlap), and
    serve does not warm Panel up again."""
    from traceviz.dashboard import loading

    made: list[Any] = []
    real = loading.comparison_from_args

    def counted(paths: Any, *, names: Any = None) -> Any:
        made.append(real(paths, names=names))
        return made[-1]

    monkeypatch.setattr(loading, "comparison_from_args", counted)
    monkeypatch.setenv(command.OVERLAP_ENV, "1")
    assert main(["dashboard", str(RUN), "--no-show", "--names", "x", "y"]) == 0
    assert len(made) == 1 and len(no_server) == 1
    served = no_server[0]
    assert served["comparison"] is made[0] and served["warm"] is False
    assert served["comparison"].names == ("x", "y")


def test_no_paths_serves_the_empty_page(
    monkeypatch: pytest.MonkeyPatch, no_server: list[dict[str, Any]]
) -> None:
    prepared: list[bool] = []
    monkeypatch.setattr(command, "prepare_panel", lambda: prepared.append(True))
    assert main(["dashboard", "--no-show"]) == 0
    assert prepared == [True]
    assert no_server[0]["comparison"] is None and no_server[0]["warm"] is False


def _blocked_load(
    monkeypatch: pytest.MonkeyPatch, before: Callable[[], None] = lambda: None
) -> tuple[threading.Event, threading.Event, list[str]]:
    """``comparison_from_args`` replaced by a load that starts (``started``, its thread's
    name recorded), runs ``before`` and then waits for ``release`` (at most WAIT_S: a broken
    command fails, never hangs)."""
    from traceviz.dashboard import loading

    started, release, threads = threading.Event(), threading.Event(), []

    def load(paths: Any, *, names: Any = None) -> Any:
        threads.append(threading.current_thread().name)
        started.set()
        before()
        release.wait(WAIT_S)

    monkeypatch.setattr(loading, "comparison_from_args", load)
    monkeypatch.setenv(command.OVERLAP_ENV, "1")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)  # 2 CPUs
    return started, release, threads


def test_ctrl_c_while_panel_starts_stops_at_once(
    monkeypatch: pytest.MonkeyPatch,
    no_server: list[dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    started, release, threads = _blocked_load(monkeypatch)

    def interrupted() -> None:
        started.wait(WAIT_S)
        raise KeyboardInterrupt

    monkeypatch.setattr(command, "prepare_panel", interrupted)
    try:
        assert main(["dashboard", str(RUN), "--no-show"]) == 130
        assert not release.is_set()  # returned while the load was still running
    finally:
        release.set()
    assert threads and threads[0] != "MainThread"  # the load ran beside Panel's start
    assert "interrupted" in capsys.readouterr().err
    assert not no_server


def test_ctrl_c_while_waiting_for_the_load_stops_at_once(
    monkeypatch: pytest.MonkeyPatch,
    no_server: list[dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, release, threads = _blocked_load(monkeypatch, before=_thread.interrupt_main)  # Ctrl-C
    monkeypatch.setattr(command, "prepare_panel", lambda: None)
    try:
        assert main(["dashboard", str(RUN), "--no-show"]) == 130
        assert not release.is_set()
    finally:
        release.set()
    assert threads and threads[0] != "MainThread"
    assert not no_server


def test_overlap_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.delenv(command.OVERLAP_ENV, raising=False)
    assert not command.overlap_on()  # off by default
    for off in ("0", " 0 ", "yes"):
        monkeypatch.setenv(command.OVERLAP_ENV, off)
        assert not command.overlap_on()
    for on in ("1", " 1 "):
        monkeypatch.setenv(command.OVERLAP_ENV, on)
        assert command.overlap_on()
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert not command.overlap_on()  # one CPU: the two threads would only take turns


def test_load_beside_panel_errors_in_the_sequential_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """Panel's problem first (nothing can be served without it), then the load's."""

    def no_panel() -> None:
        raise UsageError("no panel")

    def bad_load() -> None:
        raise UsageError("bad trace")

    for overlap in (True, False):
        monkeypatch.setattr(command, "prepare_panel", no_panel)
        with pytest.raises(UsageError, match="no panel"):
            command.load_beside_panel(bad_load, overlap=overlap)
        monkeypatch.setattr(command, "prepare_panel", lambda: None)
        with pytest.raises(UsageError, match="bad trace"):
            command.load_beside_panel(bad_load, overlap=overlap)
        assert command.load_beside_panel(lambda: 7, overlap=overlap) == 7


def test_serve_warms_up_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    import panel as pn

    import traceviz.dashboard.serve as serve_module

    prepared: list[bool] = []
    monkeypatch.setattr(serve_module, "prepare", lambda: prepared.append(True))

    def taken(*args: Any, **kwargs: Any) -> None:
        raise OSError(98, "Address already in use")

    monkeypatch.setattr(pn, "serve", taken)
    for warm in (False, True):
        with pytest.raises(UsageError, match="Address already in use"):
            serve_module.serve(None, show=False, warm=warm)
    assert prepared == [True]


def test_a_ranks_dataset_is_served_by_its_app_warmed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_server: list[dict[str, Any]]
) -> None:
    """A ranks dataset takes its own path (read after Panel, with its app), unchanged; a
    trace beside it is refused as before."""
    pytest.importorskip("pyarrow", reason="pyarrow not installed (ranks extra)")
    import traceviz
    from tests.ranks_fixtures import synthetic_job, write_ranks
    from traceviz.dashboard import loading

    job = synthetic_job(2, seed=3)
    dataset = tmp_path / "job.ds"
    traceviz.load_ranks(write_ranks(tmp_path / "traces", job.docs), dataset)

    def never(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a dataset is not a pair of traces")

    prepared: list[bool] = []
    real_prepare = command.prepare_panel
    monkeypatch.setattr(loading, "comparison_from_args", never)
    monkeypatch.setattr(command, "prepare_panel", lambda: prepared.append(True) or real_prepare())
    assert main(["dashboard", str(dataset), "--no-show"]) == 0
    assert prepared == [True] and len(no_server) == 1
    served = no_server[0]
    assert served["comparison"] is None and served["warm"] is False
    assert type(served["app"]()).__name__ == "RanksDashboard"
    assert main(["dashboard", str(dataset), str(RUN / "eager.pt.trace.json.gz")]) == 2
    assert len(no_server) == 1
