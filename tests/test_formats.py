"""Every output format (:mod:`traceviz.report.formats`) over real reports: each renders the
headline, every table and every finding from the same structured data, and ``--format`` is
the registry's list. The HTML report (``traceviz compare --format html``) is one
self-contained offline file with the figures of traceviz.report.figures and the tables of
traceviz.report.views."""

from __future__ import annotations

import html
import io
import json
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from rich.console import Console

from tests.conftest import SAMPLES, load_trace
from traceviz.analysis.summary import summarize
from traceviz.cli import main
from traceviz.diagnose import diagnose_trace
from traceviz.errors import UsageError
from traceviz.pipeline import Report, compare_run
from traceviz.report.formats import COMPARISON, RENDERERS, SUMMARY, Rendered, names, renderer
from traceviz.report.headline import headline as first_screen
from traceviz.report.views import comparison_views, headline, headline_details

RUNS = ("graph-break", "pointwise", "mlp")


def _report(name: str) -> Report:
    path = SAMPLES / name
    if not (path / "run.json").is_file():
        pytest.skip(f"sample run {path} not found")
    return _cached(path)


_REPORTS: dict[Path, Report] = {}


def _cached(path: Path) -> Report:
    if path not in _REPORTS:
        _REPORTS[path] = compare_run(path, load=load_trace)
    return _REPORTS[path]


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
    assert report.startswith("<!DOCTYPE html>")
    assert report.rstrip().endswith("</html>")
    assert report.count("<html") == 1 and report.count("</body>") == 1
    # no external script, stylesheet, font or image: it opens offline
    assert not re.search(r"<script[^>]+src=", report, re.I)
    assert not re.search(r"<link[^>]+href=[\"']?https?:", report, re.I)
    assert not re.search(r"<img[^>]+src=[\"']?https?:", report, re.I)


def test_html_embeds_plotly_js_once(report: str) -> None:
    from traceviz.report.figures import VIEW_FIGURES
    from traceviz.report.figures.roofline import ROOFLINE_FIGURES

    # every view's figures, and the step bridge and the roofline (report.html._roofline)
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


@dataclass(frozen=True)
class FakeFinding:
    severity: str
    title: str

    def evidence_lines(self) -> list[str]:
        return ["kernels: 60 → 35"]

    def gain_text(self) -> str:
        return "≈ 10 µs per step"

    next_step = "try mode='reduce-overhead'"
    docs_url = "https://pytorch.org/docs/stable/torch.compiler.html"


def test_html_shows_findings(sample: Report) -> None:
    from traceviz.report.html import comparison_html, finding_html

    finding = FakeFinding("warning", "Launch overhead <dominates>")
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
