"""Two runs of one job, rank by rank: eager vs compiled (or before vs after) on every rank.

:func:`compare_ranks` pairs the ranks of two sets (each a :class:`~traceviz.ranks.Ranks`, or
anything with a ``summary`` table of :class:`~traceviz.ranks.reduce.RankSummary` rows) by rank
number and gives, per rank, kernel counts, median step times and the **speedup** (a's median
step / b's: above 1, b is faster). It also names the ranks whose compile shape differs from the
others on one side: their compiled regions, compiled frames, graph breaks or recompiles are not
the side's most common value (the mode) — a graph break or a recompile on some ranks only.
All figures are measured on the traces.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from traceviz.errors import UsageError
from traceviz.ranks.reduce import RankSummary as S
from traceviz.ranks.reduce import plain

#: The summary columns that describe what torch.compile did on a rank.
COMPILE_SHAPE = (S.compiled_regions, S.compiled_frames, S.graph_breaks, S.recompiles)


class RankPair:
    """Columns of :attr:`RankComparison.per_rank`: one row per rank present on both sides."""

    rank = "rank"  # (int64)
    kernels_a = "kernels_a"  # kernels on side a (int64)
    kernels_b = "kernels_b"  # kernels on side b (int64)
    kernel_ratio = "kernel_ratio"  # kernels_b / kernels_a (float64)
    step_a_us = "step_a_us"  # side a's median step time, µs (float64; NaN: no steps)
    step_b_us = "step_b_us"  # side b's, µs (float64)
    speedup = "speedup"  # step_a_us / step_b_us (float64; > 1: b faster)
    comm_a_us = "comm_a_us"  # collective time on side a, µs (float64)
    comm_b_us = "comm_b_us"  # collective time on side b, µs (float64)
    graph_breaks_b = "graph_breaks_b"  # side b's graph breaks (int64)
    recompiles_b = "recompiles_b"  # side b's recompiles (int64)
    odd_a = "odd_a"  # side a's compile shape differs from a's other ranks (bool)
    odd_b = "odd_b"  # side b's compile shape differs from b's other ranks (bool)


@dataclass(frozen=True)
class RankComparison:
    """Side a vs side b per rank (see the module docstring)."""

    names: tuple[str, str]
    per_rank: pd.DataFrame  # columns: RankPair
    only_a: list[int]  # ranks only side a has
    only_b: list[int]
    odd: dict[str, pd.DataFrame]  # side name → its odd ranks: rank + COMPILE_SHAPE + expected

    @property
    def median_speedup(self) -> float:
        values = self.per_rank[RankPair.speedup].to_numpy(dtype=float)
        values = values[np.isfinite(values)]
        return float(np.median(values)) if values.size else float("nan")

    def speedup_range(self) -> tuple[float, float]:
        """The lowest and highest per-rank speedup (NaN, NaN without steps)."""
        values = self.per_rank[RankPair.speedup].to_numpy(dtype=float)
        values = values[np.isfinite(values)]
        return (float(values.min()), float(values.max())) if values.size else (np.nan, np.nan)


def compare_ranks(a: Any, b: Any, *, names: tuple[str, str] = ("a", "b")) -> RankComparison:
    """Compare two sets of ranks (objects with a ``summary`` table, or the tables)."""
    sa, sb = plain(_summary(a)), plain(_summary(b))
    ra, rb = set(sa[S.rank].astype(int)), set(sb[S.rank].astype(int))
    both = sa.merge(sb, on=S.rank, suffixes=("_a", "_b"), how="inner").sort_values(S.rank)
    odd_a, odd_b = odd_compile_ranks(sa), odd_compile_ranks(sb)
    step_a = both[f"{S.step_p50_us}_a"].to_numpy(dtype=float)
    step_b = both[f"{S.step_p50_us}_b"].to_numpy(dtype=float)
    kernels_a = both[f"{S.kernels}_a"].to_numpy(dtype=float)
    kernels_b = both[f"{S.kernels}_b"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        speedup = np.where(step_b > 0, step_a / step_b, np.nan)
        kernel_ratio = np.where(kernels_a > 0, kernels_b / kernels_a, np.nan)
    rank = both[S.rank].to_numpy(dtype=np.int64)
    per = pd.DataFrame(
        {
            RankPair.rank: rank,
            RankPair.kernels_a: kernels_a.astype(np.int64),
            RankPair.kernels_b: kernels_b.astype(np.int64),
            RankPair.kernel_ratio: kernel_ratio,
            RankPair.step_a_us: step_a,
            RankPair.step_b_us: step_b,
            RankPair.speedup: speedup,
            RankPair.comm_a_us: both[f"{S.comm_time_us}_a"].to_numpy(dtype=float),
            RankPair.comm_b_us: both[f"{S.comm_time_us}_b"].to_numpy(dtype=float),
            RankPair.graph_breaks_b: both[f"{S.graph_breaks}_b"].to_numpy(dtype=np.int64),
            RankPair.recompiles_b: both[f"{S.recompiles}_b"].to_numpy(dtype=np.int64),
            RankPair.odd_a: np.isin(rank, odd_a[S.rank].to_numpy()),
            RankPair.odd_b: np.isin(rank, odd_b[S.rank].to_numpy()),
        }
    )
    return RankComparison(
        names=names,
        per_rank=per.reset_index(drop=True),
        only_a=sorted(ra - rb),
        only_b=sorted(rb - ra),
        odd={names[0]: odd_a, names[1]: odd_b},
    )


def odd_compile_ranks(summary: pd.DataFrame) -> pd.DataFrame:
    """The ranks whose compile shape (:data:`COMPILE_SHAPE`) is not the most common one among
    ``summary``'s ranks: columns ``rank``, the shape columns, and ``expected`` (the common
    shape as text, e.g. ``"compiled_regions=3 graph_breaks=0 …"``). Empty with < 3 ranks: with
    two, neither is the odd one."""
    summary = plain(summary)
    columns = [S.rank, *COMPILE_SHAPE, "expected"]
    if len(summary) < 3:
        return pd.DataFrame({c: [] for c in columns})
    shape = summary.loc[:, list(COMPILE_SHAPE)].astype("Int64").fillna(-1).astype(np.int64)
    keys = shape.apply(tuple, axis=1)
    common = keys.value_counts().index[0]
    odd = summary.loc[keys != common, [S.rank, *COMPILE_SHAPE]].copy()
    odd["expected"] = " ".join(f"{c}={v}" for c, v in zip(COMPILE_SHAPE, common, strict=True))
    return odd.reset_index(drop=True)


def _summary(side: Any) -> pd.DataFrame:
    table = side if isinstance(side, pd.DataFrame) else getattr(side, "summary", None)
    if not isinstance(table, pd.DataFrame):
        raise UsageError(f"compare_ranks needs ranks (with a summary table), not {type(side)}")
    return table
