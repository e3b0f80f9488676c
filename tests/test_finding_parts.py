"""One rendering of a finding's evidence, gain and next step (traceviz.report.finding_parts),
shown by the HTML report and the dashboard's collapsible findings alike."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.conftest import SAMPLES
from traceviz.report.finding_parts import evidence_items, next_step_html, severity_and_title


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
