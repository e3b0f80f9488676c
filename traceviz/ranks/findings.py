"""Findings for many ranks, worded like the single-trace ones (:class:`Finding`).

Rule ids (thresholds are the named constants below and in the analysis modules):

=======================  ===========================================================  ========
id                       trigger                                                      severity
=======================  ===========================================================  ========
rank-straggler           a rank's median lateness at collectives above the robust     warning
                         threshold (:mod:`traceviz.ranks.stragglers`)
collective-wait          ranks wait ≥ 25 % of their collective time (≥ 10 %: info)    warning /
                                                                                      info
step-time-spread         a rank's median step ≥ 5 % above the median rank, robust     warning
kernel-spread            a kernel ≥ 1.2× slower on some ranks (≥ 1 % of kernel time)  info /
                         (warning: the excess is ≥ 5 % of a step)                     warning
rank-compile-differs     ranks whose compiled regions / frames / graph breaks /       warning
                         recompiles differ from the other ranks'
rank-speedup-uneven      compare: a rank's speedup below 1 while the median is above  warning /
                         it, or ≥ 10 % below the median (info)                        info
ranks-missing            compare: ranks on only one side                              info
ranks-failed             traces that could not be ingested                            warning
=======================  ===========================================================  ========
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from traceviz.diagnose import docs
from traceviz.diagnose.finding import Evidence, Finding, Severity, Unit, format_value
from traceviz.ranks.collectives import Instance
from traceviz.ranks.compare import COMPILE_SHAPE, RankComparison, RankPair, odd_compile_ranks
from traceviz.ranks.reduce import RankSummary as S
from traceviz.ranks.reduce import range_text
from traceviz.ranks.spread import SlowKernel, StepSpread
from traceviz.ranks.stragglers import Lateness, Stragglers

DISTRIBUTED = "https://pytorch.org/docs/stable/distributed.html"
NCCL_ENV = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"
WAIT_WARNING_SHARE = 0.25
WAIT_INFO_SHARE = 0.10
KERNEL_WARNING_SHARE = 0.05
UNEVEN_SHARE = 0.10
#: Ranks named in one evidence line before "… N more".
SHOWN = 8
#: Every gain here is per profiled step: rank traces come without timed steps (a run's
#: run.json), so nothing scales them to a step outside the profiler.
PROFILED = "per profiled step (no timed steps in a rank dataset; the profiler lengthens steps)"


def straggler_findings(stragglers: Stragglers, summary: pd.DataFrame) -> list[Finding]:
    """One ``rank-straggler`` finding per flagged rank (latest first)."""
    out = []
    per = {int(r[Lateness.rank]): r for r in stragglers.per_rank.to_dict("records")}
    total_wait = float(stragglers.per_rank[Lateness.wait_us].sum())
    steps = _steps(summary)
    nodes = _straggler_nodes(stragglers)
    for rank in stragglers.ranks:
        row = per[rank]
        others = total_wait - float(row[Lateness.wait_us])
        instances = int(row[Lateness.instances])
        late = float(row[Lateness.lateness_p50_us])
        # no other rank's step shrinks by more than it waited inside collectives
        waits = stragglers.per_rank[Lateness.wait_us]
        most_waited = float(waits[stragglers.per_rank[Lateness.rank] != rank].max())
        gain = min(late * instances, most_waited) / steps if steps else None
        if late * instances > most_waited:  # capped: no step shrinks by more than it waited
            basis = (
                "upper bound: the most any other rank waited inside collectives per step, "
                "measured (its median lateness × its collectives per step is more: no rank's "
                f"step shrinks by more than it waited); {PROFILED}"
            )
        else:
            basis = (
                "upper bound: its median lateness × its collectives per step, "
                f"measured; the other ranks' wait shrinks by at most that; {PROFILED}"
            )
        evidence: list[Evidence | str] = [
            Evidence("median lateness at collectives", late, Unit.US),
            Evidence("threshold (robust rule)", stragglers.threshold_us, Unit.US),
            Evidence("arrived last at", float(row[Lateness.arrived_last_share]), Unit.RATIO),
            Evidence("collectives matched", instances, Unit.COUNT),
            Evidence("the other ranks' waiting inside collectives", others, Unit.US),
        ]
        if row[Lateness.node]:
            evidence.append(Evidence("node", str(row[Lateness.node])))
        if nodes:
            evidence.append(nodes)
        out.append(
            Finding(
                id="rank-straggler",
                severity=Severity.WARNING,
                title=f"Rank {rank} is a straggler: it reaches collectives {_us(late)} after the "
                "median rank, and the others wait for it",
                evidence=tuple(evidence),
                est_gain_us=gain,
                gain_basis=basis if gain is not None else "",
                next_step=f"Open rank {rank}'s trace (traceviz.load(DATASET, rank={rank})) and "
                "compare the work before its collectives with another rank's: more data, a "
                "slower input pipeline, CPU contention or a throttled GPU on its host",
                docs_url=DISTRIBUTED,
                trace=f"rank {rank}",
            )
        )
    return out


def collective_wait(stragglers: Stragglers, summary: pd.DataFrame) -> list[Finding]:
    """``collective-wait``: how much of the collective time is waiting for other ranks."""
    per = stragglers.per_rank
    comm = float(per[Lateness.comm_us].sum())
    wait = float(per[Lateness.wait_us].sum())
    if comm <= 0 or wait / comm < WAIT_INFO_SHARE:
        return []
    share = wait / comm
    ranks = max(len(per), 1)
    steps = _steps(summary)
    step_us = _median(summary[S.step_p50_us])
    per_step = wait / ranks / steps if steps else None
    evidence: list[Evidence | str] = [
        Evidence("collective time, all ranks", comm, Unit.US),
        Evidence(
            "transfer (the shortest rank's duration)",
            float(per[Lateness.transfer_us].sum()),
            Unit.US,
        ),
        Evidence("waiting for other ranks", wait, Unit.US),
        Evidence("waiting share of collective time", share, Unit.RATIO),
    ]
    if per_step is not None:
        evidence.append(
            Evidence("waiting per rank and step", per_step, Unit.US, _share(per_step, step_us))
        )
    worst = _worst_instance(stragglers.match.instances)
    if worst:
        evidence.append(worst)
    evidence += _bandwidth_lines(stragglers.match.instances)
    return [
        Finding(
            id="collective-wait",
            severity=Severity.WARNING if share >= WAIT_WARNING_SHARE else Severity.INFO,
            title=f"Ranks spend {100 * share:.0f}% of their collective time waiting for each "
            "other, not moving data",
            evidence=tuple(evidence),
            est_gain_us=per_step,
            gain_basis="upper bound: the mean rank's waiting inside collectives per step, "
            f"measured; balanced ranks would not wait; {PROFILED}"
            if per_step is not None
            else "",
            next_step="Balance the work between collectives across ranks (uneven batches or "
            "sequence lengths, a straggler above); where the waits are spread evenly, overlap "
            "communication with compute",
            docs_url=DISTRIBUTED,
        )
    ]


def step_time_spread(spread: StepSpread) -> list[Finding]:
    """``step-time-spread``: ranks whose median step is an outlier above the median rank's."""
    slow = spread.slow_ranks
    if not slow:
        return []
    per = {int(r["rank"]): r for r in spread.per_rank.to_dict("records")}
    worst = slow[0]
    lines = [f"rank {r}: {_us(float(per[r]['step_p50_us']))}" for r in slow[:SHOWN]]
    return [
        Finding(
            id="step-time-spread",
            severity=Severity.WARNING,
            title=f"{_ranks(slow)} {'runs' if len(slow) == 1 else 'run'} slower steps: up to "
            f"{float(per[worst]['ratio']):.2f}× the median rank's",
            evidence=(
                Evidence("median rank's median step", spread.median_us, Unit.US),
                Evidence("fastest rank's median step", spread.min_us, Unit.US),
                Evidence("slowest rank's median step", spread.max_us, Unit.US),
                "slow ranks: " + ", ".join(lines) + _more(slow),
            ),
            est_gain_us=spread.max_us - spread.median_us,
            gain_basis="upper bound: the slowest rank's median step above the median rank's; "
            + PROFILED,
            next_step="Compare a slow rank's trace with a median one (traceviz compare on the "
            "two ranks' traces); ranks that do not wait for each other drift apart",
            docs_url=DISTRIBUTED,
        )
    ]


