"""Memory traffic: estimated bytes read + written per op, from recorded input shapes and types,
and the bytes each kernel moved (measured, estimated or the compiler's).

The input rows are real ``Input Dims``/``Input type``/``Concrete Inputs`` values from the corpus
(MI300X LLaMA block, HF model traces) and from torch 2.13 CPU eager/compiled traces.

The coverage guard (traffic/coverage.py): two totals get a Δ and ratio only when their
estimates cover about the same share of each side's kernel time. ``aten::_foreach_copy_``
(traffic/foreach.py): its TensorList rows record shapes but no dtype, its multi-tensor kernels'
names give the types; real traces: the H200 gpt2 reduce-overhead compiled trace (the fast path,
one kernel per op) and the corpus's MI300X Flux trace (the slow path: a copy_ per pair).
CUDA-graph replays (traffic/graph_replay.py): the replayed kernels take the compile log's
bytes, the library kernels those of the calls replayed between two generated kernels."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import traceviz
from tests.conftest import (
    CORPUS,
    SAMPLES,
    corpus_or_skip,
    corpus_params,
    kernel,
    launch,
    launched,
    load_trace,
    op,
    tensors,
)
from tests.real_data import CORPUS_PAIRS, raw_events, sample_run
from traceviz.analysis.compare import Comparison, compare_sides
from traceviz.analysis.fusion.fusion_map import _bytes_saved
from traceviz.analysis.fusion.lines import read_log
from traceviz.analysis.provenance import compiled_kernel_provenance
from traceviz.analysis.traffic import estimates as traffic
from traceviz.analysis.traffic import memory as memory_mod
from traceviz.analysis.traffic.coverage import COVERAGE_GAP, coverage, traffic_gap_note
from traceviz.analysis.traffic.estimates import (
    Traffic,
    TrafficEstimate,
    TrafficRule,
    dtype_bytes,
    estimate_op,
    estimate_op_bytes,
    estimate_triton_bytes,
    triton_args_bytes,
)
from traceviz.analysis.traffic.foreach import (
    copy_itemsizes,
    foreach_copy_estimate,
    tensor_list_numels,
)
from traceviz.analysis.traffic.graph_replay import graph_library_bytes
from traceviz.analysis.traffic.memory import (
    AllocatorUse,
    Basis,
    KernelTraffic,
    MemoryTraffic,
    TrafficByKind,
    is_inductor_kernel,
    memory_traffic,
    split_bytes,
)
from traceviz.parse.compile_log import CompileLog
from traceviz.pipeline import compare_run
from traceviz.records import records
from traceviz.report.views import metrics_view
from traceviz.schema import ActivityKind, Kernels, Ops
from traceviz.schema import KernelProvenance as KP
from traceviz.schema import ProvenanceKernels as P

R = TrafficRule
BF16_3 = '["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"]'
F32_3 = '["float", "float", "float"]'


@pytest.mark.parametrize(
    ("type_str", "size"),
    [
        ("float", 4), ("double", 8), ("c10::Half", 2), ("c10::BFloat16", 2), ("long int", 8),
        ("long", 8), ("int", 4), ("bool", 1), ("unsigned char", 1), ("signed char", 1),
        ("short int", 2), ("c10::complex<float>", 8), ("c10::Float8_e4m3fn", 1),
        ("c10::Float8_e5m2fnuz", 1), ("Scalar", None), ("ScalarList", None), ("Int", None),
        ("TensorList", None), ("", None), ("GenericList", None),
    ],
)  # fmt: skip
def test_dtype_bytes(type_str: str, size: int | None) -> None:
    assert dtype_bytes(type_str) == size


# (name, Input Dims, Input type, Concrete Inputs, bytes read, bytes written, rule)
OP_CASES = [
    # pointwise: output = broadcast shape
    ("aten::add", "[[8, 16], [16]]", '["float", "float"]', None, 8 * 16 * 4 + 16 * 4, 512,
     R.POINTWISE),
    ("aten::add", "[[8, 32], [], []]", '["float", "long int", "Scalar"]', '["", "", "1"]',
     8 * 32 * 4 + 8, 8 * 32 * 4, R.POINTWISE),
    ("aten::add_", "[[8, 16], [16], []]", '["float", "float", "Scalar"]', None, 576, 512,
     R.POINTWISE),
    ("aten::mul", "[[4, 1, 3], [1, 5, 1]]", '["c10::Half", "c10::Half"]', None, 24 + 10, 120,
     R.POINTWISE),
    ("aten::gt", "[[3, 4], []]", '["c10::Half", "Scalar"]', '["", "0"]', 24, 12, R.POINTWISE),
    ("aten::where", "[[8, 32], [8, 32], [8, 32]]", '["bool", "float", "float"]', None,
     256 + 1024 + 1024, 1024, R.POINTWISE),
    ("aten::fill_", "[[2], []]", '["signed char", "Scalar"]', '["", "1."]', 0, 2, R.POINTWISE),
    # reductions: output from the dims in Concrete Inputs, else none
    ("aten::sum", "[[5, 128], [], [], []]", '["float", "ScalarList", "Scalar", ""]',
     '["", "[0]", "True", ""]', 2560, 512, R.REDUCTION),
    ("aten::mean", "[[1, 512, 4096], [], [], []]", '["float", "ScalarList", "Scalar", ""]',
     '["", "[-1]", "True", ""]', 512 * 4096 * 4, 512 * 4, R.REDUCTION),
    ("aten::sum", "[[8, 32], []]", '["float", ""]', '["", ""]', 1024, 4, R.REDUCTION),
    ("aten::sum", "[[6, 65536], [], [], []]", '["int", "", "Scalar", ""]', None,
     6 * 65536 * 4, 0, R.REDUCTION_NO_OUTPUT),
    ("aten::maximum", "[[4], [4]]", '["float", "float"]', None, 32, 16, R.POINTWISE),
    ("aten::max", "[[4], [4]]", '["float", "float"]', None, 32, 16, R.POINTWISE),
    # matmul family
    ("aten::mm", "[[32768, 2048], [2048, 2048], [32768, 2048]]", BF16_3, '["", "", ""]',
     (32768 * 2048 + 2048 * 2048) * 2, 32768 * 2048 * 2, R.MATMUL),  # out= from Inductor
    ("aten::mm", "[[64, 32], [32, 16]]", '["float", "float"]', None, (64 * 32 + 32 * 16) * 4,
     64 * 16 * 4, R.MATMUL),
    ("aten::addmm", "[[32], [8, 16], [16, 32], [], []]",
     '["float", "float", "float", "Scalar", "Scalar"]', '["", "", "", "1", "1"]',
     (32 + 128 + 512) * 4, 8 * 32 * 4, R.MATMUL),
    ("aten::addmm", "[[32], [8, 16], [16, 32], [], [], [8, 32]]",
     '["float", "float", "float", "Scalar", "Scalar", "float"]', '["", "", "", "1", "1", ""]',
     (32 + 128 + 512) * 4, 8 * 32 * 4, R.MATMUL),
    ("aten::bmm", "[[64, 512, 64], [64, 64, 512]]", '["c10::BFloat16", "c10::BFloat16"]',
     '["", ""]', 2 * 64 * 512 * 64 * 2, 64 * 512 * 512 * 2, R.MATMUL),
    ("aten::baddbmm", "[[4, 8, 16], [4, 8, 3], [4, 3, 16]]", F32_3, None,
     (512 + 96 + 192) * 4, 512 * 4, R.MATMUL),
    ("aten::linear", "[[1, 77, 768], [768, 768], [768]]", BF16_3, '["", "", ""]',
     (77 * 768 + 768 * 768 + 768) * 2, 77 * 768 * 2, R.MATMUL),
    ("aten::linear", "[[8, 16], [32, 16], []]", '["float", "float", ""]', None,
     (128 + 512) * 4, 8 * 32 * 4, R.MATMUL),
    ("aten::matmul", "[[1, 64, 512, 64], [1, 64, 64, 512]]", '["c10::BFloat16", "c10::BFloat16"]',
     '["", ""]', 2 * 64 * 512 * 64 * 2, 64 * 512 * 512 * 2, R.MATMUL),
    ("aten::matmul", "[[1, 512, 4096], [4096, 4096]]", '["c10::BFloat16", "c10::BFloat16"]',
     '["", ""]', (512 * 4096 + 4096 * 4096) * 2, 512 * 4096 * 2, R.MATMUL),
    ("aten::mv", "[[8, 4], [4]]", '["float", "float"]', None, (32 + 4) * 4, 32, R.MATMUL),
    # convolution: exact with Concrete Inputs, "same size" approximation without
    ("aten::convolution", "[[1, 16, 32, 32], [512, 16, 3, 3], [512], [], [], [], [], [], []]",
     '["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "ScalarList", "ScalarList", '
     '"ScalarList", "Scalar", "ScalarList", "Scalar"]',
     '["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"]',
     (16 * 32 * 32 + 512 * 16 * 9 + 512) * 2, 512 * 32 * 32 * 2, R.CONV),
    ("aten::conv2d", "[[2, 3, 8, 8], [4, 3, 3, 3], [4], [], [], [], []]",
     '["float", "float", "float", "ScalarList", "ScalarList", "ScalarList", "Scalar"]',
     '["", "", "", "[2, 2]", "[0, 0]", "[1, 1]", "1"]',
     (384 + 108 + 4) * 4, 2 * 4 * 3 * 3 * 4, R.CONV),
    ("aten::mkldnn_convolution", "[[2, 3, 8, 8], [4, 3, 3, 3], [4], [], [], [], []]",
     '["float", "float", "float", "ScalarList", "ScalarList", "ScalarList", "Scalar"]',
     '["", "", "", "[0, 0]", "[1, 1]", "[1, 1]", "1"]',  # padding before stride here
     (384 + 108 + 4) * 4, 2 * 4 * 6 * 6 * 4, R.CONV),
    ("aten::convolution", "[[1, 8, 4, 4], [8, 2, 2, 2], [], [], [], [], [], [], []]",
     '["float", "float", "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", '
     '"Scalar"]', '["", "", "", "[2, 2]", "[0, 0]", "[1, 1]", "True", "[0, 0]", "1"]',
     (128 + 64) * 4, 2 * 8 * 8 * 4, R.CONV),  # transposed: 4x4 -> 8x8, C_out = 2
    ("aten::cudnn_convolution", "[[32, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], [], [], []]",
     '["float", "float", "GenericList", "GenericList", "GenericList", "Int", "Bool", "Bool", '
     '"Bool"]', None, (32 * 3 * 224 * 224 + 64 * 3 * 49) * 4, 32 * 64 * 224 * 224 * 4,
     R.CONV_APPROX),
    # norms and softmax: output = input size
    ("aten::native_layer_norm", "[[8, 32], [], [32], [32], []]",
     '["float", "ScalarList", "float", "float", "Scalar"]', '["", "[32]", "", "", "1e-05"]',
     (256 + 64) * 4, 1024, R.NORM),
    ("aten::_softmax", "[[8, 32], [], []]", '["float", "Scalar", "Scalar"]', '["", "-1", "False"]',
     1024, 1024, R.SOFTMAX),
    # attention: q's shape with v's last dim
    ("aten::_scaled_dot_product_flash_attention_for_cpu",
     "[[2, 4, 4, 8], [2, 4, 4, 8], [2, 4, 4, 8], [], [], [], []]",
     '["float", "float", "float", "Scalar", "Scalar", "", ""]', None, 3 * 1024, 1024, R.ATTENTION),
    ("aten::_flash_attention_forward",
     "[[8, 4096, 16, 128], [8, 4096, 16, 128], [8, 4096, 16, 64], [], []]",
     '["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "", ""]', None,
     (2 * 8 * 4096 * 16 * 128 + 8 * 4096 * 16 * 64) * 2, 8 * 4096 * 16 * 64 * 2, R.ATTENTION),
    # copies
    ("aten::copy_", "[[3, 4], [3, 4], []]", '["c10::BFloat16", "c10::Half", "Scalar"]',
     '["", "", "False"]', 24, 24, R.COPY),
    ("aten::copy_", "[[8, 32], [8, 32], []]", '["float", "float", "Scalar"]', None, 1024, 1024,
     R.COPY),
    ("aten::clone", "[[8, 32]]", '["float"]', None, 1024, 1024, R.COPY),
    ("aten::_to_copy", "[[5, 128], [], [], [], [], [], []]",
     '["float", "Scalar", "Scalar", "", "", "Scalar", ""]', '["", "15", "0", "", "", "False", ""]',
     2560, 1280, R.COPY),  # float -> bfloat16
    ("aten::to", "[[1, 77], [], [], [], [], []]",
     '["long int", "", "Scalar", "Scalar", "Scalar", ""]', '["", "", "4", "False", "False", ""]',
     616, 616, R.COPY),
    ("aten::_to_copy", "[[3, 4], [], [], [], [], [], []]",
     '["c10::Half", "Scalar", "", "", "", "Scalar", ""]', None, 24, 24, R.COPY),
    # views and allocations move nothing
    ("aten::view", '[[8], []]', '["float", "ScalarList"]', '["", "[8, 1]"]', 0, 0, R.VIEW),
    ("aten::transpose", None, None, None, 0, 0, R.VIEW),
    ("aten::empty", "[[], [], [], [], [], []]", '["ScalarList", "Scalar", "Scalar", "", "", ""]',
     '["[8, 32]", "6", "0", "", "", ""]', 0, 0, R.ALLOC),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "dims", "types", "concrete", "read", "written", "rule"),
    OP_CASES,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(OP_CASES)],
)
def test_estimate_op(
    name: str,
    dims: str | None,
    types: str | None,
    concrete: str | None,
    read: int,
    written: int,
    rule: TrafficRule,
) -> None:
    assert estimate_op(name, dims, types, concrete) == TrafficEstimate(read, written, rule)


@pytest.mark.parametrize(
    ("name", "dims", "types"),
    [
        ("aten::cat", "[[[4], [1]], []]", '["TensorList", "Scalar"]'),  # list dtype unknown
        ("aten::add", "[[3, 4], [5, 4]]", '["float", "float"]'),  # does not broadcast
        ("aten::add", "not json", "["),
        ("aten::add", None, None),
        ("aten::mm", "[[4, 4]]", '["float"]'),
        ("aten::my_custom_op", "[[4]]", '["float"]'),
        ("ProfilerStep#1", "[]", "[]"),
        ("aten::arange", "[[], [], []]", '["Scalar", "", ""]'),  # factory: no tensor input
    ],
)
def test_no_estimate(name: str, dims: str | None, types: str | None) -> None:
    assert estimate_op(name, dims, types) is None


def test_triton_args_bytes_counts_every_tensor_argument_once() -> None:
    # triton_red_fused_add_mean_mul_pow_rsqrt_0 from the MI300X LLaMA block trace
    dims = "[[8, 4096, 2048], [2048], [8, 4096, 2048], [], []]"
    types = '["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"]'
    assert triton_args_bytes(dims, types) == (2 * 8 * 4096 * 2048 + 2048) * 2
    assert triton_args_bytes("[[], []]", '["Scalar", "Scalar"]') is None
    assert triton_args_bytes(None, None) is None


def test_estimate_triton_bytes_prefers_inductor_num_gb() -> None:
    dims = pd.Series(["[[10, 10], [10, 10], [10, 10], []]"] * 2 + [None], dtype="category")
    types = pd.Series(['["float", "float", "float", "Scalar"]'] * 2 + [None], dtype="category")
    num_gb = pd.Series([0.0012, np.nan, np.nan])
    out = estimate_triton_bytes(dims, types, num_gb)
    assert out[Traffic.est_bytes].tolist() == [1_200_000, 1200, pd.NA]
    assert out[Traffic.rule].tolist()[:2] == ["inductor_num_gb", "triton_args"]
    assert pd.isna(out[Traffic.rule].iloc[2])
    assert str(out[Traffic.est_bytes].dtype) == "Int64"


def test_estimate_op_bytes_frame() -> None:
    names = pd.Series(
        ["aten::mm", "aten::view", "aten::cat", "aten::mm"], dtype="category", index=[5, 6, 7, 8]
    )
    mm_dims = "[[64, 32], [32, 16]]"
    dims = pd.Series([mm_dims, "[[8], []]", "[[[4], [1]], []]", mm_dims],
                     dtype="category", index=names.index)  # fmt: skip
    types = pd.Series(['["float", "float"]', '["float", "ScalarList"]', '["TensorList", "Scalar"]',
                       '["float", "float"]'], dtype="category", index=names.index)  # fmt: skip
    out = estimate_op_bytes(names, dims, types)
    mm = (64 * 32 + 32 * 16 + 64 * 16) * 4
    assert list(out.columns) == [Traffic.est_bytes, Traffic.rule]
    assert list(out.index) == [5, 6, 7, 8]
    assert out[Traffic.est_bytes].tolist() == [mm, 0, pd.NA, mm]
    assert str(out[Traffic.est_bytes].dtype) == "Int64"
    assert isinstance(out[Traffic.rule].dtype, pd.CategoricalDtype)
    assert list(out[Traffic.rule].cat.categories) == [r.value for r in TrafficRule]
    empty = estimate_op_bytes(*[pd.Series([], dtype="category")] * 3)
    assert len(empty) == 0 and list(empty.columns) == [Traffic.est_bytes, Traffic.rule]
    with pytest.raises(ValueError):
        estimate_op_bytes(pd.Series(["a"]), pd.Series([], dtype=object), pd.Series(["x"]))


def test_estimate_op_bytes_uses_concrete_inputs_when_given() -> None:
    names, dims = pd.Series(["aten::sum"]), pd.Series(["[[5, 128], [], [], []]"])
    types = pd.Series(['["float", "ScalarList", "Scalar", ""]'])
    without = estimate_op_bytes(names, dims, types)
    concrete = pd.Series(['["", "[0]", "True", ""]'])
    with_dims = estimate_op_bytes(names, dims, types, concrete_inputs=concrete)
    assert without[Traffic.rule].tolist() == ["reduction_no_output"]
    assert with_dims[Traffic.est_bytes].tolist() == [2560 + 512]


def test_a_million_rows_estimate_each_distinct_row_once(monkeypatch: pytest.MonkeyPatch) -> None:
    shapes = [f"[[{i + 1}, 16], [16]]" for i in range(500)]
    n = 1_000_000
    codes = np.arange(n) % 1000
    names = pd.Series(pd.Categorical.from_codes(codes % 2, pd.Index(["aten::add", "aten::mul"])))
    dims = pd.Series(pd.Categorical.from_codes(codes // 2, pd.Index(shapes)))
    types = pd.Series(pd.Categorical.from_codes(np.zeros(n, int), pd.Index(['["float", "float"]'])))
    calls: list[str | None] = []
    real = traffic.estimate_op

    def counting(*args: str | None) -> TrafficEstimate | None:
        calls.append(args[1])
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(traffic, "estimate_op", counting)
    out = estimate_op_bytes(names, dims, types)
    assert len(calls) == 1000
    row = 2 * 137 + 1  # aten::mul on [138, 16] x [16]
    assert out[Traffic.est_bytes].iloc[row] == (138 * 16 + 16 + 138 * 16) * 4


json_text = st.one_of(
    st.none(),
    st.text(max_size=40),
    st.recursive(
        st.one_of(st.integers(-5, 10**6), st.text(max_size=12), st.booleans(), st.none()),
        lambda inner: st.lists(inner, max_size=5),
        max_leaves=20,
    ).map(json.dumps),
)


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(sorted(traffic.OP_RULES)).map(lambda b: "aten::" + b) | st.text(max_size=20),
    json_text,
    json_text,
    json_text,
)
def test_estimate_op_never_raises(
    name: str, dims: str | None, types: str | None, concrete: str | None
) -> None:
    result = estimate_op(name, dims, types, concrete)
    assert result is None or (result.bytes_read >= 0 and result.bytes_written >= 0)


RO = SAMPLES / "h200" / "gpt2-reduce-overhead"
SAMPLE_RUNS = sorted(p.parent for p in SAMPLES.glob("**/run.json"))


def _gap(report: Comparison) -> float:
    ca, cb = coverage(report.a.traffic), coverage(report.b.traffic)
    assert ca is not None and cb is not None
    return abs(ca - cb)


def _check_row(report: Comparison) -> bool:
    """The est_bytes row agrees with the rule; True when the guard withheld Δ and ratio."""
    row = report.metric("est_bytes")
    a, b = report.a.traffic.total_bytes, report.b.traffic.total_bytes
    assert (row["a"], row["b"]) == (float(a), float(b))
    if _gap(report) > COVERAGE_GAP:
        assert math.isnan(row["delta"]) and math.isnan(row["ratio"])
        assert "no Δ or ratio" in row["description"]
        return True
    assert row["delta"] == float(b) - float(a) and row["ratio"] == float(b) / float(a)
    assert "no Δ" not in row["description"]
    return False


# --- real runs ----------------------------------------------------------------------------


def _ro_partial() -> Comparison:
    """The reduce-overhead run with the compiled side's traffic as the compile log's kernel
    bytes alone give it (the Triton calls; the replayed cuBLAS and attention kernels without
    a figure, as before the graph replays' library calls were read)."""
    report = compare_run(RO)
    trace, log = report.b.trace, read_log(RO / "compile_log.jsonl.gz")
    partial = memory_traffic(trace, provenance=compiled_kernel_provenance(trace, log))
    return compare_sides(report.a, dataclasses.replace(report.b, traffic=partial))


def test_reduce_overhead_traces_get_no_traffic_ratio() -> None:
    """GPT-2 under CUDA graphs, its replayed library kernels without a figure: compiled
    estimates cover a small part of its kernel time, so its smaller total (78 → 16 MiB) is
    not a saving and gets no Δ/ratio, with the reason shown."""
    report = _ro_partial()
    assert _gap(report) > 0.5  # eager ~95 %, compiled ~17 % (computed)
    assert _check_row(report)
    row = report.metric("est_bytes")
    ca, cb = coverage(report.a.traffic), coverage(report.b.traffic)
    assert ca is not None and cb is not None
    a, b = report.names
    assert f"{100 * ca:.1f}% of {a}'s" in row["description"]
    assert f"{100 * cb:.1f}% of {b}'s" in row["description"]
    view = metrics_view(report)
    traffic = next(r for r in view.rows if r[0] == "memory traffic")
    assert traffic[3:5] == ["–", "–"]
    assert view.note.startswith("memory traffic: no Δ or ratio")
    doc = json.loads(json.dumps(records(report.metrics), allow_nan=False))
    metric = next(m for m in doc if m["name"] == "est_bytes")
    assert metric["delta"] is None and metric["ratio"] is None
    assert report.fusion.est_bytes_saved is None
    assert "no Δ" not in metrics_view(compare_run(RO)).note  # the log fills them: compared
    pytest.importorskip("plotly")  # the figures say why too
    from traceviz.report.figures.memory import memory_kind_figure
    from traceviz.report.figures.overview import metrics_figure, traffic_partial

    assert traffic_partial(report)
    assert "Totals not comparable, no Δ or ratio" in memory_kind_figure(report).layout.title.text
    labels = list(metrics_figure(report).data[0].y)
    assert not any(str(label).startswith("memory traffic") for label in labels)


@pytest.mark.parametrize("run", SAMPLE_RUNS, ids=[str(p.relative_to(SAMPLES)) for p in SAMPLE_RUNS])
def test_sample_runs_keep_their_ratio_unless_broken(run: Path) -> None:
    """Every same-model sample run keeps its Δ/ratio: its covered shares are within the gap
    (the CUDA-graph run too, its replayed kernels given the compile log's bytes)."""
    report = compare_run(run)
    assert not _check_row(report)
    assert report.a.traffic.unestimated_time_us <= report.a.traffic.kernel_time_us
    assert report.b.traffic.unestimated_time_us <= report.b.traffic.kernel_time_us


@pytest.mark.parametrize("pair", CORPUS_PAIRS, ids=[a for a, _ in CORPUS_PAIRS])
def test_corpus_pairs_follow_the_rule(pair: tuple[str, str]) -> None:
    paths = [CORPUS / p for p in pair]
    if not all(p.exists() for p in paths):
        pytest.skip(f"corpus not found at {CORPUS}")
    report = traceviz.compare(*paths, force=True)
    assert _check_row(report)  # every corpus pair's covered shares are > 25 points apart


# --- the rule at its edges ----------------------------------------------------------------


@pytest.fixture(scope="module")
def real_traffic() -> MemoryTraffic:
    return compare_run(SAMPLES / "pointwise").a.traffic


def _with_share(traffic: MemoryTraffic, share: float | None) -> MemoryTraffic:
    return dataclasses.replace(traffic, unestimated_time_share=share)


@pytest.mark.parametrize(
    ("share_a", "share_b", "withheld"),
    [
        (0.0, 0.0, False),
        (0.0, COVERAGE_GAP, False),  # exactly the gap: still compared
        (0.05, 0.05 + COVERAGE_GAP, False),
        (0.0, COVERAGE_GAP + 0.001, True),
        (0.9, 0.0, True),
        (0.5, 0.5, False),  # both half covered: alike, compared
        (None, 0.9, False),  # a side without kernel time is not judged
        (0.9, math.nan, False),
    ],
)
def test_gap_rule_edges(
    real_traffic: MemoryTraffic, share_a: float | None, share_b: float | None, withheld: bool
) -> None:
    note = traffic_gap_note(
        _with_share(real_traffic, share_a), _with_share(real_traffic, share_b), ("x", "y")
    )
    assert (note is not None) == withheld
    if note is not None:
        assert "of x's kernel time" in note and "of y's" in note


def _pair(known_us: float, unknown_us: float, ext0: int) -> list[dict[str, Any]]:
    """A CUDA trace of one estimated kernel (aten::add with shapes) and one without a figure
    (an op with no rule), ``known_us`` and ``unknown_us`` long."""
    shapes = tensors([256, 256], [256, 256])
    return [
        *launched("aten::add", 0, known_us, ext0, **shapes),
        *launched("mylib::opaque", 1000.0, unknown_us, ext0 + 1),
    ]


@pytest.mark.parametrize(
    ("unknown_us", "withheld"), [(0.0, False), (10.0, False), (11.0, True), (50.0, True)]
)
def test_made_traces_at_the_edge(
    tmp_trace: Callable[..., Path], unknown_us: float, withheld: bool
) -> None:
    """a: fully estimated; b: the same plus an unestimated kernel taking ``unknown_us`` of
    100 µs kernel time (10 µs: exactly 10 points apart, still compared)."""
    a = tmp_trace(_pair(100.0, 0.0, 1)[:3])
    b = tmp_trace(_pair(100.0 - unknown_us, unknown_us, 1) if unknown_us else _pair(100, 0, 1)[:3])
    report = traceviz.compare(a, b, force=True)
    traffic = memory_traffic(report.b.trace)
    assert traffic.unestimated_time_us == pytest.approx(unknown_us)
    assert _check_row(report) == withheld


NS = "at::native::(anonymous namespace)::"
SAME = (  # the name torch 2.x gives the same-dtype fast path (as in the H200 trace), for T
    "void " + NS + "multi_tensor_apply_kernel<" + NS + "TensorListMetadata<2>, " + NS
    + "UnaryOpFunctor<{t}, 2, 1, 1>, at::native::Copy<{t}, {t}> >(...)"
)  # fmt: skip
MIXED = (  # the mixed-dtype fast path: self in D, src in S
    "void " + NS + "multi_tensor_apply_kernel<" + NS + "TensorListMetadata<2>, " + NS
    + "CopyFunctor<{d}, {s}, 2, 1, 1>, at::native::Copy<{d}, {s}> >(...)"
)  # fmt: skip
LISTS = {  # self: [4, 8] and [16]; src the same shapes
    "Input Dims": [[[4, 8], [16]], [[4, 8], [16]], []],
    "Input type": ["TensorList", "TensorList", "Scalar"],
}
REDUCE_OVERHEAD = SAMPLES / "h200" / "gpt2-reduce-overhead" / "compiled.pt.trace.json.gz"
FLUX = CORPUS / "amd" / "mi300x_compiled_flux_hipgraph.json.gz"


def _foreach(ext: int, ts: float, names_durs: list[tuple[str, float]], **args: Any) -> list[dict]:
    """One _foreach_copy_ op launching one kernel per (name, duration)."""
    events = [op("aten::_foreach_copy_", ts, 50, **{"External id": ext}, **args)]
    for i, (name, dur) in enumerate(names_durs):
        corr = 100 * ext + i
        events.append(launch("cudaLaunchKernel", ts + 1 + i, 1, corr, **{"External id": ext}))
        events.append(kernel(name, ts + 60 + 10 * i, dur, corr, **{"External id": ext}))
    return events


def _foreach_rows(trace: traceviz.Trace) -> np.ndarray:
    """Kernel rows whose launching op is an aten::_foreach_copy_."""
    op_row = trace.kernels[Kernels.op_row].to_numpy(dtype=np.int64, na_value=-1)
    names = trace.ops[Ops.name].astype(str).to_numpy()
    return np.array([r >= 0 and names[r] == "aten::_foreach_copy_" for r in op_row], dtype=bool)


def test_kernel_names_give_the_types() -> None:
    assert copy_itemsizes(SAME.format(t="long")) == (8, 8)
    assert copy_itemsizes(SAME.format(t="c10::BFloat16")) == (2, 2)
    assert copy_itemsizes(SAME.format(t="c10::complex<float>")) == (8, 8)
    assert copy_itemsizes(MIXED.format(d="c10::Half", s="float")) == (2, 4)
    assert copy_itemsizes(MIXED.format(d="double", s="short")) == (8, 2)
    assert copy_itemsizes(SAME.format(t="mystery_t")) is None
    assert copy_itemsizes(SAME.format(t="float").replace("Copy<", "Neg<")) is None
    assert copy_itemsizes("void at::native::vectorized_elementwise_kernel<4, float>") is None


def test_tensor_lists_are_read_or_refused() -> None:
    dims, types = json.dumps(LISTS["Input Dims"]), json.dumps(LISTS["Input type"])
    assert tensor_list_numels(dims, types) == ([32, 16], [32, 16])
    assert tensor_list_numels("[[], [], []]", types) is None  # lists not recorded
    assert tensor_list_numels("[[[4]], [[4], [2]], []]", types) is None  # lengths differ
    assert tensor_list_numels(dims, '["float", "float", "Scalar"]') is None
    assert tensor_list_numels("[[[4, -1]], [[4, 1]], []]", types) is None
    assert tensor_list_numels("not json", types) is None
    assert tensor_list_numels(None, types) is None
    estimate = foreach_copy_estimate(dims, types, [MIXED.format(d="c10::Half", s="float")] * 2)
    assert estimate is not None
    assert (estimate.bytes_read, estimate.bytes_written) == (48 * 4, 48 * 2)
    two_kinds = [SAME.format(t="float"), SAME.format(t="double")]
    assert foreach_copy_estimate(dims, types, two_kinds) is None
    assert foreach_copy_estimate(dims, types, []) is None


def test_a_tiny_fast_path_trace(tmp_trace) -> None:
    """Three ops: one kernel (bf16), two kernels split by duration (half from float), and one
    whose kernels disagree (no figure). The other rules are untouched: a plain kernel of an op
    without a rule keeps no figure."""
    events = [
        *_foreach(1, 0, [(SAME.format(t="c10::BFloat16"), 4.0)], **LISTS),
        *_foreach(2, 1000, [(MIXED.format(d="c10::Half", s="float"), d) for d in (1.0, 3.0)],
                  **LISTS),
        *_foreach(3, 2000, [(SAME.format(t="float"), 1.0), (SAME.format(t="double"), 1.0)],
                  **LISTS),
        *launched("aten::mystery_op", 3000, 2, 4),
    ]  # fmt: skip
    trace, result = traffic_of(tmp_trace, events)
    per = result.per_kernel
    est = per[KernelTraffic.est_bytes].to_numpy(dtype=float, na_value=np.nan)
    basis = per[KernelTraffic.basis].astype(str).to_numpy()
    ext = trace.kernels[Kernels.external_id].to_numpy(dtype=np.int64, na_value=-1)
    assert est[ext == 1].tolist() == [48 * 2 * 2]
    assert est[ext == 2].tolist() == [(48 * 4 + 48 * 2) / 4, (48 * 4 + 48 * 2) * 3 / 4]
    assert set(basis[ext <= 2]) == {Basis.ESTIMATED.value}
    assert set(per[KernelTraffic.rule].astype(str).to_numpy()[ext <= 2]) == {"copy"}
    assert np.isnan(est[ext >= 3]).all() and set(basis[ext >= 3]) == {Basis.NONE.value}
    assert result.estimated_bytes == 48 * 2 * 2 + 48 * 4 + 48 * 2


def _expected_fast_path(trace: traceviz.Trace, op_row: int, kernel_rows: np.ndarray) -> int:
    """The op's bytes computed here from its row and kernel names (independently of the
    module): Input Dims of both lists × the element size the kernel template names."""
    dims = json.loads(str(trace.ops[Ops.input_dims].iat[op_row]))
    types = {str(trace.kernels[Kernels.name].iat[r]) for r in kernel_rows}
    assert len(types) == 1
    element = types.pop().split("UnaryOpFunctor<", 1)[1].split(",", 1)[0]
    size = dtype_bytes(element)
    assert size
    return sum(math.prod(shape) * size for lst in dims[:2] for shape in lst)


@pytest.mark.skipif(not REDUCE_OVERHEAD.exists(), reason="sample_traces/h200 absent")
def test_the_h200_reduce_overhead_trace() -> None:
    """Every kernel a _foreach_copy_ launched has a figure now (it had none), equal per op to
    what its lists and kernel types give; the credits add up: per op to its bytes, over the
    trace to the total, with and without the compile log."""
    trace = traceviz.load(REDUCE_OVERHEAD, cache=False)
    rows = _foreach_rows(trace)
    assert rows.sum() >= 5
    log = read_log(REDUCE_OVERHEAD.parent / "compile_log.jsonl.gz")
    assert log is not None
    for result in (memory_traffic(trace), memory_traffic(trace, compile_log=log)):
        per = result.per_kernel
        assert set(per[KernelTraffic.basis].astype(str)[rows]) == {Basis.ESTIMATED.value}
        assert set(per[KernelTraffic.rule].astype(str)[rows]) == {"copy"}
        est = per[KernelTraffic.est_bytes].to_numpy(dtype=np.int64, na_value=0)
        op_row = trace.kernels[Kernels.op_row].to_numpy(dtype=np.int64, na_value=-1)
        for launcher in np.unique(op_row[rows]).tolist():
            mine = np.flatnonzero(rows & (op_row == launcher))
            assert est[mine].sum() == _expected_fast_path(trace, launcher, mine)
        known = per[KernelTraffic.est_bytes].notna().to_numpy()
        assert result.total_bytes == est[known].sum()
        by_kind = result.by_kind["est_bytes"].to_numpy(dtype=np.int64, na_value=0)
        assert by_kind.sum() == result.total_bytes


@pytest.mark.skipif(not FLUX.exists(), reason="corpus absent")
def test_the_flux_slow_path_credits_nothing_twice() -> None:
    """The MI300X Flux trace's _foreach_copy_ ops (bf16 and float tensors: the slow path)
    launch nothing themselves; one aten::copy_ per pair launches a measured memcpy. Their
    lists, as the module reads them, are the copies' shapes in order, and those shapes in the
    copies' dtypes are exactly the memcpy bytes: the TensorList reading is right."""
    trace = traceviz.load(FLUX, cache=False)
    assert not _foreach_rows(trace).any()
    ops = trace.ops
    foreach = np.flatnonzero(ops[Ops.name].astype(str).to_numpy() == "aten::_foreach_copy_")
    assert foreach.size == 4
    parent = ops[Ops.parent_row].to_numpy(dtype=np.int64, na_value=-1)
    kernels = trace.kernels
    kernel_op = kernels[Kernels.op_row].to_numpy(dtype=np.int64, na_value=-1)
    result = memory_traffic(trace)
    for row in foreach.tolist():
        lists = tensor_list_numels(
            str(ops[Ops.input_dims].iat[row]), str(ops[Ops.input_types].iat[row])
        )
        assert lists is not None and lists[0] == lists[1]
        copies = np.flatnonzero(parent == row)
        assert ops[Ops.name].astype(str).iloc[copies].eq("aten::copy_").all()
        shapes = [json.loads(str(ops[Ops.input_dims].iat[c]))[1] for c in copies.tolist()]
        assert [math.prod(s) for s in shapes] == lists[1]
        sizes = [dtype_bytes(json.loads(str(ops[Ops.input_types].iat[c]))[1]) for c in copies]
        copied = np.isin(kernel_op, copies)
        assert set(kernels[Kernels.activity].astype(str)[copied]) == {ActivityKind.MEMCPY.value}
        measured = kernels[Kernels.bytes].to_numpy(dtype=np.int64, na_value=0)[copied].sum()
        assert measured == sum(n * (s or 0) for n, s in zip(lists[1], sizes, strict=True))
        basis = result.per_kernel[KernelTraffic.basis].astype(str)[copied]
        assert set(basis) == {Basis.MEASURED.value}


# --- CUDA-graph replays (``torch.compile(mode="reduce-overhead")``): the compiled kernels hang
# off one ``cudaGraphLaunch`` per step, with no launching op of their own, so their bytes come
# from the compile log (basis ``compiler``)


def _load(run: str) -> tuple[traceviz.Trace, CompileLog]:
    trace = traceviz.load(SAMPLES / "h200" / run / "compiled.pt.trace.json.gz")
    return trace, read_log(SAMPLES / "h200" / run / "compile_log.jsonl.gz")


def _generated_rows(trace: traceviz.Trace, log: CompileLog) -> np.ndarray:
    """Rows of ``trace.kernels`` named like one of the log's generated kernels."""
    names = set(log.kernels.loc[~log.kernels[P.extern], P.kernel].astype(str))
    return np.flatnonzero(trace.kernels[Kernels.name].astype(str).isin(names).to_numpy())


def test_every_replayed_triton_call_takes_its_log_entrys_bytes() -> None:
    """A kernel called at two sites of the graph (one per GPT-2 layer) is the k-th entry for
    its k-th launch in each replay, not only in the first one; it takes the compiler's bytes."""
    trace, log = _load("gpt2-reduce-overhead")
    rows = _generated_rows(trace, log)
    prov = compiled_kernel_provenance(trace, log)
    matched = prov[prov[KP.kernel_row].isin(rows)]
    assert len(rows) > 0 and sorted(matched[KP.kernel_row]) == sorted(rows.tolist())
    names = trace.kernels[Kernels.name].astype(str).to_numpy()[matched[KP.kernel_row]]
    assert (names == matched[KP.kernel].astype(str).to_numpy()).all()
    # the same call site in every replay: each entry matched once per replay
    replays = trace.kernels[Kernels.launch_row].to_numpy()[matched[KP.kernel_row]]
    per_entry = pd.Series(replays).groupby(matched[KP.prov_kernel].to_numpy()).nunique()
    assert (per_entry == pd.Series(replays).nunique()).all()
    per_kernel = memory_traffic(trace, compile_log=log).per_kernel.iloc[rows]
    assert (per_kernel[KernelTraffic.basis] == Basis.COMPILER.value).all()
    entries = log.kernels[~log.kernels[P.extern]].groupby(P.kernel)[P.est_bytes].agg(set)
    for name, nbytes in zip(
        trace.kernels[Kernels.name].iloc[rows], per_kernel[KernelTraffic.est_bytes], strict=True
    ):
        assert nbytes in entries[str(name)]
    replay = trace.kernels[Kernels.graph_launch_row].iloc[rows]
    sums = per_kernel[KernelTraffic.est_bytes].groupby(replay.to_numpy()).sum()
    assert (sums == log.kernels.loc[~log.kernels[P.extern], P.est_bytes].sum()).all()


def test_no_traffic_saved_while_the_replayed_library_kernels_have_no_figure() -> None:
    """Every fused kernel with the compiler's bytes but the replayed GEMMs and attention with
    none (their rows alone, no log table): eager − compiled would count their traffic as saved,
    so there is no figure; with their bytes from the log there is one."""
    report = compare_run(RO)
    trace, log = report.b.trace, read_log(RO / "compile_log.jsonl.gz")
    partial = memory_traffic(trace, provenance=compiled_kernel_provenance(trace, log))
    basis = partial.per_kernel[KernelTraffic.basis].to_numpy()
    fused = is_inductor_kernel(trace.kernels[Kernels.name])
    assert fused.any() and not (basis[fused] == Basis.NONE.value).any()
    assert (basis[~fused] == Basis.NONE.value).any()
    assert _bytes_saved(trace, report.a.traffic, partial, 1.0) is None
    saved = _bytes_saved(trace, report.a.traffic, report.b.traffic, 1.0)
    assert report.a.traffic.estimated_bytes is not None
    assert report.b.traffic.estimated_bytes is not None
    assert saved == report.a.traffic.estimated_bytes - report.b.traffic.estimated_bytes


def test_replayed_library_kernels_take_the_logged_calls_bytes() -> None:
    """Each replay's library kernels carry exactly the bytes of the graph's library calls
    (credits add up to what the log holds, never more), and the whole compiled run the
    compiler's bytes of every logged call once per replay."""
    trace, log = _load("gpt2-reduce-overhead")
    traffic = memory_traffic(trace, compile_log=log)
    per_kernel = traffic.per_kernel
    replay = trace.kernels[Kernels.graph_launch_row]
    generated = np.zeros(len(trace.kernels), dtype=bool)
    generated[_generated_rows(trace, log)] = True
    library = replay.notna().to_numpy() & ~generated
    assert library.any()
    assert (per_kernel[KernelTraffic.basis].to_numpy()[library] == Basis.COMPILER.value).all()
    calls = log.kernels[log.kernels[P.extern].astype(bool)][P.est_bytes].sum()
    sums = per_kernel[KernelTraffic.est_bytes][library].groupby(replay[library]).sum()
    assert len(sums) == replay.nunique() and (sums == calls).all()
    everything = int(log.kernels[P.est_bytes].sum()) * replay.nunique()
    assert traffic.compiler_bytes == everything


def test_reduce_overhead_matches_the_default_mode_compiler_bytes() -> None:
    """Same model, same steps: the CUDA-graph run's compiler bytes equal the compiler's bytes
    of the default-mode run's matched calls, and both cover almost all kernel time."""
    ro_trace, ro_log = _load("gpt2-reduce-overhead")
    ro = memory_traffic(ro_trace, compile_log=ro_log)
    trace, log = _load("gpt2")
    prov = compiled_kernel_provenance(trace, log)
    primary = prov[prov[KP.primary].astype(bool)]
    assert ro.compiler_bytes == int(primary[KP.est_bytes].sum())
    assert ro.unestimated_time_share is not None and ro.unestimated_time_share < 0.05


# --- graph_library_bytes on made tables: replays the sample runs do not show (cut short: the
# profiler stopped before the graph's last kernels ran; two graphs with the same kernel names
# and handles; a graph replayed several times). A run's bytes are only those of the calls its
# kernels can have made, and every replay's credits add up to at most its graph's logged calls.

# one graph: generated g (handle 1), library calls 2 (100 B) and 3 (50 B), generated h (4),
# library call 5 (30 B); a second graph "1/0" with the same names and handles, other bytes
GRAPH = [("g", False, 1, 10), ("ext.mm", True, 2, 100), ("ext.sdpa", True, 3, 50),
         ("h", False, 4, 20), ("ext.addmm", True, 5, 30)]  # fmt: skip
OTHER = [(k, e, h, None if b is None else b * 7) for k, e, h, b in GRAPH]
WHOLE = ["g", "gemm", "fmha", "h", "gemm2"]  # one whole replay of GRAPH


def _log(graphs: dict[str, list[tuple[str, bool, int, int | None]]]) -> pd.DataFrame:
    rows = [(cid, *entry) for cid, entries in graphs.items() for entry in entries]
    return pd.DataFrame(
        {
            P.prov_kernel: [f"{cid}:{k}:{h}" for cid, k, _, h, _ in rows],
            P.compile_id: [cid for cid, *_ in rows],
            P.graph_index: [0] * len(rows),
            P.kernel: [k for _, k, *_ in rows],
            P.handle: [h for _, _, _, h, _ in rows],
            P.est_bytes: pd.array([b for *_, b in rows], dtype="Int64"),
            P.extern: [e for _, _, e, _, _ in rows],
        }
    )


def _credit(
    replays: list[tuple[str, list[str]]],
    log: pd.DataFrame | None = None,
    unmatched: tuple[int, ...] = (),
    closed: tuple[int, ...] = (),
    replayed: bool = True,
) -> dict[int, tuple[int, int]]:
    """Credits per kernel row of the replays (compile id, kernel names in order), each named
    generated kernel matched to its graph's entry as the matcher would (but the ``unmatched``
    rows); ``closed`` rows already have a figure; ``replayed``: the kernels are in replays."""
    names: list[str] = []
    launch: list[int | None] = []
    prov: list[tuple[int, str]] = []
    for replay, (cid, kernels) in enumerate(replays):
        for name in kernels:
            if name in ("g", "h") and len(names) not in unmatched:
                handle = next(h for k, _, h, _ in GRAPH if k == name)
                prov.append((len(names), f"{cid}:{name}:{handle}"))
            names.append(name)
            launch.append(replay if replayed else None)
    table = pd.DataFrame(
        {
            Kernels.name: names,
            Kernels.ts_us: np.arange(len(names), dtype=float),
            Kernels.graph_launch_row: pd.array(launch, dtype="Int64"),
        }
    )
    provenance = pd.DataFrame(
        {
            KP.kernel_row: [r for r, _ in prov],
            KP.prov_kernel: [p for _, p in prov],
            KP.primary: [True] * len(prov),
        }
    )
    generated = table[Kernels.name].isin(["g", "h"]).to_numpy()
    open_rows = ~np.isin(np.arange(len(names)), closed)
    log = _log({"0/0": GRAPH}) if log is None else log
    rows, group, total = graph_library_bytes(table, provenance, log, open_rows, generated)
    return {int(r): (int(g), int(t)) for r, g, t in zip(rows, group, total, strict=True)}


def test_library_runs_take_the_calls_between_their_bounds() -> None:
    credit = _credit([("0/0", ["g", "gemm", "splitk", "fmha", "h", "gemm2"])])
    assert credit == {1: (1, 150), 2: (1, 150), 3: (1, 150), 5: (5, 30)}


def test_unreadable_replays_and_runs_get_nothing() -> None:
    # generated kernels out of handle order: the replay is not the log's order
    assert _credit([("0/0", ["h", "gemm", "g"])]) == {}
    # a generated kernel the matcher left out: its run cannot be bounded
    replay = [("0/0", ["g", "gemm", "h", "gemm2"])]
    assert _credit(replay, unmatched=(2,)) == {}
    # a run that already has a figure is left alone, the other run still credited
    assert _credit(replay, closed=(1,)) == {3: (3, 30)}
    # a library call without logged bytes: its run gets nothing
    entries = [e if e[2] != 5 else (e[0], e[1], e[2], None) for e in GRAPH]
    assert _credit(replay, _log({"0/0": entries})) == {1: (1, 150)}
    # no library call between the bounds: nothing to credit (the kernels keep no figure)
    entries = [e for e in GRAPH if e[2] != 5]
    assert _credit([("0/0", ["g", "h", "copy"])], _log({"0/0": entries})) == {}
    # kernels outside replays are never credited
    assert _credit([("0/0", ["g", "gemm", "h"])], replayed=False) == {}


def test_a_replay_cut_short_credits_no_calls_it_did_not_reach() -> None:
    """The profiler stopped after the first GEMM: the calls after it (sdpa, h, addmm) never
    ran in this trace, so the GEMM must not take their bytes."""
    assert _credit([("0/0", ["g", "gemm"])]).get(1, (1, 0))[1] <= 100
    # the whole replay still takes every call's bytes
    assert _credit([("0/0", WHOLE)]) == {1: (1, 150), 2: (1, 150), 4: (4, 30)}


def test_two_graphs_with_the_same_names_each_take_their_own_calls() -> None:
    credit = _credit([("0/0", WHOLE), ("1/0", WHOLE)], _log({"0/0": GRAPH, "1/0": OTHER}))
    assert credit == {
        1: (1, 150), 2: (1, 150), 4: (4, 30),
        6: (6, 1050), 7: (6, 1050), 9: (9, 210),
    }  # fmt: skip


def test_each_replay_takes_at_most_its_graphs_logged_calls() -> None:
    logged = sum(b for _, e, _, b in GRAPH if e and b is not None)
    replays = [("0/0", WHOLE)] * 3 + [("0/0", ["g", "gemm"])]
    credit = _credit(replays)
    starts = np.cumsum([0] + [len(k) for _, k in replays])
    assert credit
    for first, end in itertools.pairwise(starts):
        runs = {g: t for r, (g, t) in credit.items() if first <= r < end}  # a total per run
        assert sum(runs.values()) <= logged


# --- memory_traffic: one tiny hand-made trace per rule, then the real traces. The measured
# bytes are the trace file's memcpy/memset bytes and its allocator events the file's
# ``[memory]`` events (a plain pass over the raw JSON); the estimated bytes are the per-kernel
# sum, the kinds' rows add up to the per-kernel table, and split_bytes gives each group's
# total out in full (ties, NaN, inf, negative and zero durations).


def memory_event(ts: float, nbytes: int, total: int, device_type: int = 1) -> dict:
    return {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts,
            "args": {"Bytes": nbytes, "Total Allocated": total, "Device Type": device_type,
                     "Device Id": 0 if device_type else -1}}  # fmt: skip


def traffic_of(
    tmp_trace: Callable[..., Path], events: list[dict]
) -> tuple[traceviz.Trace, MemoryTraffic]:
    trace = traceviz.load(tmp_trace(events))
    return trace, memory_traffic(trace)


def row(result: MemoryTraffic, trace: traceviz.Trace, name: str) -> pd.Series:
    rows = result.per_kernel[(trace.kernels[Kernels.name] == name).to_numpy()]
    assert len(rows) == 1, name
    return rows.iloc[0]


# --- per-kernel rules --------------------------------------------------------------------


def test_memcpy_and_memset_bytes_are_measured(tmp_trace) -> None:
    trace, result = traffic_of(
        tmp_trace,
        [
            launch("cudaMemcpyAsync", 0, 2, 1),
            kernel("Memcpy HtoD (Pageable -> Device)", 10, 4, 1, cat="gpu_memcpy", bytes=4000),
            launch("cudaMemsetAsync", 20, 2, 2),
            kernel("Memset (Device)", 30, 1, 2, cat="gpu_memset", bytes=512),
        ],
    )
    copy = row(result, trace, "Memcpy HtoD (Pageable -> Device)")
    assert (copy.est_bytes, copy.basis, copy.rule) == (4000, "measured", "memcpy")
    assert copy.bandwidth_gbps == pytest.approx(4000 / 4 * 1e-3)  # bytes/µs → GB/s
    assert row(result, trace, "Memset (Device)").rule == "memset"
    assert result.measured_bytes == result.total_bytes == 4512
    assert result.estimated_bytes is None
    assert result.unestimated_time_share == 0.0


def test_eager_kernel_is_estimated_from_its_op_shapes(tmp_trace) -> None:
    trace, result = traffic_of(tmp_trace, launched("aten::add", 0, 2.0, 7, **tensors([256], [256])))
    k = row(result, trace, "k_7")
    assert k.basis == Basis.ESTIMATED.value and k.rule == TrafficRule.POINTWISE.value
    assert k.est_bytes == 3 * 256 * 4  # read two, write one
    assert k.bandwidth_gbps == pytest.approx(3 * 256 * 4 / 2.0 * 1e-3)
    assert result.estimated_bytes == 3 * 256 * 4 and result.measured_bytes is None


@pytest.mark.parametrize(
    "op_name", ["aten::_efficient_attention_forward", "aten::_cudnn_attention_forward"]
)
def test_attention_kernel_from_its_innermost_op(tmp_trace, op_name: str) -> None:
    """The kernel's launching op is the innermost attention op (cuDNN's SDPA, which bf16 GPT-2
    on an H200 dispatched to, launches from ``aten::_cudnn_attention_forward``): q, k, v read,
    an output of q's shape written."""
    qkv = [2, 4, 64, 32]
    trace, result = traffic_of(
        tmp_trace, launched(op_name, 0, 4.0, 9, **tensors(qkv, qkv, qkv, []))
    )
    k = row(result, trace, "k_9")
    assert k.rule == TrafficRule.ATTENTION.value
    assert k.est_bytes == 4 * (2 * 4 * 64 * 32) * 4  # three inputs read, one output written


def test_one_op_with_several_kernels_splits_its_bytes_by_duration(tmp_trace) -> None:
    events = [
        op("aten::mm", 0, 50, **{"External id": 3}, **tensors([64, 32], [32, 16])),
        launch("cudaLaunchKernel", 1, 2, 10, **{"External id": 3}),
        launch("cudaLaunchKernel", 5, 2, 11, **{"External id": 3}),
        kernel("gemm_main", 20, 3.0, 10, **{"External id": 3}),
        kernel("splitk_reduce", 30, 1.0, 11, **{"External id": 3}),
    ]
    trace, result = traffic_of(tmp_trace, events)
    total = (64 * 32 + 32 * 16 + 64 * 16) * 4
    main, reduce = row(result, trace, "gemm_main"), row(result, trace, "splitk_reduce")
    assert main.est_bytes + reduce.est_bytes == total == result.estimated_bytes
    assert main.est_bytes == pytest.approx(total * 0.75, abs=1)
    assert main.bandwidth_gbps == pytest.approx(reduce.bandwidth_gbps, rel=1e-3)


def test_split_is_exact_and_even_without_durations() -> None:
    groups = np.array([5, 5, 5, 9], dtype=np.int64)
    totals = np.array([10, 10, 10, 7], dtype=np.int64)
    even = split_bytes(groups, totals, np.array([np.nan, 1.0, 1.0, 2.0]))
    assert even.tolist()[:3] in ([3, 4, 3], [4, 3, 3], [3, 3, 4]) and sum(even[:3]) == 10
    assert even[3] == 7
    zero = split_bytes(groups[:3], totals[:3], np.zeros(3))
    assert sum(zero) == 10


def test_triton_kernel_uses_its_launch_op_args_or_kernel_num_gb(tmp_trace) -> None:
    events = [
        *launched("triton_poi_fused_add_cos_0", 0, 1.0, 1, **tensors([100], [100], [100], [])),
        *launched(
            "triton_poi_fused_mul_1", 100, 1.0, 2, kernel_num_gb=2e-6, **tensors([100], [100])
        ),
    ]
    trace, result = traffic_of(tmp_trace, events)
    args = row(result, trace, "k_1")
    assert (args.est_bytes, args.rule) == (1200, TrafficRule.TRITON_ARGS.value)
    num_gb = row(result, trace, "k_2")
    assert (num_gb.est_bytes, num_gb.rule) == (2000, TrafficRule.INDUCTOR_NUM_GB.value)


def test_cpu_trace_kernels_are_their_own_ops(tmp_trace) -> None:
    trace, result = traffic_of(
        tmp_trace,
        [
            op("aten::relu", 0, 20, **tensors([1024])),
            op("aten::clamp_min", 1, 15, **tensors([1024], [])),
            op("graph_0_cpp_fused_cos_0", 30, 10),  # Inductor C++ kernels record no inputs
        ],
    )
    assert trace.device_kind is traceviz.schema.DeviceKind.CPU
    clamp = row(result, trace, "aten::clamp_min")
    assert clamp.est_bytes == 2 * 1024 * 4 and clamp.basis == "estimated"
    assert row(result, trace, "graph_0_cpp_fused_cos_0").basis == "none"
    assert result.unestimated_time_share == pytest.approx(10 / 25)


def test_kernels_without_an_estimate_are_none_and_counted_in_time_share(tmp_trace) -> None:
    events = [
        *launched("aten::add", 0, 3.0, 1, **tensors([8], [8])),
        *launched("aten::mystery_op", 100, 1.0, 2, **tensors([8])),  # no rule
        launch("cudaLaunchKernel", 200, 2, 3),
        kernel("orphan_kernel", 210, 4.0, 3),  # no op at all
    ]
    trace, result = traffic_of(tmp_trace, events)
    assert row(result, trace, "k_2").basis == "none"
    orphan = row(result, trace, "orphan_kernel")
    assert orphan.basis == "none" and pd.isna(orphan.est_bytes) and pd.isna(orphan.rule)
    assert np.isnan(orphan.bandwidth_gbps)
    assert result.unestimated_time_share == pytest.approx(5.0 / 8.0)
    assert result.unestimated_time_us == pytest.approx(5.0)


F8_8 = tensors([8], [8])


def test_by_kind_totals(tmp_trace) -> None:
    events = [
        *launched("aten::add", 0, 3.0, 1, kernel_name="vectorized_elementwise_kernel", **F8_8),
        *launched("aten::mul", 100, 1.0, 2, kernel_name="vectorized_elementwise_k2", **F8_8),
        launch("cudaMemcpyAsync", 200, 2, 3),
        kernel("Memcpy DtoD (Device -> Device)", 210, 2.0, 3, cat="gpu_memcpy", bytes=64),
    ]
    _, result = traffic_of(tmp_trace, events)
    by_kind = result.by_kind.set_index(TrafficByKind.kind)
    pointwise = by_kind.loc["pointwise"]
    assert pointwise[TrafficByKind.count] == 2
    assert pointwise[TrafficByKind.estimated_bytes] == 2 * 96
    assert pd.isna(pointwise[TrafficByKind.measured_bytes])
    assert pointwise[TrafficByKind.time_us] == pytest.approx(4.0)
    memcpy = by_kind.loc["memcpy"]
    assert memcpy[TrafficByKind.measured_bytes] == memcpy[TrafficByKind.est_bytes] == 64
    assert result.by_kind[TrafficByKind.kind].iloc[0] == "pointwise"  # largest time first
    assert result.total_bytes == 2 * 96 + 64


def test_empty_trace_has_no_figures(tmp_trace) -> None:
    _, result = traffic_of(tmp_trace, [op("ProfilerStep#1", 0, 10, cat="user_annotation")])
    assert result.per_kernel.empty and result.by_kind.empty and result.allocator.empty
    assert result.total_bytes is None and result.unestimated_time_share is None
    assert result.peak_allocated_bytes is None and result.allocated_bytes_per_step is None
    with pytest.raises(TypeError):
        memory_traffic("trace.json")  # type: ignore[arg-type]


# --- allocator ---------------------------------------------------------------------------


def test_allocator_peak_and_bytes_per_step(tmp_trace) -> None:
    events = [
        op("ProfilerStep#1", 0, 100, cat="user_annotation"),
        op("ProfilerStep#2", 100, 100, cat="user_annotation"),
        *launched("aten::add", 10, 1.0, 1, **tensors([8], [8])),
        memory_event(5, 1000, 1000),
        memory_event(6, -1000, 0),
        memory_event(50, 300, 300),
        memory_event(150, 500, 800),
        memory_event(250, 4000, 4800),  # after the last step: counts for the peak only
        memory_event(50, 7, 7, device_type=0),  # CPU memory on a GPU trace
    ]
    _, result = traffic_of(tmp_trace, events)
    assert result.peak_allocated_bytes == 4800
    assert result.allocated_bytes_per_step == pytest.approx((1000 + 300 + 500) / 2)
    table = result.allocator.set_index(AllocatorUse.device_type)
    assert table.loc["cpu", AllocatorUse.peak_allocated_bytes] == 7
    assert table.loc["cuda", AllocatorUse.allocated_bytes] == 5800
    assert table.loc["cuda", AllocatorUse.events] == 5


def test_allocator_without_steps_has_no_per_step_figure(tmp_trace) -> None:
    _, result = traffic_of(tmp_trace, [op("aten::add", 0, 5), memory_event(1, 64, 64, 0)])
    assert result.peak_allocated_bytes == 64
    assert result.allocated_bytes_per_step is None


# --- real traces -------------------------------------------------------------------------


def check_consistent(trace: traceviz.Trace, result: MemoryTraffic) -> None:
    """Invariants every result holds."""
    per = result.per_kernel
    assert list(per.columns) == [
        KernelTraffic.est_bytes, KernelTraffic.basis, KernelTraffic.rule,
        KernelTraffic.bandwidth_gbps,
    ]  # fmt: skip
    assert per.index.equals(trace.kernels.index)
    has = per[KernelTraffic.est_bytes].notna()
    assert (has == (per[KernelTraffic.basis] != Basis.NONE.value)).all()
    assert (has == per[KernelTraffic.rule].notna()).all()
    assert (per[KernelTraffic.est_bytes].dropna() >= 0).all()
    measured = per[KernelTraffic.basis] == Basis.MEASURED.value
    activity = trace.kernels[Kernels.activity]
    assert not (measured & (activity == ActivityKind.KERNEL.value)).any()
    total = int(per[KernelTraffic.est_bytes].dropna().sum())
    assert result.total_bytes == (total if has.any() else None)
    assert (result.measured_bytes or 0) + (result.estimated_bytes or 0) == total
    assert int(result.by_kind[TrafficByKind.count].sum()) == len(trace.kernels)
    if result.unestimated_time_share is not None:
        assert 0.0 <= result.unestimated_time_share <= 1.0


def test_a100_triton_kernel_from_its_launch_op() -> None:
    trace = corpus_or_skip("nvidia/a100_compiled_triton_tiny.json.gz")
    result = memory_traffic(trace)
    k = row(result, trace, "triton_poi_fused_add_cos_sin_0")
    assert k.est_bytes == 3 * 10 * 10 * 4  # two inputs and the output, fp32 [10, 10]
    assert k.rule == TrafficRule.TRITON_ARGS.value
    assert result.unestimated_time_share == 0.0


def test_mi300x_llama_block_is_fully_estimated() -> None:
    trace = corpus_or_skip("amd/mi300x_compiled_llama_block_tiny.json.gz")
    result = memory_traffic(trace)
    assert result.unestimated_time_share == 0.0
    names = trace.kernels[Kernels.name].astype(str)
    gemms = names.str.startswith("Cijk_").to_numpy()  # hipBLASLt, launched by aten::mm
    assert gemms.sum() == 7
    assert set(result.per_kernel.loc[gemms, KernelTraffic.rule]) == {TrafficRule.MATMUL.value}
    by_name = dict(zip(names, result.per_kernel[KernelTraffic.rule], strict=True))
    assert by_name["triton_poi_fused__unsafe_view_add_3"] == TrafficRule.TRITON_ARGS.value
    assert by_name["attn_fwd"] == TrafficRule.ATTENTION.value


def test_pointwise_sample_pair() -> None:
    run = sample_run("pointwise")
    eager, compiled = (load_trace(run / f"{s}.pt.trace.json.gz") for s in ("eager", "compiled"))
    eager_result, compiled_result = memory_traffic(eager), memory_traffic(compiled)
    check_consistent(eager, eager_result)
    check_consistent(compiled, compiled_result)
    assert eager_result.unestimated_time_share == 0.0  # every eager aten op has a rule
    assert eager_result.estimated_bytes is not None and eager_result.estimated_bytes > 0
    # the C++ kernel records no inputs: no estimate, and the share says so
    assert compiled_result.estimated_bytes is None
    assert compiled_result.unestimated_time_share == 1.0
    if eager_result.allocated_bytes_per_step and compiled_result.allocated_bytes_per_step:
        assert compiled_result.allocated_bytes_per_step < eager_result.allocated_bytes_per_step


def test_cudnn_attention_of_a_real_bf16_run() -> None:
    """bf16 GPT-2 on an H200: SDPA runs as cuDNN kernels launched from
    ``aten::_cudnn_attention_forward``; each gets the attention rule."""
    path = SAMPLES / "h200" / "gpt2-bf16" / "eager.pt.trace.json.gz"
    if not path.is_file():
        pytest.skip(f"sample trace {path} not found")
    trace = load_trace(path)
    result = memory_traffic(trace)
    names = trace.kernels[Kernels.name].astype(str)
    cudnn = names.str.startswith("cudnn_generated").to_numpy()
    assert cudnn.sum() == 10  # one per layer, two layers, five steps
    rules = set(result.per_kernel.loc[cudnn, KernelTraffic.rule])
    assert rules == {TrafficRule.ATTENTION.value}
    check_consistent(trace, result)


COPY_CATS = {"gpu_memcpy", "gpu_memset", "Memcpy", "Memset"}
TRACES = [
    *corpus_params(),
    *(
        pytest.param(p, id=p.relative_to(SAMPLES).as_posix())
        for p in sorted(SAMPLES.glob("**/*.pt.trace.json.gz"))
    ),
]


def _raw(path: Path) -> tuple[int, int]:
    """The file's memcpy/memset bytes (``args.bytes``) and its ``[memory]`` events."""
    events = raw_events(path)
    copied = sum(
        int((e.get("args") or {}).get("bytes") or 0)
        for e in events
        if e.get("ph") == "X" and e.get("cat") in COPY_CATS
    )
    return copied, sum(1 for e in events if e.get("name") == "[memory]")


@pytest.mark.parametrize("path", TRACES)
def test_memory_figures_add_up_to_the_raw_json(path: Path) -> None:
    trace = load_trace(path)
    got = memory_traffic(trace)
    check_consistent(trace, got)
    copied, memory_events = _raw(path)
    assert (got.measured_bytes or 0) == copied
    assert int(got.by_kind[TrafficByKind.est_bytes].sum()) == (got.total_bytes or 0)
    use = memory_mod.allocator_use(trace)
    assert int(use[AllocatorUse.events].sum()) == len(trace.memory) == memory_events


@pytest.mark.parametrize("seed", range(30))
def test_split_bytes_gives_each_group_its_total(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 60))
    groups = rng.integers(0, max(1, n // 2 + 1), size=n).astype(np.int64)
    totals_by_group = rng.integers(0, 10**12, size=groups.max(initial=0) + 1)
    totals = totals_by_group[groups].astype(np.int64)
    dur = rng.choice([0.0, -1.0, np.nan, 1.5, 3.0, 1e-9, 7.25], size=n)
    dur = np.where(rng.random(n) < 0.5, rng.random(n) * 10, dur)
    got = split_bytes(groups, totals, dur)
    assert got.dtype == np.int64 and (got >= 0).all()
    for g in np.unique(groups):
        mine = groups == g
        assert int(got[mine].sum()) == int(totals_by_group[g])
        known = dur[mine] > 0
        if known.all() and mine.sum() > 1:  # by duration: a longer call never gets less
            order = np.argsort(dur[mine], kind="stable")
            assert (np.diff(got[mine][order]) >= -1).all()


def test_split_bytes_single_rows_and_empty() -> None:
    dur = np.array([np.nan, np.inf, -2.0, 0.0, 4.0])
    groups = np.arange(5, dtype=np.int64)
    totals = np.array([3, 5, 7, 11, 2**40 + 1], dtype=np.int64)
    assert split_bytes(groups, totals, dur).tolist() == totals.tolist()  # one row: all of it
    assert split_bytes(groups[:1], totals[:1], dur[:1]).tolist() == [3]
    assert split_bytes(groups[:0], totals[:0], dur[:0]).size == 0


def test_by_kind_leaves_out_a_row_without_a_kind() -> None:
    rng = np.random.default_rng(7)
    n = 12
    per_kernel = pd.DataFrame(
        {
            KernelTraffic.est_bytes: pd.array(rng.integers(0, 10**6, size=n), dtype="Int64"),
            KernelTraffic.basis: pd.Categorical(["estimated"] * n),
        }
    )
    kinds = pd.Series(pd.Categorical(["gemm", "pointwise", "copy"] * 4))
    kinds.iloc[3] = np.nan
    got = memory_mod._by_kind(per_kernel, kinds, np.ones(n))
    assert int(got[TrafficByKind.count].sum()) == n - 1
    kept = per_kernel[KernelTraffic.est_bytes].drop(index=3)
    assert int(got[TrafficByKind.est_bytes].sum()) == int(kept.sum())
