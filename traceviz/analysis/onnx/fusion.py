"""The cross-backend fusion table: each node ONNX Runtime fused, beside what Inductor did.

:func:`cross_fusion` takes one level's :class:`~traceviz.analysis.onnx.graph.GraphMapping`,
optionally that level's profile (:mod:`~traceviz.analysis.onnx.profile_nodes`) and the
comparison's fusion map, and gives one row per fused (or replaced) group of optimized nodes:
the exported nodes and aten ops it replaced, its time per run, and the Inductor kernels that
fused the same aten ops.

Time is a partition: a group's time is the sum of its own optimized nodes' profile time (each
node in one group), so a level's rows add up to at most what its profile measured.

Inductor kernels are matched, not credited (no time moves): a compiled kernel matches when
the eager ops the fusion map credited to it share an op key
(:func:`~traceviz.analysis.fusion.op_keys.op_key`) with the group's aten ops; among those, the
kernels sharing the most keys are kept, narrowed to the kernels of the group's source lines
when the fusion map's by-line view has them (``match`` says ``aten-op+line``). A legacy
export has no aten ops: its ONNX op types stand in (``onnx-op``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from traceviz import schema
from traceviz.analysis.fusion.lines import ByLine, split_kernel_names
from traceviz.analysis.fusion.op_keys import op_key
from traceviz.analysis.fusion.ops import KernelOps
from traceviz.analysis.onnx.graph import GraphMapping, Mapped
from traceviz.analysis.onnx.profile_nodes import NodeTimes, ProfileNodes
from traceviz.schema import Float, Int, Text, dtypes

__all__ = ["CROSS_FUSION_DTYPES", "CrossFusion", "cross_fusion"]

MAX_KERNELS = 3  # Inductor kernels listed per row

#: ONNX op type → the aten op key it stands for (legacy exports, which record no aten op).
ONNX_OP_KEYS: dict[str, str] = {
    "MatMul": "mm", "Gemm": "mm", "Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div",
    "Erf": "erf", "Tanh": "tanh", "Relu": "relu", "Sigmoid": "sigmoid", "Softmax": "softmax",
    "LayerNormalization": "layer_norm", "Pow": "pow", "Sqrt": "sqrt", "Conv": "convolution",
    "BatchNormalization": "batch_norm", "Gelu": "gelu", "ReduceMean": "mean", "Where": "where",
    "Cos": "cos", "Sin": "sin", "Exp": "exp", "Neg": "neg", "Reciprocal": "reciprocal",
}  # fmt: skip


class CrossFusion:
    """Columns of :func:`cross_fusion`: one row per fused/replaced group of an ORT level."""

    level: Text = Mapped.level
    node: Text = Mapped.node
    op: Text = Mapped.op
    kind: Text = Mapped.kind
    exported_nodes: Text = Mapped.exported_nodes
    exported_count: Int = Mapped.exported_count
    aten_ops: Text = Mapped.aten_ops
    scopes: Text = Mapped.scopes
    calls_per_run: Float = "calls_per_run"  # profile Node events of its nodes per run (NaN)
    time_us: Float = "time_us"  # their time per run, µs, measured (float64; NaN: no profile)
    inductor_kernels: Text = "inductor_kernels"  # compiled kernels fusing the same ops (str)
    match: Text = "match"  # "aten-op+line", "aten-op", "onnx-op", or "" (no kernel matched) (str)
    shared: Int = Mapped.shared  # exported nodes it needed that an earlier group claimed (Int64)


CROSS_FUSION_DTYPES: dict[str, str] = dtypes(CrossFusion)


def cross_fusion(
    mapping: GraphMapping,
    *,
    profile: ProfileNodes | None = None,
    kernel_ops: pd.DataFrame | None = None,
    by_line: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The fused groups of ``mapping`` with their profile time and Inductor kernels (module
    docstring). ``kernel_ops`` is :attr:`FusionMap.ops
    <traceviz.analysis.fusion.fusion_map.FusionMap.ops>`, ``by_line`` :attr:`FusionMap.by_line`."""
    fused = mapping.fused
    per_node = _per_node(profile)
    kernels = _kernel_keys(kernel_ops)
    lines = _line_kernels(by_line)
    rows = []
    for row in fused.to_dict("records"):
        nodes = [n for n in str(row[Mapped.ort_nodes]).split(", ") if n]
        calls, time_us = _time(nodes, per_node, profile)
        names, match = _inductor(row, kernels, lines)
        head = [row[c] for c in list(CROSS_FUSION_DTYPES)[:8]]
        rows.append([*head, calls, time_us, names, match, row[Mapped.shared]])
    table = pd.DataFrame(rows, columns=list(CROSS_FUSION_DTYPES))
    return schema.conform(table, CROSS_FUSION_DTYPES)


