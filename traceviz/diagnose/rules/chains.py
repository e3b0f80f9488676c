"""Unfused chains: runs of consecutive pointwise/reduction kernels on the same data.

A **chain** is a run of at least :data:`MIN_CHAIN_KERNELS` kernels, one after the other on one
stream (GPU) or thread (CPU) within one step, each of a fusible kind (pointwise, reduction,
normalization), whose launching ops work on the same data: the largest tensor each op reads
has the same shape (when shapes were recorded; otherwise adjacency alone links them, and the
finding says so). Kernels nested inside another kernel's span (a CPU op's helper ``copy_``)
are skipped, not chain breakers.

In an eager trace a chain is the fusion opportunity: ``torch.compile`` would turn it into one
kernel that keeps the intermediates in registers. In a compiled trace a chain is work left
unfused: eager kernels outside the compiled graphs (a warning) or Inductor kernels it kept
apart (information).

Estimates (labelled as such): the **time** a chain would save is its time minus its longest
kernel (a fused memory-bound kernel streams the data about once); the **bytes** are two passes
(write + read back) over each intermediate, the chain's members' outputs but the last, from the
recorded shapes (:func:`traceviz.analysis.traffic.estimate_op`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt
import pandas as pd

from traceviz.analysis.kernel_kinds import KernelKind
from traceviz.analysis.traffic import estimate_op
from traceviz.diagnose import docs
from traceviz.diagnose.facts import INDUCTOR_SOURCES, TraceFacts, short_name
from traceviz.diagnose.facts import us as _us
from traceviz.diagnose.finding import Evidence, Finding, Severity, Unit, format_value
from traceviz.diagnose.timeline import same_context, timeline
from traceviz.schema import Ops

RULE_ID = "unfused-chain"
SEPARATOR = "\x1f"  # joins op labels into one chain signature
FUSIBLE_KINDS = frozenset(
    {KernelKind.POINTWISE.value, KernelKind.REDUCTION.value, KernelKind.NORMALIZATION.value}
)
#: Two adjacent fusible kernels are common and often deliberate (a reduction, then a pointwise
#: op on its result); three or more on the same data are a clear missed fusion.
MIN_CHAIN_KERNELS = 3
#: Chains taking under 2% of the step are not worth the reader's time.
MIN_CHAIN_SHARE = 0.02
#: Chains named in the evidence.
TOP_CHAINS = 3
GAIN_BASIS = (
    "rough estimate: each chain's time minus its longest kernel, as if the fused kernel streamed "
    "the data once (memory-bound kernels); launch overhead saved is not counted"
)


@dataclass(frozen=True)
class ChainGroup:
    """Chains with the same sequence of ops, summed over the trace."""

    ops: tuple[str, ...]
    occurrences: int
    kernels: int
    time_us: float  # summed device time of the chains' kernels
    saving_us: float  # summed (chain time − its longest kernel)
    bytes_saved: int | None  # estimated intermediate traffic, None when not estimable
    largest_bytes: int | None  # the largest intermediate of one chain, bytes (estimated)
    largest_op: str  # the op that writes it ("" when unknown)
    eager_kernels: bool  # some kernels are not Inductor's (eager leftovers in a compiled trace)
    shapes_known: bool  # every link was confirmed by matching shapes


def unfused_chains(facts: TraceFacts) -> list[Finding]:
    """The unfused-chain finding of one trace (none when chains are below the share limit)."""
    groups = chain_groups(facts)
    if not groups:
        return []
    time_per_step = facts.per_step(sum(g.time_us for g in groups))
    share = facts.share(time_per_step)
    if share is None or share < MIN_CHAIN_SHARE:
        return []
    if not facts.compiled:
        return [_eager_finding(facts, groups, time_per_step)]
    return [_compiled_finding(facts, groups, time_per_step)]


def chain_groups(facts: TraceFacts) -> list[ChainGroup]:
    """Every chain of ``facts``'s trace, grouped by op sequence, largest time first."""
    return facts.memo("chain_groups", lambda: _chain_groups(facts))


def _chain_groups(facts: TraceFacts) -> list[ChainGroup]:
    seq = timeline(facts)
    if len(seq) < MIN_CHAIN_KERNELS:
        return []
    chain = np.cumsum(~_links(seq))
    sizes = np.bincount(chain)[chain]
    keep = sizes >= MIN_CHAIN_KERNELS
    if not keep.any():
        return []
    members = seq[keep].assign(chain=chain[keep]).reset_index(drop=True)
    per_chain = _per_chain(members, _written_bytes(facts, members["op"]))
    return _group(per_chain, facts.trace.ops)


def _links(seq: pd.DataFrame) -> npt.NDArray[np.bool_]:
    """Per row: it continues the chain of the row before it (same lane, step and region; both
    fusible; the same data where both shapes are known)."""
    fusible = seq["kind"].isin(FUSIBLE_KINDS).to_numpy(dtype=bool)
    key = seq["key"].to_numpy(dtype=object)
    both = np.zeros(len(seq), dtype=bool)
    both[1:] = fusible[1:] & fusible[:-1]
    data = np.ones(len(seq), dtype=bool)
    known = np.array([k is not None for k in key], dtype=bool)
    data[1:] = ~(known[1:] & known[:-1]) | (key[1:] == key[:-1])
    return same_context(seq) & both & data


