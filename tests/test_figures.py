"""The figure layer (traceviz.report.figures): every builder on a real sample pair, honest
titles, no fig.show(), the timeline's mark cap, and the import boundaries of DESIGN.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import CORPUS, REPO, SAMPLES, load_trace

go = pytest.importorskip("plotly.graph_objects", reason="plotly not installed (dashboard extra)")

from traceviz.analysis.compare import Comparison  # noqa: E402
from traceviz.pipeline import compare  # noqa: E402
from traceviz.report import figures  # noqa: E402
from traceviz.rundir import read_run_dir  # noqa: E402

# graph-break has compiled regions and a graph break; pointwise is the smallest pair.
SAMPLE_RUNS = ("graph-break", "pointwise")
GPU_PAIR = (
    "nvidia/a100_eager_train_control.json.gz",
    "nvidia/a100_compiled_cudagraph_train_2023.json.gz",
)
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


@pytest.fixture(scope="module")
def gpu_pair() -> Comparison:
    paths = [CORPUS / p for p in GPU_PAIR]
    if not all(p.is_file() for p in paths):
        pytest.skip(f"GPU traces not found in {CORPUS}")
    return compare(load_trace(paths[0]), load_trace(paths[1]), names=("eager", "compiled"))


@pytest.fixture(autouse=True)
def no_show(monkeypatch: pytest.MonkeyPatch) -> None:
    """GIVEN any builder WHEN it runs THEN it never shows a figure itself."""

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("the library called fig.show()")

    monkeypatch.setattr(go.Figure, "show", refuse)


@pytest.mark.parametrize("build", BUILDERS, ids=lambda b: b.__name__)
def test_builder_on_sample_pair(sample: Comparison, build) -> None:  # type: ignore[no-untyped-def]
    fig = build(sample)
    assert isinstance(fig, go.Figure)
    title = fig.layout.title.text
    assert title, "every figure has a title"
    assert re.search(r"measured|estimated", title), f"title says measured/estimated: {title}"
    fig.to_json()  # serialisable: what the browser will get


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


def test_default_cap_is_about_20k(gpu_pair: Comparison) -> None:
    fig = figures.timeline_figure(gpu_pair, step=None)
    assert figures.timeline_marks(fig) <= figures.MAX_MARKS == 20_000


def test_timeline_aligns_both_traces_on_their_step_start(gpu_pair: Comparison) -> None:
    fig = figures.timeline_figure(gpu_pair, step=1)
    starts = [min(x for x in t.x if x == x) for t in fig.data if len(t.x)]
    assert min(starts) >= 0.0
    assert min(starts) < 5.0  # ms: activity starts near the step start on both sides


def test_fusion_sankey_reads_the_structured_ops(sample: Comparison) -> None:
    """Each compiled kernel's links are its FusionMap.ops rows, no text parsed; link widths
    split the kernel's measured eager time and add up to at most it."""
    ops = figures._ops_by_kernel(sample.fusion.ops)
    assert ops, "the sample pair credits eager ops to compiled kernels"
    (sankey,) = figures.fusion_figure(sample).data
    by_kernel = sample.fusion.kernels.set_index("kernel")
    for kernel, pairs in ops.items():
        assert all(n >= 1 for _, n in pairs)
        assert sum(n for _, n in pairs) == by_kernel.loc[kernel, "eager_kernels"]
    credited = float(sample.fusion.credits.query("outcome == 'matched'")["time_us"].sum())
    eager_total = float(sample.a.kernels["excl_dur_us"].sum())
    assert sum(sankey.link.value) <= eager_total + 1e-6
    assert float(sample.fusion.ops["time_us"].sum()) == pytest.approx(credited)
    assert credited <= eager_total + 1e-6


def test_fusion_sankey_links_eager_ops_to_compiled_kernels(sample: Comparison) -> None:
    fig = figures.fusion_figure(sample)
    (sankey,) = fig.data
    labels = list(sankey.node.label)
    assert any("fused" in label for label in labels), labels
    assert sum(sankey.link.value) > 0


def test_library_never_calls_show() -> None:
    for path in (REPO / "traceviz").rglob("*.py"):
        text = path.read_text()
        # a call, not a mention in ``backticks``
        assert not re.search(r"(?<![`\w])\w+\.show\(", text), f"{path} calls .show()"


def test_only_report_and_dashboard_import_plotly_or_panel() -> None:
    allowed = {"report", "dashboard"}
    for path in (REPO / "traceviz").rglob("*.py"):
        rel = path.relative_to(REPO / "traceviz")
        if rel.parts[0] in allowed or rel.name == "widgets.py":
            continue
        text = path.read_text()
        assert not re.search(r"^\s*(import|from)\s+(plotly|panel|bokeh)\b", text, re.M), rel


def test_import_traceviz_stays_light() -> None:
    import subprocess
    import sys

    code = (
        "import sys, traceviz; "
        "print(any(m.split('.')[0] in ('plotly', 'panel') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
