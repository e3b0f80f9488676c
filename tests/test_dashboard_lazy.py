"""The dashboard builds a tab only when it is first opened, and tabs registered from other
modules (``views.register_view``) take part in that like the built-in ones."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import SAMPLES

pytest.importorskip("panel", reason="panel not installed (dashboard extra)")

import panel as pn

from traceviz.dashboard import loading, views
from traceviz.dashboard.app import Dashboard
from traceviz.report.bundle import Report


@pytest.fixture(scope="module")
def sample() -> Report:
    run = SAMPLES / "graph-break"
    if not (run / "run.json").is_file():
        pytest.skip(f"no sample run in {run}")
    report = loading.comparison_from_args([str(run)])
    assert report is not None
    return report


@pytest.fixture
def probe() -> Iterator[list[str]]:
    """Two tabs registered like ORT-VIEW's and RANKS-ANALYSIS's: one every report shows, one
    no report shows; yields the titles built so far."""
    calls: list[str] = []

    def build(report: Report) -> pn.pane.HTML:
        calls.append("Probe")
        return pn.pane.HTML("probe")

    views.register_view("Probe", build, before="Regions")
    views.register_view("Never", lambda r: pn.pane.HTML("never"), when=lambda r: False)
    try:
        yield calls
    finally:
        for title in ("Probe", "Never"):
            views.VIEWS.pop(title)
            views.VIEW_WHEN.pop(title, None)


def test_only_the_visible_tab_is_built(sample: Report) -> None:
    app = Dashboard(comparison=sample)
    always = [t for t in views.VIEWS if t not in views.VIEW_WHEN]
    assert app._tabs._names == views.views_for(sample)
    assert set(always) <= set(app._tabs._names)
    assert app.built_tabs == ["Overview"]
    app._tabs.active = app._tabs._names.index("Timeline")
    assert app.built_tabs == ["Overview", "Timeline"]
    slot = app._slots["Timeline"]
    built = slot.objects[0]
    app._tabs.active = 0
    app._tabs.active = app._tabs._names.index("Timeline")
    assert slot.objects[0] is built  # opened again: not built again


def test_registered_tabs_are_lazy_and_conditional(sample: Report, probe: list[str]) -> None:
    titles = views.views_for(sample)
    assert "Never" not in titles
    assert titles.index("Probe") == titles.index("Regions") - 1
    app = Dashboard(comparison=sample)
    assert app._tabs._names == titles
    assert probe == []
    app._tabs.active = titles.index("Probe")
    assert probe == ["Probe"] and "Probe" in app.built_tabs


def test_a_failing_builder_gives_a_message(sample: Report) -> None:
    from traceviz.errors import UsageError

    def broken(report: Report) -> pn.pane.HTML:
        raise UsageError("needs the onnx extra: pip install 'traceviz[onnx]'")

    views.register_view("Broken", broken)
    try:
        app = Dashboard(comparison=sample)
        app._tabs.active = app._tabs._names.index("Broken")
        text = app._slots["Broken"].objects[0].object
        assert "Broken: needs the onnx extra" in text
    finally:
        views.VIEWS.pop("Broken")


def test_upload_keeps_the_open_tab_and_builds_only_it(sample: Report) -> None:
    app = Dashboard(comparison=sample)
    app._tabs.active = app._tabs._names.index("Memory")
    data = (SAMPLES / "pointwise" / "compiled.pt.trace.json.gz").read_bytes()
    asyncio.run(app.load_upload("b", "pointwise-compiled.json.gz", data))
    assert app.error == ""
    assert app._tabs.active == app._tabs._names.index("Memory")
    assert app.built_tabs == ["Memory"]


# --- uploads: labels and failures ----------------------------------------------------------


def test_an_upload_is_labelled_by_its_own_name(sample: Report) -> None:
    app = Dashboard(comparison=sample)
    data = (SAMPLES / "pointwise" / "compiled.pt.trace.json.gz").read_bytes()
    asyncio.run(app.load_upload("b", "pointwise-compiled.pt.trace.json.gz", data))
    assert app.comparison is not None
    assert app.comparison.names == ("eager", "pointwise-compiled")
    assert app.comparison.b.trace.meta.source == "pointwise-compiled.pt.trace.json.gz (uploaded)"
    assert "pointwise-compiled" in app._upload_names["b"].object
    app._tabs.active = 0
    overview = app._slots["Overview"].objects[0]
    text = " ".join(str(p.object) for p in overview.select(pn.pane.HTML))
    # no trace of the temporary upload folder (the checkout itself may live under /tmp)
    assert "traceviz-upload-" not in text
    assert "pointwise-compiled" in text


def test_a_failed_upload_resets_its_drop_zone(sample: Report) -> None:
    app = Dashboard(comparison=sample)
    before = app._uploads["a"]
    asyncio.run(app.load_upload("a", "corrupt.json.gz", b"\x1f\x8bnot gzip"))
    assert app.error.startswith("Could not load corrupt.json.gz")
    assert app._uploads["a"] is not before and app._upload_slots["a"][1] is app._uploads["a"]
    assert app._uploads["a"].value == {}
    assert app.comparison is sample and app._labels() == sample.names


def test_an_upload_is_never_read_from_a_same_named_server_file(
    sample: Report, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from traceviz.dashboard.download import perfetto_download

    data = (SAMPLES / "pointwise" / "compiled.pt.trace.json.gz").read_bytes()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "compiled.pt.trace.json.gz").write_bytes(b"not the upload")
    app = Dashboard(comparison=sample)
    asyncio.run(app.load_upload("b", "compiled.pt.trace.json.gz", data))
    assert app.comparison is not None
    shown = perfetto_download(app.comparison)
    button = next(iter(shown.select(pn.widgets.FileDownload)))
    assert button.disabled  # the upload is not kept; the file beside the server is not it
    assert "uploaded" in shown[1].object
