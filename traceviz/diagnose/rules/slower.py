"""Compiled slower than eager, and where the extra time goes.

The step times come from run.json's timing when there is one (many iterations outside the
profiler: ``timing.eager.median_us`` and ``timing.compiled.median_us``), else from the traces'
mean ``ProfilerStep`` wall times. The difference is then attributed, per step, from the
traces (measured): kernel device time by kind (more or slower kernels of which kind; GEMMs
split out with their mean duration and source), device idle time (launch and framework
overhead), CPU time in launch calls, and the recompiles, graph breaks and compile spans the
compiled trace shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from traceviz.analysis.kernel_kinds import KernelKind
from traceviz.diagnose import docs
from traceviz.diagnose.facts import TraceFacts, facts_of_side
from traceviz.diagnose.facts import us as _us
from traceviz.diagnose.finding import Evidence, Finding, Severity, Unit
from traceviz.diagnose.rules.profiling import compile_name_mask

if TYPE_CHECKING:
    from traceviz.analysis.compare import Comparison

RULE_ID = "compiled-slower"
#: Differences under 5% are within run-to-run noise of a busy machine.
SLOWER_TOLERANCE = 0.05
#: A quarter slower is a regression worth failing a CI job for.
SLOWER_ERROR = 0.25
#: Kinds named in the attribution.
TOP_KINDS = 4


def compiled_slower(comparison: Comparison) -> list[Finding]:
    """b (compiled) takes longer per step than a (eager)."""
    a, b = facts_of_side(comparison, "a"), facts_of_side(comparison, "b")
    if not (b.compiled or b.expect_compiled) or a.compiled:
        return []
    measured = _step_times(comparison, a, b)
    if measured is None:
        return []
    ratio = measured.b / measured.a
    if ratio < 1 + SLOWER_TOLERANCE:
        return []
    evidence: list[Evidence | str] = [
        Evidence(f"{a.name} step time", measured.a, Unit.US),
        Evidence(f"{b.name} step time", measured.b, Unit.US),
        Evidence("slower by", ratio, Unit.FACTOR),
        f"measured: {measured.basis}",
    ]
    if measured.overlap:
        evidence.append("the two timings' interquartile ranges overlap: part of this is noise")
    evidence += _attribution(comparison, a, b)
    error = ratio >= 1 + SLOWER_ERROR and not measured.overlap
    return [
        Finding(
            id=RULE_ID,
            severity=Severity.ERROR if error else Severity.WARNING,
            title=f"{b.name} is {ratio:.2f}× slower than {a.name} per step",
            evidence=tuple(evidence),
            est_gain_us=measured.b - measured.a,
            gain_basis=f"measured: running {a.name} instead saves this per step",
            next_step="Follow the attribution above and the other findings: a slower GEMM → "
            'try mode="max-autotune"; recompiles or graph breaks → remove them; idle time → '
            'mode="reduce-overhead" (GPU) or fewer, larger calls. Compile only the parts that '
            "gain (`torch.compiler.disable` on the rest).",
            docs_url=docs.TROUBLESHOOTING,
        )
    ]


@dataclass(frozen=True)
class StepTimes:
    """Step times of a and b, µs, how they were measured, and whether their spreads overlap."""

    a: float
    b: float
    basis: str
    overlap: bool = False  # b's 25th percentile is below a's 75th (run.json only)


def _step_times(comparison: Comparison, a: TraceFacts, b: TraceFacts) -> StepTimes | None:
    timing = (comparison.run_info or {}).get("timing") or {}
    eager, compiled = timing.get("eager") or {}, timing.get("compiled") or {}
    if eager.get("median_us") and compiled.get("median_us"):
        q3, q1 = eager.get("q3_us"), compiled.get("q1_us")
        return StepTimes(
            a=float(eager["median_us"]),
            b=float(compiled["median_us"]),
            basis=f"run.json medians of {eager.get('iters', '?')} timed iterations outside "
            f"the profiler (IQR {_iqr(eager)} and {_iqr(compiled)})",
            overlap=q1 is not None and q3 is not None and float(q1) <= float(q3),
        )
    if a.summary.step_mean_us and b.summary.step_mean_us:
        return StepTimes(
            a=a.summary.step_mean_us,
            b=b.summary.step_mean_us,
            basis="mean ProfilerStep wall time of the traces",
        )
    return None


def _iqr(stats: dict[str, object]) -> str:
    q1, q3 = stats.get("q1_us"), stats.get("q3_us")
    if not isinstance(q1, (int, float)) or not isinstance(q3, (int, float)):
        return "unknown"
    return f"{_us(float(q1))}–{_us(float(q3))}"


def _attribution(comparison: Comparison, a: TraceFacts, b: TraceFacts) -> list[Evidence | str]:
    """Where b's extra time per step goes, measured from the traces."""
    out: list[Evidence | str] = []
    if a.summary.step_mean_us and b.summary.step_mean_us:
        delta = b.summary.step_mean_us - a.summary.step_mean_us
        out.append(Evidence(f"profiled step time difference ({b.name} − {a.name})", delta, Unit.US))
        if delta <= 0:
            out.append(
                f"the profiled steps do not show {b.name} slower: the difference lies outside "
                "the profiled work (e.g. Python around the call) or is noise; the breakdown "
                "below compares the profiled steps"
            )
    out += _by_kind(comparison, a, b)
    out += _gemms(comparison, a, b)
    idle = b.per_step(b.launch.idle_us) - a.per_step(a.launch.idle_us)
    if idle > 0:
        what = "launch/CPU overhead" if b.is_gpu else "framework overhead"
        out.append(Evidence(f"more device idle time ({what})", idle, Unit.US, b.share(idle)))
    api = b.per_step(b.launch.launch_api_us) - a.per_step(a.launch.launch_api_us)
    if b.is_gpu and api > 0:
        out.append(Evidence("more CPU time in launch calls", api, Unit.US))
    out += _compile_side_effects(b)
    return out


