"""Rank findings' gains against the per-rank tables they come from.

GIVEN eight ranks made from the corpus' NCCL rank with a planted straggler
(``traceviz.ranks.synth.make_ranks``: the others' collectives start up to 10 ms earlier, never
before the previous kernel on their stream ends), WHEN they are analysed together, THEN every
figure a finding credits is at most what the per-rank tables measured: the straggler's gain
per step is at most the most any other rank waited inside collectives per step (no rank's
step can shrink by more than it waited), the collective-wait gain is the mean rank's wait
per step, and the per-rank transfer + wait add up to the collective time.
"""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

import traceviz
from tests.conftest import CORPUS
from traceviz.ranks.analyse import analyse_ranks
from traceviz.ranks.reduce import RankSummary, reduce_rank
from traceviz.ranks.stragglers import Lateness
from traceviz.ranks.synth import make_ranks

NCCL_TRACE = CORPUS / "nvidia" / "a100_eager_nccl_rank.json.gz"
needs_nccl = pytest.mark.skipif(not NCCL_TRACE.is_file(), reason=f"corpus not at {CORPUS}")


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    out = tmp_path_factory.mktemp("ranks-gains")
    made = make_ranks(NCCL_TRACE, out, 8, straggler=3)
    paths = sorted(out.glob("rank*.pt.trace.json.gz"))
    assert len(paths) == len(made) == 8
    tables = [reduce_rank(traceviz.load(p, cache=False), r, str(p)) for r, p in enumerate(paths)]
    ranks = SimpleNamespace(
        summary=pd.concat([t.summary for t in tables], ignore_index=True),
        collectives=pd.concat([t.collectives for t in tables], ignore_index=True),
        kernel_summary=pd.concat([t.kernel_summary for t in tables], ignore_index=True),
    )
    return SimpleNamespace(ranks=ranks, analysis=analyse_ranks(ranks))


def _finding(analysis: object, rule: str, trace: str = "") -> object:
    found = [f for f in analysis.findings if f.id == rule and (not trace or f.trace == trace)]
    assert len(found) == 1, [f.id for f in analysis.findings]
    return found[0]


@needs_nccl
def test_straggler_gain_is_at_most_what_the_other_ranks_waited(job: SimpleNamespace) -> None:
    analysis = job.analysis
    assert analysis.stragglers.ranks == [3]
    per = analysis.stragglers.per_rank.set_index(Lateness.rank)
    steps = float(job.ranks.summary[RankSummary.steps].median())
    others_wait = per.drop(index=3)[Lateness.wait_us]
    most_waited_per_step = float(others_wait.max()) / steps
    late_bound = float(per.loc[3, Lateness.lateness_p50_us]) * int(per.loc[3, Lateness.instances])
    # the planted lateness (10 ms) is more than the others could wait: the cap must bite here
    assert late_bound / steps > most_waited_per_step
    finding = _finding(analysis, "rank-straggler", "rank 3")
    assert finding.est_gain_us is not None
    assert finding.est_gain_us <= most_waited_per_step + 1e-6
    assert finding.est_gain_us == pytest.approx(most_waited_per_step)
    assert "waited" in finding.gain_basis


@needs_nccl
def test_collective_wait_credits_add_up_to_the_measured_collective_time(
    job: SimpleNamespace,
) -> None:
    analysis = job.analysis
    per = analysis.stragglers.per_rank
    summary = job.ranks.summary.set_index(RankSummary.rank)
    for row in per.to_dict("records"):
        comm = float(summary.loc[row[Lateness.rank], RankSummary.comm_time_us])
        assert row[Lateness.transfer_us] + row[Lateness.wait_us] == pytest.approx(comm)
        assert 0 <= row[Lateness.wait_us] <= comm
    steps = float(job.ranks.summary[RankSummary.steps].median())
    finding = _finding(analysis, "collective-wait")
    mean_wait_per_step = float(per[Lateness.wait_us].sum()) / len(per) / steps
    assert finding.est_gain_us == pytest.approx(mean_wait_per_step)
    assert finding.est_gain_us <= float(per[Lateness.wait_us].max()) / steps
