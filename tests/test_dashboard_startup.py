"""``traceviz dashboard A B`` starts Panel, then reads the traces, then serves.

GIVEN the command with a run directory or two traces, WHEN it starts, THEN Panel is imported
and warmed up once, then the traces are read and analysed once, on the main thread; a load
error is one line and exit code 2, and the server never starts; Ctrl-C stops the command,
whether Panel is still starting or the load is still running. The order is recorded (which
thread did what, in which order), never timed.
"""

from __future__ import annotations

import _thread
import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.browser_support import free_port
from tests.conftest import REPO, SAMPLES

pytest.importorskip("panel", reason="panel not installed (dashboard extra)")
pytest.importorskip("plotly", reason="plotly not installed (dashboard extra)")

from traceviz.cli import main
from traceviz.commands import dashboard as command
from traceviz.dashboard import loading
from traceviz.dashboard import serve as serve_module
from traceviz.errors import UsageError

RUN = SAMPLES / "graph-break"
CORPUS_PAIR = ("eager_train_control", "compiled_cudagraph_train_2023")  # A100, 58 MiB of JSON
WAIT_S = 120  # generous: a loaded 2-core machine; a correct run never waits this long

# A fresh interpreter running the console script's main on ARGS, recording in order: the load
# starting and ending (traceviz.dashboard.loading.comparison_from_args, wrapped), the first
# import of Panel, each warm-up of Panel, with the thread of each. The events go to stdout as
# JSON at exit; the test stops the server with SIGINT (Ctrl-C).
CHILD = textwrap.dedent(
    """
    import atexit, builtins, json, sys, threading
    events, panel_started = [], threading.Event()

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
        value = real_load(paths, names=names)
        record("load ends")
        return value

    loading.comparison_from_args = recorded
    atexit.register(lambda: print(json.dumps(events), flush=True))
    from traceviz.cli import main
    sys.exit(main())
    """
)


def _never(what: str) -> Callable[..., None]:
    """A stand-in that fails the test when called: ``what`` happened."""

    def called(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(what)

    return called


def _run_child(args: list[str]) -> tuple[list[list[str]], str, int]:
    """The command in a fresh interpreter until it serves, then Ctrl-C: its recorded events,
    its stderr and its exit code."""
    env = dict(os.environ)
    cmd = [sys.executable, "-c", CHILD, "dashboard", *args, "--no-show"]
    cmd += ["--port", str(free_port())]
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


PAIR = [str(RUN / "eager.pt.trace.json.gz"), str(RUN / "compiled.pt.trace.json.gz")]


ONE_AFTER_THE_OTHER = ["panel import starts", "warm-up", "load starts", "load ends"]


@pytest.mark.parametrize("args", [[str(RUN)], PAIR], ids=["run", "pair"])
def test_panel_starts_first_then_the_load_runs_once(args: list[str]) -> None:
    events, stderr, code = _run_child(args)
    assert _order(events) == ONE_AFTER_THE_OTHER, events  # each once, in this order
    assert {thread for _, thread in events} == {"MainThread"}
    assert stderr.index(": parsing ") < stderr.index(": serving on "), stderr
    assert code == 0, stderr  # Ctrl-C stopped the server


# --- in this process: errors, Ctrl-C ------------------------------------------------------


@pytest.fixture
def no_server(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """``serve`` replaced by a recorder (no server started); the calls it got."""

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


@pytest.mark.parametrize("bad_side", ["a", "b"])
def test_a_load_error_names_the_file_and_nothing_is_served(
    bad_side: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    no_server: list[dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    good, bad = str(RUN / "eager.pt.trace.json.gz"), str(_bad_json(tmp_path))
    paths = [bad, good] if bad_side == "a" else [good, bad]
    assert main(["dashboard", *paths, "--no-show"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"traceviz dashboard: error: {bad}: "), err
    assert not no_server  # the server never started


def test_a_missing_run_directory_is_one_line(
    no_server: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["dashboard", str(SAMPLES / "no-such-run"), "--no-show"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 2 and "no-such-run" in error[-1]  # "parsing …", then the error
    assert not no_server


def test_a_missing_extra_is_said_before_any_load(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "plotly" else real(name, *a)
    )

    monkeypatch.setattr(
        loading, "comparison_from_args", _never("loaded without the dashboard extra")
    )
    assert main(["dashboard", str(RUN), "--no-show"]) == 2
    err = capsys.readouterr().err
    assert "plotly is missing" in err and "pip install 'traceviz[dashboard]'" in err


def test_the_report_is_served_once_warm_and_unchanged(
    monkeypatch: pytest.MonkeyPatch, no_server: list[dict[str, Any]]
) -> None:
    """The served report is the one the loader made, and serve does not warm Panel up again."""

    made: list[Any] = []
    real = loading.comparison_from_args

    def counted(paths: Any, *, names: Any = None) -> Any:
        made.append(real(paths, names=names))
        return made[-1]

    monkeypatch.setattr(loading, "comparison_from_args", counted)
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


def test_ctrl_c_while_panel_starts_stops_before_any_load(
    monkeypatch: pytest.MonkeyPatch,
    no_server: list[dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
) -> None:

    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(loading, "comparison_from_args", _never("loaded after Ctrl-C"))
    monkeypatch.setattr(command, "prepare_panel", interrupted)
    assert main(["dashboard", str(RUN), "--no-show"]) == 130
    assert "interrupted" in capsys.readouterr().err
    assert not no_server


def test_ctrl_c_during_the_load_stops_and_serves_nothing(
    monkeypatch: pytest.MonkeyPatch,
    no_server: list[dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
) -> None:

    def load(paths: Any, *, names: Any = None) -> Any:
        _thread.interrupt_main()  # Ctrl-C, delivered as the load runs
        for _ in range(10_000_000):  # the interrupt lands at the next bytecode
            pass
        raise AssertionError("the load ran to its end")

    monkeypatch.setattr(loading, "comparison_from_args", load)
    monkeypatch.setattr(command, "prepare_panel", lambda: None)
    assert main(["dashboard", str(RUN), "--no-show"]) == 130
    assert "interrupted" in capsys.readouterr().err
    assert not no_server


def test_serve_warms_up_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    import panel as pn

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

    job = synthetic_job(2, seed=3)
    dataset = tmp_path / "job.ds"
    traceviz.load_ranks(write_ranks(tmp_path / "traces", job.docs), dataset)

    prepared: list[bool] = []
    real_prepare = command.prepare_panel
    monkeypatch.setattr(
        loading, "comparison_from_args", _never("a dataset is not a pair of traces")
    )
    monkeypatch.setattr(command, "prepare_panel", lambda: prepared.append(True) or real_prepare())
    assert main(["dashboard", str(dataset), "--no-show"]) == 0
    assert prepared == [True] and len(no_server) == 1
    served = no_server[0]
    assert served["comparison"] is None and served["warm"] is False
    assert type(served["app"]()).__name__ == "RanksDashboard"
    assert main(["dashboard", str(dataset), str(RUN / "eager.pt.trace.json.gz")]) == 2
    assert len(no_server) == 1
