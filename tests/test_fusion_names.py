"""Decoding Inductor kernel names into the aten ops they fused."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from traceviz.analysis.inductor_names import (
    FusedName,
    TritonSubkind,
    eager_op_base,
    fused_kernel_ops,
    known_aten_ops,
    segment_ops,
)

REPO = Path(__file__).resolve().parents[1]
T = TritonSubkind

# name -> (prefix, subkind, ops, index, graph)
DECODE_CASES = [
    ("triton_poi_fused_add_cos_relu_0", ("triton", T.POINTWISE, ("add", "cos", "relu"), 0, None)),
    ("triton_poi_fused_add_cos_sin_0", ("triton", T.POINTWISE, ("add", "cos", "sin"), 0, None)),
    (
        "triton_red_fused__unsafe_view_add_mean_mul_pow_rsqrt_1",
        ("triton", T.REDUCTION, ("_unsafe_view", "add", "mean", "mul", "pow", "rsqrt"), 1, None),
    ),
    ("graph_0_cpp_fused_native_layer_norm_0", ("cpp", None, ("native_layer_norm",), 0, 0)),
    ("graph_3_cpp_fused_cos_relu_12", ("cpp", None, ("cos", "relu"), 12, 3)),
    ("cpp_fused_add_0", ("cpp", None, ("add",), 0, None)),
    ("triton_per_fused__softmax_0", ("triton", T.PERSISTENT_REDUCTION, ("_softmax",), 0, None)),
    ("triton_tem_fused_addmm_0", ("triton", T.TEMPLATE, ("addmm",), 0, None)),
    ("triton_poi_fused_0", ("triton", T.POINTWISE, (), 0, None)),
    ("graph_0_cpp_fused_0", ("cpp", None, (), 0, 0)),
    ("triton_for_fused_0", ("triton", T.FOREACH, (), 0, None)),
    ("triton_poi_fused__to_copy_1", ("triton", T.POINTWISE, ("_to_copy",), 1, None)),
    (
        "triton_poi_fused_scaled_dot_product_attention_4",
        ("triton", T.POINTWISE, ("scaled_dot_product_attention",), 4, None),
    ),
    # a custom (non-aten) op stays one op
    (
        "triton_poi_fused_constant_pad_nd_moe_forward_0",
        ("triton", T.POINTWISE, ("constant_pad_nd", "moe_forward"), 0, None),
    ),
    (
        "graph_0_cpp_fused__softmax_add_convolution_cos_native_layer_norm_relu_1",
        (
            "cpp",
            None,
            ("_softmax", "add", "convolution", "cos", "native_layer_norm", "relu"),
            1,
            0,
        ),
    ),
    (
        "triton_red_fused_add_addmm_cat_mul_native_layer_norm_slice_split_unsqueeze_36",
        (
            "triton",
            T.REDUCTION,
            ("add", "addmm", "cat", "mul", "native_layer_norm", "slice", "split", "unsqueeze"),
            36,
            None,
        ),
    ),
    (
        "triton_per_fused__to_copy_abs_add_addmm_amax_div_empty_like_mean_mul_pow_rsqrt_sub_"
        "transpose_unsqueeze_view_zeros_33",
        (
            "triton",
            T.PERSISTENT_REDUCTION,
            (
                "_to_copy",
                "abs",
                "add",
                "addmm",
                "amax",
                "div",
                "empty_like",
                "mean",
                "mul",
                "pow",
                "rsqrt",
                "sub",
                "transpose",
                "unsqueeze",
                "view",
                "zeros",
            ),
            33,
            None,
        ),
    ),
    # descriptive_names="inductor_node": node-number words are dropped
    ("triton_poi_fused_add_1_mul_2_0", ("triton", T.POINTWISE, ("add", "mul"), 0, None)),
]


@pytest.mark.parametrize(("name", "expected"), DECODE_CASES, ids=[c[0][:60] for c in DECODE_CASES])
def test_decode(name: str, expected: tuple[object, ...]) -> None:
    fused = fused_kernel_ops(name)
    assert fused is not None
    assert (fused.prefix, fused.subkind, fused.ops, fused.index, fused.graph) == expected
    assert fused.descriptive


@pytest.mark.parametrize(
    "name",
    [
        "triton__0d1d2d",
        "triton__0d1d2d3d",
        "triton__0d1d23d",
        "triton__0d1d2d3d4d5d6d7d8d9d10d11d12d13d14",
    ],
)
def test_old_mangled_triton_names_are_triton_with_unknown_ops(name: str) -> None:
    assert fused_kernel_ops(name) == FusedName("triton", None, (), None, None, descriptive=False)


@pytest.mark.parametrize(
    "name",
    [
        "ampere_sgemm_128x64_nn",
        "aten::add",
        "attn_fwd",
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>",
        "triton_helpers",
        "my_triton_poi_fused_add_0",
        "",
    ],
)
def test_non_inductor_names_give_none(name: str) -> None:
    assert fused_kernel_ops(name) is None


# Every descriptive Inductor kernel name in the corpus (MI300X Flux, LLaMA block, vLLM, A100).
CORPUS_INDUCTOR_NAMES = [
    "triton_per_fused__to_copy_abs_add_amax_cat_div_empty_like_mean_mul_neg_stack_sub_transpose_"
    "unbind_unsqueeze_view_zeros_16",
    "triton_per_fused__to_copy_add_mean_mul_neg_stack_transpose_unbind_unsqueeze_view_15",
    "triton_per_fused__to_copy_addmm_mean_pow_view_7",
    "triton_poi_fused__to_copy_add_addmm_cat_mean_mul_pow_rsqrt_view_9",
    "triton_poi_fused__to_copy_add_cat_div_empty_like_mean_mul_neg_stack_sub_transpose_unbind_"
    "unsqueeze_view_13",
    "triton_poi_fused__to_copy_arange_cat_clone_cos_div_expand_mul_pow_reciprocal_select_sin_"
    "split_unsqueeze_view_10",
    "triton_poi_fused__to_copy_arange_cat_cos_div_exp_mul_sin_split_unsqueeze_0",
    "triton_poi_fused__to_copy_cat_slice_1",
    "triton_poi_fused__to_copy_div_empty_like_zeros_19",
    "triton_poi_fused__unsafe_view_addmm_cat_clone_gelu_transpose_view_34",
    "triton_poi_fused__unsafe_view_mul_silu_2",
    "triton_poi_fused_add_addmm_cat_mul_slice_split_unsqueeze_view_37",
    "triton_poi_fused_add_addmm_silu_4",
    "triton_poi_fused_addmm_gelu_view_24",
    "triton_poi_fused_clone_transpose_21",
    "triton_poi_fused_silu_38",
    "triton_red_fused__to_copy_add_addmm_div_empty_like_mean_mul_neg_pow_rsqrt_stack_sub_"
    "transpose_unbind_unsqueeze_view_31",
    "triton_red_fused_abs_amax_transpose_view_32",
    "triton_red_fused_add_addmm_mul_native_layer_norm_split_unsqueeze_view_22",
    "triton_red_fused_add_mean_mul_pow_rsqrt_0",
]


@pytest.mark.parametrize("name", CORPUS_INDUCTOR_NAMES)
def test_corpus_names_decode_to_known_sorted_ops_that_rebuild_the_name(name: str) -> None:
    fused = fused_kernel_ops(name)
    assert fused is not None and fused.ops
    assert all(op in known_aten_ops() for op in fused.ops)
    assert list(fused.ops) == sorted(fused.ops)  # Inductor sorts them
    body = name.split("_fused_", 1)[1].rsplit("_", 1)[0]
    assert "_".join(fused.ops) == body


def test_segmentation_prefers_fewer_known_ops_over_splitting_on_underscores() -> None:
    known = frozenset({"native_layer_norm", "native", "layer", "norm", "_to_copy", "to", "copy"})
    assert segment_ops("_to_copy_native_layer_norm", known) == ("_to_copy", "native_layer_norm")


def test_segmentation_prefers_sorted_readings() -> None:
    # ("b", "a_c") is not in sorted order, so Inductor cannot have written it
    known = frozenset({"b_a", "c", "b", "a_c"})
    assert segment_ops("b_a_c", known) == ("b_a", "c")
    assert segment_ops("b_a_c", frozenset({"b", "a_c"})) == ("b", "a_c")  # the only reading


def test_unknown_words_are_kept_as_one_op() -> None:
    assert segment_ops("add_my_custom_op", frozenset({"add"})) == ("add", "my_custom_op")
    assert segment_ops("", frozenset({"add"})) == ()


@pytest.mark.parametrize(
    ("name", "base", "functional"),
    [
        ("aten::native_layer_norm", "native_layer_norm", "native_layer_norm"),
        ("aten::add.Tensor", "add", "add"),
        ("aten::add_", "add_", "add"),
        ("aten::relu_", "relu_", "relu"),
        ("aten::__and__", "__and__", "__and__"),
        ("aten::_to_copy", "_to_copy", "_to_copy"),
        ("mkldnn::_linear_pointwise", "_linear_pointwise", "_linear_pointwise"),
        ("c10d::allreduce_", "allreduce_", "allreduce"),
        ("ProfilerStep#3", "ProfilerStep#3", "ProfilerStep#3"),
        ("triton_poi_fused_add_0", "triton_poi_fused_add_0", "triton_poi_fused_add_0"),
    ],
)
def test_eager_op_base(name: str, base: str, functional: str) -> None:
    assert eager_op_base(name) == base
    assert eager_op_base(name, strip_inplace=True) == functional


def test_shipped_op_list_is_functional_aten_names() -> None:
    ops = known_aten_ops()
    assert len(ops) > 1000
    assert {"add", "_softmax", "native_layer_norm", "_unsafe_view", "_to_copy", "addmm"} <= ops
    assert {"scaled_dot_product_attention", "constant_pad_nd", "empty_like"} <= ops
    assert not [op for op in ops if op.endswith("_") or "::" in op or "." in op]


def test_generator_keeps_functional_aten_base_names() -> None:
    spec = importlib.util.spec_from_file_location(
        "gen_aten_ops", REPO / "scripts" / "gen_aten_ops.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    names = ["aten::add.Tensor", "aten::add_.Tensor", "aten::add.out", "prims::add",
             "aten::__and__.Tensor", "aten::_to_copy", "quantized::add"]  # fmt: skip
    assert module.aten_base_names(names) == ["_to_copy", "add"]


def test_analysis_modules_do_not_import_torch() -> None:
    code = (
        "import sys\n"
        "import traceviz.analysis.inductor_names as f, traceviz.analysis.kernel_kinds, "
        "traceviz.analysis.traffic.estimates\n"
        "f.known_aten_ops()\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_never_raises_on_arbitrary_text(text: str) -> None:
    result = fused_kernel_ops(text)
    assert result is None or isinstance(result, FusedName)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["triton_poi_fused_", "triton_red_fused_", "graph_0_cpp_fused_", "cpp_fused_"]),
    st.lists(st.text(alphabet="abcdefgh_0123456789", max_size=12), max_size=30),
)
def test_never_raises_on_inductor_like_names(prefix: str, words: list[str]) -> None:
    result = fused_kernel_ops(prefix + "_".join(words))
    assert result is None or isinstance(result, FusedName)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(sorted(known_aten_ops())), min_size=1, max_size=12, unique=True))
def test_names_built_from_known_ops_are_covered_exactly(ops: list[str]) -> None:
    body = "_".join(sorted(ops))
    fused = fused_kernel_ops(f"triton_poi_fused_{body}_7")
    assert fused is not None and fused.index == 7
    assert "_".join(fused.ops) == body