def kernel_spread_findings(slow: pd.DataFrame, summary: pd.DataFrame) -> list[Finding]:
    """``kernel-spread``: the kernels with the most time lost on slow ranks (up to 3)."""
    if slow.empty:
        return []
    steps = _steps(summary)
    step_us = _median(summary[S.step_p50_us])
    out = []
    for name, rows in list(slow.groupby(SlowKernel.name, sort=False))[:3]:
        ranks = [int(r) for r in rows[SlowKernel.rank]]
        excess = float(rows[SlowKernel.excess_us].max())
        per_step = excess / steps if steps else None
        big = per_step is not None and step_us > 0 and per_step / step_us >= KERNEL_WARNING_SHARE
        out.append(
            Finding(
                id="kernel-spread",
                severity=Severity.WARNING if big else Severity.INFO,
                title=f"{_short(str(name))} is {float(rows[SlowKernel.ratio].max()):.2f}× "
                f"slower on {_ranks(ranks)} than on the median rank",
                evidence=(
                    Evidence("kernel", str(name)),
                    Evidence(
                        "median rank's mean duration",
                        float(rows[SlowKernel.median_us].iloc[0]),
                        Unit.US,
                    ),
                    "slow ranks: "
                    + ", ".join(
                        f"rank {int(r)}: {_us(float(m))}"
                        for r, m in zip(
                            rows[SlowKernel.rank], rows[SlowKernel.mean_us], strict=True
                        )
                    ),
                    Evidence("time lost on the worst rank", excess, Unit.US),
                ),
                est_gain_us=per_step,
                gain_basis="upper bound: the worst rank's excess over the median duration, "
                f"per step, measured; {PROFILED}"
                if per_step is not None
                else "",
                next_step="Check the slow ranks' GPUs (clocks, thermals, ECC, another process "
                "on the device) and their inputs (shapes per rank)",
                docs_url=DISTRIBUTED,
            )
        )
    return out


