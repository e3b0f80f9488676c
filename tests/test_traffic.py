"""Estimated bytes read + written per op, from recorded input shapes and types.

The input rows are real ``Input Dims``/``Input type``/``Concrete Inputs`` values from the corpus
(MI300X LLaMA block, HF model traces) and from torch 2.13 CPU eager/compiled traces.

The coverage guard (traffic/coverage.py): two totals get a Δ and ratio only when their
estimates cover about the same share of each side's kernel time. ``aten::_foreach_copy_``
(traffic/foreach.py): its TensorList rows record shapes but no dtype, its multi-tensor kernels'
names give the types; real traces: the H200 gpt2 reduce-overhead compiled trace (the fast path,
one kernel per op) and the corpus's MI300X Flux trace (the slow path: a copy_ per pair)."""

from __future__ import annotations

import dataclasses
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
from tests.conftest import CORPUS, SAMPLES, kernel, launch, op
from tests.real_data import CORPUS_PAIRS
from traceviz.analysis.compare import Comparison, compare_sides
from traceviz.analysis.fusion.lines import read_log
from traceviz.analysis.provenance import compiled_kernel_provenance
from traceviz.analysis.traffic import estimates as traffic
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
from traceviz.analysis.traffic.memory import Basis, KernelTraffic, MemoryTraffic, memory_traffic
from traceviz.pipeline import compare_run
from traceviz.records import records
from traceviz.report.views import metrics_view
from traceviz.schema import ActivityKind, Kernels, Ops

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


def test_total_bytes() -> None:
    assert TrafficEstimate(3, 4, R.COPY).total_bytes == 7


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


def test_estimate_op_bytes_uses_concrete_inputs_when_given() -> None:
    names = pd.Series(["aten::sum"])
    dims = pd.Series(["[[5, 128], [], [], []]"])
    types = pd.Series(['["float", "ScalarList", "Scalar", ""]'])
    concrete = pd.Series(['["", "[0]", "True", ""]'])
    without = estimate_op_bytes(names, dims, types)
    with_dims = estimate_op_bytes(names, dims, types, concrete_inputs=concrete)
    assert without[Traffic.rule].tolist() == ["reduction_no_output"]
    assert with_dims[Traffic.est_bytes].tolist() == [2560 + 512]


def test_estimate_op_bytes_empty() -> None:
    empty = pd.Series([], dtype="category")
    out = estimate_op_bytes(empty, empty, empty)
    assert len(out) == 0 and list(out.columns) == [Traffic.est_bytes, Traffic.rule]


def test_estimate_op_bytes_rejects_misaligned_columns() -> None:
    with pytest.raises(ValueError):
        estimate_op_bytes(pd.Series(["a"]), pd.Series([], dtype=object), pd.Series(["x"]))


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


def test_reduce_overhead_figures_say_why() -> None:
    pytest.importorskip("plotly")
    from traceviz.report.figures.memory import memory_kind_figure
    from traceviz.report.figures.overview import metrics_figure, traffic_partial

    report = _ro_partial()
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
    shapes = {"Input Dims": [[256, 256], [256, 256]], "Input type": ["float", "float"]}
    events: list[dict[str, Any]] = []
    for i, (name, dur, args) in enumerate(
        [("aten::add", known_us, shapes), ("mylib::opaque", unknown_us, {})]
    ):
        ext, ts = ext0 + i, 1000.0 * i
        events += [
            op(name, ts, 10, **{"External id": ext}, **args),
            launch("cudaLaunchKernel", ts + 1, 2, ext, **{"External id": ext}),
            kernel(f"k_{ext}", ts + 20, dur, ext, **{"External id": ext}),
        ]
    return events


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


def _traffic(tmp_trace: Callable[..., Path], events: list[dict]) -> tuple[Any, MemoryTraffic]:
    trace = traceviz.load(tmp_trace(events), cache=False)
    return trace, memory_traffic(trace)


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
        op("aten::mystery_op", 3000, 10, **{"External id": 4}),
        launch("cudaLaunchKernel", 3001, 1, 400, **{"External id": 4}),
        kernel("k_mystery", 3020, 2, 400, **{"External id": 4}),
    ]  # fmt: skip
    trace, result = _traffic(tmp_trace, events)
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
