"""The step-bridge waterfall and the roofline scatter (traceviz.report.figures.roofline) on
real runs: the waterfall walks from a's step to b's exactly, no kernel is drawn above its
device's roof, an unknown device draws no roof."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.conftest import SAMPLES

go = pytest.importorskip("plotly.graph_objects", reason="plotly not installed (dashboard extra)")

from traceviz.pipeline import compare_run  # noqa: E402
from traceviz.report.figures.roofline import bridge_figure, roofline_figure  # noqa: E402
from traceviz.report.roofline_report import bridge_of  # noqa: E402

H200 = SAMPLES / "h200"


@pytest.mark.parametrize("run", ["gpt2", "conv-bn-relu", "graph-break"])
def test_the_waterfall_walks_from_a_step_to_b_step(run: str) -> None:
    report = compare_run(H200 / run)
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
    fig = roofline_figure(compare_run(H200 / "gpt2"))
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
    fig = roofline_figure(compare_run(SAMPLES / "mlp"))
    assert [t.mode for t in fig.data] == ["markers", "markers"]
    assert "no-peak" in fig.layout.title.text
