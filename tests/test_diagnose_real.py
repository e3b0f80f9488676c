"""Diagnosis on real traces: every rule runs on every corpus trace and sample run, and the
sample runs say what they were built to show (a graph break with Dynamo's reason, a pointwise
chain that fusion merges)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

import traceviz
from tests.conftest import CORPUS, SAMPLES, corpus_params, load_trace
from traceviz.analysis.compare import Comparison, Side, analyze
from traceviz.diagnose import Finding, Severity, diagnose_trace, sort_findings
from traceviz.pipeline import compare_sides
from traceviz.rundir import read_run_dir

#: Corpus pairs compared end to end (a large GPU training pair, a ROCm pair, tiny ones).
CORPUS_PAIRS = [
    (
        "nvidia/a100_eager_train_control.json.gz",
        "nvidia/a100_compiled_cudagraph_train_2023.json.gz",
    ),
    ("amd/mi250_eager_train_rocm62.json.gz", "amd/mi300x_compiled_llama_block_tiny.json.gz"),
    ("nvidia/v100_small_plain.json", "nvidia/a100_compiled_triton_tiny.json.gz"),
    ("cpu/cpu_only_rank.json.gz", "other/mtia_inference_nongpu_device.json.gz"),
]


def sample_runs() -> list[Path]:
    return sorted(p for p in SAMPLES.glob("*") if (p / "run.json").is_file())


def sample_params() -> list[object]:
    runs = sample_runs()
    if not runs:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"no sample runs in {SAMPLES}"))]
    return [pytest.param(run, id=run.name) for run in runs]


@cache
def trace(path: Path) -> traceviz.Trace:
    return load_trace(path)


@cache
def side(path: Path, name: str) -> Side:
    return analyze(trace(path), name=name)


@cache
def run_comparison(run: Path) -> Comparison:
    rundir = read_run_dir(run)
    compiled = analyze(trace(rundir.compiled), name="compiled", dynamo=rundir.info.dynamo)
    return compare_sides(side(rundir.eager, "eager"), compiled, run_info=rundir.info)


def check(findings: list[Finding]) -> None:
    """Every finding is complete, renders, and the list is sorted."""
    assert findings == sort_findings(findings)
    for f in findings:
        assert isinstance(f.severity, Severity) and f.id and f.title and f.evidence
        assert f.next_step and f.docs_url.startswith("https://")
        assert f.est_gain_us is None or (f.est_gain_us >= 0 and f.gain_basis)
        json.dumps(f.to_json())
        assert f.to_markdown().startswith(f"- **{f.severity.value.upper()}**")
        str(f)


@pytest.mark.parametrize("path", corpus_params())
def test_rules_run_on_every_corpus_trace(path: Path) -> None:
    check(diagnose_trace(trace(path)))


@pytest.mark.parametrize("run", sample_params())
def test_rules_run_on_every_sample_trace_and_run(run: Path) -> None:
    rundir = read_run_dir(run)
    for path, variant in ((rundir.eager, "eager"), (rundir.compiled, "compiled")):
        check(diagnose_trace(trace(path), run_info=rundir.info, variant=variant))
    comparison = run_comparison(run)
    check(comparison.findings)
    assert not [f for f in comparison.findings if f.id == "no-compiled-region"]


@pytest.mark.parametrize("pair", CORPUS_PAIRS, ids=[f"{a} vs {b}" for a, b in CORPUS_PAIRS])
def test_rules_run_on_corpus_pairs(pair: tuple[str, str]) -> None:
    a, b = (CORPUS / p for p in pair)
    if not a.exists():
        pytest.skip(f"corpus not found at {CORPUS}")
    comparison = compare_sides(side(a, "eager"), side(b, "compiled"))
    check(comparison.findings)


def _sample(name: str) -> Path:
    path = SAMPLES / name
    if not (path / "run.json").is_file():
        pytest.skip(f"sample run {path} not found")
    return path


def test_graph_break_sample_reports_dynamo_reason() -> None:
    run = _sample("graph-break")
    reasons = [
        b["reason"] for b in json.loads((run / "run.json").read_text())["dynamo"]["graph_breaks"]
    ]
    assert reasons
    (brk,) = [f for f in run_comparison(run).findings if f.id == "graph-break"]
    assert brk.trace == "compiled" and brk.severity is Severity.WARNING
    lines = brk.evidence_lines()
    assert any(f"Dynamo: {reasons[0]}" in line and "zoo.py" in line for line in lines)
    assert any(line.startswith("compiled code in a") for line in lines)  # where in the step


def test_pointwise_eager_trace_names_the_unfused_chain() -> None:
    run = _sample("pointwise")
    found = diagnose_trace(trace(run / "eager.pt.trace.json.gz"), name="eager")
    (chain,) = [f for f in found if f.id == "unfused-chain"]
    body = chain.title + "\n" + "\n".join(chain.evidence_lines())
    ops = ("aten::cos", "aten::clamp_min", "aten::mul", "aten::add", "aten::sin", "aten::sigmoid")
    assert " → ".join(ops) in body
    assert chain.est_gain_us is not None and chain.est_gain_us > 0
    compiled = diagnose_trace(trace(run / "compiled.pt.trace.json.gz"), name="compiled")
    assert not [f for f in compiled if f.id == "unfused-chain"]  # Inductor fused it
