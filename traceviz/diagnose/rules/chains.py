"""Unfused chains: the ``unfused-chain`` finding, worded from
:mod:`traceviz.analysis.fusion.chains`.

The chains themselves (runs of fusible kernels under one parent op, each consuming the one
before it as far as shapes and order show, outside optimizer steps) are a derived table in
:mod:`traceviz.analysis.fusion.chains`; this rule only judges and words them.

In an ONNX Runtime profile (never "compiled") the advice is ORT's graph optimizations and
its transformers optimizer (:mod:`traceviz.diagnose.ort_advice`).

In an eager trace a chain is the fusion opportunity: ``torch.compile`` would turn it into one
kernel that keeps the intermediates in registers. In a compiled trace a chain is work left
unfused: eager kernels outside the compiled graphs (a warning; it points to the graph-break
finding only when the trace shows graph breaks) or Inductor kernels it kept apart (info).

Estimates (labelled as such): the **time** a chain would save is its time minus its longest
kernel (a fused memory-bound kernel streams the data about once); the **bytes** are two passes
(write + read back) over each intermediate, the chain's members' outputs but the last, from the
recorded shapes (:func:`traceviz.analysis.traffic.estimates.estimate_op`).
"""

from __future__ import annotations

from traceviz.analysis.fusion.chains import ChainGroup
from traceviz.diagnose import docs, ort_advice
from traceviz.diagnose.facts import (
    CpuSideGain,
    TraceFacts,
    chain_groups,
    kernel_time_gain,
    short_name,
)
from traceviz.diagnose.facts import us as _us
from traceviz.diagnose.finding import Evidence, Finding, Severity, Unit, format_value

__all__ = ["RULE_ID", "TOP_CHAINS", "unfused_chains"]

RULE_ID = "unfused-chain"
#: Chains taking under 2% of the step are not worth the reader's time.
MIN_CHAIN_SHARE = 0.02
#: Chains named in the evidence.
TOP_CHAINS = 3
GAIN_BASIS = (
    "rough estimate: each chain's time minus its longest kernel, as if the fused kernel streamed "
    "the data once (memory-bound kernels); launch overhead saved is not counted"
)


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
        evidence.append("each op reads the previous op's output shape, under the same parent op")
    else:
        evidence.append("shapes not recorded for every op: some links are by order only")
    return evidence


def _chain_line(facts: TraceFacts, g: ChainGroup) -> str:
    """``"ops: 2× per step, 4 kernels, 1.2 ms per step (3.4% of profiled step)"``: the figures
    first, then the op sequence (runs of one op as ``op ×N``), so a long sequence is what gets
    cut."""
    n = facts.n_steps
    per_step = g.time_us / n
    share = facts.share(per_step)
    where = f" ({100 * share:.1f}% of profiled step)" if share is not None else ""
    line = (
        f"{g.occurrences / n:.3g}× per step, {len(g.ops)} kernels, {_us(per_step)} per step{where}"
    )
    if g.bytes_saved:
        line += f", intermediates ≈ {format_value(g.bytes_saved / n, Unit.BYTES)} moved per step"
    return f"{line}: {' → '.join(_runs(g.ops))}"


def _runs(ops: tuple[str, ...]) -> list[str]:
    """Consecutive repeats of one op as ``"op ×N"``."""
    out: list[str] = []
    count = 0
    for i, op in enumerate(ops):
        count += 1
        if i + 1 == len(ops) or ops[i + 1] != op:
            name = short_name(op, 48)
            out.append(f"{name} ×{count}" if count > 1 else name)
            count = 0
    return out


def _gain(facts: TraceFacts, groups: list[ChainGroup]) -> CpuSideGain:
    """The chains' saving per step; on a CPU trace scaled to the timed step (its kernels are
    CPU ops, which the profiler lengthens: :func:`~traceviz.diagnose.facts.kernel_time_gain`)."""
    return kernel_time_gain(facts, facts.per_step(sum(g.saving_us for g in groups)), GAIN_BASIS)


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
    gain = _gain(facts, groups)
    return Finding(
        id=RULE_ID,
        severity=Severity.INFO,
        title=f"{facts.name}: chains of small pointwise/reduction kernels that fusion would merge "
        f"({', '.join(short_name(o, 40) for o in ops[:6])}{', …' if len(ops) > 6 else ''})",
        evidence=(*_evidence(facts, groups, time_per_step), *_bytes_evidence(facts, groups)),
        est_gain_us=gain.us,
        gain_basis=gain.basis,
        next_step=ort_advice.CHAIN_STEP
        if facts.is_onnxruntime
        else "Compile the model (`model = torch.compile(model)`): Inductor fuses chains of "
        "pointwise and reduction ops into one kernel that keeps intermediates in registers.",
        docs_url=ort_advice.GRAPH_OPTIMIZATIONS if facts.is_onnxruntime else docs.TORCH_COMPILE,
        trace=facts.name,
    )


def _leftover_step(facts: TraceFacts) -> str:
    """What to do about eager chains in a compiled trace; the graph-break finding is named
    only when the trace shows graph breaks, the fact that rule fires on (so it exists)."""
    if facts.shows_graph_breaks:
        return (
            "These kernels run outside the compiled graphs, after a graph break: remove the "
            "break (see the graph-break finding; `torch._dynamo.explain(model)(*inputs)` lists "
            "them) or compile the code around them."
        )
    return (
        "These kernels run outside the compiled graphs, in code torch.compile does not cover "
        "(the trace shows no graph break): compile that code too (wrap the function or module "
        "that issues them in `torch.compile`)."
    )


def _compiled_finding(facts: TraceFacts, groups: list[ChainGroup], time_per_step: float) -> Finding:
    leftovers = [g for g in groups if g.eager_kernels]
    gain = _gain(facts, groups)
    if leftovers:
        return Finding(
            id=RULE_ID,
            severity=Severity.WARNING,
            title=f"{facts.name}: chains of eager pointwise/reduction kernels left unfused in "
            "the compiled trace",
            evidence=tuple(_evidence(facts, groups, time_per_step)),
            est_gain_us=gain.us,
            gain_basis=gain.basis,
            next_step=_leftover_step(facts),
            docs_url=docs.TROUBLESHOOTING,
            trace=facts.name,
        )
    return Finding(
        id=RULE_ID,
        severity=Severity.INFO,
        title=f"{facts.name}: Inductor kept consecutive pointwise/reduction kernels apart",
        evidence=tuple(_evidence(facts, groups, time_per_step)),
        est_gain_us=gain.us,
        gain_basis=gain.basis,
        next_step="Inductor splits kernels at reductions over different dimensions or buffers it "
        'must materialise. `TORCH_LOGS="fusion"` prints its fusion decisions; '
        "`torch._inductor.config.aggressive_fusion = True` fuses more (measure: larger kernels "
        "can be slower).",
        docs_url=docs.TORCH_COMPILE,
        trace=facts.name,
    )
