"""The figure layer (traceviz.report.figures): every builder on a real GPU pair (honest titles on
every report: tests/test_figure_specs.py), no fig.show(), the timeline's mark cap, and the
import boundaries of DESIGN.md; the figures the dashboard shows: titles that fit, the compiled ÷
eager chart's names, colours and ticks, the kind chart's legend, the fusion view on kernel names
that carry no op names; and the dashboard's speed work: the figures' slim template keeps
plotly_white's look for every trace type traceviz draws, and ``benchmarks/dashboard.py`` times
every view a session opens, on a real pair; the step bridge's waterfall walks from a's step to
b's exactly, no kernel is drawn above its device's roof, an unknown device draws no roof."""

from __future__ import annotations

import importlib.util
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import CORPUS, REPO, SAMPLES, launched, load_trace

go = pytest.importorskip("plotly.graph_objects", reason="plotly not installed (dashboard extra)")

import plotly.io as pio  # noqa: E402

import traceviz  # noqa: E402
from traceviz.analysis.compare import Comparison  # noqa: E402
from traceviz.pipeline import compare, open_report  # noqa: E402
from traceviz.report import figures  # noqa: E402
from traceviz.report.bundle import Report  # noqa: E402
from traceviz.report.figures.backends import BACKEND_FIGURES  # noqa: E402
from traceviz.report.figures.fusion import opaque_fusions  # noqa: E402
from traceviz.report.figures.overview import BETTER, SAME, WORSE, log_ticks  # noqa: E402
from traceviz.report.figures.roofline import bridge_figure, roofline_figure  # noqa: E402
from traceviz.report.figures.style import TEMPLATE_TRACES, TITLE_WIDTH, template, wrap_title  # noqa: E402
from traceviz.report.roofline_report import bridge_of  # noqa: E402
from traceviz.report.views import ops_by_kernel  # noqa: E402
from traceviz.rundir import read_run_dir  # noqa: E402

# graph-break has compiled regions and a graph break; pointwise is the smallest pair.
SAMPLE_RUNS = ("graph-break", "pointwise")
GPU_PAIR = (
    CORPUS / "nvidia" / "a100_eager_train_control.json.gz",
    CORPUS / "nvidia" / "a100_compiled_cudagraph_train_2023.json.gz",
)
RUNS = sorted(p.parent for p in SAMPLES.glob("*/run.json"))
PERF_RUNS = ("graph-break", "gpt2-ort")  # gpt2-ort: the Backends figures too
BUILDERS = [b for builders in figures.VIEW_FIGURES.values() for b in builders]


def sample_run() -> Path:
    for name in SAMPLE_RUNS:
        if (SAMPLES / name / "run.json").is_file():
            return SAMPLES / name
    pytest.skip(f"no sample run in {SAMPLES} (make them with sample_traces/make.sh)")


@pytest.fixture(scope="module")
def sample() -> Comparison:
    run = read_run_dir(sample_run())
    return compare(run.eager, run.compiled, names=("eager", "compiled"), run_info=run.info)


def _gpu_paths() -> tuple[Path, Path]:
    for path in GPU_PAIR:
        if not path.is_file():
            pytest.skip(f"{path} not found (corpus at {CORPUS})")
    return GPU_PAIR


@pytest.fixture(scope="module")
def gpu_pair() -> Comparison:
    paths = _gpu_paths()
    return compare(load_trace(paths[0]), load_trace(paths[1]), names=("eager", "compiled"))


@pytest.fixture(scope="module")
def a100_forced() -> Report:
    paths = _gpu_paths()
    return compare(load_trace(paths[0]), load_trace(paths[1]), force=True)


@pytest.fixture(scope="module", params=RUNS[:3] or [None], ids=lambda p: p.name if p else "none")
def each_sample(request: pytest.FixtureRequest) -> Report:
    if request.param is None:
        pytest.skip(f"no sample runs in {SAMPLES}")
    return open_report(request.param)


@pytest.fixture(autouse=True)
def no_show(monkeypatch: pytest.MonkeyPatch) -> None:
    """GIVEN any builder WHEN it runs THEN it never shows a figure itself."""

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("the library called fig.show()")

    monkeypatch.setattr(go.Figure, "show", refuse)


