"""``unfused-chain`` fires only on true chains, and evidence stays short.

GIVEN ops that follow each other (hand-made CPU traces, whose ops are the kernels, and the real
corpus and sample traces), WHEN chains are derived (:mod:`traceviz.analysis.fusion.chains`) and the
rule words them, THEN a chain is ops under one parent, each reading the previous op's output as
far as shapes show, outside optimizer steps; it never points to a finding that does not exist;
every evidence string of every finding is at most 200 characters plus a "… N more" tail; and
the time credited to chains is at most the kernels' measured time.

Eager-side ``unfused-chain``/``large-intermediates``/``unfused-matmul-add`` findings advise
compiling only when the compiled side does not already run the ops fused (its Inductor kernels
name them, or ``aten::addmm`` holds the eager ``mm`` and ``add``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import traceviz
from tests.conftest import CORPUS, SAMPLES, corpus_files, load_trace, op
from traceviz.analysis.compare import Comparison
from traceviz.analysis.fusion.chains import ChainMember, chain_members
from traceviz.analysis.fusion.match import Credits
from traceviz.diagnose import Evidence, Finding, Severity, diagnose_trace
from traceviz.diagnose.already_fused import CHAIN_FINDINGS
from traceviz.diagnose.facts import chain_groups, facts_of_trace, kernel_steps
from traceviz.diagnose.finding import MAX_EVIDENCE_CHARS, shorten
from traceviz.pipeline import compare
from traceviz.rundir import read_run_dir

Make = Callable[..., Path]
RULE = "unfused-chain"
SHAPE = [64, 1024]
#: What may follow a cut evidence string: " … 12 more" or " … 40 more characters".
TAIL = re.compile(r" … \d+ more( characters)?$")


def dims(*shapes: list[int]) -> dict[str, Any]:
    return {"Input Dims": list(shapes), "Input type": ["float" if s else "Scalar" for s in shapes]}


def step(ts: float, dur: float, n: int = 0) -> dict:
    return op(f"ProfilerStep#{n}", ts, dur, cat="user_annotation")


def annotation(name: str, ts: float, dur: float) -> dict:
    return op(name, ts, dur, cat="user_annotation")


def softmax_like(t0: float, shape: list[int] = SHAPE) -> list[dict]:
    """amax → sub(x, max) → exp → sum: each reads the previous op's output."""
    reduced = [*shape[:-1], 1]
    return [
        op("aten::amax", t0, 100, **dims(shape, [], [])),
        op("aten::sub", t0 + 105, 100, **dims(shape, reduced, [])),
        op("aten::exp", t0 + 210, 100, **dims(shape)),
        op("aten::sum", t0 + 315, 100, **dims(shape, [], [], [])),
    ]


def found(make: Make, events: list[dict]) -> list[Finding]:
    return [f for f in diagnose_trace(traceviz.load(make(events)), name="t") if f.id == RULE]


def members(make: Make, events: list[dict]) -> Any:
    trace = traceviz.load(make(events))
    facts = facts_of_trace(trace)
    return chain_members(trace, facts.kernels, kernel_steps(facts))


# --- what a chain is ------------------------------------------------------------------------


def test_reduction_then_its_consumers_is_a_chain(tmp_trace: Make) -> None:
    table = members(tmp_trace, [step(0, 1000), *softmax_like(10)])
    assert len(table) == 4 and table[ChainMember.chain].nunique() == 1
    assert list(table[ChainMember.link]) == ["first", "shapes", "shapes", "shapes"]
    (finding,) = found(tmp_trace, [step(0, 1000), *softmax_like(10)])
    assert "aten::amax → aten::sub → aten::exp → aten::sum" in "\n".join(finding.evidence_lines())


