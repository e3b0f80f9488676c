"""Diagnosis rules on tiny hand-made traces: each rule fires on one and stays quiet on another.

GIVEN a trace (or a pair) built event by event, WHEN the rules run, THEN the finding's id,
severity and evidence say what the trace shows. On real traces: every rule runs on every corpus
trace and sample run, and the sample runs say what they were built to show (a graph break with
Dynamo's reason, a pointwise chain that fusion merges).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import traceviz
from tests.conftest import CORPUS, corpus_params, kernel, launch, load_trace, op
from tests.real_data import sample_params, sample_run
from tests.runinfo_builder import run_info
from traceviz.analysis.compare import Comparison, Side, analyze
from traceviz.analysis.regions import region_stats
from traceviz.cli import main
from traceviz.diagnose import (
    Evidence,
    Finding,
    Severity,
    Unit,
    at_least,
    diagnose_trace,
    sort_findings,
)
from traceviz.pipeline import compare, compare_sides
from traceviz.rundir import read_run_dir

Make = Callable[..., Path]
F4 = "float"


def dims(*shapes: list[int]) -> dict[str, Any]:
    """Input Dims / Input type args (``[]`` shapes are Scalars)."""
    return {"Input Dims": list(shapes), "Input type": [F4 if s else "Scalar" for s in shapes]}


def step(n: int, ts: float, dur: float) -> dict:
    return op(f"ProfilerStep#{n}", ts, dur, cat="user_annotation")


def memory_event(ts: float, nbytes: int, total: int) -> dict:
    return {
        "ph": "i",
        "s": "t",
        "name": "[memory]",
        "pid": 1,
        "tid": 1,
        "ts": ts,
        "args": {"Bytes": nbytes, "Total Allocated": total, "Device Type": 0, "Device Id": -1},
    }


def findings(
    make: Make, events: list[dict], *, name: str = "t", run: dict | None = None, **kw: Any
) -> list[Finding]:
    info = run_info(**run) if run is not None else None
    return diagnose_trace(traceviz.load(make(events)), name=name, run_info=info, **kw)


def by_id(found: list[Finding], rule: str) -> list[Finding]:
    return [f for f in found if f.id == rule]


def text(finding: Finding) -> str:
    return finding.title + "\n" + "\n".join(finding.evidence_lines())


def steps(n: int, dur: float, *, every: float | None = None) -> list[dict]:
    return [step(i, i * (every or dur), dur) for i in range(n)]


POINTWISE = [64, 1024]


def cpu_chain(t0: float, *, shape: list[int] = POINTWISE, dur: float = 100) -> list[dict]:
    """cos → mul → add → sigmoid on one tensor, one CPU op each (a CPU trace's kernels)."""
    return [
        op("aten::cos", t0, dur, **dims(shape)),
        op("aten::mul", t0 + dur + 5, dur, **dims(shape, [])),
        op("aten::add", t0 + 2 * (dur + 5), dur, **dims(shape, [], [])),
        op("aten::sigmoid", t0 + 3 * (dur + 5), dur, **dims(shape)),
    ]


# --- Finding ----------------------------------------------------------------------------


def test_severity_orders_and_findings_sort_by_severity_then_gain() -> None:
    assert Severity.INFO < Severity.WARNING < Severity.ERROR
    assert max(Severity) is Severity.ERROR and Severity("warning") >= Severity.WARNING
    small = Finding("a", Severity.WARNING, "small", est_gain_us=1.0)
    large = Finding("b", Severity.WARNING, "large", est_gain_us=50.0)
    unknown = Finding("c", Severity.WARNING, "unknown")
    error = Finding("d", Severity.ERROR, "error")
    info = Finding("e", Severity.INFO, "info", est_gain_us=1e9)
    assert sort_findings([info, small, unknown, large, error]) == [
        error,
        large,
        small,
        unknown,
        info,
    ]
    assert at_least([info, small, error], "warning") == [small, error]
    assert at_least([info, small, error], Severity.ERROR) == [error]


def test_finding_renders_as_json_markdown_and_text() -> None:
    finding = Finding(
        id="x",
        severity=Severity.WARNING,
        title="t | with a pipe",
        evidence=(
            Evidence("time", 1500.0, Unit.US, 0.25),
            Evidence("bytes", 2**20, Unit.BYTES),
            "a kernel [64, 64]",
        ),
        est_gain_us=12.5,
        gain_basis="upper bound",
        next_step="do this",
        docs_url="https://pytorch.org/docs/stable/profiler.html",
        trace="compiled",
    )
    data = json.loads(json.dumps(finding.to_json()))
    assert data["severity"] == "warning" and data["est_gain_us"] == 12.5
    assert data["evidence"][0] == {"label": "time", "value": 1500.0, "unit": "us", "share": 0.25}
    assert data["evidence"][2] == "a kernel [64, 64]"
    assert finding.evidence_lines()[:2] == ["time: 1.5 ms (25.0% of profiled step)", "bytes: 1 MiB"]
    md = finding.to_markdown()
    assert md.startswith("- **WARNING** t \\| with a pipe (`x`)")
    assert "[docs](https://pytorch.org/docs/stable/profiler.html)" in md
    assert "Estimated gain: ≈ 12.5 µs per step (upper bound)" in md
    assert "next step: do this" in str(finding) and "[warning]" in str(finding)


# --- unfused chains ---------------------------------------------------------------------


def test_eager_chain_on_one_tensor_is_a_fusion_opportunity(tmp_trace: Make) -> None:
    found = findings(tmp_trace, [step(0, 0, 1000), *cpu_chain(10)])
    (chain,) = by_id(found, "unfused-chain")
    assert chain.severity is Severity.INFO
    assert "aten::cos → aten::mul → aten::add → aten::sigmoid" in text(chain)
    assert chain.est_gain_us == pytest.approx(300)  # 400 µs of kernels, the longest is 100
    saved = next(e for e in chain.evidence if isinstance(e, Evidence) and "bytes" in e.label)
    assert saved.value == 3 * 2 * 64 * 1024 * 4  # three intermediates, written and read back
    # a helper nested in an op does not break the chain
    events = [step(0, 0, 1000), *cpu_chain(10)]
    events.append(op("aten::copy_", 120, 3, **dims([], [])))  # inside aten::mul (115–215)
    assert by_id(findings(tmp_trace, events), "unfused-chain")


def test_short_runs_and_different_tensors_are_not_chains(tmp_trace: Make) -> None:
    events = [
        step(0, 0, 1000),
        op("aten::cos", 10, 100, **dims([64, 1024])),
        op("aten::mul", 120, 100, **dims([64, 1024], [])),
        op("aten::add", 230, 100, **dims([8, 8], [8, 8])),  # other data: the run stops
        op("aten::relu", 340, 100, **dims([8, 8])),
    ]
    assert not by_id(findings(tmp_trace, events), "unfused-chain")


def test_eager_chain_left_in_a_compiled_trace_is_a_warning(tmp_trace: Make) -> None:
    events = [
        step(0, 0, 2000),
        op("Torch-Compiled Region: 0/0", 10, 200),
        op("graph_0_cpp_fused_relu_0", 20, 100),
        *cpu_chain(300),
    ]
    (chain,) = by_id(findings(tmp_trace, events), "unfused-chain")
    assert chain.severity is Severity.WARNING and "left unfused" in chain.title


# --- graph breaks and recompiles --------------------------------------------------------


def _two_frames(*extra: dict) -> list[dict]:
    return [
        step(0, 0, 1000),
        op("Torch-Compiled Region: 0/0", 10, 100),
        launch("cudaLaunchKernel", 20, 5, 1),
        kernel("triton_poi_fused_cos_0", 30, 5, 1),
        op("aten::nonzero", 150, 50),
        launch("cudaLaunchKernel", 160, 5, 2),
        kernel("nonzero_kernel", 170, 5, 2),
        op("Torch-Compiled Region: 1/0", 300, 100),
        launch("cudaLaunchKernel", 310, 5, 3),
        kernel("triton_poi_fused_relu_0", 320, 5, 3),
        *extra,
    ]


DYNAMO = {
    "graphs": 2,
    "graph_break_count": 1,
    "graph_breaks": [
        {
            "reason": "Data-dependent branching",
            "file": "model.py",
            "line": 12,
            "function": "forward",
            "detail": "Data-dependent branching\n  Hint: use torch.cond",
        }
    ],
    "recompiles": 1,
    "compiles": [{"compile_id": "1/1", "recompile_reason": "tensor 'x' size mismatch"}],
}


def test_graph_break_names_the_eager_op_between_and_dynamo_reason(tmp_trace: Make) -> None:
    found = findings(tmp_trace, _two_frames(), run={"dynamo": DYNAMO}, variant="compiled")
    (brk,) = by_id(found, "graph-break")
    assert brk.severity is Severity.WARNING
    body = text(brk)
    assert "Dynamo: Data-dependent branching at model.py:12 in forward() — Hint: use" in body
    assert "aten::nonzero" in body and "frame 0/0 at 10–110 µs; frame 1/0 at 300–400" in body
    assert brk.est_gain_us == pytest.approx(190)  # wall time 110 → 300 between the regions
    (alone,) = by_id(findings(tmp_trace, _two_frames()), "graph-break")  # seen in the trace
    assert "1 graph break" in alone.title and "Dynamo" not in text(alone)


def test_one_frame_per_step_is_no_graph_break(tmp_trace: Make) -> None:
    events = [
        step(0, 0, 500),
        op("Torch-Compiled Region: 0/0", 10, 100),
        step(1, 500, 500),
        op("Torch-Compiled Region: 0/0", 510, 100),
    ]
    found = findings(tmp_trace, events)
    assert not by_id(found, "graph-break") and not by_id(found, "recompile")


def test_recompile_with_dynamo_reason(tmp_trace: Make) -> None:
    events = _two_frames(op("Torch-Compiled Region: 1/1", 500, 100))
    stats = region_stats(traceviz.load(tmp_trace(events)))
    assert stats.region_calls == 3 and stats.distinct_frames == 2
    assert stats.graph_breaks == 1 and stats.recompiles == 1
    assert stats.inside_kernels == 2 and stats.outside_kernels == 1
    assert stats.between_kernels == 1 and stats.between_time_us == 5
    assert set(stats.frames.recompile_id) == {0, 1}
    (again,) = by_id(
        findings(tmp_trace, events, run={"dynamo": DYNAMO}, variant="compiled"), "recompile"
    )
    assert "Torch-Compiled Region 1/1: 1 calls" in text(again)
    assert "Dynamo recompiled 1/1: tensor 'x' size mismatch" in text(again)


# --- launch-bound -----------------------------------------------------------------------


def _launched(n: int, *, kernel_us: float, launch_us: float, gap: float) -> list[dict]:
    """``n`` kernels, each launched by a call of ``launch_us`` and run right after it."""
    events = []
    for i in range(n):
        t = 10 + i * gap
        events += [
            launch("cudaLaunchKernel", t, launch_us, i + 1),
            kernel(f"k{i}", t + launch_us + 1, kernel_us, i + 1),
        ]
    return events


def test_tiny_kernels_slower_to_launch_than_to_run_are_launch_bound(tmp_trace: Make) -> None:
    events = [step(0, 0, 1000), *_launched(40, kernel_us=2, launch_us=20, gap=24)]
    (bound,) = by_id(findings(tmp_trace, events), "launch-bound")
    assert bound.severity is Severity.WARNING and 'mode="reduce-overhead"' in bound.next_step
    assert bound.est_gain_us is not None and bound.est_gain_us > 500
    # long kernels queued ahead are not launch bound
    events = [step(0, 0, 1000)]
    for i in range(9):
        events += [
            launch("cudaLaunchKernel", 5 + i, 1, i + 1),
            kernel(f"k{i}", 10 + i * 100, 100, i + 1),
        ]
    found = findings(tmp_trace, events)
    assert not by_id(found, "launch-bound") and not by_id(found, "cuda-graphs-in-use")


def test_graph_replays_are_recognised(tmp_trace: Make) -> None:
    events = [step(0, 0, 1000), launch("cudaGraphLaunch", 5, 10, 1)]
    events += [kernel(f"k{i}", 20 + i * 100, 95, 1) for i in range(9)]
    (graphs,) = by_id(findings(tmp_trace, events), "cuda-graphs-in-use")
    assert graphs.severity is Severity.INFO
    assert "kernels replayed by graphs: 100.0%" in text(graphs)


def test_cpu_step_mostly_outside_compute_ops_is_framework_overhead(tmp_trace: Make) -> None:
    busy = findings(tmp_trace, [step(0, 0, 1000), op("aten::mm", 10, 900, **dims([8, 8], [8, 8]))])
    assert not by_id(busy, "framework-overhead")
    idle = findings(tmp_trace, [step(0, 0, 1000), op("aten::mm", 10, 100, **dims([8, 8], [8, 8]))])
    (overhead,) = by_id(idle, "framework-overhead")
    assert "90% of the step" in overhead.title


# --- GEMMs ------------------------------------------------------------------------------


def _compiled_gemm(share_us: float) -> list[dict]:
    return [
        step(0, 0, 1000),
        op("Torch-Compiled Region: 0/0", 5, 990),
        op("aten::mm", 10, share_us, **dims([64, 256], [256, 256])),
        op("graph_0_cpp_fused_relu_0", 20 + share_us, 10),
    ]


def test_extern_gemm_suggests_max_autotune_unless_small_or_tuned(tmp_trace: Make) -> None:
    (gemm,) = by_id(findings(tmp_trace, _compiled_gemm(500)), "extern-gemm")
    assert 'mode="max-autotune"' in gemm.next_step and "freezing" in gemm.next_step  # CPU
    assert "50% of the step" in gemm.title
    # quiet when small or already autotuned
    assert not by_id(findings(tmp_trace, _compiled_gemm(20)), "extern-gemm")
    run = {"compile": {"mode": "max-autotune", "inductor_config": {"max_autotune": True}}}
    assert not by_id(findings(tmp_trace, _compiled_gemm(500), run=run), "extern-gemm")


def test_matmul_then_add_on_its_output_is_flagged_not_addmm_or_other_data(tmp_trace: Make) -> None:
    events = [
        step(0, 0, 1000),
        op("aten::mm", 10, 300, **dims([64, 256], [256, 256])),
        op("aten::add", 320, 60, **dims([64, 256], [256], [])),
    ]
    (pair,) = by_id(findings(tmp_trace, events), "unfused-matmul-add")
    assert "torch.addmm" in pair.next_step and pair.est_gain_us == pytest.approx(60)
    # an addmm, or an add on other data, is not flagged
    addmm = [step(0, 0, 1000), op("aten::addmm", 10, 300, **dims([256], [64, 256], [256, 256]))]
    assert not by_id(findings(tmp_trace, addmm), "unfused-matmul-add")
    other = [
        step(0, 0, 1000),
        op("aten::mm", 10, 300, **dims([64, 256], [256, 256])),
        op("aten::add", 320, 60, **dims([8, 8], [8, 8], [])),
    ]
    assert not by_id(findings(tmp_trace, other), "unfused-matmul-add")


# --- copies and syncs -------------------------------------------------------------------


def _copy(ts: float, dur: float, corr: int, kind: str = "HtoD") -> list[dict]:
    name = f"Memcpy {kind} (Pageable -> Device)"
    return [
        launch("cudaMemcpyAsync", ts, 2, corr),
        kernel(name, ts + 5, dur, corr, cat="gpu_memcpy", bytes=2**20),
    ]


def test_large_host_to_device_copy_in_the_step_not_outside_it(tmp_trace: Make) -> None:
    events = [
        step(0, 0, 1000),
        *_copy(10, 200, 1),
        *_launched(3, kernel_us=200, launch_us=2, gap=5),
    ]
    (copies,) = by_id(findings(tmp_trace, events), "host-device-copy")
    assert copies.severity is Severity.WARNING and "pin_memory=True" in copies.next_step
    assert "pageable (unpinned) copies per step: 1" in text(copies)
    # copies outside the steps are ignored
    events = [
        *_copy(2000, 200, 1),
        step(0, 0, 1000),
        *_launched(3, kernel_us=200, launch_us=2, gap=5),
    ]
    assert not by_id(findings(tmp_trace, events), "host-device-copy")


def test_sync_inside_the_step_names_the_calling_op_not_after_it(tmp_trace: Make) -> None:
    events = [
        step(0, 0, 1000),
        *_launched(2, kernel_us=50, launch_us=5, gap=10),
        op("aten::_local_scalar_dense", 400, 60, **{"External id": 77}),
        launch("cudaStreamSynchronize", 410, 50, 99, **{"External id": 77}),
    ]
    (sync,) = by_id(findings(tmp_trace, events), "sync-in-step")
    assert "cudaStreamSynchronize ×1" in text(sync) and "aten::_local_scalar_dense" in text(sync)
    assert sync.severity is Severity.WARNING  # the device idles most of the step
    # a sync after the step is ignored
    events = [
        step(0, 0, 300),
        *_launched(2, kernel_us=50, launch_us=5, gap=10),
        launch("cudaDeviceSynchronize", 900, 50, 99),
    ]
    assert not by_id(findings(tmp_trace, events), "sync-in-step")


# --- memory -----------------------------------------------------------------------------


def test_large_intermediates_of_an_eager_chain(tmp_trace: Make) -> None:
    big = [4096, 4096]  # 64 MiB of float
    (inter,) = by_id(
        findings(tmp_trace, [step(0, 0, 1000), *cpu_chain(10, shape=big)]), "large-intermediates"
    )
    assert "up to 64 MiB" in inter.title and "aten::cos" in text(inter)
    small = findings(tmp_trace, [step(0, 0, 1000), *cpu_chain(10, shape=[8, 8])])
    assert not by_id(small, "large-intermediates")


def test_intermediates_compared_with_the_measured_peak(tmp_trace: Make) -> None:
    events = [step(0, 0, 1000), memory_event(5, 2**20, 2**20), *cpu_chain(10)]  # 256 KiB each
    (inter,) = by_id(findings(tmp_trace, events), "large-intermediates")
    assert "largest intermediate / peak: 25.0%" in text(inter)


def _pair(make: Make, *, eager_step: float, compiled_step: float) -> tuple[Path, Path]:
    eager = make(
        [step(i, i * 2000, eager_step) for i in range(3)]
        + [op("aten::relu", i * 2000 + 5, 10, **dims([8, 8])) for i in range(3)]
    )
    compiled = make(
        [step(i, i * 2000, compiled_step) for i in range(3)]
        + [op("Torch-Compiled Region: 0/0", i * 2000 + 2, 20) for i in range(3)]
        + [op("graph_0_cpp_fused_relu_0", i * 2000 + 5, 10) for i in range(3)]
    )
    return eager, compiled


def test_peak_memory_up_from_run_json(tmp_trace: Make) -> None:
    eager, compiled = _pair(tmp_trace, eager_step=100, compiled_step=100)
    memory = {
        "eager": {"profiled_peak_bytes": 2**20},
        "compiled": {"profiled_peak_bytes": 4 * 2**20},
    }
    up = compare(eager, compiled, names=("eager", "compiled"), run_info=run_info(memory=memory))
    (peak,) = by_id(up.findings, "peak-memory-up")
    assert "+3 MiB" in peak.title and peak.severity is Severity.WARNING
    memory["compiled"]["profiled_peak_bytes"] = 2**20 + 1000
    same = compare(eager, compiled, names=("eager", "compiled"), run_info=run_info(memory=memory))
    assert not by_id(same.findings, "peak-memory-up")


# --- compiled slower --------------------------------------------------------------------


def test_compiled_slower_than_eager_is_attributed(tmp_trace: Make) -> None:
    eager, compiled = _pair(tmp_trace, eager_step=100, compiled_step=200)
    slow = compare(eager, compiled, names=("eager", "compiled"))
    (finding,) = by_id(slow.findings, "compiled-slower")
    assert finding.severity is Severity.ERROR and finding.est_gain_us == pytest.approx(100)
    assert "compiled is 2.00× slower than eager" in finding.title
    assert "more device idle time (framework overhead)" in text(finding)
    assert slow.findings[0] is finding  # errors come first
    # faster, or too noisy to tell
    eager, compiled = _pair(tmp_trace, eager_step=200, compiled_step=100)
    assert not by_id(
        compare(eager, compiled, names=("eager", "compiled")).findings, "compiled-slower"
    )
    # run.json's timed samples decide over the profiled steps; these overlap widely
    timing = {
        "eager": {"median_us": 100, "samples_us": [50, 60, 100, 120, 400, 380, 90]},
        "compiled": {"median_us": 200, "samples_us": [150, 300, 200, 180, 60, 250, 220]},
    }
    noisy = compare(eager, compiled, names=("eager", "compiled"), run_info=run_info(timing=timing))
    assert not by_id(noisy.findings, "compiled-slower")
    (finding,) = by_id(noisy.findings, "no-significant-difference")
    assert finding.severity is Severity.INFO and "95% interval" in finding.title


# --- profiling mistakes -----------------------------------------------------------------


def test_trace_labelled_compiled_without_compiled_code(tmp_trace: Make) -> None:
    events = [*steps(3, 100), op("aten::relu", 5, 10, **dims([8, 8]))]
    (none,) = by_id(findings(tmp_trace, events, name="compiled"), "no-compiled-region")
    assert none.severity is Severity.ERROR
    assert not by_id(findings(tmp_trace, events, name="eager"), "no-compiled-region")
    events.append(op("Torch-Compiled Region: 0/0", 2, 30))
    assert not by_id(findings(tmp_trace, events, name="compiled"), "no-compiled-region")


def test_compilation_inside_a_profiled_step(tmp_trace: Make) -> None:
    events = [
        *steps(3, 1000),
        op("_compile.compile_inner (dynamo_timed)", 10, 500),
        op("backend_compile", 20, 400),
        op("aten::relu", 600, 10, **dims([8, 8])),
    ]
    (compiling,) = by_id(findings(tmp_trace, events), "compile-in-window")
    assert compiling.severity is Severity.ERROR and "ProfilerStep #0" in text(compiling)
    assert "compile spans (outermost): 1" in text(compiling)
    outside = [
        *steps(3, 1000, every=1000),
        op("entire_frame_compile", 5000, 500),
        op("aten::relu", 600, 10, **dims([8, 8])),
    ]
    (later,) = by_id(findings(tmp_trace, outside), "compile-in-window")
    assert later.severity is Severity.WARNING
    clean = [*steps(3, 1000), op("aten::relu", 600, 10, **dims([8, 8]))]
    assert not by_id(findings(tmp_trace, clean), "compile-in-window")


def test_record_shapes_off(tmp_trace: Make) -> None:
    bare = [*steps(3, 100), op("aten::relu", 5, 10)]
    (shapes,) = by_id(findings(tmp_trace, bare), "no-record-shapes")
    assert "record_shapes=True" in shapes.next_step
    flagged_off = tmp_trace([*steps(3, 100), op("aten::relu", 5, 10, **dims([8]))], record_shapes=0)
    assert by_id(diagnose_trace(traceviz.load(flagged_off)), "no-record-shapes")
    shaped = [*steps(3, 100), op("aten::relu", 5, 10, **dims([8, 8]))]
    assert not by_id(findings(tmp_trace, shaped), "no-record-shapes")


def test_too_few_and_noisy_steps(tmp_trace: Make) -> None:
    relu = op("aten::relu", 5, 10, **dims([8, 8]))
    (few,) = by_id(findings(tmp_trace, [step(0, 0, 100), relu]), "few-steps")
    assert few.severity is Severity.WARNING and "only 1 ProfilerStep" in text(few)
    (none,) = by_id(findings(tmp_trace, [relu]), "few-steps")
    assert "no ProfilerStep spans" in text(none)
    steady = findings(tmp_trace, [*steps(3, 100), relu])
    assert not by_id(steady, "few-steps") and not by_id(steady, "noisy-steps")
    noisy = [step(0, 0, 100), step(1, 200, 300), step(2, 600, 100), relu]
    (spread,) = by_id(findings(tmp_trace, noisy), "noisy-steps")
    assert spread.severity is Severity.INFO and "slowest / fastest step: 3.00×" in text(spread)


# --- front ends -------------------------------------------------------------------------


def test_compare_fail_on_exit_codes(tmp_trace: Make, capsys: pytest.CaptureFixture[str]) -> None:
    eager, compiled = _pair(tmp_trace, eager_step=100, compiled_step=115)  # 1.15×: a warning
    args = ["compare", str(eager), str(compiled), "--names", "eager", "compiled"]
    assert main(args) == 0
    assert main([*args, "--fail-on", "error"]) == 0
    assert main([*args, "--fail-on", "warning"]) == 1
    assert "compiled-slower" in capsys.readouterr().out  # the report is printed first
    faster, _ = _pair(tmp_trace, eager_step=100, compiled_step=100)
    assert main(["compare", str(faster), str(compiled), "--fail-on", "error"]) == 0
    _, slow = _pair(tmp_trace, eager_step=100, compiled_step=300)
    args[2] = str(slow)
    assert main([*args, "--fail-on", "error", "--format", "json"]) == 1


def test_compare_formats_carry_the_findings(
    tmp_trace: Make, capsys: pytest.CaptureFixture[str]
) -> None:
    eager, compiled = _pair(tmp_trace, eager_step=100, compiled_step=300)
    args = ["compare", str(eager), str(compiled), "--names", "eager", "compiled"]
    assert main([*args, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["findings"][0]["id"] == "compiled-slower"
    assert data["findings"][0]["severity"] == "error"
    assert main([*args, "--format", "markdown"]) == 0
    assert "## Findings" in capsys.readouterr().out
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "Findings (" in out and "ERROR" in out and "compiled-slower" in out


def test_summary_shows_single_trace_findings(
    tmp_trace: Make, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_trace([step(0, 0, 1000), *cpu_chain(10)])
    assert main(["summary", str(path), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {f["id"] for f in data["findings"]} >= {"unfused-chain", "few-steps"}
    assert main(["summary", str(path)]) == 0
    assert "unfused-chain" in capsys.readouterr().out


# --- real traces ---------------------------------------------------------------------


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


def test_graph_break_sample_reports_dynamo_reason() -> None:
    run = sample_run("graph-break")
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
    run = sample_run("pointwise")
    found = diagnose_trace(trace(run / "eager.pt.trace.json.gz"), name="eager")
    (chain,) = [f for f in found if f.id == "unfused-chain"]
    body = chain.title + "\n" + "\n".join(chain.evidence_lines())
    ops = ("aten::cos", "aten::clamp_min", "aten::mul", "aten::add", "aten::sin", "aten::sigmoid")
    assert " → ".join(ops) in body
    assert chain.est_gain_us is not None and chain.est_gain_us > 0
    compiled = diagnose_trace(trace(run / "compiled.pt.trace.json.gz"), name="compiled")
    assert not [f for f in compiled if f.id == "unfused-chain"]  # Inductor fused it
