"""Every output format (:mod:`traceviz.report.formats`) over real reports: each renders the
headline, every table and every finding from the same structured data, and ``--format`` is
the registry's list."""

from __future__ import annotations

import html
import io
import json
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