@pytest.mark.parametrize("build", BUILDERS, ids=lambda b: b.__name__)
def test_builder_on_gpu_pair(gpu_pair: Comparison, build) -> None:  # type: ignore[no-untyped-def]
    fig = build(gpu_pair)
    assert fig.data or fig.layout.annotations


def test_timeline_draws_every_event_of_a_small_step(sample: Comparison) -> None:
    fig = figures.timeline_figure(sample, step=0)
    meta = fig.layout.meta
    assert not meta["aggregated"]
    assert meta["marks"] == meta["events"] > 0
    drawn = sum(len([x for x in t.x if x is not None and x == x]) for t in fig.data) // 2
    assert drawn == meta["marks"]


def test_timeline_caps_marks_on_a_big_window(gpu_pair: Comparison) -> None:
    # GIVEN the whole of two traces with ~18k activities WHEN capped at 2,000 marks
    fig = figures.timeline_figure(gpu_pair, step=None, max_marks=2_000)
    meta = fig.layout.meta
    # THEN the lanes are binned, the cap holds, and the title says so
    assert meta["events"] > 2_000
    assert meta["aggregated"]
    assert 0 < figures.timeline_marks(fig) <= 2_000
    assert "aggregated" in fig.layout.title.text
    points = sum(len(t.x) for t in fig.data)
    assert points == 3 * figures.timeline_marks(fig)  # start, end, gap per mark
    default = figures.timeline_figure(gpu_pair, step=None)
    assert figures.timeline_marks(default) <= figures.MAX_MARKS == 20_000


def test_timeline_aligns_both_traces_on_their_step_start(gpu_pair: Comparison) -> None:
    fig = figures.timeline_figure(gpu_pair, step=1)
    starts = [min(x for x in t.x if x == x) for t in fig.data if len(t.x)]
    assert min(starts) >= 0.0
    assert min(starts) < 5.0  # ms: activity starts near the step start on both sides


def test_fusion_sankey_reads_the_structured_ops(sample: Comparison) -> None:
    """Each compiled kernel's links are its FusionMap.ops rows, no text parsed; link widths
    split the kernel's measured eager time and add up to at most it."""
    ops = ops_by_kernel(sample.fusion.ops)
    assert ops, "the sample pair credits eager ops to compiled kernels"
    (sankey,) = figures.fusion_figure(sample).data
    by_kernel = sample.fusion.kernels.set_index("kernel")
    for name, pairs in ops.items():
        assert all(n >= 1 for _, n in pairs)
        assert sum(n for _, n in pairs) == by_kernel.loc[name, "eager_kernels"]
    credited = float(sample.fusion.credits.query("outcome == 'matched'")["time_us"].sum())
    eager_total = float(sample.a.kernels["excl_dur_us"].sum())
    assert sum(sankey.link.value) <= eager_total + 1e-6
    assert float(sample.fusion.ops["time_us"].sum()) == pytest.approx(credited)
    assert credited <= eager_total + 1e-6
    assert sum(sankey.link.value) > 0
    assert any("fused" in label for label in sankey.node.label), list(sankey.node.label)


def test_library_never_calls_show_and_only_report_and_dashboard_import_plotly() -> None:
    for path in (REPO / "traceviz").rglob("*.py"):
        text, rel = path.read_text(), path.relative_to(REPO / "traceviz")
        # a call, not a mention in ``backticks``
        assert not re.search(r"(?<![`\w])\w+\.show\(", text), f"{path} calls .show()"
        if rel.parts[0] not in ("report", "dashboard") and rel.name != "widgets.py":
            assert not re.search(r"^\s*(import|from)\s+(plotly|panel|bokeh)\b", text, re.M), rel


# --- the figures the dashboard shows ----------------------------------------------------


def test_wrap_title_keeps_every_word() -> None:
    text = "Fusion: " + " ".join(f"word{i}" for i in range(60))
    lines = wrap_title(text)
    assert len(lines) > 1 and all(len(line) <= TITLE_WIDTH for line in lines)
    assert " ".join(lines) == text
    assert wrap_title("x" * 200) == ["x" * 200]  # one long word keeps its line


