"""The dashboard without a browser: loading and caching, bad uploads, the views, the command,
the ``panel serve`` entry and the notebook widgets. (tests/test_dashboard_browser.py drives
the served page in Chromium.)"""

from __future__ import annotations

import asyncio
import gzip
import socket
from pathlib import Path

import pytest

from tests.conftest import SAMPLES

pytest.importorskip("panel", reason="panel not installed (dashboard extra)")

from traceviz.analysis.compare import Comparison
from traceviz.cli import main
from traceviz.dashboard import loading, panel_app
from traceviz.dashboard.app import Dashboard
from traceviz.dashboard.serve import websocket_origins
from traceviz.dashboard.views import VIEWS, KernelsView, TimelineView, explain_kernel, views_for
from traceviz.errors import TraceFormatError, UsageError


def sample_run(*names: str) -> Path:
    for name in names or ("graph-break", "pointwise"):
        if (SAMPLES / name / "run.json").is_file():
            return SAMPLES / name
    pytest.skip(f"no sample run in {SAMPLES}")


@pytest.fixture(scope="module")
def sample() -> Comparison:
    found = loading.comparison_from_args([str(sample_run())])
    assert found is not None
    return found


# --- loading -------------------------------------------------------------------------------


def test_upload_parses_and_caches() -> None:
    data = (sample_run() / "compiled.pt.trace.json.gz").read_bytes()
    cache = loading.TraceCache()
    first = loading.load_upload("compiled.json.gz", data, cache=cache)
    assert len(first.kernels) > 0
    again = loading.load_upload("renamed.json.gz", data, cache=cache)
    assert again.kernels is first.kernels  # parsed once
    assert (first.meta.source, again.meta.source) == (
        "compiled.json.gz (uploaded)",
        "renamed.json.gz (uploaded)",
    )
    plain = gzip.decompress(data).decode()  # text/* uploads arrive decoded
    assert len(loading.load_upload("compiled.json", plain, cache=cache).kernels) == len(
        first.kernels
    )


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("trace.txt", b"{}", "not a trace file"),
        ("empty.json", b"", "empty"),
        ("corrupt.json.gz", b"\x1f\x8b\x08\x00garbage", ""),
        ("corrupt.json", b'{"traceEvents": [', ""),
        ("big.json", b"x" * (2 * 2**20), "limit"),
    ],
)
def test_bad_upload_is_one_clear_error(name: str, data: bytes, reason: str) -> None:
    with pytest.raises(TraceFormatError) as err:
        loading.load_upload(name, data, max_bytes=2**20, cache=loading.TraceCache())
    assert str(err.value).startswith(f"{name}: ")  # the uploaded name, not a temp path
    assert reason in str(err.value)


def test_paths_are_cached_by_mtime() -> None:
    path = sample_run() / "eager.pt.trace.json.gz"
    cache = loading.TraceCache()
    assert loading.load_path(path, cache=cache) is loading.load_path(path, cache=cache)
    with pytest.raises(TraceFormatError):
        loading.load_path(path.with_name("missing.json"), cache=cache)


def test_args_give_run_dir_pair_or_nothing(sample: Comparison) -> None:
    assert loading.comparison_from_args([]) is None
    assert sample.names == ("eager", "compiled")
    assert sample.run_info is not None
    run = sample_run()
    pair = loading.comparison_from_args(
        [str(run / "eager.pt.trace.json.gz"), str(run / "compiled.pt.trace.json.gz")]
    )
    assert pair is not None and pair.run_info is None
    with pytest.raises(UsageError):
        loading.comparison_from_args([str(run / "eager.pt.trace.json.gz")])


# --- the app -------------------------------------------------------------------------------


def test_every_view_builds(sample: Comparison) -> None:
    for title in views_for(sample):
        VIEWS[title](sample)  # raises where a view cannot be built
    app = Dashboard(comparison=sample)
    assert [t for t in app._tabs._names] == views_for(sample)


