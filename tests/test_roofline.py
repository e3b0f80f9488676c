"""The roofline per kernel (traceviz.analysis.roofline.per_kernel, FLOP rules in
traceviz.analysis.roofline.flops): no kernel of the real H200 runs above the H200's peaks, GEMM
FLOPs and bytes equal to an independent count from the raw JSON on the real corpus traces, and the
bounds on tiny traces.

TraceLens's public MI300X / H100 Hugging Face test traces are not in the corpus: the GEMM check
runs on the compiled MI300X traces (Flux, a LLaMA block, vLLM) and the NVIDIA ones that are.

The step bridge (roofline.bridge): eager − compiled step time split into parts whose sum plus
the remainder is the measured difference, on every sample run and on plain trace pairs. The
fusion ledger (roofline.ledger) on the H200 runs: eager credits never add up to more than the
eager kernels' time, no fused kernel beats its memory roof, GPT-2's fused GELU replaces its 16
eager kernels per step. The ledger per source line (ledger_by_line) on every sample run with
source lines: each eager kernel counts once, on its own line, so the lines add up to at most the
per-kernel ledger and to at most what the traces measured; a fused kernel whose eager kernels
all have lines is split over them whole."""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tests.conftest import CORPUS, SAMPLES, kernel, launch, load_trace, op, read_json
from traceviz import load
from traceviz.analysis.compare import analyze
from traceviz.analysis.fusion.match import Credits
from traceviz.analysis.roofline.bridge import (
    BRIDGE_PARTS,
    PROFILED,
    TIMED,
    BridgeParts,
    step_bridge,
)
from traceviz.analysis.roofline.flops import FlopRule, op_flops
from traceviz.analysis.roofline.ledger import (
    LedgerByLineColumns,
    LedgerColumns,
    fusion_ledger,
    ledger_by_line,
)
from traceviz.analysis.roofline.peaks import DevicePeaks, PeakBasis
from traceviz.analysis.roofline.per_kernel import LATENCY_US, Bound, RooflineColumns, side_roofline
from traceviz.analysis.timing.launch import StepOverhead, step_windows
from traceviz.pipeline import Report, compare, compare_run
from traceviz.report.roofline_report import roofline_of
from traceviz.schema import ActivityKind, Kernels, Ops

H200_RUNS = sorted(p for p in (SAMPLES / "h200").glob("*") if (p / "run.json").is_file())
C, K = RooflineColumns, LedgerColumns


@pytest.mark.parametrize("run", H200_RUNS, ids=lambda p: p.name)
@pytest.mark.parametrize("which", ["eager", "compiled"])
def test_no_kernel_of_an_h200_run_exceeds_the_h200_peaks(run: Path, which: str) -> None:
    side = analyze(load_trace(run / f"{which}.pt.trace.json.gz"), name=which)
    roofline = side_roofline(side)
    assert roofline.peaks.basis is PeakBasis.TABLE
    peaks = roofline.peaks.peaks
    assert peaks is not None and peaks.name == "NVIDIA H200 SXM"
    table = roofline.per_kernel
    assert table[C.bytes].notna().sum() > 0  # not vacuous
    assert (table[C.achieved_tbps].dropna() <= peaks.hbm_tbps).all()
    with_flops = table[table[C.flops].notna()]
    assert (with_flops[C.achieved_tflops] <= with_flops[C.peak_tflops]).all()
    assert (table[C.pct_of_roof].dropna() <= 100.0).all()


# --- GEMMs against an independent count from the raw JSON --------------------------------

GEMM_TRACES = [
    "amd/mi300x_compiled_flux_hipgraph.json.gz",
    "amd/mi300x_compiled_llama_block_tiny.json.gz",
    "amd/mi300x_vllm_full_graph_replay.json.gz",
    "amd/mi250_eager_train_rocm62.json.gz",
    "nvidia/a100_compiled_cudagraph_train_2023.json.gz",
    "nvidia/a100_eager_train_control.json.gz",
    "nvidia/v100_resnet50_eager_train_2021.json.gz",
    "nvidia/v100_train_compiledfunction_cudagraph.json.gz",
]
ITEMSIZE = {"float": 4, "c10::Half": 2, "c10::BFloat16": 2, "double": 8}