def test_titles_fit_their_margin_and_legends_sit_below_the_axis_titles(
    each_sample: Report,
) -> None:
    from traceviz.report.figures.style import LEGEND_PX

    for view, built in figures.all_figures(each_sample).items():
        for fig in built:
            lines = fig.layout.title.text.split("<br>")
            assert all(len(line) <= TITLE_WIDTH or " " not in line for line in lines), view
            assert fig.layout.margin.t >= 19 * len(lines) + 30, view
            legend = fig.layout.legend
            if legend.orientation == "h":  # at the bottom edge, in the margin kept for it
                assert (legend.yref, legend.y, legend.yanchor) == ("container", 0, "bottom"), view
                assert fig.layout.margin.b >= 50 + LEGEND_PX, view


def test_ratio_chart_names_colours_and_ticks(each_sample: Report) -> None:
    fig = figures.metrics_figure(each_sample)
    bar = fig.data[0]
    labels = list(bar.y)
    assert labels and not any(label.endswith(("_us", "_count", "_bytes")) for label in labels)
    for ratio, color in zip(bar.x, bar.marker.color, strict=True):
        expected = (
            SAME if abs(math.log(ratio)) < math.log(1.02) else (BETTER if ratio < 1 else WORSE)
        )
        assert color == expected
    ticks = list(fig.layout.xaxis.tickvals)
    assert 1 in ticks and min(ticks) <= min(bar.x) and max(ticks) >= max(bar.x)
    # one direction: "2× less", "same", "2× more", never a ×0.5 beside a ×2
    assert all(t == "same" or t.endswith(("× less", "× more")) for t in fig.layout.xaxis.ticktext)
    assert all(t.endswith(("× less", "× more", "same")) for t in bar.text)


def test_log_ticks() -> None:
    assert log_ticks(0.42, 2.77) == [0.2, 0.5, 1, 2, 5]
    assert log_ticks(1.0, 1.0)[0] < 1 < log_ticks(1.0, 1.0)[-1]


def test_kind_legend_is_beside_the_plot(each_sample: Report) -> None:
    legend = figures.kinds_figure(each_sample).layout.legend
    assert (legend.orientation, legend.yref, legend.y, legend.yanchor) == ("v", "paper", 1, "top")
    assert legend.x > 1 and legend.xanchor == "left"


def test_fusion_view_says_when_names_carry_no_ops(a100_forced: Report) -> None:
    why = opaque_fusions(a100_forced.fusion.kernels)
    assert why is not None and "triton__0d1d2d" in why
    fig = figures.fusion_figure(a100_forced)
    assert not any(t.type == "sankey" for t in fig.data)
    assert "without op names" in fig.layout.annotations[0].text


def test_fusion_view_on_readable_names_draws(each_sample: Report) -> None:
    assert opaque_fusions(each_sample.fusion.kernels) is None
    fig = figures.fusion_figure(each_sample)
    sankeys = [t for t in fig.data if t.type == "sankey"]
    if sankeys:  # node labels are unique (names cut to one label are numbered)
        labels = list(sankeys[0].node.label)
        assert len(set(labels)) == len(labels)