def _written_bytes(facts: TraceFacts, op_rows: pd.Series) -> npt.NDArray[np.float64]:
    """Estimated bytes each member's launching op writes (NaN: unknown), one estimate per
    distinct (name, shapes, types, concrete inputs)."""
    rows = op_rows.to_numpy(dtype=float)
    out = np.full(len(rows), np.nan)
    known = np.isfinite(rows)
    if not known.any():
        return out
    ops = facts.trace.ops.iloc[rows[known].astype(np.int64)]
    names, dims, types, concrete = (
        ops[c].astype(object).to_numpy()
        for c in (Ops.name, Ops.input_dims, Ops.input_types, Ops.concrete_inputs)
    )
    out[known] = [
        _written(_text(n), _text(d), _text(t), _text(c))
        for n, d, t, c in zip(names, dims, types, concrete, strict=True)
    ]
    return out


@lru_cache(maxsize=2**16)  # distinct shape strings; bounded for long-lived processes
def _written(name: str | None, dims: str | None, types: str | None, concrete: str | None) -> float:
    estimate = estimate_op(name or "", dims, types, concrete)
    return float(estimate.bytes_written) if estimate is not None else np.nan


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _per_chain(members: pd.DataFrame, written: npt.NDArray[np.float64]) -> pd.DataFrame:
    """One row per chain occurrence: signature, kernels, time, longest kernel, intermediates.

    A member's output counts as an intermediate when it is the first kernel of its op in the
    chain and that op is not the chain's last (an op's several kernels share one output).
    """
    last_op = members.groupby("chain", sort=False)["op"].transform("last").to_numpy(dtype=float)
    op = members["op"].to_numpy(dtype=float)
    counted = ~members.duplicated(["chain", "op"]).to_numpy() & (op != last_op)
    frame = members.assign(
        moved=np.where(counted, 2.0 * np.nan_to_num(written), 0.0),
        unknown=(counted & np.isnan(written)) | np.isnan(op),
        out=np.where(counted, written, np.nan),
        eager=~members["source"].isin(INDUCTOR_SOURCES).to_numpy(),
        known_key=members["key"].notna().to_numpy(),
        label=members["label"].astype(str),
    )
    table = frame.groupby("chain", sort=False).agg(
        signature=("label", SEPARATOR.join),
        kernels=("dur", "size"),
        time_us=("dur", "sum"),
        longest_us=("dur", "max"),
        moved=("moved", "sum"),
        unknown=("unknown", "any"),
        largest=("out", "max"),
        eager=("eager", "any"),
        shapes_known=("known_key", "all"),
    )
    largest_row = frame["out"].fillna(-1.0).groupby(frame["chain"], sort=False).idxmax()
    table["largest_op"] = op[largest_row.to_numpy()]
    return table


def _group(per_chain: pd.DataFrame, ops: pd.DataFrame) -> list[ChainGroup]:
    """Sum chains with the same op sequence; largest total time first."""
    per_chain = per_chain.assign(
        saving_us=per_chain["time_us"] - per_chain["longest_us"],
        largest_key=per_chain["largest"].fillna(-1.0),
    ).reset_index(drop=True)
    by_signature = per_chain.groupby("signature", sort=False)
    table = by_signature.agg(
        occurrences=("kernels", "size"),
        kernels=("kernels", "sum"),
        time_us=("time_us", "sum"),
        saving_us=("saving_us", "sum"),
        moved=("moved", "sum"),
        unknown=("unknown", "any"),
        largest=("largest", "max"),
        eager=("eager", "any"),
        shapes_known=("shapes_known", "all"),
    )
    table["largest_op"] = per_chain["largest_op"].to_numpy()[
        by_signature["largest_key"].idxmax().to_numpy()
    ]
    table = table.sort_values("time_us", ascending=False, kind="stable")
    names = ops[Ops.name].astype(object).to_numpy()
    return [_chain_group(str(signature), row, names) for signature, row in table.iterrows()]


def _chain_group(signature: str, row: pd.Series, names: npt.NDArray[np.object_]) -> ChainGroup:
    unknown = bool(row["unknown"])
    largest = float(row["largest"])
    op = float(row["largest_op"])
    return ChainGroup(
        ops=tuple(signature.split(SEPARATOR)),
        occurrences=int(row["occurrences"]),
        kernels=int(row["kernels"]),
        time_us=float(row["time_us"]),
        saving_us=float(row["saving_us"]),
        bytes_saved=None if unknown else int(row["moved"]),
        largest_bytes=None if unknown or not np.isfinite(largest) else int(largest),
        largest_op=str(names[int(op)]) if np.isfinite(op) and 0 <= op < len(names) else "",
        eager_kernels=bool(row["eager"]),
        shapes_known=bool(row["shapes_known"]),
    )


