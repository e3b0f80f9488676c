"""The dashboard's speed work (issue 14, PERF3): the figures' slim template keeps plotly_white's
look for every trace type traceviz draws, and ``benchmarks/dashboard.py`` times every view
a session opens, on a real pair."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CORPUS, SAMPLES, load_trace

pytest.importorskip("plotly", reason="plotly not installed (dashboard extra)")
pytest.importorskip("panel", reason="panel not installed (dashboard extra)")

import plotly.graph_objects as go
import plotly.io as pio

from traceviz.pipeline import compare, open_report
from traceviz.report import figures
from traceviz.report.bundle import Report
from traceviz.report.figures.backends import BACKEND_FIGURES
from traceviz.report.figures.style import TEMPLATE_TRACES, template

ROOT = Path(__file__).resolve().parents[1]
A100_PAIR = {
    "a": CORPUS / "nvidia" / "a100_eager_train_control.json.gz",
    "b": CORPUS / "nvidia" / "a100_compiled_cudagraph_train_2023.json.gz",
}
RUNS = ("graph-break", "gpt2-ort")  # gpt2-ort: the Backends figures too


def _pair() -> dict[str, Path]:
    for path in A100_PAIR.values():
        if not path.is_file():
            pytest.skip(f"{path} not found (corpus at {CORPUS})")
    return A100_PAIR


@pytest.fixture(scope="module")
def a100() -> Report:
    pair = _pair()
    return compare(load_trace(pair["a"]), load_trace(pair["b"]), force=True)


def _reports(a100: Report) -> list[Report]:
    runs = [SAMPLES / name for name in RUNS if (SAMPLES / name / "run.json").is_file()]
    return [a100, *(open_report(run) for run in runs)]


def _every_figure(report: Report) -> list[go.Figure]:
    built = [fig for figs in figures.all_figures(report).values() for fig in figs]
    if report.backends is not None:
        built += [build(report) for build in BACKEND_FIGURES]
    return built


def test_template_styles_every_trace_type_drawn(a100: Report) -> None:
    """Every trace of every figure (real GPU pair, sample runs with and without ONNX Runtime
    backends) is of a type the slim template styles as plotly_white does, or of one that
    plotly_white does not style at all: the look is plotly_white's."""
    white = pio.templates["plotly_white"]
    styled_by_white = set(white.data.to_plotly_json())
    seen: set[str] = set()
    for report in _reports(a100):
        for fig in _every_figure(report):
            assert fig.layout.template.layout == white.layout
            for trace in fig.data:
                seen.add(trace.type)
                assert trace.type in TEMPLATE_TRACES or trace.type not in styled_by_white, (
                    f"{trace.type} is styled by plotly_white but not by the slim template: "
                    "add it to TEMPLATE_TRACES"
                )
    assert {"bar", "scatter"} <= seen  # the figures were really drawn
    for name in TEMPLATE_TRACES:
        assert fig.layout.template.data[name] == white.data[name]


def test_template_is_smaller_and_never_shared(a100: Report) -> None:
    """A figure carries less template JSON than with plotly_white, and its template is its
    own copy: changing one figure's leaves the cached one (and the next figure) alone."""
    fig = figures.metrics_figure(a100)
    ours = len(json.dumps(fig.layout.template.to_plotly_json()))
    full = len(json.dumps(pio.templates["plotly_white"].to_plotly_json()))
    assert ours < 0.6 * full
    fig.layout.template.layout.paper_bgcolor = "red"
    assert template().layout.paper_bgcolor != "red"
    assert figures.metrics_figure(a100).layout.template.layout.paper_bgcolor != "red"


def _benchmark() -> Any:
    spec = importlib.util.spec_from_file_location(
        "dashboard_benchmark", ROOT / "benchmarks" / "dashboard.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_benchmark_times_every_view_of_a_real_pair() -> None:
    """``benchmarks/dashboard.py``'s round on the 1× A100 pair: every tab the report shows is
    built and timed once, and the parts add up to the totals the ratio is made of."""
    from traceviz.dashboard.views import views_for

    bench = _benchmark()
    result = bench.measure(_pair())
    traces = [load_trace(path) for path in A100_PAIR.values()]
    report = compare(*traces, names=("eager", "compiled"))
    titles = views_for(report)
    assert list(result["per_view"]) == titles and list(result["per_model"]) == titles
    assert result["views"] == pytest.approx(sum(result["per_view"].values()))
    assert result["models"] == pytest.approx(sum(result["per_model"].values()))
    assert result["load"] > 0 and result["analysis"] > 0
    assert result["events"] == sum(trace.stats.events_in for trace in traces)
    assert 0 < result["marks_step"] <= bench.MARK_CAP


def test_benchmark_best_of_takes_each_part_best() -> None:
    """The summary takes each part's shortest time over the rounds, and its totals are the
    sums of the per-view bests (one slow round does not choose the others)."""
    bench = _benchmark()

    def round_(load: float, a: float, b: float) -> dict[str, Any]:
        views = {"Overview": a, "Kernels": b}
        models = {"Overview": a, "Kernels": a}
        return {"warm_up": 0.1, "load": load, "analysis": 2 * load, "views": a + b,
                "models": a, "per_view": views, "per_model": models,
                "load_at_once": load / 2, "load_at_once_cpu": load, "open": 3 * load,
                "open_cpu": 4 * load, "dash_per_view": dict(views), "dash_per_model": models,
                "dash_views": a + b, "dash_models": 2 * a,
                "events": 10, "marks_step": 1, "marks_all": 1}  # fmt: skip

    best = bench.best_of([round_(5.0, 0.3, 0.1), round_(4.0, 0.2, 0.4)])
    assert best["load"] == 4.0 and best["analysis"] == 8.0
    assert best["per_view"] == {"Overview": 0.2, "Kernels": 0.1}
    assert best["views"] == pytest.approx(0.3) and best["models"] == pytest.approx(0.4)
    # the sides-at-once parts: each its best round, with that round's CPU time
    assert best["load_at_once"] == 2.0 and best["load_at_once_cpu"] == 4.0
    assert best["open"] == 12.0 and best["open_cpu"] == 16.0
    assert best["dash_views"] == pytest.approx(0.3) and best["dash_models"] == pytest.approx(0.4)
