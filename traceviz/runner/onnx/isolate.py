"""Find the node that makes an optimized graph wrong: run each node alone on exported values.

The exported graph (ORT optimizations off) is run once with every intermediate tensor exposed
as an output; those are the expected values. Each node of the optimized graph whose inputs are
all such tensors (or its own initializers) and whose outputs include one is then run alone, as
a one-node model built with ``onnx.helper``, and its outputs are checked against the expected
values with the dtype tolerances of the output check. The first node, in graph order, that
raises or differs is the culprit. Nodes whose inputs exist only in the optimized graph (made by
a rewrite) cannot be checked alone and are skipped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from traceviz.runner.models import one_line
from traceviz.runner.onnx.extra import require
from traceviz.runner.options import tolerance_for
from traceviz.runs.runinfo_backends import Culprit


def find_culprit(exported: Any, optimized: Any, feeds: dict[str, np.ndarray]) -> Culprit | None:
    """The first node of ``optimized`` (a ModelProto) that fails alone on ``exported``'s values;
    None when every node that can be checked alone agrees."""
    values = {**feeds, **intermediate_values(exported, feeds)}
    initializers = {i.name: i for i in optimized.graph.initializer}
    for node in optimized.graph.node:
        found = check_node(node, optimized, values, initializers)
        if found is not None:
            return found
    return None


def find_culprit_in_files(
    exported: Path, optimized: Path, feeds: dict[str, np.ndarray]
) -> Culprit | None:
    import onnx

    return find_culprit(onnx.load(str(exported)), onnx.load(str(optimized)), feeds)


def intermediate_values(model: Any, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every node output of ``model``, by tensor name, from one unoptimized ORT run."""
    import onnx

    exposed = onnx.ModelProto()
    exposed.CopyFrom(model)
    present = {o.name for o in exposed.graph.output}
    for node in exposed.graph.node:
        for name in node.output:
            if name and name not in present:
                exposed.graph.output.append(onnx.ValueInfoProto(name=name))
                present.add(name)
    names = [o.name for o in exposed.graph.output]
    return dict(zip(names, _run(exposed, feeds), strict=True))


def check_node(
    node: Any, graph_model: Any, values: dict[str, np.ndarray], initializers: dict[str, Any]
) -> Culprit | None:
    """Run ``node`` alone; a :class:`Culprit` when it raises or differs from ``values``."""
    inputs = [i for i in node.input if i]
    if any(i not in values and i not in initializers for i in inputs):
        return None
    if any(a.g.node or a.graphs for a in node.attribute):  # If/Loop bodies need their scope
        return None
    outputs = [o for o in node.output if o in values]
    if not outputs:
        return None
    op_type = (
        f"{node.domain}:{node.op_type}" if node.domain not in ("", "ai.onnx") else node.op_type
    )
    model = one_node_model(node, graph_model, values, initializers, outputs)
    feeds = {i: values[i] for i in dict.fromkeys(inputs) if i not in initializers}
    try:
        got = _run(model, feeds)
    except Exception as err:
        return Culprit(node=node.name, op_type=op_type, error=one_line(err))
    for name, actual in zip(outputs, got, strict=True):
        problem = _difference(name, values[name], actual)
        if problem:
            return Culprit(node=node.name, op_type=op_type, error=problem)
    return None


def one_node_model(
    node: Any,
    graph_model: Any,
    values: dict[str, np.ndarray],
    initializers: dict[str, Any],
    outputs: list[str],
) -> Any:
    """A model of ``node`` alone: graph inputs typed from ``values``, the node's initializers
    copied, ``outputs`` as the graph's outputs, the opsets of ``graph_model``."""
    from onnx import helper

    inputs = [i for i in dict.fromkeys(node.input) if i and i not in initializers]
    graph = helper.make_graph(
        [node],
        "traceviz_isolate",
        [_value_info(n, values[n]) for n in inputs],
        [_value_info(n, values[n], shape=False) for n in outputs],
        initializer=[initializers[i] for i in dict.fromkeys(node.input) if i in initializers],
    )
    model = helper.make_model(graph, opset_imports=list(graph_model.opset_import))
    model.ir_version = graph_model.ir_version
    return model


def _value_info(name: str, value: np.ndarray, *, shape: bool = True) -> Any:
    from onnx import helper

    elem = helper.np_dtype_to_tensor_dtype(np.asarray(value).dtype)
    return helper.make_tensor_value_info(name, elem, list(np.shape(value)) if shape else None)


def _difference(name: str, expected: np.ndarray, actual: np.ndarray) -> str | None:
    """Why ``actual`` is not ``expected`` (None when it is, within the dtype tolerances)."""
    expected, actual = np.asarray(expected), np.asarray(actual)
    if expected.shape != actual.shape:
        return f"output {name}: shape {list(actual.shape)}, expected {list(expected.shape)}"
    if not np.issubdtype(expected.dtype, np.floating):
        same = np.array_equal(expected, actual)
        return None if same else f"output {name}: values differ ({expected.dtype})"
    rtol, atol = tolerance_for([str(expected.dtype)])
    e, a = expected.astype(np.float64), actual.astype(np.float64)
    diff = np.abs(a - e)
    diff[np.isnan(a) & np.isnan(e)] = 0.0
    bad = ~(diff <= atol + rtol * np.abs(e))
    if not bad.any():
        return None
    worst = float(np.nanmax(np.where(np.isnan(diff), np.inf, diff)))
    return (
        f"output {name}: max abs diff {worst:.3g} at {int(bad.sum())} of {bad.size} elements "
        f"(rtol {rtol:g}, atol {atol:g})"
    )


def _run(model: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """``model`` in an ORT CPU session with graph optimizations off."""
    ort = require("onnxruntime")
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return list(session.run(None, feeds))
