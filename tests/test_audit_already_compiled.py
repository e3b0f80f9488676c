"""Audit of issue 10 §4: eager-side advice in an eager-vs-compiled comparison.

GIVEN a sample run (an eager trace and the compiled trace of the same model), WHEN the two are
compared, THEN no eager-side finding tells the user to "compile the model": the compiled trace
is that model compiled. ``unfused-matmul-add`` on linear-add is the case that slipped: the
compiled ``aten::addmm`` holds both the eager ``aten::mm`` and ``aten::add`` (the fusion map's
credits show it), yet the eager finding advised writing ``addmm`` or compiling; and the eager
``framework-overhead`` finding advised compiling while the compiled run sat next to it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import traceviz
from tests.conftest import SAMPLES, op
from traceviz.analysis.compare import Comparison
from traceviz.analysis.fusion_match import Credits
from traceviz.pipeline import compare
from traceviz.rundir import read_run_dir

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