def test_bad_upload_shows_message_not_traceback(sample: Comparison) -> None:
    app = Dashboard(comparison=sample)
    asyncio.run(app.load_upload("b", "corrupt.json.gz", b"\x1f\x8bnot really gzip"))
    assert app.error.startswith("Could not load corrupt.json.gz: ")
    assert "corrupt.json.gz: corrupt.json.gz" not in app.error
    assert app._alert.visible and not app.busy
    assert app.comparison is sample  # what was shown stays


def test_upload_replaces_one_side(sample: Comparison) -> None:
    other = sample_run("pointwise", "linear-add")
    app = Dashboard(comparison=sample)
    data = (other / "compiled.pt.trace.json.gz").read_bytes()
    asyncio.run(app.load_upload("b", "other.json.gz", data))
    assert app.error == ""
    assert app.comparison is not sample and app.comparison is not None
    assert app.comparison.a is sample.a  # the eager side is reused, not parsed again
    assert app.comparison.names == (sample.names[0], "other")  # the upload's own label


def test_empty_app_waits_for_both_uploads() -> None:
    run = sample_run()
    app = Dashboard()
    assert app.comparison is None and app._tabs._names == ["Start"]
    asyncio.run(app.load_upload("a", "e.json.gz", (run / "eager.pt.trace.json.gz").read_bytes()))
    assert app.comparison is None and "now upload the B trace" in app._status.object
    asyncio.run(app.load_upload("b", "c.json.gz", (run / "compiled.pt.trace.json.gz").read_bytes()))
    assert app.comparison is not None and app._tabs._names == views_for(app.comparison)


def test_selecting_a_compiled_kernel_explains_it(sample: Comparison) -> None:
    view = KernelsView(comparison=sample)
    data = view._data
    fused = data.index[(data["trace"] == "compiled") & data["kernel"].str.contains("fused")]
    if not len(fused):
        pytest.skip("no fused kernel in this sample")
    view._table.selection = [int(fused[0])]
    assert "ops it replaced" in view._detail.object
    text = explain_kernel(
        sample, "eager", str(data.loc[data["trace"] == "eager", "kernel"].iloc[0])
    )
    assert "went into" in text or "no compiled kernel" in text


def test_kernel_search_filters(sample: Comparison) -> None:
    view = KernelsView(comparison=sample, search="fused")
    shown = view._table.current_view
    assert len(shown) and shown["kernel"].str.contains("fused").all()


def test_timeline_step_choice(sample: Comparison) -> None:
    view = TimelineView(comparison=sample)
    first = view._pane.object
    view.step = -1
    assert view._pane.object is not first
    assert "whole trace" in view._pane.object.layout.annotations[0].text


# --- command, panel serve entry, widgets ---------------------------------------------------


def test_command_help_and_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["dashboard", "--help"])
    assert "examples:" in capsys.readouterr().out
    assert main(["dashboard", "a", "b", "c"]) == 2
    assert main(["dashboard", str(SAMPLES / "no-such-run")]) == 2
    assert main(["dashboard", "--port", "0"]) == 2
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        assert main(["dashboard", "--port", port, "--no-show"]) == 2
    assert "Address already in use" in capsys.readouterr().err


def test_websocket_origin_is_the_served_host() -> None:
    assert websocket_origins("127.0.0.1", 5006) == ["127.0.0.1:5006", "localhost:5006"]
    assert websocket_origins("myhost", 80) == ["myhost:80"]


def test_panel_serve_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"TRACEVIZ_A": "a.json", "TRACEVIZ_B": "b.json"}
    assert panel_app.startup_paths([], env) == ["a.json", "b.json"]
    assert panel_app.startup_paths(["run"], env) == ["run"]
    assert panel_app.startup_paths([], {"TRACEVIZ_RUN": "r"}) == ["r"]
    app = panel_app.app(["/no/such/a.json", "/no/such/b.json"])
    assert app.comparison is None and "Could not load" in app.error


def test_widgets(sample: Comparison) -> None:
    import traceviz.widgets as tw

    assert isinstance(tw.compare(sample), Dashboard)
    assert tw.compare(str(sample_run())).comparison is not None
    assert tw.view(sample, "Fusion") is not None
    with pytest.raises(UsageError):
        tw.view(sample, "Nope")
    assert "<table>" in sample._repr_html_()  # rich display of the object itself still works
