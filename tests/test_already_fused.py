"""§4 of issue 10: eager-side findings don't advise compiling work the compiled side fused.

GIVEN an eager trace with a chain of pointwise ops and a compiled trace, WHEN they are
compared, THEN the eager ``unfused-chain``/``large-intermediates`` findings advise compiling
only when the compiled trace's Inductor kernels do not already name the chain's ops.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import traceviz
from tests.conftest import SAMPLES, op
from traceviz.analysis.compare import Comparison
from traceviz.analysis.fusion.match import Credits
from traceviz.diagnose import Finding
from traceviz.diagnose.already_fused import CHAIN_FINDINGS
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


# Eager-side advice in an eager-vs-compiled comparison (issue 10 §4).
#
# GIVEN a sample run (an eager trace and the compiled trace of the same model), WHEN the two are
# compared, THEN no eager-side finding tells the user to "compile the model": the compiled trace
# is that model compiled. ``unfused-matmul-add`` on linear-add is the case that slipped: the
# compiled ``aten::addmm`` holds both the eager ``aten::mm`` and ``aten::add`` (the fusion map's
# credits show it), yet the eager finding advised writing ``addmm`` or compiling; and the eager
# ``framework-overhead`` finding advised compiling while the compiled run sat next to it.


Make = Callable[..., Path]
RUNS = sorted(p.name for p in SAMPLES.iterdir() if (p / "run.json").exists())


def _sample(run: str) -> Comparison:
    rundir = read_run_dir(SAMPLES / run)
    return compare(
        traceviz.load(rundir.eager), traceviz.load(rundir.compiled),
        names=("eager", "compiled"), run_info=rundir.info,
    )  # fmt: skip


@pytest.mark.parametrize("run", RUNS)
def test_no_compile_advice_for_the_eager_side_of_a_compiled_pair(run: str) -> None:
    comparison = _sample(run)
    for finding in comparison.findings:
        if finding.trace == "eager":
            assert "compile the model" not in finding.next_step.lower(), (finding.id, run)


def test_linear_add_matmul_add_is_already_fused_in_the_compiled_gemm() -> None:
    comparison = _sample("linear-add")
    (finding,) = [f for f in comparison.findings if f.id == "unfused-matmul-add"]
    credits = comparison.fusion.credits
    # the compiled kernel that holds the eager adds also holds the eager matmul
    holders = set(credits.loc[credits[Credits.op] == "aten::add", Credits.kernel].dropna())
    matmul_holders = set(credits.loc[credits[Credits.op] == "aten::mm", Credits.kernel].dropna())
    fused = holders & matmul_holders
    assert fused
    lines = "\n".join(finding.evidence_lines())
    assert any(k in lines for k in fused)  # the evidence names the compiled GEMM
    assert "already" in finding.next_step
    assert "addmm(b, x, w)" not in finding.next_step


def _mm_add_eager(make: Make) -> Path:
    return make([
        op("ProfilerStep#0", 0, 1000, cat="user_annotation"),
        op("aten::mm", 10, 300, **{"Input Dims": [[64, 128], [128, 256]]}),
        op("aten::add", 320, 100, **{"Input Dims": [[64, 256], [256]]}),
    ])  # fmt: skip


def _compiled(make: Make, *names: str) -> Path:
    events = [
        op("ProfilerStep#0", 0, 1000, cat="user_annotation"),
        op("Torch-Compiled Region: 0/0", 5, 700),
    ]
    # shapes as record_shapes writes them: the bias flows into addmm (name-match credits an
    # op to a library call only along a shape that passes between them)
    dims = {"aten::addmm": [[256], [64, 128], [128, 256]], "aten::mm": [[64, 128], [128, 256]]}
    events += [
        op(name, 10 + 200 * i, 150, **({"Input Dims": dims[name]} if name in dims else {}))
        for i, name in enumerate(names)
    ]
    return make(events)


def test_synthetic_matmul_add_fused_by_addmm(tmp_trace: Make) -> None:
    eager = _mm_add_eager(tmp_trace)
    compiled = _compiled(tmp_trace, "aten::addmm")
    found = compare(eager, compiled, names=("eager", "compiled")).findings
    (finding,) = [f for f in found if f.id == "unfused-matmul-add" and f.trace == "eager"]
    assert "already" in finding.next_step
    assert any("aten::addmm" in line for line in finding.evidence_lines())


def test_synthetic_matmul_add_not_fused_keeps_its_advice(tmp_trace: Make) -> None:
    eager = _mm_add_eager(tmp_trace)
    compiled = _compiled(tmp_trace, "aten::mm", "graph_0_cpp_fused_add_0")
    found = compare(eager, compiled, names=("eager", "compiled")).findings
    (finding,) = [f for f in found if f.id == "unfused-matmul-add" and f.trace == "eager"]
    assert "addmm" in finding.next_step
    assert not any("already" in line for line in finding.evidence_lines())


def test_eager_vs_eager_keeps_compile_advice(tmp_trace: Make) -> None:
    eager = _mm_add_eager(tmp_trace)
    found = compare(eager, eager, names=("eager", "other")).findings
    (finding,) = [f for f in found if f.id == "unfused-matmul-add" and f.trace == "eager"]
    assert "compile the model" in finding.next_step