def test_optimizer_updates_of_same_shaped_tensors_are_not_a_chain(tmp_trace: Make) -> None:
    """The issue's 808 ``aten::add_``: per-parameter updates (same shapes, unrelated tensors)
    inside ``Optimizer.step#SGD.step`` and under ``aten::_foreach_add_``."""
    n = 808
    updates = [op("aten::add_", 20 + 3 * i, 2, **dims(SHAPE, SHAPE, [])) for i in range(n)]
    foreach = [op("aten::add_", 3000 + 3 * i, 2, **dims(SHAPE, SHAPE, [])) for i in range(10)]
    events = [
        step(0, 4000),
        annotation("Optimizer.step#SGD.step", 10, 2500),
        *updates,
        op("aten::_foreach_add_", 2990, 40),
        *foreach,
    ]
    assert members(tmp_trace, events).empty
    assert not found(tmp_trace, events)
    # The same ops outside any optimizer span would be linked by their shapes: the span is
    # what stops them.
    outside = [step(0, 4000), *updates]
    assert len(members(tmp_trace, outside)) == n


def test_ops_under_different_parents_are_not_a_chain(tmp_trace: Make) -> None:
    """Backward ops of different autograd nodes, each an op on another tensor."""
    shape = dims(SHAPE, SHAPE, [])
    events = [step(0, 1000)]
    for i in range(6):
        t = 10 + 100 * i
        events += [
            annotation(f"autograd::engine::evaluate_function: AddBackward{i}", t, 90),
            op("aten::add_", t + 5, 80, **shape),
        ]
    assert members(tmp_trace, events).empty
    # one parent for all: a chain (each add_ reads the previous one's output shape)
    same = [step(0, 1000), annotation("## loss ##", 5, 900)]
    same += [op("aten::add_", 10 + 100 * i, 80, **shape) for i in range(6)]
    assert len(members(tmp_trace, same)) == 6


def test_python_frames_are_not_parents(tmp_trace: Make) -> None:
    """``with_stack`` traces wrap each call in its own Python frame: still one chain."""
    events = [step(0, 1000)]
    for i, ev in enumerate(softmax_like(10)):
        events += [
            op(f"<built-in method {i}>", ev["ts"] - 1, ev["dur"] + 2, cat="python_function"),
            ev,
        ]
    assert len(members(tmp_trace, events)) == 4


def test_counter_increment_does_not_link(tmp_trace: Make) -> None:
    """``num_batches_tracked.add_(1)``: a 0-d tensor; the next op does not read its output."""
    events = [
        step(0, 1000),
        op("aten::add_", 10, 100, **dims([], [])),
        op("aten::cos", 120, 100, **dims(SHAPE)),
        op("aten::sin", 230, 100, **dims(SHAPE)),
    ]
    table = members(tmp_trace, events)
    assert "aten::add_" not in set(table[ChainMember.label])


def test_unrecorded_shapes_link_by_order_and_say_so(tmp_trace: Make) -> None:
    events = [step(0, 1000)] + [op(n, 10 + 110 * i, 100) for i, n in enumerate(
        ["aten::cos", "aten::mul", "aten::add", "aten::sigmoid"])]  # fmt: skip
    table = members(tmp_trace, events)
    assert list(table[ChainMember.link]) == ["first", "order", "order", "order"]
    (finding,) = found(tmp_trace, events)
    assert "some links are by order only" in "\n".join(finding.evidence_lines())


def test_compiled_leftovers_name_the_graph_break_only_when_there_is_one(tmp_trace: Make) -> None:
    events = [
        step(0, 2000),
        op("Torch-Compiled Region: 0/0", 10, 200),
        op("graph_0_cpp_fused_relu_0", 20, 100),
        *softmax_like(300),
    ]
    (finding,) = found(tmp_trace, events)
    assert finding.severity is Severity.WARNING
    assert "graph-break finding" not in finding.next_step
    assert "no graph break" in finding.next_step
    broken = [
        *events,
        op("Torch-Compiled Region: 1/0", 800, 200),
        op("graph_1_cpp_fused_sin_0", 810, 100),
    ]
    every = diagnose_trace(traceviz.load(tmp_trace(broken)), name="t")
    (chain,) = [f for f in every if f.id == RULE]
    assert "graph-break finding" in chain.next_step
    assert [f for f in every if f.id == "graph-break"]  # the finding it points to exists


# --- evidence length, central ---------------------------------------------------------------


