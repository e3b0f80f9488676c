"""Every output format (:mod:`traceviz.report.formats`) over real reports: each renders the
headline, every table and every finding from the same structured data, and ``--format`` is
the registry's list. The HTML report (``traceviz compare --format html``) is one
self-contained offline file with the figures of traceviz.report.figures and the tables of
traceviz.report.views; a finding's evidence, gain and next step are rendered once
(traceviz.report.finding_parts) for the HTML report and the dashboard alike."""

from __future__ import annotations

import functools
import html
import io
import json
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from tests.conftest import SAMPLES, load_trace
from traceviz.analysis.summary import summarize
from traceviz.cli import main
from traceviz.diagnose import diagnose_trace
from traceviz.errors import UsageError
from traceviz.pipeline import Report, compare_run
from traceviz.report.finding_parts import evidence_items, next_step_html, severity_and_title
from traceviz.report.formats import COMPARISON, RENDERERS, SUMMARY, Rendered, names, renderer
from traceviz.report.headline import headline as first_screen
from traceviz.report.views import comparison_views, headline, headline_details

RUNS = ("graph-break", "pointwise", "mlp")


def _report(name: str) -> Report:
    path = SAMPLES / name
    if not (path / "run.json").is_file():
        pytest.skip(f"sample run {path} not found")
    return _cached(path)


@functools.cache
def _cached(path: Path) -> Report:
    return compare_run(path, load=load_trace)


def _text(rendered: Rendered) -> str:
    if isinstance(rendered, str):
        return rendered
    buffer = io.StringIO()
    rendered(Console(file=buffer, width=400, color_system=None))
    return buffer.getvalue()


def _shown(fmt: str, text: str) -> str:
    """The output as plain text to search in (HTML unescaped, JSON strings decoded)."""
    if fmt == "html":
        return html.unescape(text)
    if fmt == "json":
        return json.dumps(json.loads(text), ensure_ascii=False)
    return text


def _headline_lines(fmt: str, report: Report) -> list[str]:
    """What the format shows of the headline: its lines, or in HTML the first screen's parts
    (the sentence's verdict, interval and why, each in its own element) and the detail lines."""
    if fmt != "html":
        return headline(report)
    first = first_screen(report)
    return [p for p in (first.note, first.interval, first.why) if p] + headline_details(report)


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("fmt", names(COMPARISON))
def test_every_format_renders_headline_tables_and_findings(fmt: str, run: str) -> None:
    report = _report(run)
    if fmt == "html":
        pytest.importorskip("plotly", reason="plotly not installed (dashboard extra)")
    text = _text(renderer(fmt).comparison(report, top=5))
    shown = _shown(fmt, text)
    assert all(name in shown for name in report.names)
    for finding in report.findings:
        assert finding.title in shown, (fmt, finding.id)
    if fmt == "json":
        data = json.loads(text)
        assert [f["id"] for f in data["findings"]] == [f.id for f in report.findings]
        assert {m["name"] for m in data["metrics"]} == set(report.metrics["name"])
        return
    for line in _headline_lines(fmt, report):
        assert line in shown, (fmt, line)
    for view in comparison_views(report, top=5):
        assert view.title in shown, (fmt, view.title)


@pytest.mark.parametrize("fmt", names(SUMMARY))
def test_every_summary_format_renders_the_summary_and_findings(fmt: str) -> None:
    path = SAMPLES / "graph-break" / "compiled.pt.trace.json.gz"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    trace = load_trace(path)
    summary, findings = summarize(trace, top=5), diagnose_trace(trace)
    assert findings, "the compiled graph-break trace has findings"
    text = _text(renderer(fmt).summary(summary, findings))
    shown = _shown(fmt, text)
    for finding in findings:
        assert finding.title in shown, (fmt, finding.id)
    if fmt == "json":
        assert json.loads(text)["kernel_count"] == summary.kernel_count
    else:
        assert f"{summary.kernel_count:,}" in shown or str(summary.kernel_count) in shown


@pytest.mark.parametrize("fmt", ["json", "markdown"])
def test_the_command_writes_what_the_renderer_renders(fmt: str, tmp_path: Path) -> None:
    report = _report("pointwise")
    out = tmp_path / f"report.{fmt}"
    assert main(["compare", str(SAMPLES / "pointwise"), "--format", fmt, "-o", str(out)]) == 0
    assert out.read_text() == renderer(fmt).comparison(report, top=10)


def test_the_registry_drives_format_choices(capsys: pytest.CaptureFixture[str]) -> None:
    assert names(COMPARISON) == tuple(RENDERERS) == ("text", "json", "markdown", "html")
    assert names(SUMMARY) == ("text", "json")
    with pytest.raises(UsageError, match="formats are text, json"):
        renderer("pdf")
    with pytest.raises(UsageError, match="not offered for a trace summary"):
        renderer("html").summary(summarize(load_trace(_any_trace())), [])
    # markdown is offered for a ranks summary only: for one trace it is a usage error
    assert main(["summary", str(_any_trace()), "--format", "markdown"]) == 2
    assert "a trace's summary renders text, json" in capsys.readouterr().err


def _any_trace() -> Path:
    path = SAMPLES / "pointwise" / "eager.pt.trace.json.gz"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    return path


# --- the HTML report ------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample() -> Report:
    pytest.importorskip("plotly", reason="plotly not installed (dashboard extra)")
    return _report("graph-break")


@pytest.fixture(scope="module")
def report(sample: Report) -> str:
    from traceviz.report.html import comparison_html

    return comparison_html(sample, top=5)