def _per_kind(comparison: Comparison, side: str, facts: TraceFacts) -> pd.DataFrame:
    kinds = comparison.kinds[comparison.kinds["side"] == side]
    grouped = kinds.groupby(kinds["kind"].astype(object))[["count", "time_us"]].sum()
    return grouped / facts.n_steps


def _by_kind(comparison: Comparison, a: TraceFacts, b: TraceFacts) -> list[Evidence | str]:
    per_a, per_b = _per_kind(comparison, "a", a), _per_kind(comparison, "b", b)
    both = per_a.add_suffix("_a").join(per_b.add_suffix("_b"), how="outer").fillna(0.0)
    both["delta"] = both["time_us_b"] - both["time_us_a"]
    more = both[both["delta"] > 0].sort_values("delta", ascending=False).head(TOP_KINDS)
    return [
        Evidence(
            f"more {kind} kernel time ({row['count_a']:.3g} → {row['count_b']:.3g} kernels per "
            "step)",
            float(row["delta"]),
            Unit.US,
            b.share(float(row["delta"])),
        )
        for kind, row in more.iterrows()
    ]


def _gemms(comparison: Comparison, a: TraceFacts, b: TraceFacts) -> list[Evidence | str]:
    """GEMM calls and mean duration per side, when b's GEMMs take longer."""
    stats = []
    for facts in (a, b):
        kernels = facts.kernels
        gemm = (kernels["kind"].astype(object) == KernelKind.GEMM.value).to_numpy()
        durs = kernels["dur_us"].to_numpy(dtype=float, na_value=np.nan)[gemm]
        sources = kernels["source"].astype(object)[gemm].value_counts()
        stats.append((int(gemm.sum()), float(np.nansum(durs)), sources))
    (count_a, time_a, _), (count_b, time_b, sources_b) = stats
    if count_a == 0 or count_b == 0 or b.per_step(time_b) <= a.per_step(time_a):
        return []
    source = ", ".join(f"{s} {c}" for s, c in sources_b.items() if c)
    return [
        f"GEMMs: {a.name} {a.per_step(count_a):.3g} per step, mean {_us(time_a / count_a)}; "
        f"{b.name} {b.per_step(count_b):.3g} per step, mean {_us(time_b / count_b)} "
        f"({source})"
    ]


def _compile_side_effects(b: TraceFacts) -> list[Evidence | str]:
    out: list[Evidence | str] = []
    if b.regions.recompiles:
        out.append(Evidence(f"{b.name}: frames recompiled", b.regions.recompiles, Unit.COUNT))
    if b.regions.graph_breaks:
        out.append(Evidence(f"{b.name}: graph breaks per step", b.regions.graph_breaks, Unit.COUNT))
    compiling = int(compile_name_mask(b.trace.ops["name"]).sum())
    if compiling:
        out.append(f"{b.name}: {compiling} compile spans inside the profiled window")
    return out
