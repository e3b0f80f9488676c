"""The dashboard's Overview shows its cards and charts before the findings, which are one line
each (severity, title) and expand to their evidence; the Backends tab's tables download as CSV
like every other tab's."""

from __future__ import annotations

import html
import io
import re
from typing import Any

import pandas as pd
import pytest

from tests.conftest import SAMPLES

pytest.importorskip("panel", reason="panel not installed (dashboard extra)")

from traceviz.dashboard import loading
from traceviz.dashboard.tabs.findings import finding_body, findings_block
from traceviz.dashboard.tabs.overview import overview
from traceviz.report.bundle import Report

DETAILS = re.compile(
    r"<details class='finding sev-(\w+)'[^>]*><summary>(.*?)</summary>(.*?)</details>", re.S
)


@pytest.fixture(scope="module")
def report() -> Report:
    run = SAMPLES / "graph-break"
    if not (run / "run.json").is_file():
        pytest.skip(f"no sample run in {run}")
    found = loading.comparison_from_args([str(run)])
    assert found is not None and found.findings, "the graph-break sample has findings"
    return found


def kinds(column: Any) -> list[str]:
    return [type(o).__name__ for o in column]


def test_overview_shows_cards_and_charts_before_the_findings(report: Report) -> None:
    parts = list(overview(report))
    # the verdict sentence and the top 3 findings first (issue 26), then cards and charts,
    # then every finding
    assert kinds(parts)[:4] == ["HTML", "HTML", "Plotly", "Plotly"]
    assert "tv-verdict" in parts[0].object and "Top findings" in parts[0].object
    assert "tv-card" in parts[1].object and "Findings" not in parts[1].object
    listed = [i for i, p in enumerate(parts) if str(getattr(p, "object", "")).startswith(
        f"<h4>Findings ({len(report.findings)})</h4>")]  # fmt: skip
    plots = [i for i, kind in enumerate(kinds(parts)) if kind == "Plotly"]
    assert len(listed) == 1 and listed[0] > max(plots)


def test_each_finding_is_one_line_that_expands_to_its_evidence(report: Report) -> None:
    found = DETAILS.findall(findings_block(report.findings, empty="none"))
    assert len(found) == len(report.findings)
    for (severity, summary, body), finding in zip(found, report.findings, strict=True):
        assert severity == finding.severity.value
        assert "<ul>" not in summary and "<li>" not in summary  # one line: no evidence
        assert body == finding_body(finding)
        for line in finding.evidence_lines():
            assert html.escape(str(line)) in body


def test_no_findings_says_so() -> None:
    assert "nothing here" in findings_block([], empty="nothing here")
    assert "<details" not in findings_block([], empty="nothing here")


@pytest.fixture(scope="module")
def ort_report(tmp_path_factory: pytest.TempPathFactory) -> Any:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("torch")
    from tests import ort_fixtures as fx
    from traceviz.pipeline import compare_run

    run = fx.make_ort_run(tmp_path_factory.mktemp("ort") / "run", sample=SAMPLES / "linear-add")
    return compare_run(run)


def test_backends_tables_download_as_csv(ort_report: Any) -> None:
    from traceviz.dashboard.tabs.backends import backends
    from traceviz.report.backends_views import backends_views

    tab = list(backends(ort_report))
    downloads = [o for o in tab if type(o).__name__ == "FileDownload"]
    (fusion,) = [o for o in tab if type(o).__name__ == "Tabulator"]
    shown = [o for o in tab if type(o).__name__ == "Column"]  # view_table: HTML table + CSV
    tables = backends_views(ort_report, top=20)
    assert len(shown) == len(tables) - 1  # every table but the fusion one (a Tabulator)
    for column, view in zip(shown, tables[:2] + tables[3:], strict=True):
        frame = _csv(column[1])
        assert list(frame.columns) == view.columns and len(frame) == len(view.rows)
    fusion_csv = _csv(downloads[0])
    assert len(fusion_csv) == len(ort_report.backends.fusion) == len(fusion.value)
    assert fusion_csv["time_us"].to_numpy() == pytest.approx(fusion.value["time_us"].to_numpy())


def _csv(download: Any) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(download.callback().getvalue()), keep_default_na=False)
