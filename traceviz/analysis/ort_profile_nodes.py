"""Per-node time and sizes from an ONNX Runtime profile (``enable_profiling``'s JSON).

The profile is a Chrome trace: a top-level JSON array of ``X`` events; ``cat`` "Node" events
are named ``<node>_kernel_time`` (the optimized graph's node name) with ``args`` ``op_name``,
``provider``, ``activation_size``, ``parameter_size``, ``output_size`` (bytes, as strings);
``cat`` "Session" ``model_run`` events are the runs. ``_fence_before``/``_fence_after``
events and a missing closing ``]`` (a profile cut short) are tolerated.

This small reader gives the graph analyses what they need (µs and bytes per node and run);
``traceviz.load`` reads the same file into a full Trace.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from traceviz import schema
from traceviz.errors import TraceFormatError

__all__ = ["NODE_TIMES_DTYPES", "NodeTimes", "ProfileNodes", "read_profile_nodes"]

KERNEL_SUFFIX = "_kernel_time"
SIZE_ARGS = ("activation_size", "parameter_size", "output_size")


class NodeTimes:
    """Columns of :attr:`ProfileNodes.nodes`: one row per optimized node that ran."""

    node = "node"  # the node's name in the optimized graph (str)
    op = "op"  # its op type, the event's op_name (str)
    calls = "calls"  # Node events, all runs (Int64)
    time_us = "time_us"  # their summed duration, all runs, µs, measured (float64)
    est_bytes = "est_bytes"  # activation + parameter + output sizes summed, all runs (Int64;
    # estimated: what its inputs and outputs hold, read once each)


NODE_TIMES_DTYPES: dict[str, str] = {
    NodeTimes.node: "object",
    NodeTimes.op: "object",
    NodeTimes.calls: schema.I64,
    NodeTimes.time_us: schema.F64,
    NodeTimes.est_bytes: schema.I64,
}


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

    def per_run(self, value: float) -> float | None:
        return value / self.runs if self.runs else None


def read_profile_nodes(path: str | Path) -> ProfileNodes:
    """Read the ORT profile at ``path``; a file that is not one raises TraceFormatError."""
    events = _events(Path(path))
    rows: dict[str, list[Any]] = {}
    runs = 0
    for event in events:
        if not isinstance(event, dict) or event.get("ph") != "X":
            continue
        name = str(event.get("name", ""))
        if event.get("cat") == "Session" and name == "model_run":
            runs += 1
        elif event.get("cat") == "Node" and name.endswith(KERNEL_SUFFIX):
            args = event.get("args") or {}
            row = rows.setdefault(
                name[: -len(KERNEL_SUFFIX)], [str(args.get("op_name", "")), 0, 0.0, 0]
            )
            row[1] += 1
            row[2] += _number(event.get("dur"))
            row[3] += sum(int(_number(args.get(key))) for key in SIZE_ARGS)
    table = pd.DataFrame(
        [[node, *values] for node, values in rows.items()], columns=list(NODE_TIMES_DTYPES)
    )
    return ProfileNodes(str(path), schema.conform(table, NODE_TIMES_DTYPES), runs)


def _events(path: Path) -> list[Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as err:
        raise TraceFormatError(path, "no such ONNX Runtime profile") from err
    except (OSError, UnicodeDecodeError) as err:
        raise TraceFormatError(path, f"cannot read the ONNX Runtime profile: {err}") from err
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = _cut_short(path, text)
    if isinstance(data, dict):
        data = data.get("traceEvents")
    if not isinstance(data, list):
        raise TraceFormatError(path, "not an ONNX Runtime profile (no JSON array of events)")
    return data


def _cut_short(path: Path, text: str) -> Any:
    """A profile whose writer stopped before the closing ``]``."""
    body = text.rstrip().rstrip(",")
    try:
        return json.loads(body + "]")
    except json.JSONDecodeError as err:
        raise TraceFormatError(path, f"not valid JSON: {err}") from err


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0
