"""The first screen answers the question (issue 26, "Users"): one sentence with the timed
verdict, its interval and one "why", then the top findings, in one ratio direction.

GIVEN sample runs (a CPU one where compiling pays, an H200 one where it does not, an H200 one
with no significant difference) and small hand-made findings
WHEN :func:`traceviz.report.headline.headline` reads them, and the HTML report and the
dashboard's Overview draw them
THEN the sentence says "N× faster" or "N× slower" with the interval turned the same way, the
"why" is the finding with the largest estimated gain (never the verdict restated), and both
front ends show the sentence before anything else.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import SAMPLES
from traceviz.diagnose.finding import Finding, Severity
from traceviz.diagnose.rules.slower import comparison_speed
from traceviz.report.bundle import Report
from traceviz.report.headline import (
    change_text,
    headline,
    interval_text,
    speed_ratio_text,
    top_findings,
)
from traceviz.report.headline_html import headline_html

#: A ratio below 1 printed as such ("0.78×"): what one direction forbids in the sentence.
BELOW_ONE = re.compile(r"(?<![\d.])0\.\d+×")


def _report(name: str) -> Report:
    from traceviz.pipeline import compare

    run = SAMPLES / name
    if not (run / "run.json").is_file():
        pytest.skip(f"{run} not found (make it with sample_traces/make.sh)")
    return compare(Path(run))


@pytest.fixture(scope="module")
def cpu_block() -> Report:
    return _report("block")


@pytest.fixture(scope="module")
def h200_graph_break() -> Report:
    return _report("h200/graph-break")


@pytest.fixture(scope="module")
def h200_block() -> Report:
    return _report("h200/block")


def test_ratio_words_read_one_way() -> None:
    assert speed_ratio_text(0.389) == "2.57× faster"
    assert speed_ratio_text(1.35) == "1.35× slower"
    assert speed_ratio_text(1.0) == "as fast"
    assert speed_ratio_text(float("nan")) == "–"
    assert change_text(0.38) == "2.63× less"
    assert change_text(1.58) == "1.58× more"
    assert change_text(0.0) == "none left"
    assert interval_text(0.72, 0.85) == "1.18–1.39× faster"
    assert interval_text(1.27, 1.55) == "1.27–1.55× slower"
    assert interval_text(0.86, 1.02) == "1.02× slower to 1.16× faster"


def test_faster_run_says_faster_with_its_interval(cpu_block: Report) -> None:
    v = comparison_speed(cpu_block)
    assert v.verdict == "faster" and v.low is not None and v.high is not None
    h = headline(cpu_block)
    assert h.verdict == f"compiled is {1 / v.ratio:.2f}× faster than eager"
    assert f"{1 / v.high:.2f}–{1 / v.low:.2f}× faster" in h.interval
    assert not BELOW_ONE.search(h.sentence), h.sentence
    assert h.sentence.startswith("Compiled is") and h.sentence.endswith(".")


def test_slower_run_names_the_biggest_gain_not_the_verdict(h200_graph_break: Report) -> None:
    h = headline(h200_graph_break)
    v = comparison_speed(h200_graph_break)
    assert h.verdict == f"compiled is {v.ratio:.2f}× slower than eager"
    assert "compiled-slower" not in {f.id for f in h.top}
    gains = [f.est_gain_us for f in h200_graph_break.findings if f.id != "compiled-slower"]
    best = max(g for g in gains if g is not None)
    assert h.top[0].est_gain_us == best and h.why == h.top[0].title
    assert len(h.top) == 3
    assert not BELOW_ONE.search(h.sentence), h.sentence


def test_no_difference_states_the_median_one_way(h200_block: Report) -> None:
    h = headline(h200_block)
    v = comparison_speed(h200_block)
    assert v.verdict == "no significant difference"
    assert h.verdict.startswith("No significant difference")
    assert speed_ratio_text(v.ratio) in h.interval
    assert not BELOW_ONE.search(h.sentence), h.sentence


def _finding(id_: str, gain: float | None, severity: Severity = Severity.INFO) -> Finding:
    return Finding(id=id_, severity=severity, title=id_, trace="b", est_gain_us=gain)


def test_top_findings_by_gain_then_report_order() -> None:
    findings = [
        _finding("compiled-slower", 500.0, Severity.ERROR),
        _finding("sync", 40.0, Severity.WARNING),
        _finding("no-gain", None, Severity.WARNING),
        _finding("chains", 900.0),
        _finding("copies", 2.0),
    ]
    assert [f.id for f in top_findings(findings)] == ["chains", "sync", "copies"]
    assert [f.id for f in top_findings(findings, 5)] == ["chains", "sync", "copies", "no-gain"]


def test_html_report_leads_with_the_sentence(cpu_block: Report) -> None:
    pytest.importorskip("plotly")
    from traceviz.report.html import comparison_html

    page = comparison_html(cpu_block)
    verdict = page.index("id='tv-verdict'")
    assert verdict < page.index("<nav>") < page.index('<section id="findings">')
    assert headline_html(headline(cpu_block)) in page


def test_dashboard_overview_leads_with_the_sentence(cpu_block: Report) -> None:
    pytest.importorskip("panel")
    from traceviz.dashboard.tabs.overview import overview

    panes = list(overview(cpu_block))
    first = str(panes[0].object)
    assert first.startswith("<div class='tv-verdict' id='tv-verdict'>Compiled is ")
    assert "Top findings" in first
    cards = str(panes[1].object)
    assert "× less" in cards and not BELOW_ONE.search(cards)


def test_one_colour_per_side_and_per_kind() -> None:
    pytest.importorskip("plotly")
    from traceviz.report.figures.style import KIND_COLORS, SIDE_COLORS

    assert len(set(SIDE_COLORS)) == 2
    assert not set(SIDE_COLORS) & set(KIND_COLORS.values())
    assert len(set(KIND_COLORS.values())) == len(KIND_COLORS)


def test_ranks_median_markers_inside_the_y_range() -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("plotly")
    from traceviz.report.figures.ranks import ranks_figure

    table = pd.DataFrame(
        {
            "rank": [0, 1],
            "steps": [2, 2],
            "step_p50_us": [9_000.0, 9_500.0],  # the median step is above every stack
            "compute_time_us": [8_000.0, 9_000.0],
            "collective_transfer_us": [2_000.0, 2_000.0],
            "collective_wait_us": [1_000.0, 0.0],
        }
    )
    fig = ranks_figure(table)
    low, high = fig.layout.yaxis.range
    assert low == 0 and high > 9.5  # ms: the highest marker, with headroom
    stacks = sum(trace.y for trace in fig.data if trace.type == "bar")
    assert high > max(stacks)


def test_table_headers_are_readable_with_units() -> None:
    pytest.importorskip("panel")
    from traceviz.dashboard.tabs.common import column_title

    assert column_title("eager_time_us") == "eager time (µs)"
    assert column_title("share_pct") == "share (%)"
    assert column_title("est_bytes") == "est (bytes)"
    assert column_title("launched_by") == "launched by"


def _by_line(file: str) -> object:
    import pandas as pd

    return pd.DataFrame(
        {"file": [file], "line": [3], "code": [""], "eager_ops": ["aten::add"],
         "eager_kernels": [2], "eager_time_us": [5.0]}
    )  # fmt: skip


def test_fusion_lines_hide_code_when_the_source_is_elsewhere() -> None:
    pytest.importorskip("panel")
    from traceviz.dashboard.tabs.fusion import lines_shown

    away = lines_shown(_by_line("/nowhere/deep/inside/pkg/model.py"))  # type: ignore[arg-type]
    assert "code" not in away.columns and "eager_ops" not in away.columns
    assert away["file"].iloc[0] == "…/inside/pkg/model.py"
    here = lines_shown(_by_line(str(Path("traceviz/runner/zoo.py").resolve())))  # type: ignore[arg-type]
    assert "code" in here.columns
    assert not here["file"].iloc[0].startswith("/")


def test_compare_ranks_names_the_dataset_and_draws_both_sides() -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("panel")
    from traceviz.dashboard.ranks_app import named_findings
    from traceviz.report.figures.ranks import rank_pair_figure
    from traceviz.report.figures.style import SIDE_COLORS

    found = named_findings([Finding(id="x", severity=Severity.INFO, title="slow", trace="old")])
    assert found[0].title == "old: slow"
    table = pd.DataFrame(
        {"rank": [1, 0], "step_a_us": [2000.0, 1000.0], "step_b_us": [500.0, 400.0]}
    )
    fig = rank_pair_figure(table, ("old", "new"))
    assert [t.name for t in fig.data] == ["old", "new"]
    assert [t.marker.color for t in fig.data] == list(SIDE_COLORS)
    assert list(fig.data[0].x) == ["0", "1"] and list(fig.data[0].y) == [1.0, 2.0]


def test_notebook_display_leads_with_the_sentence(cpu_block: Report) -> None:
    shown = cpu_block._repr_html_()
    assert shown.index("id='tv-verdict'") < shown.index("<table>")
    assert headline_html(headline(cpu_block)) in shown


def test_overview_metrics_table_reads_one_way(cpu_block: Report) -> None:
    pytest.importorskip("panel")
    from traceviz.dashboard.tabs.overview import one_way_ratios
    from traceviz.report.views import metrics_view

    view = one_way_ratios(metrics_view(cpu_block), cpu_block)
    assert "compiled vs eager" in view.columns and "ratio" not in view.columns
    column = view.columns.index("compiled vs eager")
    texts = [row[column] for row in view.rows]
    assert "2.67× less" in texts and not any(BELOW_ONE.search(t) for t in texts)


def test_table_cells_show_no_raw_nan_or_false() -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("panel")
    from traceviz.dashboard.tabs.common import YES_NO, cell_formats

    data = pd.DataFrame(
        {"name": ["k"], "odd": [False], "ratio": [float("nan")], "time_us": [1.5], "n": [3]}
    )
    formats = cell_formats(data, {"time_us": {"type": "money", "precision": 1, "symbol": ""}})
    assert formats["odd"] == YES_NO
    assert formats["ratio"].nan_format == "–" and formats["time_us"].nan_format == "–"
    assert formats["time_us"].format == "0,0.0"
    assert "name" not in formats and "n" not in formats
