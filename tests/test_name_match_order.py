"""Name-match places a fused op by order and data flow, not by op name alone (issue 24 §4).

Two real CPU run pairs whose blocks repeat the same ops (``tests/data/name_match``, made by
``traceviz run`` from ``models.py`` there, the Inductor kernel profile on and Inductor's
provenance kept): two conv-bn-relu blocks, and two RMSNorm + SiLU-MLP blocks. Each pair is
compared as a user's pair of traces (no compile log: basis ``name-match``) and checked against
the compiler's record of the same run:

- the RMSNorm pair against the provenance itself (kernel → pre-grad FX nodes, read from the
  compile log here): op names alone credited both blocks' RMSNorm multiplies to the SiLU
  kernel, which only holds the gate × up product of each block;
- both pairs, and every CPU sample run, against the compiler-basis credits wherever the
  compiler's credit is unambiguous (confidence 1).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import traceviz
from tests.conftest import REPO, SAMPLES
from traceviz.analysis.fusion.match import (
    Credits,
    Outcome,
    anchor_coordinates,
    kernel_side,
)
from traceviz.parse.compile_log import read_compile_log
from traceviz.pipeline import compare, compare_run

DATA = REPO / "tests" / "data" / "name_match"
CONV = DATA / "two-conv-bn-relu"
RMS = DATA / "two-rmsnorm-silu-mlp"

RMSNORM_1 = "graph_0_cpp_fused_add_mean_mul_pow_rsqrt_0"  # block 1's RMSNorm
SILU = "graph_0_cpp_fused__unsafe_view_mul_silu_1"  # silu(gate) * up, called once per block
RMSNORM_2 = "graph_0_cpp_fused__unsafe_view_add_mean_mul_pow_rsqrt_2"  # residual 1 + RMSNorm 2
RESIDUAL_2 = "graph_0_cpp_fused__unsafe_view_add_3"  # block 2's residual add


def _load(path: Path) -> traceviz.Trace:
    return traceviz.load(path, cache=False)


def name_match(run: Path) -> traceviz.Report:
    """The run's two traces as a user's pair: no run.json, no compile log, no lines."""
    return compare(run / "eager.pt.trace.json.gz", run / "compiled.pt.trace.json.gz",
                   names=("eager", "compiled"), load=_load)  # fmt: skip


def _per_step(report: traceviz.Report, op: str) -> Counter[str]:
    """Eager instances of ``op`` credited per compiled kernel, per profiled step."""
    credits = report.fusion.credits
    rows = credits[(credits[Credits.op] == op) & (credits[Credits.outcome] == "matched")]
    steps = report.a.summary.step_count
    assert steps == 2  # the run's --steps
    counts = Counter(rows[Credits.kernel].astype(str))
    return Counter({kernel: n // steps for kernel, n in counts.items()})


def test_the_provenance_says_which_kernel_holds_which_multiply() -> None:
    """The truth the next test checks against, read from the run's compile log: block 1's
    RMSNorm multiplies (pre-grad nodes ``mul``, ``h``) are in its own kernel, block 2's
    (``mul_3``, ``h_2``) in the kernel after block 1's down projection, and the SiLU kernel
    holds one product per call (``mul_2``, then ``mul_5``)."""
    log = read_compile_log(RMS / "compile_log.jsonl.gz")
    nodes = {
        (row.kernel, row.handle): set(str(row.pre_grad_nodes).split(","))
        for row in log.kernels.itertuples()
    }
    by_kernel: dict[str, set[str]] = {}
    for (kernel, _), found in nodes.items():
        by_kernel.setdefault(str(kernel), set()).update(found)
    assert {"mul", "h"} <= by_kernel["cpp_fused_add_mean_mul_pow_rsqrt_0"]
    assert {"mul_3", "h_2", "add_1"} <= by_kernel["cpp_fused__unsafe_view_add_mean_mul_pow_rsqrt_2"]
    assert by_kernel["cpp_fused__unsafe_view_mul_silu_1"] >= {"mul_2", "mul_5"}
    assert not {"mul", "h", "mul_3", "h_2"} & by_kernel["cpp_fused__unsafe_view_mul_silu_1"]
    calls = Counter(str(k) for k, _ in nodes)
    assert calls["cpp_fused__unsafe_view_mul_silu_1"] == 2  # one kernel, called per block


def test_rmsnorm_multiplies_go_to_their_own_blocks_kernels() -> None:
    """Per step: two multiplies in each RMSNorm kernel, one per block in the SiLU kernel
    (two calls); the adds: RMSNorm 1's epsilon, block 1's residual with RMSNorm 2's epsilon,
    block 2's residual. By name alone all six multiplies went to the SiLU kernel."""
    report = name_match(RMS)
    assert _per_step(report, "aten::mul") == {RMSNORM_1: 2, SILU: 2, RMSNORM_2: 2}
    assert _per_step(report, "aten::add") == {RMSNORM_1: 1, RMSNORM_2: 2, RESIDUAL_2: 1}
    assert _per_step(report, "aten::silu") == {SILU: 2}
    # the mean's own copy (a [4, 32, 1] result) is no part of a matmul of [128, 64]
    assert set(_per_step(report, "aten::copy_")) <= {RMSNORM_1, RMSNORM_2}


