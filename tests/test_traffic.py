"""Estimated bytes read + written per op, from recorded input shapes and types.

The input rows are real ``Input Dims``/``Input type``/``Concrete Inputs`` values from the corpus
(MI300X LLaMA block, HF model traces) and from torch 2.13 CPU eager/compiled traces.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from traceviz.analysis.traffic import estimates as traffic
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
