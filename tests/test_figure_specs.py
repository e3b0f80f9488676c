"""Figures built from finished specs (traceviz.report.figures.fast, issue 14) are plotly
figures: every builder, with every option, on a real report of each device kind (CUDA sample
runs and corpus pair, ROCm corpus pair, CPU-only made traces, the ONNX Runtime backends, a
ranks job), makes a figure plotly's own validation accepts as it is — rebuilt through
``go.Figure``, every property validated, it holds the same JSON. The figures still behave as
plotly figures afterwards (validation, subplots)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import CORPUS, SAMPLES, launched, load_trace, op
from tests.real_data import CORPUS_PAIRS

go = pytest.importorskip("plotly.graph_objects", reason="plotly not installed (dashboard extra)")

from traceviz.pipeline import compare, open_report  # noqa: E402
from traceviz.report import figures  # noqa: E402
from traceviz.report.bundle import Report  # noqa: E402
from traceviz.report.figures.memory import _downsample_max  # noqa: E402

#: Builder name → the options each is also built with (beside the defaults).
OPTIONS: dict[str, list[dict[str, Any]]] = {
    "timeline_figure": [{"step": None}, {"max_marks": 100}, {"step": 5}],
    "launch_delay_figure": [{"bins": 7}],
    "fusion_figure": [{"top": 3}],
    "allocated_figure": [{"max_points": 10}],
    "metrics_figure": [{"names": ("kernel_count",)}, {"names": ()}],
}
BUILDERS = [b.__name__ for builders in figures.VIEW_FIGURES.values() for b in builders]
# H200 CUDA runs: regions and a graph break, CUDA graphs; a CPU-built run
SAMPLE_RUNS = ["h200/graph-break", "h200/gpt2-reduce-overhead", "pointwise"]


def valid(fig: Any, label: str) -> None:
    """``fig`` is a go.Figure that plotly, validating every property, rebuilds unchanged."""
    assert isinstance(fig, go.Figure), label
    rebuilt = go.Figure(fig.to_dict())  # raises ValueError on a property plotly refuses
    assert json.loads(rebuilt.to_json()) == json.loads(fig.to_json()), label


def all_valid(report: Report, name: str) -> None:
    """Valid with every option, and its title says whether it is measured or estimated."""
    for options in [{}, *OPTIONS.get(name, [])]:
        fig = getattr(figures, name)(report, **options)
        valid(fig, f"{name}({options})")
        assert re.search(r"measured|estimated", fig.layout.title.text), fig.layout.title.text


@cache
def sample_report(run: str) -> Report:
    return open_report(SAMPLES / run)


@cache
def corpus_report(a: str, b: str) -> Report:
    return compare(load_trace(CORPUS / a), load_trace(CORPUS / b), force=True)


@pytest.mark.parametrize("run", SAMPLE_RUNS)
@pytest.mark.parametrize("name", BUILDERS)
def test_valid_figures_on_sample_runs(run: str, name: str) -> None:
    all_valid(sample_report(run), name)


@pytest.mark.parametrize(("a", "b"), CORPUS_PAIRS, ids=[a for a, _ in CORPUS_PAIRS])
@pytest.mark.parametrize("name", BUILDERS)
def test_valid_figures_on_corpus_pairs(a: str, b: str, name: str) -> None:
    """The A100 (CUDA graphs, memory totals), V100 (memory events without totals) and MI250 /
    MI300X (ROCm) pairs."""
    if not (CORPUS / a).is_file() or not (CORPUS / b).is_file():
        pytest.skip(f"corpus traces not found in {CORPUS}")
    all_valid(corpus_report(a, b), name)


def _ops_only(tmp_trace: Callable[..., Path]) -> Path:
    return tmp_trace([op("aten::add", 0, 10), op("aten::mul", 20, 10)])


def _idle_step(tmp_trace: Callable[..., Path]) -> Path:
    step = op("ProfilerStep#1", 0, 100, cat="user_annotation")
    return tmp_trace([step, op("aten::add", 200, 10)])


def test_valid_figures_on_made_pairs(tmp_trace: Callable[..., Path]) -> None:
    """GIVEN two traces of CPU ops only (no kernel, no memory event, no region), a step with
    nothing in it, or a made eager/compiled pair with launches and kernels THEN every
    builder's branches (empty ones too) make valid figures."""
    eager = tmp_trace(
        [*launched("aten::add", 0, 4, 1, kernel_name="add_kernel"),
         *launched("aten::mul", 30, 4, 2, kernel_name="mul_kernel")]
    )  # fmt: skip
    fused = "triton_poi_fused_add_mul_0"
    compiled = tmp_trace(launched(fused, 0, 5, 1, kernel_name=fused))
    for report in (
        compare(load_trace(_ops_only(tmp_trace)), load_trace(_ops_only(tmp_trace))),
        compare(load_trace(eager), load_trace(compiled)),
    ):
        for name in BUILDERS:
            all_valid(report, name)
    idle = compare(load_trace(_idle_step(tmp_trace)), load_trace(_idle_step(tmp_trace)))
    all_valid(idle, "timeline_figure")
    fig = figures.timeline_figure(idle)
    assert "no activity in this window" in [a.text for a in fig.layout.annotations]


