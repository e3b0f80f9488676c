"""The figures the dashboard shows: titles that fit, the compiled ÷ eager chart's names,
colours and ticks, the kind chart's legend, and the fusion view on kernel names that carry
no op names."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.conftest import CORPUS, SAMPLES, kernel, launch, load_trace, op

pytest.importorskip("plotly", reason="plotly not installed (dashboard extra)")

import traceviz
from traceviz.pipeline import compare, open_report
from traceviz.report import figures
from traceviz.report.bundle import Report
from traceviz.report.figures.fusion import opaque_fusions
from traceviz.report.figures.overview import BETTER, SAME, WORSE, log_ticks
from traceviz.report.figures.style import TITLE_WIDTH, wrap_title

RUNS = sorted(p.parent for p in SAMPLES.glob("*/run.json"))
A100_PAIR = (
    CORPUS / "nvidia" / "a100_eager_train_control.json.gz",
    CORPUS / "nvidia" / "a100_compiled_cudagraph_train_2023.json.gz",
)


@pytest.fixture(scope="module", params=RUNS[:3] or [None], ids=lambda p: p.name if p else "none")
def sample(request: pytest.FixtureRequest) -> Report:
    if request.param is None:
        pytest.skip(f"no sample runs in {SAMPLES}")
    return open_report(request.param)


@pytest.fixture(scope="module")
def a100_forced() -> Report:
    for path in A100_PAIR:
        if not path.is_file():
            pytest.skip(f"{path} not found (corpus at {CORPUS})")
    return compare(load_trace(A100_PAIR[0]), load_trace(A100_PAIR[1]), force=True)


def test_wrap_title_keeps_every_word() -> None:
    text = "Fusion: " + " ".join(f"word{i}" for i in range(60))
    lines = wrap_title(text)
    assert len(lines) > 1 and all(len(line) <= TITLE_WIDTH for line in lines)
    assert " ".join(lines) == text
    assert wrap_title("x" * 200) == ["x" * 200]  # one long word keeps its line


def test_titles_fit_their_margin(sample: Report) -> None:
    for view, built in figures.all_figures(sample).items():
        for fig in built:
            lines = fig.layout.title.text.split("<br>")
            assert all(len(line) <= TITLE_WIDTH or " " not in line for line in lines), view
            assert fig.layout.margin.t >= 19 * len(lines) + 30, view


def test_ratio_chart_names_colours_and_ticks(sample: Report) -> None:
    fig = figures.metrics_figure(sample)
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


def test_kind_legend_is_beside_the_plot(sample: Report) -> None:
    fig = figures.kinds_figure(sample)
    assert fig.layout.legend.orientation == "v" and fig.layout.legend.x > 1


def test_fusion_view_says_when_names_carry_no_ops(a100_forced: Report) -> None:
    why = opaque_fusions(a100_forced.fusion.kernels)
    assert why is not None and "triton__0d1d2d" in why
    fig = figures.fusion_figure(a100_forced)
    assert not any(t.type == "sankey" for t in fig.data)
    assert "without op names" in fig.layout.annotations[0].text


def test_fusion_view_on_readable_names_draws(sample: Report) -> None:
    assert opaque_fusions(sample.fusion.kernels) is None
    fig = figures.fusion_figure(sample)
    sankeys = [t for t in fig.data if t.type == "sankey"]
    if sankeys:  # node labels are unique (names cut to one label are numbered)
        labels = list(sankeys[0].node.label)
        assert len(set(labels)) == len(labels)


def test_an_old_triton_pair_is_called_opaque(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    eager = tmp_trace(
        [
            op("aten::add", 0, 10),
            launch("cudaLaunchKernel", 1, 2, 1),
            kernel("vectorized_elementwise_kernel<add>", 5, 4, 1),
            op("aten::mul", 20, 10),
            launch("cudaLaunchKernel", 21, 2, 2),
            kernel("vectorized_elementwise_kernel<mul>", 25, 4, 2),
        ]
    )
    compiled = tmp_trace(
        [
            op("CompiledFunction", 0, 10),
            launch("cuLaunchKernel", 1, 2, 1),
            kernel("triton__0d1d2d3d", 5, 3, 1),
        ]
    )
    report = compare(traceviz.load(Path(eager)), traceviz.load(Path(compiled)), force=True)
    assert opaque_fusions(report.fusion.kernels) is not None


def test_legends_sit_below_the_axis_titles(sample: Report) -> None:
    from traceviz.report.figures.style import LEGEND_PX

    for view, built in figures.all_figures(sample).items():
        for fig in built:
            legend = fig.layout.legend
            if legend.orientation == "h":  # at the bottom edge, in the margin kept for it
                assert (legend.yref, legend.y, legend.yanchor) == ("container", 0, "bottom"), view
                assert fig.layout.margin.b >= 50 + LEGEND_PX, view