def test_html_is_one_complete_document_that_needs_no_network(report: str) -> None:
    from traceviz.report.figures import VIEW_FIGURES
    from traceviz.report.figures.roofline import ROOFLINE_FIGURES

    assert report.startswith("<!DOCTYPE html>")
    assert report.rstrip().endswith("</html>")
    assert report.count("<html") == 1 and report.count("</body>") == 1
    # no external script, stylesheet, font or image: it opens offline
    assert not re.search(r"<script[^>]+src=", report, re.I)
    assert not re.search(r"<link[^>]+href=[\"']?https?:", report, re.I)
    assert not re.search(r"<img[^>]+src=[\"']?https?:", report, re.I)
    # every view's figures, and the step bridge and the roofline, with plotly.js embedded once
    figures = sum(len(builders) for builders in VIEW_FIGURES.values()) + len(ROOFLINE_FIGURES)
    assert report.count("Plotly.newPlot(") == figures
    # plotly.js defines its version string once; a second embedded copy would repeat it
    assert len(re.findall(r"plotly\.js v\d+\.\d+\.\d+", report)) == 1


def test_html_has_every_view_and_table(sample: Report, report: str) -> None:
    from traceviz.report.figures import VIEW_FIGURES

    for view in VIEW_FIGURES:
        assert f">{view}</h2>" in report
    for table in comparison_views(sample, top=5):
        assert table.title.replace("&", "&amp;") in report or table.title[:20] in report
    assert "step time (median)" in report and "95% interval" in report  # the speed verdict


def test_html_escapes_names(sample: Report) -> None:
    from traceviz.report.html import comparison_html

    text = comparison_html(replace(sample, names=("<eager>", "compiled & co")), top=3)
    assert "<eager>" not in text.split("<script")[0]
    assert "&lt;eager&gt;" in text


def test_html_shows_findings(sample: Report) -> None:
    from traceviz.report.html import comparison_html, finding_html

    finding = Odd(
        title="Launch overhead <dominates>",
        lines=["kernels: 60 → 35"],
        gain="≈ 10 µs per step",
        next_step="try mode='reduce-overhead'",
        docs_url="https://pytorch.org/docs/stable/torch.compiler.html",
    )
    text = comparison_html(replace(sample, findings=[finding]), top=3)
    assert "[warning]</b> Launch overhead &lt;dominates&gt;" in text
    assert "≈ 10 µs per step" in text and "reduce-overhead" in text
    assert "No findings" not in text
    assert "sev-warning" in finding_html(finding)


def test_cli_writes_html(sample: Report, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    assert main(["compare", str(SAMPLES / "graph-break"), "--format", "html", "-o", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("<!DOCTYPE html>") and "Plotly.newPlot(" in text


def test_without_plotly_the_html_api_names_the_extra(
    sample: Report, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "plotly", None)  # as if not installed
    with pytest.raises(UsageError, match=r"traceviz\[dashboard\]"):
        renderer("html").comparison(sample, top=5)


# --- one finding's HTML pieces (traceviz.report.finding_parts), the HTML report's and the
# dashboard's collapsible findings alike ----------------------------------------------------


@dataclass
class Odd:
    severity: Any = "warning"
    title: str = "A <b>bold</b> claim"
    lines: list[str] = field(default_factory=lambda: ["x < y", "5 & 6"])
    gain: str = ""
    next_step: str = ""
    docs_url: str = ""

    def evidence_lines(self) -> list[str]:
        return self.lines

    def gain_text(self) -> str:
        return self.gain


def test_evidence_then_gain_escaped() -> None:
    finding = Odd(gain="≈ 3 µs <per> step")
    assert evidence_items(finding) == "".join(
        f"<li>{html.escape(line)}</li>"
        for line in [*finding.lines, f"estimated gain: {finding.gain}"]
    )
    assert evidence_items(Odd(lines=[])) == ""
    assert evidence_items(object()) == ""


@pytest.mark.parametrize(
    ("docs", "linked"),
    [
        ("https://example.org/a?b=1&c=2", True),
        ("http://x.org", True),
        ("httpx", False),
        ("", False),
    ],
)
def test_next_step_links_only_web_docs(docs: str, linked: bool) -> None:
    finding = Odd(next_step="use <this>", docs_url=docs)
    text = next_step_html(finding)
    assert text.startswith("<div>next step: use &lt;this&gt;") and text.endswith("</div>")
    assert (f'href="{html.escape(docs)}"' in text) == linked
    assert next_step_html(Odd(docs_url=docs)) == ""


def test_severity_and_title_of_anything() -> None:
    class Level:
        value = "error"

    assert severity_and_title(Odd(severity=Level())) == ("error", Odd().title)
    assert severity_and_title(42) == ("info", "42")


def test_report_and_dashboard_show_the_same_pieces_of_real_findings() -> None:
    pytest.importorskip("panel", reason="panel not installed (dashboard extra)")
    from traceviz.dashboard import loading
    from traceviz.dashboard.tabs.findings import finding_body, finding_details
    from traceviz.report.html import finding_html

    report = loading.comparison_from_args([str(SAMPLES / "graph-break")])
    assert report is not None and report.findings
    for finding in report.findings:
        items, step = evidence_items(finding), next_step_html(finding)
        assert items and all(html.escape(str(line)) in items for line in finding.evidence_lines())
        in_report = finding_html(finding)
        assert f"<ul>{items}</ul>{step}</div>" in in_report
        assert finding_body(finding) == f"<ul>{items}</ul>{step}"
        severity, title = severity_and_title(finding)
        assert f"[{html.escape(severity)}]</b> {html.escape(title)}" in in_report
        assert f"[{html.escape(severity)}]</b> {html.escape(title)}" in finding_details(finding)