def compile_differs(summary: pd.DataFrame, *, label: str = "") -> list[Finding]:
    """``rank-compile-differs``: ranks whose compile shape is not the common one."""
    return _odd_finding(odd_compile_ranks(summary), label)


def failed_ranks(failed: pd.DataFrame) -> list[Finding]:
    """``ranks-failed``: traces that could not be ingested."""
    if failed is None or failed.empty:
        return []
    lines = [f"{row['source']}: {row['error']}" for _, row in failed.head(3).iterrows()]
    return [
        Finding(
            id="ranks-failed",
            severity=Severity.WARNING,
            title=f"{len(failed)} trace(s) could not be read; the cross-rank figures leave "
            "them out",
            evidence=tuple(lines) + ((f"… {len(failed) - 3} more",) if len(failed) > 3 else ()),
            next_step="Fix or re-export those traces and run traceviz ingest again (unchanged "
            "ranks are skipped)",
            docs_url=docs.PROFILER,
        )
    ]


def comparison_findings(cmp: RankComparison) -> list[Finding]:
    """The findings of two sets of ranks: uneven speedup, odd compile shapes, missing ranks."""
    out = _uneven_speedup(cmp)
    for label in cmp.names:
        out += _odd_finding(cmp.odd[label], label)
    if cmp.only_a or cmp.only_b:
        a, b = cmp.names
        out.append(
            Finding(
                id="ranks-missing",
                severity=Severity.INFO,
                title="The two sets do not hold the same ranks; only common ranks are compared",
                evidence=(
                    Evidence(f"ranks only in {a}", range_text(cmp.only_a) or "none"),
                    Evidence(f"ranks only in {b}", range_text(cmp.only_b) or "none"),
                ),
                next_step="Ingest every rank of both runs",
            )
        )
    return out


def _uneven_speedup(cmp: RankComparison) -> list[Finding]:
    per = cmp.per_rank
    speed = per[RankPair.speedup].to_numpy(dtype=float)
    ok = np.isfinite(speed)
    if ok.sum() < 2:
        return []
    median = cmp.median_speedup
    slower = per.loc[ok & (speed < 1.0), RankPair.rank].astype(int).tolist() if median > 1 else []
    lagging = per.loc[ok & (speed < median * (1 - UNEVEN_SHARE)), RankPair.rank].astype(int)
    if not slower and lagging.empty:
        return []
    worst = int(per.loc[ok].sort_values(RankPair.speedup).iloc[0][RankPair.rank])
    low = float(per.loc[per[RankPair.rank] == worst, RankPair.speedup].iloc[0])
    a, b = cmp.names
    named = slower or lagging.tolist()
    return [
        Finding(
            id="rank-speedup-uneven",
            severity=Severity.WARNING if slower else Severity.INFO,
            title=f"{b} vs {a}: the speedup does not hold on every rank: {low:.2f}× on rank "
            f"{worst}, {median:.2f}× on the median rank",
            evidence=(
                Evidence("median speedup (a step / b step)", median, Unit.FACTOR),
                Evidence(f"lowest (rank {worst})", low, Unit.FACTOR),
                f"ranks {'slower under ' + b if slower else 'well below the median'}: "
                + range_text(named),
            ),
            next_step=f"Compare rank {worst}'s two traces (traceviz compare) and look for a "
            "graph break, recompile or straggler on that rank only",
            docs_url=docs.TROUBLESHOOTING,
        )
    ]