def test_shorten_cuts_lists_and_text() -> None:
    listed = ", ".join(f"aten::op{i}" for i in range(100))
    short = shorten(listed)
    kept = short.rsplit(" … ", 1)[0].rstrip(",")
    assert len(kept) <= MAX_EVIDENCE_CHARS and listed.startswith(kept)
    more = int(short.rsplit(" … ", 1)[1].split()[0])
    assert kept.count(", ") + 1 + more == 100  # every item is shown or counted
    plain = "x" * 500
    assert shorten(plain) == "x" * MAX_EVIDENCE_CHARS + " … 300 more characters"
    assert shorten("short") == "short"


def test_findings_cut_long_evidence_for_every_rule() -> None:
    long = " → ".join(["aten::add_"] * 808)
    finding = Finding("x", Severity.INFO, "t", evidence=(long, Evidence(long, 1.0)))
    text, evidence = finding.evidence
    assert isinstance(text, str) and isinstance(evidence, Evidence)
    for cut in (text, evidence.label):
        assert TAIL.search(cut) and len(TAIL.sub("", cut)) <= MAX_EVIDENCE_CHARS
        shown = TAIL.sub("", cut).count("aten::add_")
        assert shown + int(cut.rsplit(" ", 2)[1]) == 808  # every item shown or counted
    assert finding.to_json()["evidence"][0] == text


# --- real traces ----------------------------------------------------------------------------


def _sample_runs() -> list[Path]:
    return sorted(p for p in SAMPLES.glob("*") if (p / "run.json").is_file())


def _all_traces() -> list[Path]:
    samples = [p for run in _sample_runs() for p in sorted(run.glob("*.json.gz"))]
    return corpus_files() + samples


@cache
def _findings_of(path: Path) -> tuple[Finding, ...]:
    return tuple(diagnose_trace(load_trace(path), name=path.name))


def _trace_params() -> list[Any]:
    paths = _all_traces()
    if not paths:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"no traces at {CORPUS}"))]
    return [pytest.param(p, id=f"{p.parent.name}/{p.name}") for p in paths]


def _check_evidence(findings: tuple[Finding, ...] | list[Finding]) -> None:
    for finding in findings:
        for line in finding.evidence_lines():
            body = TAIL.sub("", line)
            # an Evidence line is "label: value (share)": label and value are each capped
            limit = 2 * MAX_EVIDENCE_CHARS + 40 if " … " not in body else MAX_EVIDENCE_CHARS
            assert len(body) <= limit, (finding.id, line[:120])


@pytest.mark.parametrize("path", _trace_params())
def test_real_trace_findings_evidence_short_and_chains_honest(path: Path) -> None:
    findings = _findings_of(path)
    _check_evidence(findings)
    ids = {f.id for f in findings}
    for f in findings:
        if "graph-break finding" in f.next_step:
            assert "graph-break" in ids, f.id
    trace = load_trace(path)
    facts = facts_of_trace(trace)
    table = chain_members(trace, facts.kernels, kernel_steps(facts))
    assert not table[ChainMember.row].duplicated().any()  # each kernel in at most one chain
    measured = float(np.nansum(facts.kernels["dur_us"].to_numpy(dtype=float)))
    credited = sum(g.time_us for g in chain_groups(facts))
    assert credited <= measured + 1e-6
    assert all(g.saving_us <= g.time_us for g in chain_groups(facts))