def independent_gemms(path: Path) -> dict[int, tuple[int, int]]:
    """External id → (FLOPs, bytes) of every mm/addmm/bmm/baddbmm op with shapes, read the
    plain way: 2·b·m·n·k, operands read once and the [b,]m×n result written once."""
    doc = read_json(path)
    events = doc if isinstance(doc, list) else doc["traceEvents"]
    out = {}
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in ("cpu_op", "Operator"):
            continue
        base = e["name"].split("::")[-1].split(".")[0]
        args = e.get("args", {})
        dims, types = args.get("Input Dims"), args.get("Input type")
        if base not in ("mm", "addmm", "bmm", "baddbmm") or not dims:
            continue
        first = 1 if base in ("addmm", "baddbmm") else 0
        a, b = dims[first], dims[first + 1]
        itemsize = ITEMSIZE.get(types[first + 1])
        if itemsize is None:
            continue
        batch, (m, k), n = (1, a, b[1]) if len(a) == 2 else (a[0], a[1:], b[2])
        read = sum(
            math.prod(d) * ITEMSIZE.get(t, 0)
            for d, t in zip(dims[: first + 2], types[: first + 2], strict=True)
        )
        out[args["External id"]] = (2 * batch * m * n * k, read + batch * m * n * itemsize)
    return out


def roofline_by_op(path: Path) -> pd.DataFrame:
    """traceviz's FLOPs and bytes summed over each launching op's kernels, by External id."""
    trace = load_trace(path)
    table = side_roofline(analyze(trace, name="x")).per_kernel
    kernels = trace.kernels
    is_kernel = (kernels[Kernels.activity] == "kernel").to_numpy()
    op_row = kernels[Kernels.op_row].to_numpy(dtype=np.int64, na_value=-1)[is_kernel]
    ids = trace.ops[Ops.external_id].to_numpy(dtype=float, na_value=np.nan)
    frame = pd.DataFrame(
        {
            "id": np.where(op_row >= 0, ids[np.maximum(op_row, 0)], np.nan),
            "flops": table[C.flops].to_numpy()[is_kernel],
            "bytes": table[C.bytes].to_numpy(dtype=float, na_value=np.nan)[is_kernel],
        }
    )
    return frame.groupby("id").sum(min_count=1)


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus not found at {CORPUS}")
@pytest.mark.parametrize("name", GEMM_TRACES)
def test_gemm_flops_and_bytes_equal_an_independent_count(name: str) -> None:
    expected = independent_gemms(CORPUS / name)
    got = roofline_by_op(CORPUS / name)
    compared = [i for i in expected if i in got.index]
    assert compared, "no GEMM op of the trace launched a kernel"
    assert len(compared) >= 0.9 * len(expected)
    for i in compared:
        flops, nbytes = expected[i]
        assert got.loc[i, "flops"] == pytest.approx(flops, rel=0.01), i
        assert got.loc[i, "bytes"] == pytest.approx(nbytes, rel=0.01), i


# --- FLOP rules ---------------------------------------------------------------------------


def test_flop_rules() -> None:
    f32 = '"float"'
    linear = op_flops("aten::linear", "[[4, 8, 16], [32, 16], [32]]", f"[{f32}, {f32}, {f32}]")
    assert linear is not None and linear.flops == 2 * 32 * 32 * 16 and linear.precision == "fp32"
    bmm = op_flops("aten::bmm", "[[3, 4, 5], [3, 5, 6]]", '["c10::BFloat16", "c10::BFloat16"]')
    assert bmm is not None and bmm.flops == 2 * 3 * 4 * 5 * 6 and bmm.precision == "bf16"
    conv = op_flops(  # stride 2, padding 1: 8x8 -> 4x4; float32 convolutions run in TF32
        "aten::convolution",
        "[[2, 3, 8, 8], [16, 3, 3, 3], [], [], [], [], [], [], []]",
        f'[{f32}, {f32}, "", "ScalarList", "ScalarList", "ScalarList", "Scalar", '
        '"ScalarList", "Scalar"]',
        '["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"]',
    )
    assert conv is not None and conv.rule is FlopRule.CONV and conv.precision == "tf32"
    assert conv.flops == 2 * 2 * 16 * 4 * 4 * 3 * 9
    sdpa = "aten::_scaled_dot_product_efficient_attention"
    dims = "[[1, 2, 64, 16], [1, 2, 64, 16], [1, 2, 64, 16], [], [], [], [], []]"
    types = '["c10::Half", "c10::Half", "c10::Half", "", "Scalar", "Scalar", "Scalar", ""]'
    causal = op_flops(sdpa, dims, types, '["", "", "", "", "True", "0.", "True", ""]')
    unknown = op_flops(sdpa, dims, types)
    assert unknown is not None and unknown.rule is FlopRule.ATTENTION_CAUSAL_UNKNOWN
    assert unknown.flops == 2 * 2 * 64 * 64 * 32
    assert causal is not None and causal.flops * 2 == unknown.flops
    assert op_flops("aten::add", "[[4], [4]]", f"[{f32}, {f32}]") is None
    assert op_flops("aten::mm", "[[4, 5], [6, 7]]", f"[{f32}, {f32}]") is None  # clash