# --- findings ----------------------------------------------------------------------------


def _evidence(
    facts: TraceFacts, groups: list[ChainGroup], time_per_step: float
) -> list[Evidence | str]:
    """Evidence shared by the eager and compiled forms."""
    n = facts.n_steps
    occurrences = sum(g.occurrences for g in groups)
    kernels = sum(g.kernels for g in groups)
    evidence: list[Evidence | str] = [
        Evidence("chains per step", occurrences / n, Unit.COUNT),
        Evidence("kernels in chains per step", kernels / n, Unit.COUNT),
        Evidence("their time per step", time_per_step, Unit.US, facts.share(time_per_step)),
        Evidence(
            "kernels fusion would remove per step",
            sum(g.kernels - g.occurrences for g in groups) / n,
            Unit.COUNT,
        ),
    ]
    evidence += [_chain_line(facts, g) for g in groups[:TOP_CHAINS]]
    if len(groups) > TOP_CHAINS:
        evidence.append(f"… and {len(groups) - TOP_CHAINS} more distinct chains")
    if all(g.shapes_known for g in groups):
        evidence.append("kernels linked by matching tensor shapes (same data)")
    else:
        evidence.append("shapes not recorded for every kernel: some links are by adjacency only")
    return evidence


def _chain_line(facts: TraceFacts, g: ChainGroup) -> str:
    n = facts.n_steps
    per_step = g.time_us / n
    share = facts.share(per_step)
    where = f" ({100 * share:.1f}% of step)" if share is not None else ""
    line = (
        f"{' → '.join(short_name(op, 48) for op in g.ops)}: {g.occurrences / n:.3g}× per step, "
        f"{len(g.ops)} kernels, {_us(per_step)} per step{where}"
    )
    if g.bytes_saved:
        line += f", intermediates ≈ {format_value(g.bytes_saved / n, Unit.BYTES)} moved per step"
    return line


def _gain(facts: TraceFacts, groups: list[ChainGroup]) -> float:
    return facts.per_step(sum(g.saving_us for g in groups))


def _bytes_evidence(facts: TraceFacts, groups: list[ChainGroup]) -> list[Evidence | str]:
    known = [g.bytes_saved for g in groups if g.bytes_saved is not None]
    if not known:
        return ["bytes fusion would save: not estimable (shapes not recorded or unknown ops)"]
    label = "est. bytes fusion would save per step (intermediates written and read back)"
    if len(known) < len(groups):
        label += ", chains with known shapes only"
    return [Evidence(label, facts.per_step(sum(known)), Unit.BYTES)]


def _eager_finding(facts: TraceFacts, groups: list[ChainGroup], time_per_step: float) -> Finding:
    ops = sorted({op for g in groups[:TOP_CHAINS] for op in g.ops})
    return Finding(
        id=RULE_ID,
        severity=Severity.INFO,
        title=f"{facts.name}: chains of small pointwise/reduction kernels that fusion would merge "
        f"({', '.join(short_name(o, 40) for o in ops[:6])}{', …' if len(ops) > 6 else ''})",
        evidence=(*_evidence(facts, groups, time_per_step), *_bytes_evidence(facts, groups)),
        est_gain_us=_gain(facts, groups),
        gain_basis=GAIN_BASIS,
        next_step="Compile the model (`model = torch.compile(model)`): Inductor fuses chains of "
        "pointwise and reduction ops into one kernel that keeps intermediates in registers.",
        docs_url=docs.TORCH_COMPILE,
        trace=facts.name,
    )


def _compiled_finding(facts: TraceFacts, groups: list[ChainGroup], time_per_step: float) -> Finding:
    leftovers = [g for g in groups if g.eager_kernels]
    if leftovers:
        return Finding(
            id=RULE_ID,
            severity=Severity.WARNING,
            title=f"{facts.name}: chains of eager pointwise/reduction kernels left unfused in "
            "the compiled trace",
            evidence=tuple(_evidence(facts, groups, time_per_step)),
            est_gain_us=_gain(facts, groups),
            gain_basis=GAIN_BASIS,
            next_step="These kernels run outside the compiled graphs (after a graph break, or in "
            "code torch.compile does not cover). Remove the break (see the graph-break finding; "
            "`torch._dynamo.explain(model)(*inputs)` lists them) or compile the code around them.",
            docs_url=docs.TROUBLESHOOTING,
            trace=facts.name,
        )
    return Finding(
        id=RULE_ID,
        severity=Severity.INFO,
        title=f"{facts.name}: Inductor kept consecutive pointwise/reduction kernels apart",
        evidence=tuple(_evidence(facts, groups, time_per_step)),
        est_gain_us=_gain(facts, groups),
        gain_basis=GAIN_BASIS,
        next_step="Inductor splits kernels at reductions over different dimensions or buffers it "
        'must materialise. `TORCH_LOGS="fusion"` prints its fusion decisions; '
        "`torch._inductor.config.aggressive_fusion = True` fuses more (measure: larger kernels "
        "can be slower).",
        docs_url=docs.TORCH_COMPILE,
        trace=facts.name,
    )
