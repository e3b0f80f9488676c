"""An ONNX graph file as plain node records: the input of the ONNX Runtime graph analyses.

:func:`read_graph` reads an ``.onnx`` file with the ``onnx`` package (the ``traceviz[onnx]``
extra, imported only here and only when called) into a :class:`Graph`: its nodes in file
order (each with its tensors, and the aten op, module scope and source line the exporter
recorded), its graph inputs and its initializers. No weights are loaded.

Where the names of aten ops come from:

- the dynamo exporter (``torch.onnx.export(..., dynamo=True)``) tags every node with
  ``metadata_props``: ``pkg.torch.onnx.class_hierarchy`` (last item: ``aten.linear.default``),
  ``pkg.torch.onnx.name_scopes`` (the module path) and ``pkg.torch.onnx.stack_trace`` (the
  Python frames); basis ``metadata``;
- the legacy exporter records only a node name such as ``/fc1/MatMul`` (module path
  ``fc1``), no aten op; basis ``name``;
- ONNX Runtime drops node metadata from level BASIC up, so an optimized graph has neither:
  it is mapped back by dataflow (:mod:`traceviz.analysis.onnx.graph`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from traceviz.errors import TraceFormatError, UsageError
from traceviz.parse.compile_log import is_library

__all__ = [
    "DEFAULT_DOMAIN",
    "Graph",
    "Node",
    "aten_name",
    "graph_of",
    "onnx_module",
    "read_graph",
]

#: How the ONNX standard domain is written (``""`` in the file).
DEFAULT_DOMAIN = "ai.onnx"
ONNX_EXTRA = "pip install 'traceviz[onnx]'"

_CLASS_HIERARCHY = "pkg.torch.onnx.class_hierarchy"
_NAME_SCOPES = "pkg.torch.onnx.name_scopes"
_STACK = "pkg.torch.onnx.stack_trace"
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


@dataclass(frozen=True)
class Node:
    """One node of an ONNX graph.

    ``name`` is unique in its graph (``<op_type>_<index>`` for a node the file left unnamed);
    ``aten_op`` is the aten op the exporter recorded (``aten::linear``; ``""`` when none);
    ``scope`` the module path (``fc1``, ``transformer.h.0.mlp``; ``""`` at the top);
    ``source`` the innermost user frame (outside torch, transformers, site-packages) as
    ``file:line`` (``""`` when none).
    """

    index: int
    name: str
    domain: str
    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    aten_op: str = ""
    scope: str = ""
    source: str = ""

    @property
    def kind(self) -> str:
        """``domain:op_type``, e.g. ``ai.onnx:MatMul``, ``com.microsoft:FastGelu``."""
        return f"{self.domain}:{self.op_type}"


@dataclass(frozen=True)
class Graph:
    """An ONNX graph's nodes (file order), graph input and initializer names, and where it
    came from (``path``; ``"<model>"`` for an in-memory model)."""

    path: str
    nodes: tuple[Node, ...]
    inputs: frozenset[str]
    initializers: frozenset[str]

    def tensors(self) -> frozenset[str]:
        """Every tensor name the graph holds: inputs, initializers, node outputs."""
        produced = {t for n in self.nodes for t in n.outputs if t}
        return self.inputs | self.initializers | frozenset(produced)


def onnx_module() -> Any:
    """The ``onnx`` package, or a :class:`UsageError` naming the extra that installs it."""
    try:
        import onnx
    except ImportError as err:  # pragma: no cover - the extra is installed in the test venv
        raise UsageError(f"reading ONNX graphs needs the onnx package: {ONNX_EXTRA}") from err
    return onnx


def read_graph(path: str | Path) -> Graph:
    """The graph of the ``.onnx`` file at ``path`` (weights not loaded); a missing or
    unreadable file raises :class:`TraceFormatError` naming it."""
    onnx = onnx_module()
    try:
        model = onnx.load(str(path), load_external_data=False)
    except FileNotFoundError as err:
        raise TraceFormatError(path, "no such ONNX file") from err
    except Exception as err:  # onnx raises DecodeError, google.protobuf errors, OSError
        raise TraceFormatError(path, f"not a readable ONNX model: {err}") from err
    return graph_of(model, path=str(path))


def graph_of(model: Any, *, path: str = "<model>") -> Graph:
    """A :class:`Graph` from an ``onnx.ModelProto`` (its main graph; subgraphs of control
    flow nodes stay inside their node)."""
    graph = model.graph
    nodes = tuple(_node(i, proto) for i, proto in enumerate(graph.node))
    names = [n.name for n in nodes]
    if len(set(names)) != len(names):  # ONNX does not require unique names: make them so
        nodes = tuple(_unique(nodes))
    return Graph(
        path=path,
        nodes=nodes,
        inputs=frozenset(v.name for v in graph.input),
        initializers=frozenset(t.name for t in graph.initializer)
        | frozenset(t.values.name for t in graph.sparse_initializer),
    )


def _node(index: int, proto: Any) -> Node:
    meta = {p.key: p.value for p in proto.metadata_props}
    return Node(
        index=index,
        name=proto.name or f"{proto.op_type}_{index}",
        domain=proto.domain or DEFAULT_DOMAIN,
        op_type=proto.op_type,
        inputs=tuple(proto.input),
        outputs=tuple(proto.output),
        aten_op=_aten_op(meta),
        scope=_scope(meta, proto.name),
        source=_source(meta.get(_STACK, "")),
    )


def _unique(nodes: tuple[Node, ...]) -> list[Node]:
    seen: set[str] = set()
    out = []
    for node in nodes:
        name = node.name if node.name not in seen else f"{node.name}#{node.index}"
        seen.add(name)
        out.append(Node(**{**node.__dict__, "name": name}))
    return out


def aten_name(target: str) -> str:
    """``aten.linear.default`` → ``aten::linear``; ``aten.add.Tensor`` → ``aten::add``
    (the eager trace's spelling, overload dropped); other names unchanged."""
    parts = target.split(".")
    if len(parts) >= 2 and parts[0] in ("aten", "prims", "quantized"):
        return f"{parts[0]}::{parts[1]}"
    return target


def _aten_op(meta: dict[str, str]) -> str:
    hierarchy = _literal_list(meta.get(_CLASS_HIERARCHY, ""))
    if hierarchy and hierarchy[-1].startswith(("aten.", "prims.")):
        return aten_name(hierarchy[-1])
    return ""


def _scope(meta: dict[str, str], name: str) -> str:
    scopes = _literal_list(meta.get(_NAME_SCOPES, ""))
    if scopes:  # ['', 'h', 'h.0', 'h.0.mlp', 'gelu']: root, each module's full path, FX node
        return scopes[-2] if len(scopes) > 2 else ""
    if name.startswith("/"):  # legacy exporter: /fc1/act/Mul → fc1.act
        return ".".join(p for p in name.split("/")[1:-1] if p)
    return ""


def _source(stack: str) -> str:
    """The innermost user frame, ``file:line`` (library frames folded to their caller, as the
    fusion map's by-line view does)."""
    frames = [(f, line) for f, line in _FRAME.findall(stack) if not is_library(f)]
    return f"{frames[-1][0]}:{frames[-1][1]}" if frames else ""


def _literal_list(text: str) -> list[str]:
    if not text.startswith("["):
        return []
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return []
    return [str(v) for v in value] if isinstance(value, list) else []
