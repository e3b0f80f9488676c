"""The roofline per kernel (traceviz.analysis.roofline.per_kernel, FLOP rules in
traceviz.analysis.roofline.flops): no kernel of the real H200 runs above the H200's peaks, GEMM
FLOPs and bytes equal to an independent count from the raw JSON on the real corpus traces, and the
bounds on tiny traces.

TraceLens's public MI300X / H100 Hugging Face test traces are not in the corpus: the GEMM check
runs on the compiled MI300X traces (Flux, a LLaMA block, vLLM) and the NVIDIA ones that are."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tests.conftest import CORPUS, SAMPLES, kernel, launch, load_trace, op, read_json
from traceviz import load
from traceviz.analysis.compare import analyze
from traceviz.analysis.roofline.flops import FlopRule, op_flops
from traceviz.analysis.roofline.peaks import DevicePeaks, PeakBasis
from traceviz.analysis.roofline.per_kernel import LATENCY_US, Bound, RooflineColumns, side_roofline
from traceviz.schema import Kernels, Ops

H200_RUNS = sorted(p for p in (SAMPLES / "h200").glob("*") if (p / "run.json").is_file())
C = RooflineColumns


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


def test_short_or_slow_kernels_are_latency_bound(tmp_trace: Any) -> None:
    table = side_roofline(tiny(tmp_trace, LATENCY_US / 2, 60_000.0)).per_kernel
    assert list(table[C.bound]) == [Bound.LATENCY.value, Bound.LATENCY.value]


def test_an_unknown_device_has_no_roof_but_keeps_its_achieved_figures(tmp_trace: Any) -> None:
    side = tiny(tmp_trace, 10.0, 60.0, props={"id": 0, "name": "Quadro GP100"})
    roofline = side_roofline(side)
    assert roofline.peaks.basis is PeakBasis.NO_PEAK
    table = roofline.per_kernel
    assert set(table[C.bound]) == {Bound.NO_PEAK.value}
    assert table[C.pct_of_roof].isna().all() and table[C.achieved_tbps].notna().all()


def test_a_peaks_override_changes_the_roof(tmp_trace: Any) -> None:
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
