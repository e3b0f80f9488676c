"""The dashboard without a browser: loading and caching, bad uploads, the views (each tab built
only when first opened, registered ones too), the Overview's cards and findings, the command,
the ``panel serve`` entry and the notebook widgets (which load their JavaScript and CSS inline,
not from a CDN, so they work offline); the tables: the side-by-side kernel table
(analysis.kernel_diff and its view), fixed-width name columns, and a CSV download under every
table. (tests/test_dashboard_browser.py drives the served page in Chromium.)

``traceviz dashboard A B`` starts Panel, then reads the traces, then serves: GIVEN the command
with a run directory or two traces, WHEN it starts, THEN Panel is imported and warmed up once,
then the traces are read and analysed once, on the main thread; a load error is one line and
exit code 2, and the server never starts; Ctrl-C stops the command, whether Panel is still
starting or the load is still running. The order is recorded (which thread did what, in which
order), never timed.

The ranks dashboard (``traceviz dashboard DATASET [DATASET_B]``, ``traceviz.widgets.ranks``):
GIVEN ranks datasets ingested in the test from synthetic 4-rank jobs (tests/ranks_fixtures:
NCCL all-reduces, random clock offsets, rank 2 planted as a straggler in ``job``, none in
``other``) WHEN the dashboard opens on one or two of them, a rank is selected and its trace tab
opened THEN the Ranks tab comes first and is the only one built, the straggler is the rank
shown, a rank's trace is read only when its tab is shown and its figures are that rank's own,
and two datasets open on the per-rank comparison."""

from __future__ import annotations

import _thread
import asyncio
import gzip
import html
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tests.browser_support import free_port
from tests.conftest import CORPUS, REPO, SAMPLES, kernel, launch, load_trace, op
from tests.ranks_fixtures import synthetic_job, write_ranks

pytest.importorskip("panel", reason="panel not installed (dashboard extra)")
pytest.importorskip("plotly", reason="plotly not installed (dashboard extra)")

import panel as pn

import traceviz
import traceviz.widgets as tw
from traceviz.analysis.compare import Comparison, Metric
from traceviz.analysis.kernel_diff import NO_OP, KernelDiff, kernel_diff
from traceviz.analysis.traffic.coverage import traffic_gap_note
from traceviz.cli import main
from traceviz.commands import dashboard as command
from traceviz.dashboard import loading, panel_app, ranks_app, views
from traceviz.dashboard import serve as serve_module
from traceviz.dashboard.app import Dashboard
from traceviz.dashboard.ranks_app import RanksDashboard, ranks_args, ranks_data
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
from traceviz.ranks.load import load_rank_trace
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
    out = capsys.readouterr().out
    assert "examples:" in out
    assert "traceviz dashboard job42.ds" in out and "eager.ds compiled.ds" in out
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


# --- uploads: labels and failures ----------------------------------------------------------


def test_an_upload_replaces_its_side_keeps_the_open_tab_and_is_labelled_by_its_name(
    sample: Comparison,
) -> None:
    app = Dashboard(comparison=sample)
    app._tabs.active = app._tabs._names.index("Memory")
    data = (SAMPLES / "pointwise" / "compiled.pt.trace.json.gz").read_bytes()
    asyncio.run(app.load_upload("b", "pointwise-compiled.pt.trace.json.gz", data))
    assert app.error == ""
    assert app.comparison is not sample and app.comparison is not None
    assert app.comparison.a is sample.a  # the eager side is reused, not parsed again
    assert app._tabs.active == app._tabs._names.index("Memory")
    assert app.built_tabs == ["Memory"]  # only the open tab is built
    assert app.comparison.names == ("eager", "pointwise-compiled")
    assert app.comparison.b.trace.meta.source == "pointwise-compiled.pt.trace.json.gz (uploaded)"
    assert "pointwise-compiled" in app._upload_names["b"].object
    app._tabs.active = 0
    overview = app._slots["Overview"].objects[0]
    text = " ".join(str(p.object) for p in overview.select(pn.pane.HTML))
    # no trace of the temporary upload folder (the checkout itself may live under /tmp)
    assert "traceviz-upload-" not in text
    assert "pointwise-compiled" in text