def test_an_old_triton_pair_is_called_opaque(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    eager = tmp_trace(
        [*launched("aten::add", 0, 4, 1, kernel_name="vectorized_elementwise_kernel<add>"),
         *launched("aten::mul", 30, 4, 2, kernel_name="vectorized_elementwise_kernel<mul>")]
    )  # fmt: skip
    compiled = tmp_trace(launched("CompiledFunction", 0, 3, 1, kernel_name="triton__0d1d2d3d"))
    report = compare(traceviz.load(Path(eager)), traceviz.load(Path(compiled)), force=True)
    assert opaque_fusions(report.fusion.kernels) is not None


# --- the slim template, the dashboard benchmark ------------------------------------------


def _reports(a100_forced: Report) -> list[Report]:
    runs = [SAMPLES / name for name in PERF_RUNS if (SAMPLES / name / "run.json").is_file()]
    return [a100_forced, *(open_report(run) for run in runs)]


def _every_figure(report: Report) -> list[go.Figure]:
    built = [fig for figs in figures.all_figures(report).values() for fig in figs]
    if report.backends is not None:
        built += [build(report) for build in BACKEND_FIGURES]
    return built


def test_template_styles_every_trace_type_drawn(a100_forced: Report) -> None:
    """Every trace of every figure (real GPU pair, sample runs with and without ONNX Runtime
    backends) is of a type the slim template styles as plotly_white does, or of one that
    plotly_white does not style at all: the look is plotly_white's."""
    white = pio.templates["plotly_white"]
    styled_by_white = set(white.data.to_plotly_json())
    seen: set[str] = set()
    for report in _reports(a100_forced):
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


def test_template_is_smaller_and_never_shared(a100_forced: Report) -> None:
    """A figure carries less template JSON than with plotly_white, and its template is its
    own copy: changing one figure's leaves the cached one (and the next figure) alone."""
    fig = figures.metrics_figure(a100_forced)
    ours = len(json.dumps(fig.layout.template.to_plotly_json()))
    full = len(json.dumps(pio.templates["plotly_white"].to_plotly_json()))
    assert ours < 0.6 * full
    fig.layout.template.layout.paper_bgcolor = "red"
    assert template().layout.paper_bgcolor != "red"
    assert figures.metrics_figure(a100_forced).layout.template.layout.paper_bgcolor != "red"


def _benchmark() -> Any:
    spec = importlib.util.spec_from_file_location(
        "dashboard_benchmark", REPO / "benchmarks" / "dashboard.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_benchmark_times_every_view_of_a_real_pair() -> None:
    """``benchmarks/dashboard.py``'s round on the 1× A100 pair: every tab the report shows is
    built and timed once, and the parts add up to the totals the ratio is made of."""
    pytest.importorskip("panel", reason="panel not installed (dashboard extra)")
    from traceviz.dashboard.views import views_for

    bench = _benchmark()
    result = bench.measure(dict(zip("ab", _gpu_paths(), strict=True)))
    traces = [load_trace(path) for path in GPU_PAIR]
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
    pytest.importorskip("panel", reason="panel not installed (dashboard extra)")
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


# --- the step bridge's waterfall and the roofline scatter ----------------------------------

H200 = SAMPLES / "h200"


@pytest.mark.parametrize("run", ["gpt2", "conv-bn-relu", "graph-break"])
def test_the_waterfall_walks_from_a_step_to_b_step(run: str) -> None:
    report = open_report(H200 / run)
    fig = bridge_figure(report)
    bridge = bridge_of(report)
    assert bridge is not None and "measured" in fig.layout.title.text
    (waterfall,) = fig.data
    values, measures = list(waterfall.y), list(waterfall.measure)
    assert measures[0] == "absolute" and measures[-1] == "total"
    assert values[0] == bridge.step_a_us and values[-1] == bridge.step_b_us
    walked = math.fsum(values[:-1])
    assert walked == pytest.approx(bridge.step_b_us, abs=1e-6)


def test_no_kernel_is_drawn_above_the_h200_roofs() -> None:
    fig = roofline_figure(open_report(H200 / "gpt2"))
    title = fig.layout.title.text
    assert "measured" in title and "estimated" in title
    markers = [t for t in fig.data if t.mode == "markers"]
    roofs = [t for t in fig.data if t.mode == "lines"]
    assert len(markers) == 2 and roofs
    assert any("NVIDIA H200 SXM fp32" in t.name for t in roofs)
    for trace in markers:
        x, y = np.asarray(trace.x, dtype=float), np.asarray(trace.y, dtype=float)
        highest = np.max([np.interp(np.log(x), np.log(r.x), r.y) for r in roofs], axis=0)
        assert (y <= highest).all()


def test_a_cpu_pair_has_points_but_no_roof() -> None:
    fig = roofline_figure(open_report(SAMPLES / "mlp"))
    assert [t.mode for t in fig.data] == ["markers", "markers"]
    assert "no-peak" in fig.layout.title.text