def _per_node(profile: ProfileNodes | None) -> dict[str, tuple[int, float]]:
    if profile is None:
        return {}
    nodes = profile.nodes
    return {
        str(n): (int(c), float(t))
        for n, c, t in zip(
            nodes[NodeTimes.node], nodes[NodeTimes.calls], nodes[NodeTimes.time_us], strict=True
        )
    }


def _time(
    nodes: list[str], per_node: dict[str, tuple[int, float]], profile: ProfileNodes | None
) -> tuple[float, float]:
    if profile is None or not profile.runs:
        return float("nan"), float("nan")
    calls = sum(per_node.get(n, (0, 0.0))[0] for n in nodes)
    time_us = sum(per_node.get(n, (0, 0.0))[1] for n in nodes)
    return calls / profile.runs, time_us / profile.runs


def _kernel_keys(kernel_ops: pd.DataFrame | None) -> dict[str, set[str]]:
    """Compiled kernel → the op keys of the eager ops credited to it."""
    keys: dict[str, set[str]] = {}
    if kernel_ops is None or kernel_ops.empty:
        return keys
    for kernel, op in zip(kernel_ops[KernelOps.kernel], kernel_ops[KernelOps.op], strict=True):
        key = op_key(str(op))
        if key is not None:
            keys.setdefault(str(kernel), set()).add(key)
    return keys


def _line_kernels(by_line: pd.DataFrame | None) -> dict[str, set[str]]:
    """``file:line`` → compiled kernels holding that line's ops (the by-line view)."""
    if by_line is None or by_line.empty:
        return {}
    out: dict[str, set[str]] = {}
    for file, line, kernels in zip(
        by_line[ByLine.file], by_line[ByLine.line], by_line[ByLine.compiled_kernels], strict=True
    ):
        names = set(split_kernel_names(kernels))
        out.setdefault(f"{file}:{line}", set()).update(names)
    return out


def _inductor(
    row: dict[Any, object], kernels: dict[str, set[str]], lines: dict[str, set[str]]
) -> tuple[str, str]:
    aten = _split(row[Mapped.aten_ops])
    keys = {k for k in (op_key(a) for a in aten) if k is not None}
    basis = "aten-op"
    if not keys:
        keys = {ONNX_OP_KEYS[t] for t in _split(row[Mapped.exported_ops]) if t in ONNX_OP_KEYS}
        basis = "onnx-op"
    shared = {k: len(ks & keys) for k, ks in kernels.items() if ks & keys}
    if not shared:
        return "", ""
    best = max(shared.values())
    found = {k for k, n in shared.items() if n == best}
    on_lines = set().union(*(lines.get(s, set()) for s in _split(row[Mapped.sources])))
    if found & on_lines:
        found, basis = found & on_lines, basis + "+line"
    ranked = sorted(found, key=lambda k: (len(kernels[k]), k))[:MAX_KERNELS]  # fewest extras
    return ", ".join(ranked), basis


def _split(value: object) -> Iterable[str]:
    return [v for v in str(value or "").split(", ") if v]
