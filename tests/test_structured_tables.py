"""Derived tables that live in analysis/ (H12 of #15): the fusion map's structured ops
(FusionMap.ops), the kernel explorer's per-name table (top_kernels) and the kernel lanes
(analysis.timeline), on the sample runs, real corpus traces and tiny hand-made traces."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import traceviz
from tests.conftest import SAMPLES, corpus_or_skip, kernel, launch, op, write_trace
from traceviz.analysis.compare import Comparison, Side, analyze
from traceviz.analysis.fusion.match import CREDITS_DTYPES, Credits, Outcome
from traceviz.analysis.fusion.ops import KERNEL_OPS_DTYPES, KernelOps, kernel_ops
from traceviz.analysis.timing.timeline import Lane, same_context, timeline
from traceviz.analysis.top_kernels import TOP_KERNELS_DTYPES, TopKernels, top_kernels
from traceviz.diagnose.facts import TraceFacts, kernel_steps
from traceviz.pipeline import compare
from traceviz.report.views import eager_ops_texts
from traceviz.rundir import read_run_dir
from traceviz.schema import Kernels, conform

GPU_TRACES = (
    "nvidia/a100_eager_train_control.json.gz",
    "nvidia/a100_compiled_cudagraph_train_2023.json.gz",
    "amd/mi300x_compiled_llama_block_tiny.json.gz",
)


def sample_pairs() -> list[Comparison]:
    runs = [d for d in sorted(SAMPLES.iterdir()) if (d / "run.json").is_file()]
    if not runs:
        pytest.skip(f"no sample run in {SAMPLES}")
    out = []
    for d in runs[:3]:
        run = read_run_dir(d)
        out.append(compare(run.eager, run.compiled, names=("eager", "compiled"),
                           run_info=run.info))  # fmt: skip
    return out


@pytest.fixture(scope="module")
def pairs() -> list[Comparison]:
    return sample_pairs()


@pytest.fixture(scope="module", params=GPU_TRACES)
def gpu_side(request: pytest.FixtureRequest) -> Side:
    return analyze(corpus_or_skip(request.param), name="t")


# --- FusionMap.ops ---------------------------------------------------------------------------


def test_kernel_ops_sums_matched_credits_per_kernel_and_op() -> None:
    rows = [  # (op, time_us, kernel, outcome)
        ("aten::add", 2.0, "k1", Outcome.MATCHED.value),
        ("aten::mul", 5.0, "k1", Outcome.MATCHED.value),
        ("aten::add", 1.0, "k1", Outcome.MATCHED.value),
        ("aten::add", 4.0, "k2", Outcome.MATCHED.value),
        ("aten::view", 9.0, None, Outcome.REMOVED.value),
    ]
    credits = pd.DataFrame(
        {
            Credits.eager_row: range(len(rows)),
            Credits.op: [r[0] for r in rows],
            Credits.time_us: [r[1] for r in rows],
            Credits.kernel: [r[2] for r in rows],
            Credits.outcome: [r[3] for r in rows],
            Credits.how: ["x"] * len(rows),
            Credits.confidence: [1.0] * len(rows),
            Credits.basis: [""] * len(rows),
        }
    )
    ops = kernel_ops(conform(credits, CREDITS_DTYPES))
    assert list(ops.columns) == list(KERNEL_OPS_DTYPES)
    got = {(r.kernel, r.op): (r.kernels, r.time_us) for r in ops.itertuples()}
    assert got == {("k1", "aten::mul"): (1, 5.0), ("k1", "aten::add"): (2, 3.0),
                   ("k2", "aten::add"): (1, 4.0)}  # fmt: skip
    assert eager_ops_texts(ops) == {"k1": "aten::mul (1), aten::add (2)", "k2": "aten::add (1)"}


def test_fusion_ops_add_up_to_the_credits_and_the_display_text(pairs: list[Comparison]) -> None:
    for c in pairs:
        fusion = c.fusion
        matched = fusion.credits[fusion.credits[Credits.outcome] == Outcome.MATCHED.value]
        measured = float(np.nansum(c.a.kernels[Kernels.excl_dur_us].to_numpy(dtype=float)))
        total = float(fusion.ops[KernelOps.time_us].sum())
        assert total == pytest.approx(float(matched[Credits.time_us].sum()))
        assert total <= measured + 1e-6
        assert int(fusion.ops[KernelOps.kernels].sum()) == len(matched)
        per_kernel = fusion.ops.groupby(KernelOps.kernel)[KernelOps.kernels].sum()
        table = fusion.kernels.set_index("kernel")
        for name, n in per_kernel.items():
            assert int(table.loc[name, "eager_kernels"]) == int(n)
        texts = eager_ops_texts(fusion.ops)
        assert texts, "the sample runs credit eager ops"
        assert {k: texts.get(k, "") for k in table.index} == dict(table["eager_ops"])


def test_withheld_fusion_has_no_ops(tmp_path: Path) -> None:
    run = next((d for d in sorted(SAMPLES.iterdir()) if (d / "run.json").is_file()), None)
    if run is None:
        pytest.skip("no sample run")
    compiled = next(run.glob("compiled*.json*"))
    c = traceviz.compare(compiled, compiled, names=("x", "y"))
    if not c.fusion.comparability.withheld:
        pytest.skip("the guard did not withhold this pair")
    assert c.fusion.ops.empty and list(c.fusion.ops.columns) == list(KERNEL_OPS_DTYPES)


# --- top_kernels ------------------------------------------------------------------------------


def test_top_kernels_adds_up_to_the_trace(gpu_side: Side) -> None:
    side = gpu_side
    table = top_kernels([("t", side.kernels)])
    assert list(table.columns) == list(TOP_KERNELS_DTYPES)
    measured = float(np.nansum(side.kernels[Kernels.excl_dur_us].to_numpy(dtype=float)))
    assert float(table[TopKernels.time_us].sum()) == pytest.approx(measured)
    assert int(table[TopKernels.calls].sum()) == len(side.kernels)
    assert table[TopKernels.kernel].is_unique
    assert table[TopKernels.time_us].is_monotonic_decreasing
    assert float(table[TopKernels.share_pct].sum()) <= 100.0 + 0.05 * len(table)


def test_top_kernels_of_two_sides_and_of_none(pairs: list[Comparison]) -> None:
    c = pairs[0]
    table = top_kernels([(s.name, s.kernels) for s in (c.a, c.b)])
    assert set(table[TopKernels.trace]) == set(c.names)
    for side in (c.a, c.b):
        mine = table[table[TopKernels.trace] == side.name]
        assert int(mine[TopKernels.calls].sum()) == len(side.kernels)
    empty = top_kernels([])
    assert empty.empty and list(empty.columns) == list(TOP_KERNELS_DTYPES)


# --- timeline (kernel lanes) ---------------------------------------------------------------------


def test_timeline_orders_each_lane_without_nesting(gpu_side: Side) -> None:
    facts = TraceFacts.of(gpu_side, expect_compiled=False)
    lanes = timeline(facts.trace, facts.kernels, kernel_steps(facts))
    assert list(lanes.columns) == [v for k, v in vars(Lane).items() if not k.startswith("_")]
    assert lanes[Lane.row].is_unique and len(lanes) <= len(facts.kernels)
    dur = float(lanes[Lane.dur].sum())
    assert dur <= float(np.nansum(facts.kernels[Kernels.dur_us].to_numpy(dtype=float))) + 1e-6
    for _, lane in lanes.groupby(Lane.lane):
        assert lane[Lane.ts].is_monotonic_increasing
    same = same_context(lanes)
    assert not same[0] if len(same) else True
    assert not same[(lanes[Lane.step] < 0).to_numpy()].any()


def test_timeline_drops_a_kernel_nested_in_another(tmp_path: Path) -> None:
    events = [
        op("aten::mm", 0, 100, **{"External id": 1}),
        launch("cudaLaunchKernel", 10, 5, 1),
        launch("cudaLaunchKernel", 20, 5, 2),
        kernel("gemm", 30, 50, 1),
        kernel("inner", 40, 5, 2),  # inside gemm's span on the same stream
        kernel("after", 90, 5, 3),
    ]
    trace = traceviz.load(write_trace(tmp_path / "t.json", events))
    side = analyze(trace, name="t")
    steps = np.full(len(side.kernels), -1, dtype=np.int64)
    lanes = timeline(trace, side.kernels, steps)
    names = side.kernels[Kernels.name].astype(str).to_numpy()
    assert list(names[lanes[Lane.row].to_numpy()]) == ["gemm", "after"]
    assert not same_context(lanes).any()  # outside every step


def test_dashboard_explains_kernels_from_the_structured_ops(pairs: list[Comparison]) -> None:
    pytest.importorskip("panel")
    import html

    from traceviz.dashboard.views import explain_kernel, kernel_table

    c = pairs[0]
    a, b = c.names
    ops = c.fusion.ops
    if ops.empty:
        pytest.skip("no credited op in this sample")
    compiled = str(ops[KernelOps.kernel].iloc[0])
    text = explain_kernel(c, b, compiled)
    for op_name in ops.loc[ops[KernelOps.kernel] == compiled, KernelOps.op]:
        assert html.escape(str(op_name)) in text
    op_name = str(ops[KernelOps.op].iloc[0])
    eager = c.a.kernels.loc[c.a.kernels[Kernels.op_name] == op_name, Kernels.name]
    if eager.empty:
        pytest.skip("the credited op has no eager kernel of its own name")
    text = explain_kernel(c, a, str(eager.iloc[0]))
    assert "went into" in text
    assert html.escape(compiled) in text or html.escape(op_name) not in text
    table = kernel_table(c)
    assert list(table.columns) == list(TOP_KERNELS_DTYPES)


def test_window_events_hold_every_activity_of_the_window_once(gpu_side: Side) -> None:
    from traceviz.analysis.timeline_events import WindowEvent, window_events

    side = gpu_side
    ts = side.kernels[Kernels.ts_us].to_numpy(dtype=float)
    start = float(np.nanmin(ts))
    end = float(np.nanpercentile(ts, 50)) + 1e-3
    events = window_events(side, start, end, ("kernel",))
    assert list(events.columns) == [
        v for k, v in vars(WindowEvent).items() if not k.startswith("_")
    ]
    inside = (ts >= start) & (ts < end)
    device = events[events[WindowEvent.lane].str.startswith(("device ", "CPU ops "))]
    assert len(device) == int(inside.sum())
    measured = float(np.nansum(side.kernels[Kernels.dur_us].to_numpy(dtype=float)[inside]))
    assert float(device[WindowEvent.dur].sum()) == pytest.approx(measured)
    assert ((events[WindowEvent.ts] >= start) & (events[WindowEvent.ts] < end)).all()


def test_step_parts_add_up_to_at_most_the_step(gpu_side: Side) -> None:
    from traceviz.analysis.timing.idle import IdleParts
    from traceviz.analysis.timing.step_parts import GPU_PARTS, step_parts

    side = gpu_side
    parts = step_parts(side.trace, side.launch)
    assert [p for p, _ in parts] == list(GPU_PARTS)
    per = side.launch.idle.per_step
    wall = float(per[IdleParts.wall_us].sum()) / max(len(per), 1)
    assert all(v >= 0 for _, v in parts)
    assert sum(v for _, v in parts) <= wall * (1 + 1e-9) + 1e-6


def test_step_parts_of_a_cpu_run(pairs: list[Comparison]) -> None:
    from traceviz.analysis.timing.launch import StepOverhead
    from traceviz.analysis.timing.step_parts import CPU_PARTS, step_parts

    for c in pairs:
        for side in (c.a, c.b):
            parts = step_parts(side.trace, side.launch)
            assert [p for p, _ in parts] == list(CPU_PARTS)
            per = side.launch.per_step
            wall = float(per[StepOverhead.wall_us].sum()) / max(len(per), 1)
            assert sum(v for _, v in parts) <= wall * (1 + 1e-9) + 1e-6