# --- bounds on tiny traces ----------------------------------------------------------------

H200_PROPS = {"id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150109880320, "numSms": 132}


def tiny(tmp_trace: Any, dur_mm: float, dur_add: float, props: dict | None = H200_PROPS) -> Any:
    events = [
        op("aten::addmm", 0, 50, **{"External id": 1,
           "Input Dims": [[1024], [1024, 1024], [1024, 1024]],
           "Input type": ["c10::Half"] * 3}),
        launch("cudaLaunchKernel", 10, 5, 1, **{"External id": 1}),
        kernel("sm90_gemm", 100, dur_mm, 1, **{"External id": 1}),
        op("aten::add", 60, 50, **{"External id": 2, "Input Dims": [[1 << 24], [1 << 24]],
           "Input type": ["float", "float"]}),
        launch("cudaLaunchKernel", 70, 5, 2, **{"External id": 2}),
        kernel("vectorized_elementwise_kernel", 100 + dur_mm + 5, dur_add, 2,
               **{"External id": 2}),
    ]  # fmt: skip
    header = {"deviceProperties": [props]} if props else {}
    return analyze(load(tmp_trace(events, **header)), name="t")


def test_bounds_on_a_tiny_h200_trace(tmp_trace: Any) -> None:
    # addmm: 2·1024³ FLOP = 2.147 GFLOP in 9 µs = 239 TFLOP/s, at 341 FLOP/byte (past the
    # ridge, 989.5 / 4.8 = 206): compute.
    # add: 3·2^24·4 B = 201 MB in 60 µs = 3.36 TB/s (70% of 4.8): memory.
    table = side_roofline(tiny(tmp_trace, 4.0 + LATENCY_US, 60.0)).per_kernel
    gemm, add = table.iloc[0], table.iloc[1]
    assert gemm[C.flops] == 2 * 1024**3 and gemm[C.precision] == "fp16"
    assert gemm[C.bound] == Bound.COMPUTE.value
    assert gemm[C.intensity] == pytest.approx(2 * 1024**3 / (3 * 2 * 1024**2 + 2 * 1024))
    assert gemm[C.achieved_tflops] == pytest.approx(2 * 1024**3 / 9.0 * 1e-6)
    assert add[C.bound] == Bound.MEMORY.value and np.isnan(add[C.flops])
    assert add[C.pct_of_roof] == pytest.approx(3 * 4 * 2**24 / 60.0 * 1e-6 / 4.8 * 100)
    # short or slow kernels are latency bound
    table = side_roofline(tiny(tmp_trace, LATENCY_US / 2, 60_000.0)).per_kernel
    assert list(table[C.bound]) == [Bound.LATENCY.value, Bound.LATENCY.value]


def test_an_unknown_device_has_no_roof_but_keeps_its_achieved_figures(tmp_trace: Any) -> None:
    side = tiny(tmp_trace, 10.0, 60.0, props={"id": 0, "name": "Quadro GP100"})
    roofline = side_roofline(side)
    assert roofline.peaks.basis is PeakBasis.NO_PEAK
    table = roofline.per_kernel
    assert set(table[C.bound]) == {Bound.NO_PEAK.value}
    assert table[C.pct_of_roof].isna().all() and table[C.achieved_tbps].notna().all()
    # a peaks override changes the roof
    slow = DevicePeaks("slow", 1.0, 10.0, None, None, None, None, "test")
    roofline = side_roofline(tiny(tmp_trace, 10.0, 60.0, props=None), override=slow)
    assert roofline.peaks.basis is PeakBasis.FILE
    add = roofline.per_kernel.iloc[1]
    assert add[C.pct_of_roof] == pytest.approx(3 * 4 * 2**24 / 60.0 * 1e-6 / 1.0 * 100)
    gemm = roofline.per_kernel.iloc[0]  # no fp16 peak in the file: memory roof only
    assert np.isnan(gemm[C.peak_tflops]) and gemm[C.bound] == Bound.MEMORY.value


def test_an_ops_flops_split_over_its_kernels_add_up() -> None:
    """cuBLAS split-K: one addmm, two kernels; their FLOPs add up to the op's."""
    trace = load_trace(SAMPLES / "h200" / "gpt2" / "eager.pt.trace.json.gz")
    table = side_roofline(analyze(trace, name="e")).per_kernel
    op_row = trace.kernels[Kernels.op_row]
    counts = op_row[table[C.flops].notna()].value_counts()
    shared = counts[counts > 1].index
    assert len(shared) > 0
    for row in shared[:5]:
        ops = trace.ops.iloc[int(row)]
        expected = op_flops(ops[Ops.name], ops[Ops.input_dims], ops[Ops.input_types],
                            ops[Ops.concrete_inputs])  # fmt: skip
        assert expected is not None
        assert table[C.flops][op_row == row].sum() == expected.flops


RUNS = sorted(p.parent for p in SAMPLES.glob("*/run.json")) + sorted(
    p.parent for p in (SAMPLES / "h200").glob("*/run.json")
)


def _id(path: Path) -> str:
    return str(path.relative_to(SAMPLES))


@pytest.mark.parametrize("run", RUNS, ids=_id)
def test_parts_and_remainder_add_up_to_the_timed_difference(run: Path) -> None:
    report = compare_run(run)
    bridge = step_bridge(report.a, report.b, run_info=report.run_info)
    assert bridge is not None and bridge.basis == TIMED
    timing = report.run_info.timing  # type: ignore[union-attr]
    assert timing is not None and timing.compiled is not None
    assert bridge.difference_us == timing.eager.median_us - timing.compiled.median_us
    parts = bridge.parts
    assert list(parts[BridgeParts.part]) == [p for p, _ in BRIDGE_PARTS]
    total = math.fsum([*parts[BridgeParts.delta_us], bridge.remainder_us])
    assert total == pytest.approx(bridge.difference_us, rel=1e-12, abs=1e-9)
    deltas = parts[BridgeParts.a_us] - parts[BridgeParts.b_us]
    assert np.allclose(deltas, parts[BridgeParts.delta_us])


@pytest.mark.parametrize("name", ["conv-bn-relu", "graph-break"])
def test_runs_where_compiling_does_not_pay_have_a_negative_difference(name: str) -> None:
    report = compare_run(SAMPLES / "h200" / name)
    bridge = step_bridge(report.a, report.b, run_info=report.run_info)
    assert bridge is not None and bridge.difference_us < 0
    by_part = dict(
        zip(bridge.parts[BridgeParts.part], bridge.parts[BridgeParts.delta_us], strict=True)
    )
    # the compiled side pays more on the CPU than its kernels save (sample_traces/h200/README)
    assert by_part["cpu_overhead"] < 0
    assert abs(by_part["cpu_overhead"]) > abs(by_part["fused_pointwise"] + by_part["library"])


@pytest.mark.parametrize("run", RUNS, ids=_id)
def test_kernel_parts_never_credit_more_than_the_device_time_of_the_steps(run: Path) -> None:
    """Credits add up: each side's kernel parts per step sum to at most the device time of the
    device activities that start inside its steps (CPU-only traces: their exclusive time)."""
    report = compare_run(run)
    bridge = step_bridge(report.a, report.b, run_info=report.run_info)
    assert bridge is not None
    kernel_parts = bridge.parts[BridgeParts.part].isin(
        ["fused_pointwise", "library", "layout_copy", "other_kernels"]
    )
    for side, column in ((report.a, BridgeParts.a_us), (report.b, BridgeParts.b_us)):
        kernels = side.trace.kernels
        windows = step_windows(side.trace)
        starts = kernels[Kernels.ts_us].to_numpy(dtype=float)
        inside = windows.index_of(starts) >= 0
        dur = kernels[Kernels.excl_dur_us].to_numpy(dtype=float, na_value=0.0)
        measured = float(np.nansum(dur[inside])) / len(windows.steps)
        credited = float(bridge.parts.loc[kernel_parts, column].sum())
        assert 0 < credited <= measured * (1 + 1e-9) + 1e-6  # float rounding of the clip


def test_a_plain_pair_uses_the_profiled_step_medians() -> None:
    run = SAMPLES / "h200" / "pointwise"
    report = compare(run / "eager.pt.trace.json.gz", run / "compiled.pt.trace.json.gz")
    bridge = step_bridge(report.a, report.b)
    assert bridge is not None and bridge.basis == PROFILED
    wall = report.a.launch.per_step[StepOverhead.wall_us].to_numpy(dtype=float)
    assert bridge.step_a_us == pytest.approx(float(np.median(wall)))
    total = math.fsum([*bridge.parts[BridgeParts.delta_us], bridge.remainder_us])
    assert total == pytest.approx(bridge.difference_us, abs=1e-9)
    assert bridge.to_json()["basis"] == PROFILED


GELU = "triton_poi_fused_add_addmm_mul_pow_tanh_view_4"


def ledger_of(run: Path):  # type: ignore[no-untyped-def]
    report = compare_run(run)
    compiled = roofline_of(report, "b")
    assert compiled is not None
    steps = (report.a.summary.step_count, report.b.summary.step_count)
    table = fusion_ledger(
        report.fusion, eager_traffic=report.a.traffic, compiled=compiled, steps=steps
    )
    return report, table


@pytest.mark.parametrize("run", H200_RUNS, ids=_id)
def test_credits_add_up_and_no_fused_kernel_beats_its_roof(run: Path) -> None:
    report, table = ledger_of(run)
    steps_a = max(report.a.summary.step_count, 1)
    eager_time = float(np.nansum(report.a.trace.kernels[Kernels.excl_dur_us].to_numpy(float)))
    assert table[K.eager_time_us].sum() * steps_a <= eager_time + 1e-6
    timed = table[table[K.fused_time_us] > 0]
    assert (timed[K.roof_us] <= timed[K.fused_time_us]).all()
    assert (table[K.pct_of_memory_roof].dropna() <= 100).all()


def test_gpt2_gelu_replaces_sixteen_eager_kernels_per_step() -> None:
    _, table = ledger_of(SAMPLES / "h200" / "gpt2")
    gelu = table[table[K.kernel] == GELU].iloc[0]
    assert gelu[K.eager_kernels] == 16 and gelu[K.fused_calls] == 2
    assert gelu[K.eager_bytes] > 10 * gelu[K.fused_bytes]  # fusion keeps the temporaries in
    assert gelu[K.saved_us] > 0 and gelu[K.bound] == "latency"


def test_no_peak_devices_have_no_roof_time() -> None:
    _, table = ledger_of(SAMPLES / "graph-break")
    assert len(table) and table[K.roof_us].isna().all()
    assert set(table[K.bound]) == {"no-peak"}


LINE_RUNS = [run for run in RUNS if (run / "eager_lines.pt.trace.json.gz").is_file()]
L = LedgerByLineColumns
SUMMED = [
    (L.eager_kernels, K.eager_kernels),
    (L.eager_unsized, K.eager_unsized),
    (L.eager_bytes, K.eager_bytes),
    (L.eager_time_us, K.eager_time_us),
    (L.fused_time_us, K.fused_time_us),
]


@cache
def _tables(run: Path) -> tuple[Report, pd.DataFrame, pd.DataFrame]:
    report = compare_run(run)
    compiled = roofline_of(report, "b")
    assert compiled is not None
    steps = (report.a.summary.step_count, report.b.summary.step_count)
    kwargs = {"eager_traffic": report.a.traffic, "compiled": compiled, "steps": steps}
    return (
        report,
        fusion_ledger(report.fusion, **kwargs),  # type: ignore[arg-type]
        ledger_by_line(report.fusion, **kwargs),  # type: ignore[arg-type]
    )


def _credited_with_lines(report: Report) -> pd.DataFrame:
    """The credits to fused kernels of the eager kernels that have a line."""
    fusion = report.fusion
    fused = fusion.kernels.loc[fusion.kernels["is_fusion"].astype(bool), "kernel"].astype(str)
    credits = fusion.credits[fusion.credits[Credits.kernel].astype(str).isin(set(fused))]
    lined = set(fusion.eager_lines["eager_row"].astype(int))
    return credits[credits[Credits.eager_row].astype(int).isin(lined)]


def _kernel_time(report: Report, which: str) -> float:
    kernels = report.side(which).trace.kernels
    rows = (kernels[Kernels.activity] == ActivityKind.KERNEL.value).to_numpy(dtype=bool)
    return float(np.nansum(kernels[Kernels.excl_dur_us].to_numpy(dtype=float)[rows]))


def test_the_sample_runs_have_lines_to_test() -> None:
    assert len(LINE_RUNS) >= 10
    assert sum(len(_tables(run)[2]) > 0 for run in LINE_RUNS) >= 8


@pytest.mark.parametrize("run", LINE_RUNS, ids=_id)
def test_lines_add_up_to_at_most_the_ledger_and_the_measured_totals(run: Path) -> None:
    report, ledger, by_line = _tables(run)
    steps_a = max(report.a.summary.step_count, 1)
    steps_b = max(report.b.summary.step_count, 1)
    for line_column, kernel_column in SUMMED:
        assert by_line[line_column].sum() <= ledger[kernel_column].sum() * (1 + 1e-9) + 1e-9
    assert np.nansum(by_line[L.roof_us]) <= np.nansum(ledger[K.roof_us]) * (1 + 1e-9) + 1e-12
    # kernels credited never more than kernels measured; time likewise, on both sides
    assert by_line[L.eager_kernels].sum() * steps_a <= report.fusion.eager_kernel_count + 1e-9
    assert by_line[L.eager_time_us].sum() * steps_a <= _kernel_time(report, "a") * (1 + 1e-9)
    assert by_line[L.fused_time_us].sum() * steps_b <= _kernel_time(report, "b") * (1 + 1e-9)
    # each eager kernel counted once, on its own line
    credited = _credited_with_lines(report)
    assert by_line[L.eager_kernels].sum() * steps_a == pytest.approx(len(credited))
    assert by_line[L.eager_time_us].sum() * steps_a == pytest.approx(
        credited[Credits.time_us].sum()
    )
    assert not by_line.duplicated([L.file, L.line]).any()
    assert (by_line[L.saved_us] == by_line[L.eager_time_us] - by_line[L.fused_time_us]).all()


@pytest.mark.parametrize("run", LINE_RUNS, ids=_id)
def test_each_fused_kernel_goes_to_the_lines_by_their_share_of_its_eager_time(run: Path) -> None:
    """The lines' fused time is each fused kernel's time times the share of its credited eager
    time whose eager kernels have a line (all of it: the kernel is split whole)."""
    report, ledger, by_line = _tables(run)
    fusion = report.fusion
    credits = fusion.credits[fusion.credits[Credits.kernel].notna()]
    lined = credits[Credits.eager_row].astype(int).isin(set(fusion.eager_lines["eager_row"]))
    kernel = credits[Credits.kernel].astype(str)
    time = credits[Credits.time_us].astype(float)
    expected = 0.0
    for row in ledger.itertuples(index=False):
        mine = (kernel == row.kernel).to_numpy()
        total = time[mine].sum()
        share = (
            time[mine & lined.to_numpy()].sum() / total
            if total > 0
            else (mine & lined.to_numpy()).sum() / max(mine.sum(), 1)
        )
        expected += (0.0 if np.isnan(row.fused_time_us) else row.fused_time_us) * share
    assert by_line[L.fused_time_us].sum() == pytest.approx(expected, rel=1e-9, abs=1e-9)


def test_gpt2_gelu_line_holds_the_sixteen_eager_kernels() -> None:
    """GPT-2's GELU (transformers/activations.py) is one line: its 16 eager kernels a step and
    the whole fused GELU kernel."""
    _, ledger, by_line = _tables(SAMPLES / "h200" / "gpt2")
    gelu = ledger.iloc[0]
    (row,) = by_line[by_line[L.kernels] == gelu[K.kernel]].itertuples(index=False)
    assert str(row.file).endswith("activations.py")
    assert row.eager_kernels == gelu[K.eager_kernels] == 16
    assert row.fused_time_us == pytest.approx(gelu[K.fused_time_us])
    assert row.roof_us == pytest.approx(gelu[K.roof_us])
    assert row.saved_us == pytest.approx(gelu[K.saved_us])