def test_conv_blocks_batch_norms_go_to_their_own_blocks_kernels() -> None:
    report = name_match(CONV)
    credits = report.fusion.credits
    bn = credits[credits[Credits.op] == "aten::native_batch_norm"]
    kernels = bn[Credits.kernel].astype(str).tolist()
    # in eager order: block 1, block 2, block 1, block 2 (two steps)
    first, second = kernels[0], kernels[1]
    assert first != second and kernels == [first, second] * 2
    assert "convolution" in first  # block 1's kernel also prepares block 2's convolution
    truth = compare_run(CONV, load=_load).fusion.credits
    assert truth[Credits.kernel].tolist() == credits[Credits.kernel].tolist()


CPU_RUNS = [CONV, RMS] + [
    SAMPLES / name
    for name in ("block", "pointwise", "linear-add", "mlp", "layernorm-gelu", "attention",
                 "conv-bn-relu", "graph-break")
]  # fmt: skip


@pytest.mark.parametrize("run", CPU_RUNS, ids=lambda p: p.name)
def test_name_match_agrees_with_unambiguous_compiler_credits(run: Path) -> None:
    """Wherever the compiler's record credits an eager kernel unambiguously (confidence 1),
    the name-match credits it to the same compiled kernel (graph-break: op names alone gave
    the scalar ``copy_`` of ``if x.sum() > 0`` to the matmul)."""
    truth = compare_run(run, load=_load).fusion.credits.set_index(Credits.eager_row)
    guess = name_match(run).fusion.credits.set_index(Credits.eager_row)
    sure = truth[(truth[Credits.how] == "compiler") & (truth[Credits.confidence] >= 1.0)]
    assert len(sure)
    guessed = guess[[Credits.kernel]].rename(columns={Credits.kernel: f"{Credits.kernel}_guess"})
    joined = sure[[Credits.op, Credits.kernel]].join(guessed)
    wrong = joined[joined[Credits.kernel] != joined[f"{Credits.kernel}_guess"]]
    assert wrong.empty, wrong


@pytest.mark.parametrize("run", [CONV, RMS], ids=lambda p: p.name)
def test_name_match_is_still_a_partition(run: Path) -> None:
    report = name_match(run)
    credits = report.fusion.credits
    eager = _load(run / "eager.pt.trace.json.gz")
    assert credits[Credits.eager_row].is_unique
    matched = credits[credits[Credits.outcome] == Outcome.MATCHED.value]
    kernels = report.fusion.kernels
    assert kernels["eager_time_us"].sum() == pytest.approx(matched[Credits.time_us].sum())
    assert matched[Credits.time_us].sum() <= eager.kernels["excl_dur_us"].sum() + 1e-6


def test_anchor_coordinates_count_anchors_and_rank_between_them() -> None:
    """A compiled step of five kernels (layout kernel, conv, BN 1, conv, BN 2) with the two
    convolutions as anchors: the k-th anchor at k, the others at k + their rank between."""
    trace = _load(CONV / "compiled.pt.trace.json.gz")
    side = kernel_side(trace, trace.kernels)
    one_step = side.step == side.step[0]
    anchors = np.zeros(len(side.rows), dtype=bool)
    names = side.names
    anchors[one_step & (names == "aten::mkldnn_convolution")] = True
    place = anchor_coordinates(side, anchors)[one_step]
    order = np.argsort(side.pos[one_step])
    got = place[order].tolist()
    is_anchor = anchors[one_step][order].tolist()
    assert is_anchor == [False, True, False, True, False]
    assert got == pytest.approx([0.5, 1.0, 1.5, 2.0, 2.5])
    assert pd.Series(anchor_coordinates(side, np.zeros_like(anchors))).between(0, 1).all()
