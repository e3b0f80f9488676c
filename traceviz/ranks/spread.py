"""Spread across ranks: the same step or the same kernel slower on some ranks.

- **Step-time spread** (:func:`step_spread`): each rank's median step time against the median
  rank's. Ranks synchronised by collectives share their step time (the fast ones wait), so a
  spread here means ranks that do not wait for each other, or a step boundary that differs.
- **Kernel spread** (:func:`kernel_spread`): per kernel name present on at least two ranks,
  its mean duration on each rank against the median rank's. Collective kernels are left out
  (their duration includes waiting: :mod:`traceviz.ranks.collectives` splits that). A rank is
  slow for a kernel when its mean is above the median by the robust rule of
  :func:`~traceviz.ranks.stragglers.robust_outliers` and at least :data:`MIN_RATIO` (1.2×) of
  it, and the kernel is at least :data:`MIN_SHARE` (1 %) of the median rank's kernel time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from traceviz.ranks.reduce import KernelSummary as KS
from traceviz.ranks.reduce import RankSummary as S
from traceviz.ranks.reduce import is_collective_kernel, plain
from traceviz.ranks.stragglers import K_MAD, MAD_TO_SIGMA, robust_outliers

MIN_RATIO = 1.2
MIN_SHARE = 0.01
#: A rank's step is slow when ≥ this much above the median rank's (and a robust outlier).
MIN_STEP_RATIO = 1.05


@dataclass(frozen=True)
class StepSpread:
    """Step time across ranks. ``per_rank``: ``rank``, ``node``, ``step_p50_us``,
    ``step_p95_us`` (µs), ``ratio`` (step_p50 / the median rank's), ``slow`` (bool: a robust
    outlier at least :data:`MIN_STEP_RATIO` above the median)."""

    per_rank: pd.DataFrame
    median_us: float  # median over ranks of step_p50_us, µs (NaN: no steps)
    min_us: float
    max_us: float

    @property
    def spread(self) -> float:
        """Slowest over fastest rank's median step (NaN without steps)."""
        return self.max_us / self.min_us if self.min_us > 0 else float("nan")

    @property
    def slow_ranks(self) -> list[int]:
        rows = self.per_rank[self.per_rank["slow"]].sort_values("ratio", ascending=False)
        return [int(r) for r in rows["rank"]]


def step_spread(summary: pd.DataFrame, *, k: float = K_MAD) -> StepSpread:
    """Step-time spread of the ranks' ``summary`` rows (:class:`RankSummary`)."""
    summary = plain(summary)
    p50 = pd.to_numeric(summary[S.step_p50_us], errors="coerce").to_numpy(dtype=float)
    finite = np.isfinite(p50)
    median = float(np.median(p50[finite])) if finite.any() else float("nan")
    floor = (MIN_STEP_RATIO - 1.0) * median if finite.any() else 0.0
    flagged, _, _ = robust_outliers(p50, k=k, floor=floor)
    per = pd.DataFrame(
        {
            "rank": summary[S.rank].to_numpy(dtype=np.int64),
            "node": summary[S.node].fillna("").astype(str).to_numpy(),
            "step_p50_us": p50,
            "step_p95_us": pd.to_numeric(summary[S.step_p95_us], errors="coerce").to_numpy(float),
            "ratio": p50 / median if median > 0 else np.full(p50.size, np.nan),
            "slow": flagged,
        }
    ).sort_values("rank", ignore_index=True)
    return StepSpread(
        per_rank=per,
        median_us=median,
        min_us=float(p50[finite].min()) if finite.any() else float("nan"),
        max_us=float(p50[finite].max()) if finite.any() else float("nan"),
    )


class SlowKernel:
    """Columns of :func:`kernel_spread`: one row per (kernel, slow rank)."""

    name = "name"  # kernel name (object)
    rank = "rank"  # the slow rank (int64)
    mean_us = "mean_us"  # its mean duration there, µs (float64)
    median_us = "median_us"  # median over ranks of the mean duration, µs (float64)
    ratio = "ratio"  # mean_us / median_us (float64)
    calls = "calls"  # its calls on that rank (int64)
    excess_us = "excess_us"  # (mean_us − median_us) × calls: time lost on that rank, µs
    ranks = "ranks"  # ranks that ran the kernel (int64)


def kernel_spread(kernel_summary: pd.DataFrame, *, k: float = K_MAD) -> pd.DataFrame:
    """Kernels slower on some ranks (columns: :class:`SlowKernel`; most excess first)."""
    columns = [v for c, v in vars(SlowKernel).items() if not c.startswith("_")]
    ks = plain(kernel_summary)
    ks = ks[~is_collective_kernel(ks[KS.name])]
    if ks.empty:
        return pd.DataFrame({c: [] for c in columns})
    ks = ks.drop_duplicates([KS.rank, KS.name]).dropna(subset=[KS.mean_us])
    totals = ks.groupby(KS.rank)[KS.total_us].transform("sum").to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ks = ks.assign(_share=np.where(totals > 0, ks[KS.total_us].to_numpy(float) / totals, 0))
    by_name = ks.groupby(KS.name, sort=False)
    ks = ks.assign(
        _share=by_name["_share"].transform("median"),
        _ranks=by_name[KS.rank].transform("size"),
        _median=by_name[KS.mean_us].transform("median"),
    )
    ks = ks[(ks["_share"] >= MIN_SHARE) & (ks["_ranks"] >= 2)]
    mean = ks[KS.mean_us].to_numpy(dtype=float)
    median = ks["_median"].to_numpy(dtype=float)
    deviation = pd.Series(np.abs(mean - median), index=ks.index)
    mad = deviation.groupby(ks[KS.name], sort=False).transform("median").to_numpy(dtype=float)
    # robust_outliers per kernel name: above median + max(k·1.4826·MAD, (MIN_RATIO − 1)·median)
    threshold = median + np.maximum(k * MAD_TO_SIGMA * mad, (MIN_RATIO - 1.0) * median)
    slow = ks[mean > threshold]
    calls = slow[KS.calls].to_numpy(dtype=np.int64)
    out = pd.DataFrame(
        {
            SlowKernel.name: slow[KS.name].to_numpy(dtype=object),
            SlowKernel.rank: slow[KS.rank].to_numpy(dtype=np.int64),
            SlowKernel.mean_us: slow[KS.mean_us].to_numpy(dtype=float),
            SlowKernel.median_us: slow["_median"].to_numpy(dtype=float),
            SlowKernel.ratio: (slow[KS.mean_us] / slow["_median"]).to_numpy(dtype=float),
            SlowKernel.calls: calls,
            SlowKernel.excess_us: (slow[KS.mean_us] - slow["_median"]).to_numpy(float) * calls,
            SlowKernel.ranks: slow["_ranks"].to_numpy(dtype=np.int64),
        },
        columns=columns,
    )
    return out.sort_values(SlowKernel.excess_us, ascending=False, ignore_index=True)
