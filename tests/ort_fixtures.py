"""Tiny ONNX graphs, optimized and profiled by ONNX Runtime here, and a run directory with ORT
backends made from a sample run (for tests/test_onnx_graph.py and tests/test_backends_view.py).

Everything is built with onnx.helper and optimized with onnxruntime
(SessionOptions.graph_optimization_level + optimized_model_filepath), so the tests see what this
ORT version really does; one dynamo export of a sample model carries the aten-op metadata.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

LEVELS = ("disable", "basic", "extended", "all")


def ort_level(name: str) -> Any:
    import onnxruntime as ort

    return {
        "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }[name]


def save(model: Any, path: Path) -> Path:
    import onnx

    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def optimize(
    src: Path, level: str, dest: Path, *, feeds: dict[str, np.ndarray] | None = None,
    profile: Path | None = None, runs: int = 3,
) -> Any:  # fmt: skip
    """Optimize ``src`` at ``level`` into ``dest``; with ``profile``, run ``runs`` times with
    profiling on and move ORT's profile there. Returns the last run's outputs."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort_level(level)
    options.optimized_model_filepath = str(dest)
    options.intra_op_num_threads = 1
    if profile is not None:
        options.enable_profiling = True
        options.profile_file_prefix = str(profile.with_suffix(""))
    session = ort.InferenceSession(str(src), options, providers=["CPUExecutionProvider"])
    outputs = None
    if feeds is not None:
        for _ in range(runs):
            outputs = session.run(None, feeds)
    if profile is not None:
        shutil.move(session.end_profiling(), profile)
    return outputs


# --- tiny graphs -----------------------------------------------------------------------------


def _tensor(name: str, shape: list[int]) -> Any:
    from onnx import TensorProto, helper

    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _init(name: str, values: np.ndarray) -> Any:
    from onnx import numpy_helper

    return numpy_helper.from_array(values.astype(np.float32), name)


def _model(nodes: list[Any], inputs: list[Any], outputs: list[Any], inits: list[Any]) -> Any:
    from onnx import helper

    graph = helper.make_graph(nodes, "tiny", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def matmul_add(path: Path) -> Path:
    """2-D ``x @ W + b`` (→ Gemm from BASIC) then Relu, named like the legacy exporter."""
    from onnx import helper

    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["mm"], name="/fc/MatMul"),
        helper.make_node("Add", ["mm", "b"], ["fc"], name="/fc/Add"),
        helper.make_node("Relu", ["fc"], ["y"], name="/act/Relu"),
    ]
    inits = [_init("W", rng.standard_normal((8, 16))), _init("b", rng.standard_normal(16))]
    return save(_model(nodes, [_tensor("x", [4, 8])], [_tensor("y", [4, 16])], inits), path)


def gelu_erf(path: Path) -> Path:
    """The erf GELU pattern ``0.5 · x · (1 + erf(x / √2))`` (→ com.microsoft Gelu)."""
    from onnx import helper

    nodes = [
        helper.make_node("Div", ["x", "sqrt2"], ["d"], name="/act/Div"),
        helper.make_node("Erf", ["d"], ["e"], name="/act/Erf"),
        helper.make_node("Add", ["e", "one"], ["a"], name="/act/Add"),
        helper.make_node("Mul", ["x", "a"], ["m"], name="/act/Mul"),
        helper.make_node("Mul", ["m", "half"], ["y"], name="/act/Mul_1"),
    ]
    inits = [_init("sqrt2", np.array(np.sqrt(2.0))), _init("one", np.array(1.0)),
             _init("half", np.array(0.5))]  # fmt: skip
    return save(_model(nodes, [_tensor("x", [4, 16])], [_tensor("y", [4, 16])], inits), path)


def skip_layer_norm(path: Path) -> Path:
    """``LayerNorm(x + skip)`` (→ com.microsoft SkipLayerNormalization from EXTENDED)."""
    from onnx import helper

    rng = np.random.default_rng(1)
    nodes = [
        helper.make_node("Add", ["x", "skip"], ["s"], name="/add/Add"),
        helper.make_node(
            "LayerNormalization",
            ["s", "gamma", "beta"],
            ["y"],
            name="/ln/LN",
            axis=-1,
            epsilon=1e-5,
        ),
    ]
    inits = [_init("gamma", rng.standard_normal(16)), _init("beta", rng.standard_normal(16))]
    inputs = [_tensor("x", [2, 4, 16]), _tensor("skip", [2, 4, 16])]
    return save(_model(nodes, inputs, [_tensor("y", [2, 4, 16])], inits), path)