def test_figures_still_validate_and_keep_their_subplots() -> None:
    """GIVEN a figure built from specs THEN plotly validates what is set on it afterwards,
    ``row=``/``col=`` find its subplots, and two figures share no layout dict."""
    report = sample_report("graph-break")
    fig = figures.timeline_figure(report)
    with pytest.raises(ValueError):
        fig.update_layout(not_a_property=1)
    with pytest.raises(ValueError):
        fig.data[0].update(line_width="wide")
    fig.add_scatter(x=[0.0], y=["lane"], row=2, col=1)
    assert fig.data[-1].xaxis == "x2" and fig.data[-1].yaxis == "y2"
    other = figures.timeline_figure(report)
    fig.layout.template.layout.font.color = "red"
    fig.layout.xaxis2.title.text = "changed"
    assert other.layout.template.layout.font.color != "red"
    assert other.layout.xaxis2.title.text == "time since window start (ms)"
    assert figures.timeline_figure(report).to_json() == other.to_json()


def test_downsampling_keeps_a_bin_whose_values_are_all_missing() -> None:
    """GIVEN allocated-memory samples with a run of missing totals filling whole bins (the
    v100 corpus pair: the Memory tab and the HTML report raised pandas' "idxmax … all NA
    values") THEN each bin keeps its min and max, an all-missing bin its first point."""
    x = np.arange(12, dtype=float)
    y = np.array([1, 9, 2, 8, np.nan, np.nan, np.nan, np.nan, 3, 7, 4, 6], dtype=float)
    kx, ky = _downsample_max(x, y, 6)  # 3 bins of 4 points
    assert kx.tolist() == [0.0, 1.0, 4.0, 8.0, 9.0]
    assert np.array_equal(ky, [1, 9, np.nan, 3, 7], equal_nan=True)
    full = np.array([1, 9, 2, 8, 5, 0, 6, 4, 3, 7, 4, 6], dtype=float)
    kx, ky = _downsample_max(x, full, 6)
    assert kx.tolist() == [0.0, 1.0, 5.0, 6.0, 8.0, 9.0]  # min and max of each bin


def test_memory_figure_and_html_report_on_the_v100_pair() -> None:
    """GIVEN the v100 corpus pair (memory events without totals) THEN the allocated-memory
    figure and the HTML report are made (they raised a pandas ValueError)."""
    a, b = CORPUS_PAIRS[1]
    if not (CORPUS / a).is_file() or not (CORPUS / b).is_file():
        pytest.skip(f"corpus traces not found in {CORPUS}")
    from traceviz.report.html import comparison_html

    report = corpus_report(a, b)
    fig = figures.allocated_figure(report)
    assert fig.data and all(len(t.x) <= 4000 for t in fig.data)
    assert "Allocated memory over time" in comparison_html(report)


def test_histogram_counts_as_numpy_does() -> None:
    """GIVEN values on the edges, outside them, NaN, and random ones THEN the launch-delay
    histogram's counts equal ``np.histogram``'s (the last bin closed)."""
    from traceviz.report.figures.launch import _histogram

    edges = np.geomspace(0.5, 80.0, 9)
    rng = np.random.default_rng(7)
    values = np.concatenate(
        [
            edges,
            [0.1, 0.5, 80.0, 81.0, np.nan],
            rng.uniform(0.5, 80.0, 1000),
            rng.lognormal(size=99),
        ]
    )
    got = _histogram(values, edges)
    want, _ = np.histogram(values[~np.isnan(values)], bins=edges)
    assert got.dtype == want.dtype and got.tolist() == want.tolist()
    assert _histogram(np.array([]), edges).tolist() == [0] * 8


