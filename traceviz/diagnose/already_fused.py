"""No "compile the model" advice for eager work the compiled trace already fused.

In an eager-versus-compiled comparison (a has no compiled code, b has Inductor kernels), the
eager side's fusion findings (``unfused-chain``, ``large-intermediates``) would advise
compiling the model, which the compiled trace has done. :func:`already_fused` rewords them: a
chain is **already fused** when every one of its ops is named by one of b's Inductor kernels
(:func:`traceviz.analysis.inductor_names.fused_kernel_ops` decodes ``triton_poi_fused_add_mul_0``
/ ``cpp_fused_…`` names; eager ops that Inductor names differently, such as ``clamp_min`` for
``relu``, are matched through :data:`ALIASES`). When all the finding's chains are, its next
step says so and points to the fusion map; when some are, an evidence line names them.

Two more eager-side findings get the same treatment when the guard holds a and b for one
workload: ``unfused-matmul-add`` when the fusion map credits an eager add and an eager matmul
to one compiled kernel (Inductor called ``addmm`` or a GEMM template with the add), and
``framework-overhead``, whose "compile the model" advice the compiled trace already followed.

A pass of :func:`~traceviz.diagnose.diagnose` over the findings once every rule has run, not a
rule: it rewords other rules' findings, found by their ids, so it sits above the rules.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import pandas as pd

from traceviz.analysis.fusion.chains import ChainGroup
from traceviz.analysis.fusion.match import Credits
from traceviz.analysis.inductor_names import eager_op_base, fused_kernel_ops
from traceviz.analysis.kernel_kinds import INDUCTOR_SOURCES
from traceviz.analysis.kernels import Classified
from traceviz.diagnose.facts import chain_groups, facts_of_side, short_name
from traceviz.diagnose.finding import Finding
from traceviz.diagnose.rules.chains import RULE_ID as CHAIN_ID
from traceviz.diagnose.rules.chains import TOP_CHAINS
from traceviz.diagnose.rules.gemm import MATMUL_ADD_ID, is_add, is_plain_matmul
from traceviz.diagnose.rules.launch import OVERHEAD_ID
from traceviz.diagnose.rules.memory import INTERMEDIATES_ID
from traceviz.schema import Kernels

if TYPE_CHECKING:
    from traceviz.analysis.compare import Comparison

#: Eager-side findings whose advice is "compile it" for chains of ops.
CHAIN_FINDINGS = frozenset({CHAIN_ID, INTERMEDIATES_ID})
#: Eager op base name → the name Inductor gives the same computation in a kernel name.
ALIASES = {"clamp_min": "relu", "threshold": "relu", "_softmax": "softmax", "addcmul": "mul"}
#: Kernel names shown in the reworded advice.
TOP_KERNELS = 3


def already_fused(comparison: Comparison, findings: list[Finding]) -> list[Finding]:
    """``findings`` with side a's chain findings reworded where b already fused the chains."""
    a, b = facts_of_side(comparison, "a"), facts_of_side(comparison, "b")
    if a.compiled or not b.compiled:
        return findings
    if comparison.fusion.comparability.comparable:
        findings = [
            _compiled_already(comparison, f, b.name) if f.trace == a.name else f for f in findings
        ]
    kernels = _fused_kernels(comparison)
    if not kernels:
        return findings
    groups = chain_groups(a)[:TOP_CHAINS]
    fused = frozenset().union(*kernels.values())
    covered = [g for g in groups if all(_base(op) in fused for op in g.ops)]
    if not covered:
        return findings
    return [
        _reword(f, b.name, groups, covered, kernels)
        if f.id in CHAIN_FINDINGS and f.trace == a.name
        else f
        for f in findings
    ]


def _compiled_already(comparison: Comparison, finding: Finding, b: str) -> Finding:
    """Side a's matmul-add / framework-overhead finding reworded where b, the same model
    compiled, already did what its next step advises."""
    if finding.id == OVERHEAD_ID:
        return replace(
            finding,
            next_step=f"{b} is this model compiled: its own findings and the step-time verdict "
            f"show what compiling removed. What stays is Python and framework time around "
            f"the ops: give each call more work (a larger batch).",
        )
    if finding.id != MATMUL_ADD_ID:
        return finding
    gemms = _gemms_holding_adds(comparison.fusion.credits)
    if not gemms:
        return finding
    shown = ", ".join(short_name(n, 60) for n in gemms[:TOP_KERNELS])
    return replace(
        finding,
        evidence=(*finding.evidence, f"already one kernel in {b} (matmul and add): {shown}"),
        next_step=f"Nothing to do here: {b} already runs the matmul and its add as one kernel "
        f"({shown}); the fusion map shows which eager kernels it replaced.",
    )


def _gemms_holding_adds(credits: pd.DataFrame) -> list[str]:
    """Compiled kernels the fusion map credits with both an eager matmul and an eager add."""
    rows = credits.dropna(subset=[Credits.kernel])
    ops = rows[Credits.op].astype(str)
    adds = set(rows.loc[ops.map(is_add).to_numpy(dtype=bool), Credits.kernel])
    matmuls = set(rows.loc[ops.map(is_plain_matmul).to_numpy(dtype=bool), Credits.kernel])
    return sorted(str(k) for k in adds & matmuls)


def _fused_kernels(comparison: Comparison) -> dict[str, frozenset[str]]:
    """b's Inductor kernel names → the op names each name says it fused."""
    kernels = comparison.b.kernels
    inductor = kernels[Classified.source].astype(object).isin(INDUCTOR_SOURCES).to_numpy()
    out: dict[str, frozenset[str]] = {}
    for name in kernels[Kernels.name].astype(object)[inductor].unique():
        decoded = fused_kernel_ops(str(name))
        if decoded is not None and decoded.ops:
            out[str(name)] = frozenset(decoded.ops)
    return out


def _base(op: str) -> str:
    base = eager_op_base(op, strip_inplace=True)
    return ALIASES.get(base, base)


def _reword(
    finding: Finding,
    b: str,
    groups: list[ChainGroup],
    covered: list[ChainGroup],
    kernels: dict[str, frozenset[str]],
) -> Finding:
    ops = {_base(op) for g in covered for op in g.ops}
    names = sorted(k for k, fused in kernels.items() if fused & ops)[:TOP_KERNELS]
    shown = ", ".join(short_name(n, 60) for n in names)
    if len(covered) < len(groups):
        rest = sorted({op for g in groups if g not in covered for op in g.ops})
        next_step = (
            f"{b} already fuses some of these chains ({shown}); the rest "
            f"({', '.join(short_name(o, 30) for o in rest)}) stay separate there too: see "
            f"{b}'s own unfused-chain finding and the fusion map."
        )
    else:
        next_step = (
            f"Nothing to do here: {b} already runs these ops fused ({shown}); the "
            f"fusion map shows which {b} kernel replaced which ops."
        )
    line = f"already fused in {b}: {shown}"
    return replace(finding, evidence=(*finding.evidence, line), next_step=next_step)
