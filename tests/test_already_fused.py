"""§4 of issue 10: eager-side findings don't advise compiling work the compiled side fused.

GIVEN an eager trace with a chain of pointwise ops and a compiled trace, WHEN they are
compared, THEN the eager ``unfused-chain``/``large-intermediates`` findings advise compiling
only when the compiled trace's Inductor kernels do not already name the chain's ops.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import traceviz
from tests.conftest import SAMPLES, op
from traceviz.diagnose import Finding
from traceviz.diagnose.rules.fused import CHAIN_FINDINGS
from traceviz.pipeline import compare
from traceviz.rundir import read_run_dir

Make = Callable[..., Path]
SHAPE = [256, 1024]


def dims(*shapes: list[int]) -> dict:
    return {"Input Dims": list(shapes), "Input type": ["float" if s else "Scalar" for s in shapes]}


def _eager(make: Make) -> Path:
    events = [op("ProfilerStep#0", 0, 1000, cat="user_annotation")]
    for i, name in enumerate(["aten::cos", "aten::mul", "aten::add", "aten::sigmoid"]):
        extra = [[]] * (1 if name in ("aten::mul", "aten::add") else 0)
        events.append(op(name, 10 + 110 * i, 100, **dims(SHAPE, *extra)))
    return make(events)


def _compiled(make: Make, kernel: str) -> Path:
    return make([
        op("ProfilerStep#0", 0, 1000, cat="user_annotation"),
        op("Torch-Compiled Region: 0/0", 5, 300),
        op(kernel, 10, 150),
    ])  # fmt: skip


def _eager_chain_findings(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.id in CHAIN_FINDINGS and f.trace == "eager"]


def test_fused_chain_gets_no_compile_advice(tmp_trace: Make) -> None:
    compiled = _compiled(tmp_trace, "graph_0_cpp_fused_add_cos_mul_sigmoid_0")
    found = _eager_chain_findings(
        compare(_eager(tmp_trace), compiled, names=("eager", "compiled")).findings
    )
    assert found
    for finding in found:
        assert "Compile the model" not in finding.next_step
        assert "torch.compile" not in finding.next_step
        assert "already runs these ops fused" in finding.next_step
        assert any("already fused in compiled" in line for line in finding.evidence_lines())


def test_unfused_chain_keeps_compile_advice(tmp_trace: Make) -> None:
    compiled = _compiled(tmp_trace, "graph_0_cpp_fused_relu_0")  # a different computation
    found = _eager_chain_findings(
        compare(_eager(tmp_trace), compiled, names=("eager", "compiled")).findings
    )
    (chain,) = [f for f in found if f.id == "unfused-chain"]
    assert "Compile the model" in chain.next_step
    assert not any("already fused" in line for line in chain.evidence_lines())


def test_eager_against_eager_is_untouched(tmp_trace: Make) -> None:
    eager = _eager(tmp_trace)
    found = _eager_chain_findings(compare(eager, eager, names=("eager", "other")).findings)
    (chain,) = [f for f in found if f.id == "unfused-chain"]
    assert "Compile the model" in chain.next_step


def test_pointwise_sample_eager_chain_is_already_fused() -> None:
    rundir = read_run_dir(SAMPLES / "pointwise")
    comparison = compare(
        traceviz.load(rundir.eager), traceviz.load(rundir.compiled),
        names=("eager", "compiled"), run_info=rundir.info,
    )  # fmt: skip
    found = _eager_chain_findings(comparison.findings)
    assert {f.id for f in found} >= {"unfused-chain"}
    compiled_names = set(comparison.b.kernels["name"].astype(str))
    for finding in found:
        assert "Compile the model" not in finding.next_step
        named = [n for n in compiled_names if n in "\n".join(finding.evidence_lines())]
        assert named  # the evidence names the compiled kernel that fused the chain