def test_a_failed_upload_shows_a_message_and_resets_its_drop_zone(sample: Comparison) -> None:
    app = Dashboard(comparison=sample)
    before = app._uploads["a"]
    asyncio.run(app.load_upload("a", "corrupt.json.gz", b"\x1f\x8bnot gzip"))
    assert app.error.startswith("Could not load corrupt.json.gz: ")
    assert "corrupt.json.gz: corrupt.json.gz" not in app.error
    assert app._alert.visible and not app.busy
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


# --- the command starts Panel, then reads the traces, then serves --------------------

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


# --- the ranks dashboard ---------------------------------------------------------------

WORLD, STRAGGLER = 4, 2
CLEAR = "rgba(0,0,0,0)"  # the figure's outline of a rank that is not a straggler


def make_dataset(root: Path, name: str, **options: Any) -> Path:
    pytest.importorskip("pyarrow", reason="pyarrow not installed (ranks extra)")
    job = synthetic_job(WORLD, **options)
    traceviz.load_ranks(write_ranks(root / f"{name}-traces", job.docs), root / name)
    return root / name


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_dataset(tmp_path_factory.mktemp("ranks"), "job", straggler=STRAGGLER, seed=5)


@pytest.fixture(scope="module")
def other(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ranks")
    return make_dataset(root, "other", straggler=None, seed=6, compute_us=500.0)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The ranks whose full trace the dashboard read (an empty trace cache to start)."""
    calls: list[int] = []

    def counted(path: Any, rank: int, **kw: Any) -> Any:
        calls.append(rank)
        return load_rank_trace(path, rank, **kw)

    monkeypatch.setattr(ranks_app, "load_rank_trace", counted)
    monkeypatch.setattr(ranks_app, "RANK_TRACES", ranks_app.TraceCache(entries=4))
    return calls


def test_datasets_are_told_from_trace_files(job: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = SAMPLES / "mlp" / "eager.pt.trace.json.gz"
    assert ranks_args([str(job)]) and ranks_args([job, job])
    assert not ranks_args([str(trace)]) and not ranks_args([])
    with pytest.raises(UsageError, match="not a mix"):
        ranks_args([str(job), str(trace)])
    assert main(["dashboard", str(job), str(trace)]) == 2  # the command: one line, no traceback
    err = capsys.readouterr().err
    assert "not a mix" in err and "Traceback" not in err


def test_one_dataset_opens_on_the_ranks_tab_with_the_straggler(job: Path, reads: list[int]) -> None:
    app = RanksDashboard(ranks_data(job))
    assert list(app._slots) == ["Ranks", "Rank trace"]
    assert app.built_tabs == ["Ranks"] and reads == []  # no rank trace read yet
    view = app._views["job"]
    assert view.analysis.stragglers.ranks == [STRAGGLER] and app.rank == STRAGGLER
    table = view._table.set_index("rank")
    assert bool(table.loc[STRAGGLER, "straggler"]) and int(table["straggler"].sum()) == 1
    # the figure outlines the straggler's bars, and only them
    fig = view.__panel__()[0].object
    bars = [bar for bar in fig.data if bar.type == "bar"]
    outlined = {
        x for bar in bars for x, c in zip(bar.x, bar.marker.line.color, strict=True) if c != CLEAR
    }
    assert outlined == {str(STRAGGLER)}


def test_selecting_a_rank_shows_its_trace_when_the_tab_opens(job: Path, reads: list[int]) -> None:
    app = RanksDashboard(ranks_data(job))
    view = app._views["job"]
    row = int(view._grid.value.index[view._grid.value["rank"] == 1][0])
    view._grid.selection = [row]
    assert app.rank == 1 and reads == []  # chosen, not read: the tab is not shown
    app._tabs.active = 1
    assert reads == [1] and app.trace_shown == ("job", 1)
    summary = app._trace[0]
    trace = traceviz.load(job, rank=1)
    cards = summary[0].object
    assert "Rank 1" in cards and f"{len(trace.kernels):,}" in cards
    top = summary[3].value  # the top kernels table: at most what was measured
    assert top["time_us"].sum() <= trace.kernels["excl_dur_us"].sum() * (1 + 1e-9)
    app._rank_select.value = 3  # choosing in the tab reads that rank, and the view follows
    assert reads == [1, 3] and view.rank == 3 and app.trace_shown == ("job", 3)
    view.rank = 1  # back to a rank read before: from the cache
    assert reads == [1, 3] and app.trace_shown == ("job", 1)


def test_two_datasets_open_on_the_comparison(job: Path, other: Path, reads: list[int]) -> None:
    app = RanksDashboard(ranks_data(job, other, names=("slow", "fast")))
    assert list(app._slots) == ["Compare ranks", "Ranks: slow", "Ranks: fast", "Rank trace"]
    assert app.built_tabs == ["Compare ranks"]
    grid = app._slots["Compare ranks"][0][3]  # after the heading, the chart, the findings
    a, b = traceviz.load_ranks(job).summary, traceviz.load_ranks(other).summary
    expected = a["step_p50_us"].to_numpy() / b["step_p50_us"].to_numpy()
    assert grid.value["speedup"].to_numpy() == pytest.approx(expected)
    assert list(csv_of(app._slots["Compare ranks"][0][4])["rank"]) == list(range(WORLD))
    app._tabs.active = 2
    app._views["fast"].rank = 0  # a rank picked on side b is the trace shown
    app._tabs.active = 3
    assert app.trace_shown == ("fast", 0) and reads == [0]


def test_ranks_tables_download_as_csv(job: Path) -> None:
    app = RanksDashboard(ranks_data(job))
    view = app._views["job"]
    panel = view.__panel__()
    (download,) = [o for o in panel if type(o).__name__ == "FileDownload"]
    frame = csv_of(download)
    assert list(frame["rank"]) == list(range(WORLD)) and frame["straggler"].sum() == 1
    detail = [o for o in view._detail if type(o).__name__ == "FileDownload"]
    kernels = csv_of(detail[0])
    summary = view.analysis.summary.set_index("rank")
    assert kernels["total_us"].sum() == pytest.approx(summary.loc[STRAGGLER, "kernel_time_us"])
    comms = csv_of(detail[1])
    assert len(comms) == int(summary.loc[STRAGGLER, "comm_kernels"])


def test_widgets_and_panel_app_take_a_path_or_ranks(job: Path) -> None:
    assert isinstance(tw.ranks(job), RanksDashboard)
    assert tw.ranks(traceviz.load_ranks(job)).rank == STRAGGLER
    with pytest.raises(UsageError, match="not a ranks dataset"):
        tw.ranks(SAMPLES / "mlp")
    assert isinstance(panel_app.app([str(job)]), RanksDashboard)


def test_a_failed_rank_is_a_finding_not_a_crash(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow", reason="pyarrow not installed (ranks extra)")
    job = synthetic_job(WORLD, straggler=None, seed=2)
    paths = write_ranks(tmp_path / "traces", job.docs)
    paths[3].write_text("{ not json")
    ranks = traceviz.load_ranks(paths, tmp_path / "ds")
    app = RanksDashboard(ranks_data(ranks))
    text = str(app._views["ds"].__panel__()[1].object)
    (failed,) = [f for f in app._views["ds"].analysis.findings if f.id == "ranks-failed"]
    assert html.escape(failed.title) in text
    assert list(app._views["ds"]._table["rank"]) == [0, 1, 2]


def test_a_dataset_with_no_readable_rank_still_opens(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow", reason="pyarrow not installed (ranks extra)")
    path = tmp_path / "rank0.json"
    path.write_text("{ not json")
    ranks = traceviz.load_ranks([path], tmp_path / "ds")
    app = RanksDashboard(ranks_data(ranks))
    assert app.rank is None
    app._tabs.active = 1
    assert "Select a rank" in app._trace[0].object and app.trace_shown is None


def test_the_ranks_front_ends_import_no_optional_extra(job: Path) -> None:
    """Opening a dataset in the dashboard or a widget needs neither Dask (the ingest's) nor the
    ONNX or transformers extras."""
    extras = ("dask", "distributed", "onnx", "onnxruntime", "onnxscript", "transformers", "torch")
    code = (
        "import sys, traceviz.widgets as tw\n"
        "from traceviz.commands import dashboard\n"
        f"app = tw.ranks({str(job)!r}); app._tabs.active = 1\n"
        "assert app.trace_shown is not None\n"
        f"print(sorted(m for m in {extras!r} if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
