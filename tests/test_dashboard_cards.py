"""The Overview's headline cards: per step first when the step counts differ, and a memory
card that never counts kernels without a traffic estimate as moving nothing."""

from __future__ import annotations

import re

import pytest

from tests.conftest import CORPUS, SAMPLES, load_trace

pytest.importorskip("panel", reason="panel not installed (dashboard extra)")

from traceviz.analysis.compare import Metric
from traceviz.analysis.traffic.coverage import traffic_gap_note
from traceviz.dashboard.tabs.overview import _card
from traceviz.pipeline import compare, open_report
from traceviz.report import figures
from traceviz.report.bundle import Report
from traceviz.report.figures.overview import PARTIAL_SHARE, traffic_partial
from traceviz.report.headline import change_text
from traceviz.report.views import fmt_value
from traceviz.units import fmt_pct

A100_PAIR = (
    CORPUS / "nvidia" / "a100_eager_train_control.json.gz",
    CORPUS / "nvidia" / "a100_compiled_cudagraph_train_2023.json.gz",
)


@pytest.fixture(scope="module")
def a100() -> Report:
    for path in A100_PAIR:
        if not path.is_file():
            pytest.skip(f"{path} not found (corpus at {CORPUS})")
    return compare(load_trace(A100_PAIR[0]), load_trace(A100_PAIR[1]))


@pytest.fixture(scope="module")
def sample() -> Report:
    run = SAMPLES / "graph-break"
    if not (run / "run.json").is_file():
        pytest.skip(f"no sample run at {run}")
    return open_report(run)


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


def test_totals_when_step_counts_agree(sample: Report) -> None:
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


def test_memory_card_of_a_well_estimated_pair(sample: Report) -> None:
    shares = [s.traffic.unestimated_time_share or 0.0 for s in (sample.a, sample.b)]
    text = _card(sample, "est_bytes", "memory traffic")
    assert ("tv-partial" in text) == (max(shares) > PARTIAL_SHARE)
    if max(shares) <= PARTIAL_SHARE:
        assert "no ratio" not in text and "×" in card_lines(text)[1]
