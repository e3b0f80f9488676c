"""The dashboard without a browser: loading and caching, bad uploads, the views (each tab built
only when first opened, registered ones too), the Overview's cards and findings, the command,
the ``panel serve`` entry and the notebook widgets (which load their JavaScript and CSS inline,
not from a CDN, so they work offline); the tables: the side-by-side kernel table
(analysis.kernel_diff and its view), fixed-width name columns, and a CSV download under every
table. (tests/test_dashboard_browser.py drives the served page in Chromium.)"""

from __future__ import annotations

import asyncio
import gzip
import html
import io
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tests.conftest import CORPUS, SAMPLES, kernel, launch, load_trace, op

pytest.importorskip("panel", reason="panel not installed (dashboard extra)")

import panel as pn

import traceviz.widgets as tw
from traceviz.analysis.compare import Comparison, Metric
from traceviz.analysis.kernel_diff import NO_OP, KernelDiff, kernel_diff
from traceviz.analysis.traffic.coverage import traffic_gap_note
from traceviz.cli import main
from traceviz.dashboard import loading, panel_app, views
from traceviz.dashboard.app import Dashboard
from traceviz.dashboard.serve import websocket_origins
from traceviz.dashboard.tabs.common import NAME_WIDTH, csv_download
from traceviz.dashboard.tabs.findings import finding_body, findings_block
from traceviz.dashboard.tabs.overview import _card, overview
from traceviz.dashboard.views import (
    VIEWS,
    KernelDiffView,
    KernelsView,
    TimelineView,
    explain_kernel,
    views_for,
)
from traceviz.errors import TraceFormatError, UsageError
from traceviz.pipeline import compare
from traceviz.report import figures
from traceviz.report.bundle import Report
from traceviz.report.figures.overview import PARTIAL_SHARE, traffic_partial
from traceviz.report.headline import change_text
from traceviz.report.views import fmt_value
from traceviz.schema import Kernels
from traceviz.units import fmt_pct

A100_PAIR = (
    CORPUS / "nvidia" / "a100_eager_train_control.json.gz",
    CORPUS / "nvidia" / "a100_compiled_cudagraph_train_2023.json.gz",
)
DETAILS = re.compile(
    r"<details class='finding sev-(\w+)'[^>]*><summary>(.*?)</summary>(.*?)</details>", re.S
)


def sample_run(*names: str) -> Path:
    for name in names or ("graph-break", "pointwise"):
        if (SAMPLES / name / "run.json").is_file():
            return SAMPLES / name
    pytest.skip(f"no sample run in {SAMPLES}")


@pytest.fixture(scope="module")
def sample() -> Comparison:
    found = loading.comparison_from_args([str(sample_run())])
    assert found is not None and found.findings, "the sample run has findings"
    return found


@pytest.fixture(scope="module")
def a100() -> Report:
    for path in A100_PAIR:
        if not path.is_file():
            pytest.skip(f"{path} not found (corpus at {CORPUS})")
    return compare(load_trace(A100_PAIR[0]), load_trace(A100_PAIR[1]))


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
    assert isinstance(tw.compare(sample), Dashboard)
    assert tw.compare(str(sample_run())).comparison is not None
    assert tw.view(sample, "Fusion") is not None
    with pytest.raises(UsageError):
        tw.view(sample, "Nope")
    assert "<table>" in sample._repr_html_()  # rich display of the object itself still works


# What Bokeh's autoload script fetches: these lists (a "skip" list of URLs a page already
# has may name the CDN; it fetches nothing).
URL_LISTS = re.compile(r"\b(js_urls|css_urls|js_modules)\s*=\s*(\[[^\]]*\])")
SCRIPT_SRC = re.compile(r"<(?:script|link)[^>]+(?:src|href)=[\"']?https?://", re.I)


def published(monkeypatch: pytest.MonkeyPatch, inline: bool | None = None) -> str:
    """Everything Panel's notebook loader would send to the notebook (with the configured
    ``inline`` unless given), as text."""
    ipython = pytest.importorskip("IPython.display", reason="pip install ipython")
    from panel.io import notebook

    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(ipython, "publish_display_data", lambda data, **_: sent.append(data))
    notebook.load_notebook(pn.config.inline if inline is None else inline)
    return "\n".join(str(v) for data in sent for v in data.values())


def test_widgets_load_their_javascript_inline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tw, "_loaded", False)
    tw.extension()
    assert pn.config.inline
    text = published(monkeypatch)
    lists = dict(URL_LISTS.findall(text))
    assert set(lists) == {"js_urls", "css_urls", "js_modules"}, "the loader's lists not found"
    assert {k: re.sub(r"\s", "", v) for k, v in lists.items()} == dict.fromkeys(lists, "[]")
    assert not SCRIPT_SRC.search(text)
    assert "Plotly" in text and "Tabulator" in text  # the libraries themselves are inline