def test_a100_eager_chains_carry_bytes_and_data_keys() -> None:
    """GIVEN the A100 eager training trace THEN chain groups estimate the bytes they would
    save and name the op writing the largest intermediate, and each kernel's data key is the
    largest shape its launching op reads (None where no op is linked)."""
    from traceviz.analysis.fusion.chains import chain_groups as groups_of
    from traceviz.analysis.timing.timeline import data_keys, largest_shape
    from traceviz.schema import Kernels, Ops

    path = CORPUS / "nvidia" / "a100_eager_train_control.json.gz"
    if not path.exists():
        pytest.skip(f"corpus trace not found: {path}")
    trace = load_trace(path)
    facts = facts_of_trace(trace)
    groups = groups_of(trace, chain_members(trace, facts.kernels, kernel_steps(facts)))
    assert any(g.bytes_saved for g in groups) and any(g.largest_op for g in groups)
    keys = data_keys(trace, facts.kernels)
    rows = facts.kernels[Kernels.op_row].astype("Int64").tolist()
    dims = trace.ops[Ops.input_dims].tolist()
    shape = functools.cache(largest_shape)  # a step repeats its ops' shapes
    want = [None if pd.isna(r) or not isinstance(dims[r], str) else shape(dims[r])
            for r in rows]  # fmt: skip
    assert keys.tolist() == want
    assert sum(k is not None for k in keys) > 1000


WIDE = [256, 1024]


def _eager(make: Make) -> Path:
    events = [op("ProfilerStep#0", 0, 1000, cat="user_annotation")]
    for i, name in enumerate(["aten::cos", "aten::mul", "aten::add", "aten::sigmoid"]):
        extra = [[]] * (1 if name in ("aten::mul", "aten::add") else 0)
        events.append(op(name, 10 + 110 * i, 100, **dims(WIDE, *extra)))
    return make(events)


def _eager_chain_findings(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.id in CHAIN_FINDINGS and f.trace == "eager"]


def _sample(run: str) -> Comparison:
    rundir = read_run_dir(SAMPLES / run)
    return compare(
        traceviz.load(rundir.eager), traceviz.load(rundir.compiled),
        names=("eager", "compiled"), run_info=rundir.info,
    )  # fmt: skip


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


@pytest.mark.parametrize("compiled", ["graph_0_cpp_fused_relu_0", None])
def test_unfused_chain_keeps_compile_advice(tmp_trace: Make, compiled: str | None) -> None:
    """Against a compiled trace of a different computation, or against an eager trace."""
    eager = _eager(tmp_trace)
    other = _compiled(tmp_trace, compiled) if compiled else eager
    found = _eager_chain_findings(compare(eager, other, names=("eager", "other")).findings)
    (chain,) = [f for f in found if f.id == "unfused-chain"]
    assert "Compile the model" in chain.next_step
    assert not any("already fused" in line for line in chain.evidence_lines())


def test_pointwise_sample_eager_chain_is_already_fused() -> None:
    comparison = _sample("pointwise")
    found = _eager_chain_findings(comparison.findings)
    assert {f.id for f in found} >= {"unfused-chain"}
    compiled_names = set(comparison.b.kernels["name"].astype(str))
    for finding in found:
        assert "Compile the model" not in finding.next_step
        named = [n for n in compiled_names if n in "\n".join(finding.evidence_lines())]
        assert named  # the evidence names the compiled kernel that fused the chain


RUNS = sorted(p.name for p in SAMPLES.iterdir() if (p / "run.json").exists())


@pytest.mark.parametrize("run", RUNS)
def test_no_compile_advice_for_the_eager_side_of_a_compiled_pair(run: str) -> None:
    """Also: the comparison's evidence stays short."""
    comparison = _sample(run)
    _check_evidence(comparison.findings)
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


@pytest.mark.parametrize(
    ("names", "advice", "shown", "in_evidence"),
    [
        (("aten::addmm",), "already", "aten::addmm", True),  # fused by the compiled addmm
        (("aten::mm", "graph_0_cpp_fused_add_0"), "addmm", "already", False),  # not fused
        ((), "compile the model", "already", False),  # eager against eager
    ],
)
def test_synthetic_matmul_add_advice(
    tmp_trace: Make, names: tuple[str, ...], advice: str, shown: str, in_evidence: bool
) -> None:
    eager = _mm_add_eager(tmp_trace)
    other = _compiled(tmp_trace, *names) if names else eager
    found = compare(eager, other, names=("eager", "other")).findings
    (finding,) = [f for f in found if f.id == "unfused-matmul-add" and f.trace == "eager"]
    assert advice in finding.next_step
    assert any(shown in line for line in finding.evidence_lines()) == in_evidence
