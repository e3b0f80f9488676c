"""Stragglers: the ranks every collective waits for.

From the ranks' collectives (:func:`~traceviz.ranks.collectives.match_collectives`: clocks
aligned on collective end times), per rank: its **lateness** (how much later than the median
rank it arrives at a collective, median over the collectives it took part in), the share of
collectives it **arrived last** at, and the time it **waited** for the others inside them.

**The outlier rule** (robust, so one straggler cannot hide itself by inflating the spread): a
rank is a straggler when its median lateness exceeds ``median + k · 1.4826 · MAD`` of all
ranks' median lateness (``k`` = :data:`K_MAD`, 3.5; 1.4826·MAD estimates the standard deviation
of normal jitter) **and** exceeds a floor: :data:`MIN_LATENESS_US` (100 µs), or, when larger,
:data:`MIN_LATENESS_SHARE` (2 %) of the median step spread over the collectives of a step
(lateness at every collective of a step costs the others lateness × collectives per step) — so
a uniform job, whose MAD is only jitter, flags nobody. The same rule
(:func:`robust_outliers`) serves step-time and kernel spread.

It takes three ranks or more to single one out: of two, each is as far from their median as
the other (``arrived_last_share`` still says which one the other waited for).

Ranks are grouped by node (host) in :attr:`Stragglers.by_node`: several stragglers on one
node point at the node (thermals, a noisy neighbour, its NIC) rather than the rank's work.
When no collectives match across ranks, lateness is unknown and nobody is flagged here (the
step-time spread still speaks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from traceviz.ranks.collectives import CollectiveMatch, match_collectives
from traceviz.ranks.reduce import RankSummary as S
from traceviz.ranks.reduce import plain
from traceviz.records import plain as plain_value

K_MAD = 3.5
MAD_TO_SIGMA = 1.4826
MIN_LATENESS_US = 100.0
MIN_LATENESS_SHARE = 0.02


class Lateness:
    """Columns of :attr:`Stragglers.per_rank`: one row per rank of the summary."""

    rank = "rank"  # (int64)
    node = "node"  # host ("" unknown) (object)
    instances = "instances"  # collective instances matched on this rank (int64)
    offset_us = "offset_us"  # its clock offset, µs (float64; NaN: not aligned)
    lateness_p50_us = "lateness_p50_us"  # median lateness, µs (float64; NaN: no collectives)
    lateness_max_us = "lateness_max_us"  # largest lateness, µs (float64)
    arrived_last = "arrived_last"  # instances it arrived last at (int64)
    arrived_last_share = "arrived_last_share"  # of its instances, 0–1 (float64)
    comm_us = "comm_us"  # summed collective durations, µs (float64)
    transfer_us = "transfer_us"  # their transfer part, µs (float64)
    wait_us = "wait_us"  # their waiting part, µs: transfer_us + wait_us = comm_us (float64)
    score = "score"  # (lateness_p50 − median) / (1.4826·MAD); inf when MAD is 0 (float64)
    straggler = "straggler"  # flagged by the rule (bool)


@dataclass(frozen=True)
class Stragglers:
    """Who the job waits for (see the module docstring)."""

    per_rank: pd.DataFrame  # columns: Lateness
    by_node: pd.DataFrame  # node, ranks, stragglers, lateness_p50_us (median), wait_us (sum)
    match: CollectiveMatch
    threshold_us: float  # lateness above which a rank is flagged, µs (NaN: no collectives)
    k: float = K_MAD

    @property
    def ranks(self) -> list[int]:
        """The flagged ranks, latest first."""
        flagged = self.per_rank[self.per_rank[Lateness.straggler]]
        flagged = flagged.sort_values(Lateness.lateness_p50_us, ascending=False)
        return [int(r) for r in flagged[Lateness.rank]]

    def to_json(self) -> list[dict[str, Any]]:
        """The flagged ranks as ``{"rank", "node", "evidence": {...}}`` objects."""
        out = []
        rows = {int(r[Lateness.rank]): r for r in self.per_rank.to_dict("records")}
        for rank in self.ranks:
            row = rows[rank]
            out.append(
                {
                    "rank": rank,
                    "node": str(row[Lateness.node]),
                    "evidence": {
                        "lateness_p50_us": plain_value(row[Lateness.lateness_p50_us]),
                        "lateness_max_us": plain_value(row[Lateness.lateness_max_us]),
                        "threshold_us": plain_value(self.threshold_us),
                        "arrived_last_share": plain_value(row[Lateness.arrived_last_share]),
                        "instances": int(row[Lateness.instances]),
                        "others_wait_us": plain_value(
                            self.per_rank.loc[
                                self.per_rank[Lateness.rank] != rank, Lateness.wait_us
                            ].sum()
                        ),
                        "score": plain_value(row[Lateness.score]),
                    },
                }
            )
        return out


def find_stragglers(
    summary: pd.DataFrame, collectives: pd.DataFrame, *, k: float = K_MAD
) -> Stragglers:
    """The stragglers of a job from its ranks' ``summary`` (:class:`RankSummary` rows) and
    ``collectives`` (:class:`~traceviz.ranks.reduce.Collectives` rows)."""
    summary = plain(summary)
    match = match_collectives(collectives)
    per = _per_rank(summary, match)
    floor = _floor(summary, per)
    late = per[Lateness.lateness_p50_us].to_numpy(dtype=float)
    flagged, score, threshold = robust_outliers(late, k=k, floor=floor, absolute=True)
    per[Lateness.score] = score
    per[Lateness.straggler] = flagged
    return Stragglers(per, _by_node(per), match, threshold, k)


def robust_outliers(
    values: np.ndarray, *, k: float = K_MAD, floor: float = 0.0, absolute: bool = False
) -> tuple[np.ndarray, np.ndarray, float]:
    """The high outliers among ``values`` (NaN never is one): above ``median + max(k · 1.4826
    · MAD, floor)``; with ``absolute`` the floor applies to the value itself instead of its
    distance from the median (lateness is already a distance). Returns the flags, the scores
    ``(value − median) / (1.4826 · MAD)`` and the threshold (NaN when no value is finite)."""
    values = np.asarray(values, dtype=float)
    finite = np.isfinite(values)
    if finite.sum() < 2:
        return np.zeros(values.size, dtype=bool), np.full(values.size, np.nan), float("nan")
    med = float(np.median(values[finite]))
    sigma = MAD_TO_SIGMA * float(np.median(np.abs(values[finite] - med)))
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.where(sigma > 0, (values - med) / sigma, np.where(values > med, np.inf, 0.0))
    spread = med + k * sigma
    threshold = max(spread, floor) if absolute else med + max(k * sigma, floor)
    return finite & (values > threshold), score, float(threshold)


def _floor(summary: pd.DataFrame, per: pd.DataFrame) -> float:
    """The least lateness (µs) worth flagging (see the module docstring)."""
    step = pd.to_numeric(summary[S.step_p50_us], errors="coerce").to_numpy(dtype=float)
    steps = pd.to_numeric(summary[S.steps], errors="coerce").to_numpy(dtype=float)
    instances = per[Lateness.instances].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_step = np.where(steps > 0, instances / steps, np.nan)
    per_step = per_step[np.isfinite(per_step) & (per_step > 0)]
    step = step[np.isfinite(step)]
    if not per_step.size or not step.size:
        return MIN_LATENESS_US
    share = MIN_LATENESS_SHARE * float(np.median(step)) / float(np.median(per_step))
    return max(MIN_LATENESS_US, share)


def _per_rank(summary: pd.DataFrame, match: CollectiveMatch) -> pd.DataFrame:
    base = pd.DataFrame(
        {
            Lateness.rank: summary[S.rank].to_numpy(dtype=np.int64),
            Lateness.node: summary[S.node].fillna("").astype(str).to_numpy(),
        }
    )
    stats = match.per_rank()
    offsets = match.offsets[["rank", "offset_us"]]
    out = base.merge(stats, on=Lateness.rank, how="left").merge(offsets, on="rank", how="left")
    for col in (Lateness.instances, Lateness.arrived_last):
        out[col] = out[col].fillna(0).astype(np.int64)
    for col in (Lateness.comm_us, Lateness.transfer_us, Lateness.wait_us):
        out[col] = out[col].astype(float).fillna(0.0)
    order = [c for c in vars(Lateness) if not c.startswith("_") and c not in ("score", "straggler")]
    return out.loc[:, order].sort_values(Lateness.rank).reset_index(drop=True)


def _by_node(per: pd.DataFrame) -> pd.DataFrame:
    g = per.groupby(Lateness.node, sort=True)
    return pd.DataFrame(
        {
            "ranks": g.size(),
            "stragglers": g[Lateness.straggler].sum().astype(np.int64),
            "lateness_p50_us": g[Lateness.lateness_p50_us].median(),
            "wait_us": g[Lateness.wait_us].sum(),
        }
    ).reset_index()