def test_the_check_fails_on_cdn_resources(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test above would catch a CDN load: Panel's default (inline off) uses one."""
    lists = dict(URL_LISTS.findall(published(monkeypatch, inline=False)))
    assert "https://" in lists["js_urls"]


def test_notebook_kernels_view_has_fixed_name_columns(sample: Comparison) -> None:
    view = tw.view(sample, "Kernels")
    tables = list(view.select(pn.widgets.Tabulator))
    assert tables and all(
        any(t.widths.get(c) == NAME_WIDTH for c in ("kernel", "key")) for t in tables
    )


# --- tabs built when first opened ------------------------------------------------------


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


def test_only_the_visible_tab_is_built(sample: Comparison) -> None:
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


def test_registered_tabs_are_lazy_and_conditional(sample: Comparison, probe: list[str]) -> None:
    titles = views.views_for(sample)
    assert "Never" not in titles
    assert titles.index("Probe") == titles.index("Regions") - 1
    app = Dashboard(comparison=sample)
    assert app._tabs._names == titles
    assert probe == []
    app._tabs.active = titles.index("Probe")
    assert probe == ["Probe"] and "Probe" in app.built_tabs


def test_a_failing_builder_gives_a_message(sample: Comparison) -> None:
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


def test_upload_keeps_the_open_tab_and_builds_only_it(sample: Comparison) -> None:
    app = Dashboard(comparison=sample)
    app._tabs.active = app._tabs._names.index("Memory")
    data = (SAMPLES / "pointwise" / "compiled.pt.trace.json.gz").read_bytes()
    asyncio.run(app.load_upload("b", "pointwise-compiled.json.gz", data))
    assert app.error == ""
    assert app._tabs.active == app._tabs._names.index("Memory")
    assert app.built_tabs == ["Memory"]


# --- uploads: labels and failures ----------------------------------------------------------


def test_an_upload_is_labelled_by_its_own_name(sample: Comparison) -> None:
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


def test_a_failed_upload_resets_its_drop_zone(sample: Comparison) -> None:
    app = Dashboard(comparison=sample)
    before = app._uploads["a"]
    asyncio.run(app.load_upload("a", "corrupt.json.gz", b"\x1f\x8bnot gzip"))
    assert app.error.startswith("Could not load corrupt.json.gz")
    assert app._uploads["a"] is not before and app._upload_slots["a"][1] is app._uploads["a"]
    assert app._uploads["a"].value == {}
    assert app.comparison is sample and app._labels() == sample.names


def test_an_upload_is_never_read_from_a_same_named_server_file(
    sample: Comparison, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
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


# --- the Overview: cards, then findings ------------------------------------------------


def card_lines(html_text: str) -> list[str]:
    """The card's value and detail lines as plain text."""
    parts = re.findall(r"<div class='(?:v|d)'>(.*?)</div>", html_text)
    return [re.sub(r"&gt;", ">", p) for p in parts]


def test_per_step_first_when_step_counts_differ(a100: Report) -> None:
    steps = (a100.a.summary.step_count, a100.b.summary.step_count)
    assert steps[0] != steps[1] and all(steps)  # the corpus pair: 6 vs 5 steps
    row = a100.metric("kernel_count")
    per_step = [row[Metric.a] / steps[0], row[Metric.b] / steps[1]]
    value, detail = card_lines(_card(a100, "kernel_count", "kernels"))
    assert (
        value == f"{fmt_value(per_step[0], 'count')} → {fmt_value(per_step[1], 'count')} per step"
    )
    total = f"{fmt_value(row[Metric.a], 'count')} → {fmt_value(row[Metric.b], 'count')}"
    # one ratio direction (issue 26): "1.17× less", never a 0.85×
    assert change_text(per_step[1] / per_step[0]) in detail and total in detail
    assert f"{steps[0]} vs {steps[1]} steps" in detail


def test_totals_when_step_counts_agree(sample: Comparison) -> None:
    assert sample.a.summary.step_count == sample.b.summary.step_count
    value, _ = card_lines(_card(sample, "kernel_count", "kernels"))
    row = sample.metric("kernel_count")
    assert value == f"{fmt_value(row[Metric.a], 'count')} → {fmt_value(row[Metric.b], 'count')}"


def test_memory_card_is_partial_when_much_is_unestimated(a100: Report) -> None:
    shares = [s.traffic.unestimated_time_share for s in (a100.a, a100.b)]
    assert max(shares) > PARTIAL_SHARE and traffic_partial(a100)
    text = _card(a100, "est_bytes", "memory traffic")
    value, detail = card_lines(text)
    assert "partial" in text and value.startswith("≥ ") and "→ ≥ " in value
    assert detail.startswith("no ratio") and "×" not in detail
    for share in shares:  # each side's unestimated share is its own segment
        assert f"width:{100 * share:.1f}%" in text
        assert f"no estimate for {fmt_pct(100 * share)}" in text
    # the two sides' estimates cover 44% and 18% of their kernel time: no ratio, so no bar
    assert traffic_gap_note(a100.a.traffic, a100.b.traffic, a100.names) is not None
    bar = figures.metrics_figure(a100).data[0]
    assert "kernels" in list(bar.y)
    assert not any(str(label).startswith("memory traffic") for label in bar.y)


def test_memory_card_of_a_well_estimated_pair(sample: Comparison) -> None:
    shares = [s.traffic.unestimated_time_share or 0.0 for s in (sample.a, sample.b)]
    text = _card(sample, "est_bytes", "memory traffic")
    assert ("tv-partial" in text) == (max(shares) > PARTIAL_SHARE)
    if max(shares) <= PARTIAL_SHARE:
        assert "no ratio" not in text and "×" in card_lines(text)[1]


def kinds(column: Any) -> list[str]:
    return [type(o).__name__ for o in column]


def test_overview_shows_cards_and_charts_before_the_findings(sample: Comparison) -> None:
    parts = list(overview(sample))
    # the verdict sentence and the top 3 findings first (issue 26), then cards and charts,
    # then every finding
    assert kinds(parts)[:4] == ["HTML", "HTML", "Plotly", "Plotly"]
    assert "tv-verdict" in parts[0].object and "Top findings" in parts[0].object
    assert "tv-card" in parts[1].object and "Findings" not in parts[1].object
    listed = [i for i, p in enumerate(parts) if str(getattr(p, "object", "")).startswith(
        f"<h4>Findings ({len(sample.findings)})</h4>")]  # fmt: skip
    plots = [i for i, kind in enumerate(kinds(parts)) if kind == "Plotly"]
    assert len(listed) == 1 and listed[0] > max(plots)


def test_each_finding_is_one_line_that_expands_to_its_evidence(sample: Comparison) -> None:
    found = DETAILS.findall(findings_block(sample.findings, empty="none"))
    assert len(found) == len(sample.findings)
    for (severity, summary, body), finding in zip(found, sample.findings, strict=True):
        assert severity == finding.severity.value
        assert "<ul>" not in summary and "<li>" not in summary  # one line: no evidence
        assert body == finding_body(finding)
        for line in finding.evidence_lines():
            assert html.escape(str(line)) in body


def test_no_findings_says_so() -> None:
    assert "nothing here" in findings_block([], empty="nothing here")
    assert "<details" not in findings_block([], empty="nothing here")


# --- kernel_diff ---------------------------------------------------------------------------


def assert_adds_up(report: Report, by: str) -> None:
    """``kernel_diff`` by ``by``: unique keys, each side's columns adding up to its measured
    device time and activity count, the largest change first."""
    table = kernel_diff(report.a.kernels, report.b.kernels, by=by)  # type: ignore[arg-type]
    assert table[KernelDiff.key].is_unique
    for side, calls, time in (
        (report.a, KernelDiff.a_calls, KernelDiff.a_time_us),
        (report.b, KernelDiff.b_calls, KernelDiff.b_time_us),
    ):
        measured = float(np.nansum(side.kernels[Kernels.excl_dur_us].to_numpy(dtype=float)))
        assert table[time].sum() == pytest.approx(measured, rel=1e-9, abs=1e-9), by
        assert int(table[calls].sum()) == len(side.kernels), by
    delta = table[KernelDiff.b_time_us] - table[KernelDiff.a_time_us]
    assert np.allclose(table[KernelDiff.delta_time_us], delta)
    order = table[KernelDiff.delta_time_us].abs().to_numpy()
    assert (np.diff(order) <= 1e-9).all()  # largest change first


@pytest.mark.parametrize("by", ["kernel", "op", "kind"])
def test_each_side_of_the_a100_pair_adds_up(by: str, a100: Report) -> None:
    assert_adds_up(a100, by)


RUNS = sorted(p.parent for p in [*SAMPLES.glob("*/run.json"), *SAMPLES.glob("*/*/run.json")])


@pytest.mark.parametrize(
    "run", RUNS or [None], ids=lambda p: str(p.relative_to(SAMPLES)) if p else "none"
)
def test_every_sample_run_adds_up(run: Path | None) -> None:
    """On every sample run (CPU and the H200 runs), by kernel, op and kind."""
    if run is None:
        pytest.skip(f"no sample runs in {SAMPLES}")
    from traceviz.pipeline import open_report

    report = open_report(run)
    for by in ("kernel", "op", "kind"):
        assert_adds_up(report, by)


def test_kernel_diff_on_a_tiny_pair(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    import traceviz

    eager = tmp_trace(
        [
            op("aten::add", 0, 10),
            launch("cudaLaunchKernel", 1, 2, 1),
            kernel("add_kernel", 5, 4, 1),
            launch("cudaLaunchKernel", 11, 1, 2),  # a launch outside any op
            kernel("mul_kernel", 13, 6, 2),
        ]
    )
    compiled = tmp_trace(
        [
            op("triton_poi_fused_add_mul_0", 0, 10),
            launch("cuLaunchKernel", 1, 2, 1),
            kernel("triton_poi_fused_add_mul_0", 5, 3, 1),
        ]
    )
    report = compare(traceviz.load(eager), traceviz.load(compiled))
    table = kernel_diff(report.a.kernels, report.b.kernels).set_index(KernelDiff.key)
    assert table.loc["mul_kernel", KernelDiff.a_time_us] == 6
    assert table.loc["mul_kernel", KernelDiff.b_calls] == 0
    fused = table.loc["triton_poi_fused_add_mul_0"]
    assert (fused[KernelDiff.a_calls], fused[KernelDiff.b_time_us]) == (0, 3)
    assert np.isnan(fused[KernelDiff.ratio])
    by_op = kernel_diff(report.a.kernels, report.b.kernels, by="op").set_index(KernelDiff.key)
    assert by_op.loc["aten::add", KernelDiff.a_time_us] == 4
    assert by_op.loc[NO_OP, KernelDiff.a_calls] == 1  # not dropped
    with pytest.raises(UsageError):
        kernel_diff(report.a.kernels, report.b.kernels, by="line")  # type: ignore[arg-type]


# --- the views -----------------------------------------------------------------------------


def csv_of(button: pn.widgets.FileDownload) -> pd.DataFrame:
    payload = button.callback()
    return pd.read_csv(io.StringIO(payload.getvalue()))


def test_diff_view_regroups_and_downloads_what_it_shows(sample: Comparison) -> None:
    view = KernelDiffView(comparison=sample)
    assert view._table.titles[KernelDiff.a_time_us] == "A µs"
    assert sample.names[0] in view._table.header_tooltips[KernelDiff.a_time_us]
    view.group = "kind"
    assert view._table.titles[KernelDiff.key] == "kind"
    kinds = set(view._table.value[KernelDiff.key])
    assert kinds == set(sample.a.kernels["kind"].astype(str)) | set(
        sample.b.kernels["kind"].astype(str)
    )
    layout = view.__panel__()
    button = next(o for o in layout.select(pn.widgets.FileDownload))
    shown = csv_of(button)
    assert set(shown[KernelDiff.key]) == kinds


def test_name_columns_have_a_fixed_width_and_a_tooltip(a100: Report) -> None:
    table = KernelsView(comparison=a100)._table
    longest = max(table.value["kernel"].str.len())
    assert longest > 200  # real GPU kernel names are long: the reason for the width
    assert table.widths["kernel"] == NAME_WIDTH
    columns = {c["field"]: c for c in table._get_configuration(table._get_columns())["columns"]}
    assert columns["kernel"]["tooltip"] is True  # the full name on hover


def test_kernel_search_is_in_the_download(sample: Comparison) -> None:
    view = KernelsView(comparison=sample, search="fused")
    button = next(o for o in view.__panel__().select(pn.widgets.FileDownload))
    rows = csv_of(button)
    assert len(rows) and rows["kernel"].str.contains("fused").all()
    assert len(rows) < len(view._data)


def test_every_table_has_a_csv_download(sample: Comparison) -> None:
    from bokeh.document import Document

    for title in views_for(sample):
        layout = pn.panel(VIEWS[title](sample))
        layout.get_root(Document())  # Viewers lay themselves out when rendered
        tables = list(layout.select(pn.widgets.Tabulator)) + [
            p for p in layout.select(pn.pane.HTML) if "<table>" in str(p.object)
        ]
        buttons = [b for b in layout.select(pn.widgets.FileDownload) if b.label == "CSV"]
        assert len(buttons) == len(tables), title
        for button in buttons:
            assert len(csv_of(button).columns) > 1, title


def test_csv_download_of_a_frame() -> None:
    frame = pd.DataFrame({"name": ["a,b", "c"], "us": [1.5, 2.0]})
    assert csv_of(csv_download(frame, "x.csv")).equals(frame)
