"""What ONNX Runtime did to an exported graph: op counts, and each optimized node mapped back.

ORT drops node metadata from level BASIC up, so an optimized graph is mapped back to the
exported one by **dataflow**: tensors that exist in both graphs (graph inputs, weights and
every intermediate value ORT kept) are fixed points. :func:`map_graph`

1. groups the optimized nodes joined by tensors the exported graph does not have (ORT's
   ``Reshape → Gemm → Reshape`` around a 3-D MatMul+Add is one group);
2. walks the exported graph back from each group's outputs that exist in both graphs,
   stopping at tensors the optimized graph still has: the exported nodes in between are the
   ones the group replaced (its aten ops, scopes and source lines come with them);
   An optimizer that renames the tensors between the nodes it fuses (the offline
   ``onnxruntime.transformers`` optimizer) makes the whole chain one group (``op`` "A+B+…"):
   no split is guessed that the tensors do not show;
3. calls an exported node no group claims ``folded``: ``constant-folded`` when it computes
   from constants only, else ``removed`` (Identity, Dropout, dead code).

Credits are a partition: each exported node is claimed by at most one group (the first, in
the optimized graph's order, that needs it; a later group that needed it too counts it in
``shared``), and claimed and folded nodes together are at most the exported nodes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import pandas as pd

from traceviz import schema
from traceviz.analysis.onnx.nodes import Graph, Node
from traceviz.schema import Int, Text, dtypes

__all__ = [
    "FOLDED_DTYPES",
    "MAPPED_DTYPES",
    "OP_COUNTS_DTYPES",
    "Folded",
    "GraphMapping",
    "Mapped",
    "OpCounts",
    "map_graph",
    "op_counts",
]

EXPORTED = "exported"  # the graph label of the exported graph in op counts

#: Node kinds of :class:`Mapped`.
KEPT, FUSED, REPLACED, ADDED = "kept", "fused", "replaced", "added"
#: Reasons of :class:`Folded`.
CONSTANT_FOLDED, REMOVED = "constant-folded", "removed"

#: Ops ORT puts around a fused node to adapt shapes or types (not the group's name).
GLUE_OPS = frozenset(
    {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Cast", "Identity", "Flatten"}
)


class OpCounts:
    """Columns of :func:`op_counts`: one row per (graph, op)."""

    graph: Text = "graph"  # "exported", or the ORT level's name ("basic", "all", …) (str)
    op: Text = "op"  # "domain:op_type", e.g. "ai.onnx:MatMul", "com.microsoft:FastGelu" (str)
    count: Int = "count"  # nodes of that op in the graph (Int64)


class Mapped:
    """Columns of :attr:`GraphMapping.nodes`: one row per group of optimized nodes."""

    level: Text = "level"  # the ORT level's name (str)
    node: Text = "node"  # the group's main node (its first node not in GLUE_OPS) (str)
    op: Text = "op"  # its "domain:op_type"; "A+B" when a group has several main nodes (str)
    kind: Text = "kind"  # "fused" (≥ 2 exported nodes), "replaced" (1, another op), "kept" (1,
    # the same op) or "added" (no exported node) (str)
    ort_nodes: Text = "ort_nodes"  # the group's optimized node names, comma-separated (str)
    exported_nodes: Text = "exported_nodes"  # exported node names it replaced, comma-separated
    exported_count: Int = "exported_count"  # how many (Int64)
    exported_ops: Text = "exported_ops"  # their op types, "MatMul, Add" (str)
    aten_ops: Text = "aten_ops"  # distinct aten ops the exporter recorded for them (str; "" none)
    scopes: Text = "scopes"  # distinct module scopes, comma-separated (str)
    sources: Text = "sources"  # distinct source lines, "file:line" comma-separated (str)
    shared: Int = "shared"  # exported nodes it needed that an earlier group claimed (Int64)


class Folded:
    """Columns of :attr:`GraphMapping.folded`: exported nodes no optimized node stands for."""

    level: Text = "level"
    node: Text = "node"  # exported node name (str)
    op: Text = "op"  # its "domain:op_type" (str)
    aten_op: Text = "aten_op"  # the aten op recorded for it ("" none) (str)
    scope: Text = "scope"  # its module scope (str)
    reason: Text = "reason"  # "constant-folded" (computes from constants only) or "removed" (str)


OP_COUNTS_DTYPES: dict[str, str] = dtypes(OpCounts)
MAPPED_DTYPES: dict[str, str] = dtypes(Mapped)
FOLDED_DTYPES: dict[str, str] = dtypes(Folded)


@dataclass(frozen=True)
class GraphMapping:
    """One optimized graph mapped back to the exported graph (module docstring).

    ``nodes``: :class:`Mapped` rows in the optimized graph's order; ``folded``: :class:`Folded`
    rows in the exported graph's order; ``claims``: exported node name → the main node of the
    group that claimed it (each exported node at most once).
    """

    level: str
    nodes: pd.DataFrame
    folded: pd.DataFrame
    claims: Mapping[str, str]
    exported_nodes: int
    optimized_nodes: int

    @property
    def fused(self) -> pd.DataFrame:
        """The groups that stand for other exported ops than their own (fused, replaced)."""
        return self.nodes[self.nodes[Mapped.kind].isin([FUSED, REPLACED])]


def op_counts(graphs: Mapping[str, Graph]) -> pd.DataFrame:
    """Nodes per ``domain:op_type`` for each graph (``{"exported": g, "all": g2, …}``), in the
    order given; within a graph the most frequent op first (ties by name)."""
    rows = []
    for label, graph in graphs.items():
        counts: dict[str, int] = {}
        for node in graph.nodes:
            counts[node.kind] = counts.get(node.kind, 0) + 1
        ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        rows += [(label, op, n) for op, n in ordered]
    table = pd.DataFrame(rows, columns=list(OP_COUNTS_DTYPES))
    return schema.conform(table, OP_COUNTS_DTYPES)


def map_graph(exported: Graph, optimized: Graph, *, level: str) -> GraphMapping:
    """Map each node of ``optimized`` back to the ``exported`` nodes it replaced (module
    docstring). Graphs of different models simply share few tensors: most nodes come out
    ``added`` and most exported nodes ``removed``."""
    kept_tensors = optimized.tensors()
    producer = {t: n for n in exported.nodes for t in n.outputs if t}
    claims: dict[str, str] = {}
    rows = []
    for group in _groups(optimized, exported.tensors()):
        claimed, shared = _walk_back(group, producer, kept_tensors, claims)
        rows.append(_row(level, group, claimed, shared, claims))
    folded = _folded(level, exported, optimized, claims)
    nodes = schema.conform(pd.DataFrame(rows, columns=list(MAPPED_DTYPES)), MAPPED_DTYPES)
    return GraphMapping(
        level=level,
        nodes=nodes,
        folded=folded,
        claims=dict(claims),
        exported_nodes=len(exported.nodes),
        optimized_nodes=len(optimized.nodes),
    )


def _groups(optimized: Graph, exported_tensors: frozenset[str]) -> list[list[Node]]:
    """Optimized nodes joined by tensors the exported graph lacks, each group in graph order,
    groups ordered by their first node."""
    parent = list(range(len(optimized.nodes)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    made = {t: n.index for n in optimized.nodes for t in n.outputs if t}
    for node in optimized.nodes:
        for tensor in node.inputs:
            if tensor and tensor not in exported_tensors and tensor in made:
                parent[root(node.index)] = root(made[tensor])
    groups: dict[int, list[Node]] = {}
    for node in optimized.nodes:
        groups.setdefault(root(node.index), []).append(node)
    return sorted(groups.values(), key=lambda g: g[0].index)


def _walk_back(
    group: list[Node],
    producer: Mapping[str, Node],
    kept_tensors: frozenset[str],
    claims: dict[str, str],
) -> tuple[list[Node], int]:
    """The exported nodes between the group's outputs and the tensors the optimized graph
    still has, not claimed before (claimed now, in exported order), and how many of the nodes
    it needed were claimed by an earlier group."""
    owner = _main_nodes(group)[0].name
    stack = [producer[t] for n in group for t in n.outputs if t in producer]
    mine: dict[str, Node] = {}
    others: set[str] = set()
    while stack:
        node = stack.pop()
        if node.name in mine or node.name in others:
            continue
        if node.name in claims:
            others.add(node.name)
            continue
        mine[node.name] = node
        for tensor in node.inputs:
            if tensor and tensor not in kept_tensors and tensor in producer:
                stack.append(producer[tensor])
    for name in mine:
        claims[name] = owner
    return sorted(mine.values(), key=lambda n: n.index), len(others)


def _main_nodes(group: list[Node]) -> list[Node]:
    main = [n for n in group if n.op_type not in GLUE_OPS]
    return main or group


def _row(
    level: str, group: list[Node], claimed: list[Node], shared: int, claims: dict[str, str]
) -> list[object]:
    main = _main_nodes(group)
    op = "+".join(n.kind for n in main)
    kind = _kind(main, claimed)
    if kind == KEPT and len(claimed) > 1:  # a node kept as it was: the rest was folded into it
        same = next(n for n in claimed if n.kind == main[0].kind)
        for node in claimed:
            if node is not same:
                del claims[node.name]
        claimed = [same]
    return [
        level,
        main[0].name,
        op,
        kind,
        _join(n.name for n in group),
        _join(n.name for n in claimed),
        len(claimed),
        _join(n.op_type for n in claimed),
        _join(_distinct(n.aten_op for n in claimed)),
        _join(_distinct(n.scope for n in claimed)),
        _join(_distinct(n.source for n in claimed)),
        shared,
    ]


def _kind(main: list[Node], claimed: list[Node]) -> str:
    if not claimed:
        return ADDED
    same = [n for n in claimed if n.kind == main[0].kind]
    if len(main) == 1 and len(same) == 1 and all(n is same[0] or _no_work(n) for n in claimed):
        return KEPT
    return FUSED if len(claimed) > 1 else REPLACED


def _no_work(node: Node) -> bool:
    """Nodes ORT removes without replacing them (they compute nothing at inference)."""
    return node.op_type in ("Identity", "Dropout", "Constant")


def _folded(
    level: str, exported: Graph, optimized: Graph, claims: Mapping[str, str]
) -> pd.DataFrame:
    constant = _constant_nodes(exported)
    rows = [
        [level, n.name, n.kind, n.aten_op, n.scope,
         CONSTANT_FOLDED if n.name in constant else REMOVED]
        for n in exported.nodes
        if n.name not in claims
    ]  # fmt: skip
    return schema.conform(pd.DataFrame(rows, columns=list(FOLDED_DTYPES)), FOLDED_DTYPES)


def _constant_nodes(graph: Graph) -> set[str]:
    """Nodes whose inputs are all initializers or outputs of such nodes (file order is
    topological in a valid ONNX graph)."""
    constant_tensors = set(graph.initializers - graph.inputs)
    names = set()
    for node in graph.nodes:
        if all(not t or t in constant_tensors for t in node.inputs):
            names.add(node.name)
            constant_tensors.update(t for t in node.outputs if t)
    return names


def _distinct(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(v for v in values if v))


def _join(values: Iterable[str]) -> str:
    return ", ".join(values)
