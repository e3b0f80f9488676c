"""timeline._nested (each lane's running end with NumPy, issue 14, PERF-SMALL2) against the
pandas groupby shift/cummax it replaced, kept here as the reference (_nested_grouped): the
same rows dropped on every corpus and sample trace, and on random lanes with ties, NaN ends
and kernels inside others."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import SAMPLES, corpus_params, load_trace
from traceviz.analysis import timeline as timeline_mod
from traceviz.analysis.kernels import classify
from traceviz.analysis.timeline import Lane, timeline
from traceviz.diagnose.facts import facts_of_trace, kernel_steps

SAMPLE_TRACES = sorted(SAMPLES.glob("*/*.pt.trace.json.gz")) + sorted(
    SAMPLES.glob("h200/*/*.pt.trace.json.gz")
)


def _traces() -> list[object]:
    return [
        *corpus_params(),
        *(pytest.param(p, id=str(p.relative_to(SAMPLES))) for p in SAMPLE_TRACES),
    ]


@pytest.mark.parametrize("path", _traces())
def test_timeline_matches_the_groupby_form_on_real_traces(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = load_trace(path)
    kernels = classify(trace)
    steps = kernel_steps(facts_of_trace(trace))
    got = timeline(trace, kernels, steps, keys=False)
    with monkeypatch.context() as m:
        m.setattr(timeline_mod, "_nested", timeline_mod._nested_grouped)
        want = timeline(trace, kernels, steps, keys=False)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    # time is credited at most once: the kept kernels never overlap on a lane
    for _, lane in got.groupby(Lane.lane):
        starts, ends = lane[Lane.ts].to_numpy(), lane[Lane.end].to_numpy()
        assert not (starts[1:] < np.fmax.accumulate(ends)[:-1] - 1e-3).any()


def _frame(rng: np.random.Generator, n: int) -> pd.DataFrame:
    lane = np.sort(rng.integers(0, 4, size=n))
    ts = np.round(rng.random(n) * 20, 1)
    order = np.lexsort((ts, lane))
    dur = rng.choice([0.0, 0.5, 3.0, 10.0, np.nan], size=n)
    end = ts + dur
    return pd.DataFrame({Lane.lane: lane[order], Lane.ts: ts[order], Lane.end: end[order]})


@pytest.mark.parametrize("seed", range(30))
def test_nested_matches_the_groupby_form_on_random_lanes(seed: int) -> None:
    frame = _frame(np.random.default_rng(seed), int(np.random.default_rng(seed).integers(0, 40)))
    got = timeline_mod._nested(frame)
    want = timeline_mod._nested_grouped(frame)
    assert got.dtype == want.dtype and np.array_equal(got, want)


def test_nested_out_of_lane_order_takes_the_general_form() -> None:
    frame = pd.DataFrame(
        {Lane.lane: [1, 0, 1, 0], Lane.ts: [0.0, 0.0, 1.0, 5.0], Lane.end: [4.0, 2.0, 2.0, 6.0]}
    )
    assert timeline_mod._nested(frame).tolist() == [False, False, True, False]
    assert timeline_mod._nested(frame.iloc[:0]).size == 0
