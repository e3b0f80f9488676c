"""Collectives across ranks: one instance per collective call, clocks aligned, wait vs transfer.

Input: the ranks' :class:`~traceviz.ranks.reduce.Collectives` rows (one per collective kernel
per rank). Pure pandas over that small table.

- **Matching.** ``(step, channel, name, seq)`` names one collective instance on every rank of
  its group (:class:`~traceviz.ranks.reduce.Collectives`); an instance seen on fewer than two
  ranks is left out (nothing to compare), and so are point-to-point send/recv and unnamed
  (``other``) kernels, which do not end together on every rank of a group.
- **Clock alignment.** Every rank's trace is on its own clock. A collective *ends* together on
  all ranks (each finishes once the last one has arrived and the data moved), so the end times
  of one instance differ only by the ranks' clock offsets (and jitter). A rank's offset is the
  median, over the instances it took part in, of its end time minus the instance's median end
  time: robust to the odd instance, exact when ends coincide. Offsets are relative to the
  job's median clock (their median is about 0); aligned time = own time − offset.
- **Wait vs transfer.** Per instance, the shortest duration among its ranks is the
  **transfer** (the rank that arrived last waited for nobody); each rank's duration beyond it
  is **waiting** for the others. Per rank and instance ``transfer_us + wait_us = dur_us``
  exactly, so credits never exceed what was measured.
- **Bus bandwidth**, as nccl-tests defines it: ``algbw = bytes / transfer time`` and
  ``busbw = algbw × factor``, factor ``2(n−1)/n`` for all_reduce, ``(n−1)/n`` for all_gather,
  reduce_scatter and all_to_all, 1 for broadcast, reduce and send/recv (n = ranks in the
  group). ``bytes`` is nccl-tests' size (:attr:`Collectives.bytes`); GB/s are 10^9 bytes/s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from traceviz.ranks.reduce import Collectives as C
from traceviz.ranks.reduce import plain

#: Collective → bus-bandwidth factor as a function of the group size n (nccl-tests).
BUS_FACTOR = {
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "send_recv": lambda n: 1.0,
}
KEY = [C.step, C.channel, C.name, C.seq]
#: Kernels that are no group-wide collective: never matched across ranks.
UNMATCHED = ("send_recv", "other")


class Arrival:
    """Columns of :attr:`CollectiveMatch.arrivals`: one row per (instance, rank)."""

    instance = "instance"  # row of :attr:`CollectiveMatch.instances` (int64)
    rank = "rank"  # (int64)
    start_us = "start_us"  # kernel start on the aligned clock, µs (float64)
    end_us = "end_us"  # kernel end on the aligned clock, µs (float64)
    dur_us = "dur_us"  # kernel duration, µs (float64)
    lateness_us = "lateness_us"  # start_us − the instance's median start_us, µs (float64)
    last = "last"  # this rank arrived last (latest start_us; ties: all of them) (bool)
    transfer_us = "transfer_us"  # the instance's transfer time, µs (float64)
    wait_us = "wait_us"  # dur_us − transfer_us, µs (float64, ≥ 0)


class Instance:
    """Columns of :attr:`CollectiveMatch.instances`: one row per collective instance."""

    step = "step"  # ProfilerStep number (Int64)
    channel = "channel"  # process group or stream (object)
    name = "name"  # canonical collective (object)
    seq = "seq"  # order within (step, channel, name) (int64)
    ranks = "ranks"  # ranks that took part (int64)
    bytes = "bytes"  # median message size over the ranks, bytes (float64; NaN unknown)
    group_size = "group_size"  # recorded group size, else ranks (int64)
    transfer_us = "transfer_us"  # shortest duration among the ranks, µs (float64)
    wait_us = "wait_us"  # summed waiting of the ranks, µs (float64)
    skew_us = "skew_us"  # latest − earliest aligned start, µs (float64)
    last_rank = "last_rank"  # the rank that arrived last (int64)
    algbw_gbps = "algbw_gbps"  # bytes / transfer time, GB/s (float64; NaN unknown)
    busbw_gbps = "busbw_gbps"  # algbw × bus factor, GB/s (float64; NaN unknown)


@dataclass(frozen=True)
class CollectiveMatch:
    """Collectives matched across ranks (see the module docstring).

    ``offsets``: one row per rank, ``rank`` and ``offset_us`` (µs to subtract from the rank's
    own times to put it on the job's median clock; ``instances``: how many it was measured on).
    """

    arrivals: pd.DataFrame  # columns: Arrival
    instances: pd.DataFrame  # columns: Instance
    offsets: pd.DataFrame  # rank, offset_us, instances

    @property
    def empty(self) -> bool:
        return self.instances.empty

    def per_rank(self) -> pd.DataFrame:
        """Per rank: ``rank``, ``instances``, ``lateness_p50_us`` (median lateness, µs),
        ``lateness_max_us``, ``arrived_last`` (instances it arrived last at),
        ``arrived_last_share`` (of its instances), ``comm_us`` (summed durations, µs),
        ``transfer_us`` and ``wait_us`` (their split, µs: they add up to ``comm_us``)."""
        a = self.arrivals
        if a.empty:
            columns = ["instances", "lateness_p50_us", "lateness_max_us", "arrived_last",
                       "comm_us", "transfer_us", "wait_us", "arrived_last_share"]  # fmt: skip
            out = pd.DataFrame({c: pd.Series(dtype=float) for c in columns})
            return out.assign(rank=pd.Series(dtype=np.int64)).loc[:, ["rank", *columns]]
        g = a.groupby(Arrival.rank, sort=True)
        out = pd.DataFrame(
            {
                "instances": g.size(),
                "lateness_p50_us": g[Arrival.lateness_us].median(),
                "lateness_max_us": g[Arrival.lateness_us].max(),
                "arrived_last": g[Arrival.last].sum().astype(np.int64),
                "comm_us": g[Arrival.dur_us].sum(),
                "transfer_us": g[Arrival.transfer_us].sum(),
                "wait_us": g[Arrival.wait_us].sum(),
            }
        )
        out["arrived_last_share"] = out["arrived_last"] / out["instances"]
        return out.reset_index()


def match_collectives(collectives: pd.DataFrame) -> CollectiveMatch:
    """Match, align and split ``collectives`` (rows of every rank; see the module docstring)."""
    rows = plain(collectives).dropna(subset=[C.ts_us, C.dur_us])
    rows = rows[~rows[C.name].isin(UNMATCHED)].copy()
    rows[C.step] = rows[C.step].astype("Int64").fillna(-1)
    counts = rows.groupby(KEY, sort=False)[C.rank].transform("nunique")
    rows = rows[counts >= 2]
    if rows.empty:
        return _empty()
    rows["instance"] = rows.groupby(KEY, sort=True).ngroup()
    rows = rows.drop_duplicates(["instance", C.rank]).reset_index(drop=True)
    offsets = align_clocks(rows)
    offset = rows[C.rank].map(offsets.set_index("rank")["offset_us"]).to_numpy(dtype=float)
    arrivals = _arrivals(rows, offset)
    return CollectiveMatch(arrivals, _instances(rows, arrivals), offsets)


def align_clocks(rows: pd.DataFrame, *, rounds: int = 2) -> pd.DataFrame:
    """Per rank, the clock offset (µs) from matched collective end times (``rows``: one per
    instance and rank, with an ``instance`` column). Columns ``rank``, ``offset_us``,
    ``instances``. A second round re-centres each instance on the aligned ends, which removes
    the bias of instances that only some ranks took part in."""
    end = rows[C.end_us].to_numpy(dtype=float)
    rank = rows[C.rank].to_numpy(dtype=np.int64)
    inst = rows["instance"].to_numpy(dtype=np.int64)
    offset = pd.Series(0.0, index=np.unique(rank))
    for _ in range(rounds):
        aligned = end - offset.reindex(rank).to_numpy()
        centre = pd.Series(aligned).groupby(inst).transform("median").to_numpy()
        resid = pd.Series(end - centre).groupby(rank).median()
        offset = resid - resid.median()
    counts = pd.Series(inst).groupby(rank).size()
    return pd.DataFrame(
        {
            "rank": offset.index.to_numpy(dtype=np.int64),
            "offset_us": offset.to_numpy(dtype=float),
            "instances": counts.reindex(offset.index).to_numpy(dtype=np.int64),
        }
    )


def bus_factor(name: str, n: int) -> float:
    """nccl-tests' bus-bandwidth factor of collective ``name`` in a group of ``n`` ranks (NaN
    for a collective it does not define)."""
    rule = BUS_FACTOR.get(name)
    return float(rule(n)) if rule is not None and n >= 1 else float("nan")


def _arrivals(rows: pd.DataFrame, offset: np.ndarray) -> pd.DataFrame:
    start = rows[C.ts_us].to_numpy(dtype=float) - offset
    dur = rows[C.dur_us].to_numpy(dtype=float)
    inst = rows["instance"]
    frame = pd.DataFrame(
        {
            Arrival.instance: inst.to_numpy(dtype=np.int64),
            Arrival.rank: rows[C.rank].to_numpy(dtype=np.int64),
            Arrival.start_us: start,
            Arrival.end_us: start + dur,
            Arrival.dur_us: dur,
        }
    )
    g = frame.groupby(Arrival.instance)
    frame[Arrival.lateness_us] = start - g[Arrival.start_us].transform("median").to_numpy()
    frame[Arrival.last] = start >= g[Arrival.start_us].transform("max").to_numpy()
    transfer = g[Arrival.dur_us].transform("min").to_numpy()
    frame[Arrival.transfer_us] = transfer
    frame[Arrival.wait_us] = dur - transfer
    return frame


def _instances(rows: pd.DataFrame, arrivals: pd.DataFrame) -> pd.DataFrame:
    g = rows.groupby("instance", sort=True)
    a = arrivals.groupby(Arrival.instance, sort=True)
    first = g[KEY].first()
    ranks = g[C.rank].nunique().to_numpy(dtype=np.int64)
    recorded = g[C.group_size].max().astype("Float64").to_numpy(dtype=float, na_value=np.nan)
    group = np.where(np.isfinite(recorded), recorded, ranks).astype(np.int64)
    size = g[C.bytes].median().astype("Float64").to_numpy(dtype=float, na_value=np.nan)
    transfer = a[Arrival.transfer_us].first().to_numpy(dtype=float)
    last_idx = a[Arrival.start_us].idxmax().to_numpy()
    algbw = np.where(transfer > 0, size / np.where(transfer > 0, transfer, 1.0) / 1e3, np.nan)
    names = first[C.name].to_numpy(dtype=object)
    factor = np.array([bus_factor(str(n), int(k)) for n, k in zip(names, group, strict=True)])
    return pd.DataFrame(
        {
            Instance.step: first[C.step].replace(-1, pd.NA).astype("Int64").to_numpy(),
            Instance.channel: first[C.channel].to_numpy(dtype=object),
            Instance.name: names,
            Instance.seq: first[C.seq].to_numpy(dtype=np.int64),
            Instance.ranks: ranks,
            Instance.bytes: size,
            Instance.group_size: group,
            Instance.transfer_us: transfer,
            Instance.wait_us: a[Arrival.wait_us].sum().to_numpy(dtype=float),
            Instance.skew_us: (a[Arrival.start_us].max() - a[Arrival.start_us].min()).to_numpy(),
            Instance.last_rank: arrivals[Arrival.rank].to_numpy()[last_idx],
            Instance.algbw_gbps: algbw,
            Instance.busbw_gbps: algbw * factor,
        }
    )


def _empty() -> CollectiveMatch:
    arrivals = pd.DataFrame({c: [] for c in vars(Arrival) if not c.startswith("_")})
    instances = pd.DataFrame({c: [] for c in vars(Instance) if not c.startswith("_")})
    offsets = pd.DataFrame(
        {
            "rank": pd.Series(dtype=np.int64),
            "offset_us": pd.Series(dtype=float),
            "instances": pd.Series(dtype=np.int64),
        }
    )
    return CollectiveMatch(arrivals, instances, offsets)
