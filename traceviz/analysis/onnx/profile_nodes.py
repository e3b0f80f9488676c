"""Per-node time and sizes of an ONNX Runtime profile (``enable_profiling``'s JSON), per run.

The profile is read by ``traceviz.load`` (:mod:`traceviz.parse.ort_profile`: Node events
``<node>_kernel_time`` become kernels named after the optimized graph's node, with ORT's
tensor sizes as ``bytes``; ``model_run`` events the steps; fences and a missing closing ``]``
tolerated); this sums its kernels per node for the graph analyses, which credit time to
groups of optimized nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from traceviz import schema
from traceviz.errors import TraceFormatError
from traceviz.parse import load_trace
from traceviz.schema import ActivityKind, Float, Int, Kernels, Text, dtypes

__all__ = ["NODE_TIMES_DTYPES", "NodeTimes", "ProfileNodes", "read_profile_nodes"]

ORT_FORMAT = "onnxruntime"  # TraceMeta.profiler_flags["format"] of an ORT profile


class NodeTimes:
    """Columns of :attr:`ProfileNodes.nodes`: one row per optimized node that ran."""

    node: Text = "node"  # the node's name in the optimized graph (str)
    op: Text = "op"  # its op type, the event's op_name (str)
    calls: Int = "calls"  # Node events, all runs (Int64)
    time_us: Float = "time_us"  # their summed duration, all runs, µs, measured (float64)
    est_bytes: Int = "est_bytes"  # activation + parameter + output sizes summed, all runs (Int64;
    # estimated: what its inputs and outputs hold, read once each)


NODE_TIMES_DTYPES: dict[str, str] = dtypes(NodeTimes)


@dataclass(frozen=True)
class ProfileNodes:
    """An ORT profile's node events summed per node (``nodes``: :class:`NodeTimes`) and its
    ``runs`` (``model_run`` events; the per-run figures divide by it, 0 when none)."""

    path: str
    nodes: pd.DataFrame
    runs: int

    @property
    def calls(self) -> int:
        return int(self.nodes[NodeTimes.calls].sum())

    @property
    def time_us(self) -> float:
        return float(self.nodes[NodeTimes.time_us].sum())

    @property
    def est_bytes(self) -> int:
        return int(self.nodes[NodeTimes.est_bytes].sum())


def read_profile_nodes(path: str | Path) -> ProfileNodes:
    """Read the ORT profile at ``path``; a file that is not one raises TraceFormatError."""
    trace = load_trace(Path(path))
    if trace.meta.profiler_flags.get("format") != ORT_FORMAT:
        raise TraceFormatError(path, "not an ONNX Runtime profile (no Node/Session events)")
    kernels = trace.kernels[trace.kernels[Kernels.activity] == ActivityKind.KERNEL.value]
    per_node = kernels.groupby(Kernels.name, sort=False, observed=True).agg(
        **{
            NodeTimes.op: (Kernels.op_name, "first"),
            NodeTimes.calls: (Kernels.dur_us, "size"),
            NodeTimes.time_us: (Kernels.dur_us, "sum"),
            NodeTimes.est_bytes: (Kernels.bytes, "sum"),
        }
    )
    table = per_node.reset_index().rename(columns={Kernels.name: NodeTimes.node})
    table[NodeTimes.node] = table[NodeTimes.node].astype(str)
    table[NodeTimes.op] = table[NodeTimes.op].astype(str)
    return ProfileNodes(str(path), schema.conform(table, NODE_TIMES_DTYPES), len(trace.steps))