def constant_branch(path: Path) -> Path:
    """A branch computed from weights only (``Sqrt(c) * 2`` → folded to one initializer) added
    to ``x``, and an Identity (removed)."""
    from onnx import helper

    nodes = [
        helper.make_node("Sqrt", ["c"], ["c1"], name="/const/Sqrt"),
        helper.make_node("Mul", ["c1", "two"], ["c2"], name="/const/Mul"),
        helper.make_node("Identity", ["x"], ["xi"], name="/Identity"),
        helper.make_node("Add", ["xi", "c2"], ["y"], name="/Add"),
    ]
    inits = [_init("c", np.arange(16.0) + 1), _init("two", np.array(2.0))]
    return save(_model(nodes, [_tensor("x", [4, 16])], [_tensor("y", [4, 16])], inits), path)


def feeds_for(path: Path) -> dict[str, np.ndarray]:
    """Random float32 feeds for every graph input of the model at ``path``."""
    import onnx

    rng = np.random.default_rng(2)
    graph = onnx.load(str(path)).graph
    return {
        v.name: rng.standard_normal([d.dim_value for d in v.type.tensor_type.shape.dim]).astype(
            np.float32
        )
        for v in graph.input
    }


# --- a run directory with ORT backends ------------------------------------------------------


def make_ort_run(dest: Path, *, sample: Path) -> Path:
    """Copy the sample run ``sample`` (a built-in model) to ``dest``, export its model with
    the dynamo exporter, optimize and profile it at every level, and write run.json's
    ``backends.onnxruntime`` and ``latency`` sections as the runner does (docs/run-json.md)."""
    import onnxruntime as ort
    import torch

    shutil.copytree(sample, dest)
    info = json.loads((dest / "run.json").read_text())
    model, example = _sample_model(info["model"]["name"])
    onnx_dir = dest / "onnx"
    onnx_dir.mkdir()
    start = time.perf_counter()
    torch.onnx.export(model, example, str(onnx_dir / "model.onnx"), dynamo=True, opset_version=18)
    export_s = time.perf_counter() - start
    with torch.no_grad():
        expected = model(*example).numpy()
    feeds = feeds_for(onnx_dir / "model.onnx")
    feeds = {name: t.numpy() for name, t in zip(feeds, example, strict=True)}
    levels, rows = [], []
    for level in LEVELS:
        graph, profile = onnx_dir / f"ort_{level}.onnx", onnx_dir / f"ort_{level}.profile.json"
        start = time.perf_counter()
        (out,) = optimize(onnx_dir / "model.onnx", level, graph, feeds=feeds, profile=profile)
        diff = float(np.abs(out - expected).max())
        levels.append({
            "name": level, "graph": f"onnx/ort_{level}.onnx",
            "profile": f"onnx/ort_{level}.profile.json",
            "session_seconds": time.perf_counter() - start, "nodes": _nodes(graph),
            "check": {"passed": diff < 1e-3, "max_abs_diff": diff, "max_rel_diff": None,
                      "atol": 1e-5, "rtol": 1.3e-6, "reference": None, "culprit": None},
            "error": None,
        })  # fmt: skip
        rows.append({"backend": f"onnxruntime:{level}", "median_us": 100.0 + len(rows),
                     "iqr_us": 5.0, "samples_us": [95.0 + len(rows), 100.0 + len(rows),
                     105.0 + len(rows)], "ratio_to_eager": None})  # fmt: skip
    eager = info["timing"]["eager"]["median_us"]
    torch_rows = [
        {"backend": name, "median_us": stats["median_us"], "iqr_us": stats["iqr_us"],
         "samples_us": stats["samples_us"], "ratio_to_eager": None}
        for name, stats in (("eager", info["timing"]["eager"]),
                            ("compile", info["timing"]["compiled"]))
    ]  # fmt: skip
    rows = [*torch_rows, *rows]
    for row in rows:
        row["ratio_to_eager"] = row["median_us"] / eager
    info["backends"] = {"onnxruntime": {
        "export": {"exporter": "dynamo", "opset": 18, "seconds": export_s,
                   "path": "onnx/model.onnx", "fallback_reason": None},
        "ort_version": ort.__version__, "providers": ["CPUExecutionProvider"], "threads": 1,
        "levels": levels,
    }}  # fmt: skip
    info["latency"] = {"method": "round-robin", "threads": 1, "rows": rows}
    (dest / "run.json").write_text(json.dumps(info, indent=2))
    return dest


def _sample_model(name: str) -> tuple[Any, Any]:
    from traceviz.runner import zoo

    model, example = getattr(zoo, name.replace("-", "_"))()
    model.eval()
    return model, example


def _nodes(path: Path) -> int:
    import onnx

    return len(onnx.load(str(path)).graph.node)