def test_timeline_hover_texts() -> None:
    """GIVEN timeline events, with and without a missing name, op or duration THEN each hover
    text is name, kind · duration, launching op; a missing op gives a missing text."""
    import pandas as pd

    from traceviz.report.figures.timeline import _hover_single

    events = pd.DataFrame(
        {
            "name": ["gemm_kernel", "x" * 120, "gemm_kernel", "add"],
            "kind": pd.array(["gemm", "pointwise", "gemm", "pointwise"], dtype="str"),
            "dur": [12.5, 3000.0, 12.5, np.nan],
            "op": pd.array(["aten::mm", "aten::add", "aten::mm", "–"], dtype="str"),
        }
    )
    got = _hover_single(events)
    assert got.dtype == object and len(got) == 4
    assert got[0] == got[2] and got[0].startswith("<b>gemm_kernel</b><br>gemm · ")
    assert got[0].endswith("<br>launched by aten::mm")
    assert len(got[1]) < 120 + 60  # the long name cut to length
    assert got[3] == "<b>add</b><br>pointwise · –<br>launched by –"
    missing_op = events.assign(op=pd.array(["aten::mm", None, "aten::mm", "–"], dtype="str"))
    texts = _hover_single(missing_op)
    assert pd.isna(texts[1]) and texts[0] == got[0] and texts[3] == got[3]
    with pytest.raises(TypeError):  # a missing name cannot be cut to length
        _hover_single(events.assign(name=["gemm_kernel", None, "gemm_kernel", "add"]))


def test_valid_backend_figures(tmp_trace: Callable[..., Path]) -> None:
    """GIVEN the run with ONNX Runtime backends (and the same run made to draw a log axis,
    to have no step times, no quartiles, and no op count that changes) THEN the Backends
    figures are valid; a report without backends too."""
    import dataclasses

    from traceviz.analysis.backends import BackendRow
    from traceviz.report.figures.backends import BACKEND_FIGURES

    run = SAMPLES / "gpt2-ort"
    if not (run / "run.json").is_file():
        pytest.skip(f"{run} not found")
    report = sample_report("gpt2-ort")
    view = report.backends
    assert view is not None and not view.rows.empty
    rows = view.rows
    slow = rows[BackendRow.step_median_us].astype(float) * np.where(rows.index == 0, 1000, 1)
    variants = {
        "as run": view,
        "log axis": dataclasses.replace(
            view, rows=rows.assign(**{BackendRow.step_median_us: slow})
        ),
        "no step times": dataclasses.replace(
            view, rows=rows.assign(**{BackendRow.step_median_us: np.nan})
        ),
        "no quartiles": dataclasses.replace(
            view, rows=rows.assign(**{BackendRow.step_q1_us: np.nan, BackendRow.step_q3_us: np.nan})
        ),
        "same op counts": dataclasses.replace(view, op_counts=view.op_counts.iloc[:0]),
    }
    plain = compare(load_trace(_ops_only(tmp_trace)), load_trace(_ops_only(tmp_trace)))
    for label, backends in variants.items():
        made = dataclasses.replace(report, backends=backends)
        for build in BACKEND_FIGURES:
            for subject in (made, plain):
                valid(build(subject), f"{label}: {build.__name__}")
    log_axis = dataclasses.replace(report, backends=variants["log axis"])
    assert BACKEND_FIGURES[0](log_axis).layout.yaxis.type == "log"


def test_valid_ranks_figure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """GIVEN a made job with a straggler (and its table without the straggler column, with a
    part all missing, empty, cut to a few ranks) THEN the ranks figure is valid."""
    pytest.importorskip("pyarrow", reason="pyarrow not installed (ranks extra)")
    import traceviz
    from tests.ranks_fixtures import synthetic_job, write_ranks
    from traceviz.ranks.analyse import analyse_ranks
    from traceviz.ranks.render import per_rank_table
    from traceviz.report.figures import ranks

    job = synthetic_job(straggler=3, seed=7)
    table = per_rank_table(analyse_ranks(traceviz.load_ranks(write_ranks(tmp_path, job.docs))))
    assert table["straggler"].fillna(False).astype(bool).tolist().count(True) == 1
    tables = [
        table,
        table.drop(columns=["straggler", "collective_wait_us"]),
        table.assign(collective_transfer_us=np.nan),
        table.iloc[:0],
    ]
    for made in tables:
        for options in ({}, {"title": "Job"}):
            valid(ranks.ranks_figure(made, **options), f"ranks_figure({options})")
    monkeypatch.setattr(ranks, "MAX_RANKS", 3)
    valid(ranks.ranks_figure(table), "ranks_figure, 3 ranks")
    assert "3 of 8 ranks" in ranks.ranks_figure(table).layout.title.text