def _odd_finding(odd: pd.DataFrame, label: str) -> list[Finding]:
    """``rank-compile-differs`` for the ranks of ``odd`` (none when it is empty)."""
    if odd.empty:
        return []
    ranks = [int(r) for r in odd[S.rank]]
    lines = [
        f"rank {int(row[S.rank])}: " + " ".join(f"{c}={int(row[c])}" for c in COMPILE_SHAPE)
        for _, row in odd.head(SHOWN).iterrows()
    ]
    where = f"{label}: " if label else ""
    return [
        Finding(
            id="rank-compile-differs",
            severity=Severity.WARNING,
            title=f"{where}{_ranks(ranks)} compiled differently from the other ranks",
            evidence=(
                Evidence("the other ranks", str(odd["expected"].iloc[0])),
                "; ".join(lines) + _more(ranks),
            ),
            next_step="Graph breaks or recompiles on some ranks only come from rank-dependent "
            "code or inputs: run those ranks with TORCH_LOGS=graph_breaks,recompiles",
            docs_url=docs.RECOMPILATION,
            trace=label,
        )
    ]


# --- helpers --------------------------------------------------------------------------------


def _steps(summary: pd.DataFrame) -> float:
    """The median rank's step count (0 when none)."""
    value = _median(summary[S.steps]) if len(summary) else 0.0
    return value if value > 0 else 0.0


def _median(column: pd.Series) -> float:
    values = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    values = values[np.isfinite(values)]
    return float(np.median(values)) if values.size else float("nan")


def _share(value: float, step_us: float) -> float | None:
    return value / step_us if step_us and step_us > 0 and np.isfinite(step_us) else None


def _straggler_nodes(stragglers: Stragglers) -> str:
    by = stragglers.by_node
    hot = by[(by["stragglers"] >= 2) & (by["node"] != "")]
    if hot.empty:
        return ""
    return "several stragglers on one node: " + ", ".join(
        f"{n} ({int(s)} of {int(r)} ranks)"
        for n, s, r in zip(hot["node"], hot["stragglers"], hot["ranks"], strict=True)
    )


def _worst_instance(instances: pd.DataFrame) -> str:
    if instances.empty:
        return ""
    row = instances.sort_values(Instance.wait_us, ascending=False).iloc[0]
    step = row[Instance.step]
    where = f"step {int(step)}, " if step is not pd.NA and step == step else ""
    return (
        f"most waited-on: {row[Instance.name]} #{int(row[Instance.seq])} ({where}"
        f"{row[Instance.channel]}): {_us(float(row[Instance.wait_us]))} of waiting, last to "
        f"arrive rank {int(row[Instance.last_rank])}"
    )


def _bandwidth_lines(instances: pd.DataFrame) -> list[Evidence | str]:
    known = instances[np.isfinite(instances[Instance.busbw_gbps].to_numpy(dtype=float))]
    if known.empty:
        return []
    med = known.groupby(Instance.name)[Instance.busbw_gbps].median()
    return [
        "median bus bandwidth (nccl-tests busbw): "
        + ", ".join(f"{n} {v:.1f} GB/s" for n, v in med.items())
    ]


def _us(value: float) -> str:
    return format_value(value, Unit.US)


def _ranks(ranks: list[int]) -> str:
    if len(ranks) == 1:
        return f"Rank {ranks[0]}"
    return f"Ranks {range_text(ranks)}"


def _more(items: list[int]) -> str:
    return f" … {len(items) - SHOWN} more" if len(items) > SHOWN else ""


def _short(name: str, limit: int = 60) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"
