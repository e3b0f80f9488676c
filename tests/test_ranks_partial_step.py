"""A rank's step figures leave out a cut-off last profiler step, as the single-trace summary
does (traceviz.analysis.windows.full_steps): the corpus MI250 trace ends with a 49 µs
fragment after a 9.3 ms step."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import CORPUS, load_trace
from traceviz.analysis.summary import summarize
from traceviz.analysis.windows import partial_steps
from traceviz.ranks.reduce import RankSummary, reduce_rank
from traceviz.schema import Steps

MI250 = CORPUS / "amd" / "mi250_eager_train_rocm62.json.gz"


def test_rank_steps_leave_the_cut_off_step_out() -> None:
    if not MI250.is_file():
        pytest.skip(f"{MI250} not found")
    trace = load_trace(MI250)
    assert partial_steps(trace) == 1 and len(trace.steps) == 2
    row = reduce_rank(trace, 0, str(MI250)).summary.iloc[0]
    full = trace.steps[Steps.dur_us].to_numpy(dtype=float)[:1]  # the first, whole step
    assert row[RankSummary.steps] == 1
    assert row[RankSummary.step_mean_us] == pytest.approx(float(np.mean(full)))
    assert row[RankSummary.step_p50_us] == pytest.approx(float(np.median(full)))
    summary = summarize(trace)  # the same count as the single-trace summary's
    assert row[RankSummary.steps] == summary.step_count
