"""The HTML report (``traceviz compare --format html``): one self-contained offline file with
the figures of traceviz.report.figures and the tables of traceviz.report.views."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from tests.conftest import SAMPLES

pytest.importorskip("plotly", reason="plotly not installed (dashboard extra)")

from traceviz.analysis.compare import Comparison
from traceviz.cli import main
from traceviz.pipeline import compare
from traceviz.report.figures import VIEW_FIGURES
from traceviz.report.figures.roofline import ROOFLINE_FIGURES
from traceviz.report.html import comparison_html, finding_html
from traceviz.report.views import comparison_views
from traceviz.rundir import read_run_dir


def sample_run() -> Path:
    for name in ("graph-break", "pointwise"):
        if (SAMPLES / name / "run.json").is_file():
            return SAMPLES / name
    pytest.skip(f"no sample run in {SAMPLES}")


@pytest.fixture(scope="module")
def sample() -> Comparison:
    run = read_run_dir(sample_run())
    return compare(run.eager, run.compiled, names=("eager", "compiled"), run_info=run.info)


@pytest.fixture(scope="module")
def report(sample: Comparison) -> str:
    return comparison_html(sample, top=5)


def test_is_one_complete_document(report: str) -> None:
    assert report.startswith("<!DOCTYPE html>")
    assert report.rstrip().endswith("</html>")
    assert report.count("<html") == 1 and report.count("</body>") == 1


def test_needs_no_network(report: str) -> None:
    # no external script, stylesheet, font or image: it opens offline
    assert not re.search(r"<script[^>]+src=", report, re.I)
    assert not re.search(r"<link[^>]+href=[\"']?https?:", report, re.I)
    assert not re.search(r"<img[^>]+src=[\"']?https?:", report, re.I)


def test_embeds_plotly_js_once(report: str) -> None:
    # every view's figures, and the step bridge and the roofline (report.html._roofline)
    figures = sum(len(builders) for builders in VIEW_FIGURES.values()) + len(ROOFLINE_FIGURES)
    assert report.count("Plotly.newPlot(") == figures
    # plotly.js defines its version string once; a second embedded copy would repeat it
    assert len(re.findall(r"plotly\.js v\d+\.\d+\.\d+", report)) == 1


def test_has_every_view_and_table(sample: Comparison, report: str) -> None:
    for view in VIEW_FIGURES:
        assert f">{view}</h2>" in report
    for table in comparison_views(sample, top=5):
        assert table.title.replace("&", "&amp;") in report or table.title[:20] in report
    assert "step time (median)" in report and "95% interval" in report  # the speed verdict


def test_escapes_names(sample: Comparison) -> None:
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


def test_shows_findings(sample: Comparison) -> None:
    finding = FakeFinding("warning", "Launch overhead <dominates>")
    text = comparison_html(replace(sample, findings=[finding]), top=3)
    assert "[warning]</b> Launch overhead &lt;dominates&gt;" in text
    assert "≈ 10 µs per step" in text and "reduce-overhead" in text
    assert "No findings" not in text
    assert "sev-warning" in finding_html(finding)


def test_cli_writes_html(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    assert main(["compare", str(sample_run()), "--format", "html", "-o", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("<!DOCTYPE html>") and "Plotly.newPlot(" in text


def test_without_plotly_the_python_api_names_the_extra(
    sample: Comparison, monkeypatch: pytest.MonkeyPatch
) -> None:
    from traceviz.errors import UsageError
    from traceviz.report.formats import renderer

    monkeypatch.setitem(sys.modules, "plotly", None)  # as if not installed
    with pytest.raises(UsageError, match=r"traceviz\[dashboard\]"):
        renderer("html").comparison(sample, top=5)
