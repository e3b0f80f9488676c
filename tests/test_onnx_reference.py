"""ORT's fused ops in onnx.reference (traceviz.runner.onnx_reference), each checked against ORT.

Every op runs as a one-node graph built with ``onnx.helper``; ORT runs it with graph
optimizations disabled so that the contrib node executes as written, and the reference result
must match ORT's within float32 tolerance. Attributes and optional inputs/outputs are varied.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

from traceviz.errors import UsageError  # noqa: E402
from traceviz.runner.onnx_reference import (  # noqa: E402
    UnsupportedOpError,
    reference_outputs,
    unsupported_ops,
)

F = TensorProto.FLOAT
RNG = np.random.default_rng(11)


def _model(
    op: str,
    inputs: dict[str, np.ndarray | None],
    outputs: list[str],
    *,
    initializers: dict[str, np.ndarray] | None = None,
    **attrs: Any,
) -> onnx.ModelProto:
    """One ``com.microsoft`` node; a ``None`` input is an omitted optional input ("")."""
    initializers = initializers or {}
    names = ["" if value is None else name for name, value in inputs.items()]
    while names and names[-1] == "":
        names.pop()
    node = helper.make_node(op, names, outputs, domain="com.microsoft", **attrs)
    graph_inputs = [
        helper.make_tensor_value_info(name, F, list(value.shape))
        for name, value in inputs.items()
        if value is not None and name not in initializers
    ]
    graph = helper.make_graph(
        [node],
        op.lower(),
        graph_inputs,
        [helper.make_tensor_value_info(name, F, None) for name in outputs if name],
        initializer=[onnx.numpy_helper.from_array(v, name) for name, v in initializers.items()],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8)


def _ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return [np.asarray(x) for x in session.run(None, feeds)]


def _check(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    expected = _ort(model, feeds)
    got = reference_outputs(model, feeds)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape
        assert g.dtype == e.dtype
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)
    return got


def _randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


# (op, input shapes: None is an omitted optional input, attributes); the first input is
# scaled by 3, into GELU's curved range
CASES = [
    ("FastGelu", {"x": (2, 3, 8)}, {}),
    ("FastGelu", {"x": (2, 3, 8), "bias": (8,)}, {}),
    ("QuickGelu", {"x": (2, 5, 8)}, {}),
    ("QuickGelu", {"x": (2, 5, 8)}, {"alpha": 1.0}),
    *[
        ("FusedMatMul", {"a": a, "b": b}, attrs)
        for a, b, attrs in [
            ((3, 4), (4, 5), {}),
            ((3, 4), (4, 5), {"alpha": 0.125}),
            ((4, 3), (4, 5), {"transA": 1}),
            ((2, 3, 4), (2, 5, 4), {"transB": 1, "alpha": 2.0}),
            ((2, 4, 3), (2, 5, 4), {"transA": 1, "transB": 1}),
            ((2, 3, 4), (4, 5), {"alpha": 0.5}),
            ((3, 2, 4), (2, 4, 5), {"transBatchA": 1}),
            ((2, 3, 4), (5, 2, 4), {"transBatchB": 1, "transB": 1}),
            ((4, 2, 3), (2, 4, 5), {"transBatchA": 1, "transA": 1}),
        ]
    ],
    *[
        ("SkipLayerNormalization",
         {"x": (2, 3, 16), "skip": (2, 3, 16), "gamma": (16,), "beta": beta, "bias": bias},
         {"epsilon": 1e-5})
        for beta in (None, (16,)) for bias in (None, (16,))
    ],
    ("FusedConv", {"x": (1, 4, 7, 7), "w": (4, 2, 3, 3), "b": (4,), "z": (1, 4, 3, 3)},
     {"group": 2, "strides": [2, 2], "activation": "Relu"}),
    ("FusedGemm", {"a": (3, 5), "b": (3, 4)}, {"transA": 1, "activation": "Relu"}),
]  # fmt: skip


@pytest.mark.parametrize(("op", "shapes", "attrs"), CASES)
def test_op_matches_ort(op: str, shapes: dict[str, Any], attrs: dict[str, Any]) -> None:
    inputs = {name: None if shape is None else _randn(*shape) for name, shape in shapes.items()}
    first = next(iter(inputs))
    inputs[first] = inputs[first] * 3  # type: ignore[operator]
    feeds = {k: v for k, v in inputs.items() if v is not None}
    _check(_model(op, inputs, ["y"], **attrs), feeds)


def test_gelu_and_bias_gelu_match_ort() -> None:
    a, b = _randn(4, 16) * 3, _randn(16)
    _check(_model("Gelu", {"a": a}, ["y"]), {"a": a})
    out = _check(_model("BiasGelu", {"a": a, "b": b}, ["y"]), {"a": a, "b": b})
    # erf, not tanh: the two forms differ by more than the tolerance somewhere
    fast = reference_outputs(_model("FastGelu", {"a": a, "b": b}, ["y"]), {"a": a, "b": b})
    assert np.abs(out[0] - fast[0]).max() > 1e-5


def test_skip_layer_norm_extra_outputs_match_ort() -> None:
    x, skip, gamma, beta, bias = _randn(2, 3, 16), _randn(2, 3, 16), *(_randn(16) for _ in "abc")
    inputs = {"x": x, "skip": skip, "gamma": gamma, "beta": beta, "bias": bias}
    # the input+skip+bias sum (4th output) feeds the next residual in a real graph
    model = _model("SkipLayerNormalization", inputs, ["y", "", "", "sum"], epsilon=1e-5)
    got = _check(model, inputs)
    np.testing.assert_allclose(got[1], x + skip + bias, rtol=1e-6)
    model = _model("SkipLayerNormalization", inputs, ["y", "mean", "inv_std"])
    _check(model, inputs)


def test_default_epsilon_is_orts() -> None:
    # a constant row: variance 0, so the output is beta exactly when epsilon matches ORT's
    x = np.full((1, 2, 8), 3.0, dtype=np.float32)
    inputs = {"x": x, "skip": np.zeros_like(x), "gamma": _randn(8), "beta": _randn(8)}
    _check(_model("SkipLayerNormalization", inputs, ["y"]), inputs)


def test_weights_as_initializers_and_model_path(tmp_path: Any) -> None:
    a, w = _randn(2, 4), _randn(4, 3)
    model = _model("FusedMatMul", {"a": a, "w": w}, ["y"], initializers={"w": w}, alpha=3.0)
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    (got,) = reference_outputs(path, {"a": a, "ignored": a})
    np.testing.assert_allclose(got, 3.0 * a @ w, rtol=1e-5)


def test_unknown_contrib_op_is_named() -> None:
    x = _randn(2, 4)
    model = _model("Attention", {"x": x}, ["y"])
    assert unsupported_ops(model) == [("com.microsoft:Attention", "y")]
    with pytest.raises(UnsupportedOpError, match=r"com\.microsoft:Attention.*'y'") as err:
        reference_outputs(model, {"x": x})
    assert isinstance(err.value, UsageError)
    assert err.value.op == "com.microsoft:Attention"


def test_ort_standard_domain_extension_is_unsupported() -> None:
    # ORT registers SimplifiedLayerNormalization in the ONNX domain; onnx.reference has none
    x = _randn(2, 4)
    node = helper.make_node("SimplifiedLayerNormalization", ["x", "g"], ["y"], name="rms")
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", F, [2, 4])],
        [helper.make_tensor_value_info("y", F, None)],
        initializer=[onnx.numpy_helper.from_array(_randn(4), "g")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(UnsupportedOpError, match=r"SimplifiedLayerNormalization.*'rms'"):
        reference_outputs(model, {"x": x})


def test_fused_graph_against_unfused_graph() -> None:
    """ORT's own fusion of MatMul+Add+Gelu-like ops: the optimized graph, evaluated by the
    reference ops, matches the unfused graph evaluated by onnx.reference alone."""
    x = _randn(1, 4, 8)
    w, b = _randn(8, 8), _randn(8)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["mm"]),
        helper.make_node("Add", ["mm", "b"], ["pre"]),
        helper.make_node("Mul", ["pre", "half"], ["h"]),
        helper.make_node("Div", ["pre", "sqrt2"], ["d"]),
        helper.make_node("Erf", ["d"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["e1"]),
        helper.make_node("Mul", ["h", "e1"], ["y"]),
    ]
    consts = {
        "w": w,
        "b": b,
        "half": np.array(0.5, np.float32),
        "sqrt2": np.array(np.sqrt(2.0), np.float32),
        "one": np.array(1.0, np.float32),
    }
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", F, [1, 4, 8])],
        [helper.make_tensor_value_info("y", F, [1, 4, 8])],
        initializer=[onnx.numpy_helper.from_array(v, k) for k, v in consts.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    optimized = onnx.ModelProto()
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        options.optimized_model_filepath = str(Path(tmp) / "opt.onnx")
        ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        optimized = onnx.load(options.optimized_model_filepath)
    fused = {n.op_type for n in optimized.graph.node if n.domain == "com.microsoft"}
    assert fused & {"BiasGelu", "Gelu", "FastGelu"}, [n.op_type for n in optimized.graph.node]
    (want,) = reference_outputs(model, {"x": x})
    (got,) = reference_outputs(optimized, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


ACTIVATIONS = [
    ("", []),
    ("Relu", []),
    ("Tanh", []),
    ("Sigmoid", []),
    ("LeakyRelu", [0.2]),
    ("Clip", [-0.5, 0.5]),
    ("HardSigmoid", [0.3, 0.4]),
]


@pytest.mark.parametrize(("activation", "params"), ACTIVATIONS)
def test_fused_conv_matches_ort(activation: str, params: list[float]) -> None:
    x, w, b = _randn(2, 4, 6, 6), _randn(8, 4, 3, 3), _randn(8)
    attrs: dict[str, Any] = {"pads": [1, 1, 1, 1], "strides": [1, 1]}
    if activation:
        attrs["activation"] = activation
    if params:
        attrs["activation_params"] = params
    _check(_model("FusedConv", {"x": x, "w": w, "b": b}, ["y"], **attrs), {"x": x, "w": w, "b": b})


# ORT's FusedGemm always has an activation, and never Clip ("unknown kernel type")
@pytest.mark.parametrize(("activation", "params"), ACTIVATIONS[1:5] + ACTIVATIONS[6:])
def test_fused_gemm_matches_ort(activation: str, params: list[float]) -> None:
    a, b, c = _randn(5, 3), _randn(4, 3), _randn(4)
    attrs: dict[str, Any] = {"transB": 1, "alpha": 0.5, "beta": 2.0}
    if activation:
        attrs["activation"] = activation
    for name, value in zip(("activation_alpha", "activation_beta"), params, strict=False):
        attrs[name] = value
    _check(_model("FusedGemm", {"a": a, "b": b, "c": c}, ["y"], **attrs), {"a": a, "b": b, "c": c})


def test_unknown_op_inside_a_subgraph_is_named() -> None:
    x = _randn(2, 4)
    inner = helper.make_graph(
        [helper.make_node("Attention", ["x"], ["z"], domain="com.microsoft", name="inner")],
        "then",
        [],
        [helper.make_tensor_value_info("z", F, None)],
    )
    other = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["w"], name="plain")],
        "else",
        [],
        [helper.make_tensor_value_info("w", F, None)],
    )
    cond = helper.make_node("If", ["c"], ["y"], name="if", then_branch=inner, else_branch=other)
    graph = helper.make_graph(
        [cond],
        "g",
        [
            helper.make_tensor_value_info("x", F, [2, 4]),
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
        ],
        [helper.make_tensor_value_info("y", F, None)],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    assert unsupported_ops(model) == [("com.microsoft:Attention", "inner")]
    with pytest.raises(UnsupportedOpError, match="'inner'"):
        reference_outputs(model, {"x": x, "c": np.array(False)})
