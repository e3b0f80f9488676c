"""Capture the compiler's own record of the compiled phase into the run directory.

While :func:`capture` is active, Inductor's provenance tracking is on
(``torch._inductor.config.trace.provenance_tracking_level = 1``) and every structured-log
record (``torch._logging.trace_structured``, the records ``TORCH_TRACE``/tlparse read) is
collected; on exit the records worth keeping are written, one JSON object per line
(``{"metadata": {...}, "payload": "..." | null}``), to ``compile_log.jsonl.gz``. Read it
with :func:`traceviz.parse.compile_log.read_compile_log`.

Kept: the provenance artifacts (kernel → FX nodes, kernel → source lines), compilation
metrics (without the config dumps), graph-break and recompile reasons, cache hit/miss
markers (without their payloads), and from ``inductor_output_code`` only the lines naming
profiled C++ kernels (``graph_N_cpp_…``: the prefix the CPU trace shows). Not kept: the
graphs and the generated code. Inductor's per-node byte estimate (the ``inductor_metrics``
log, ``GraphLowering.count_bytes``) is added as ``traceviz_inductor_node_bytes`` records.

On an FX-graph cache hit Inductor re-emits the provenance artifacts stored with the cached
graph (a graph compiled without provenance tracking has a different cache key, so a hit
always carries them); it does not re-run ``count_bytes``, so byte estimates exist only for
graphs compiled in this run (``sample_traces/make.sh`` disables the caches for that reason).
"""

from __future__ import annotations

import gzip
import json
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
import torch._inductor.config as inductor_config
from torch._logging._internal import trace_log

from traceviz.parse.compile_log import (
    GRAPH_BREAK,
    METRICS,
    NODE_BYTES,
    NODE_MAPPINGS,
    OUTPUT_CODE,
    STACK_TRACES,
)

METRICS_LOGGER = "torch._inductor.compile_fx.__inductor_metrics"
HEADER = "traceviz_compile_log"
KEPT_ARTIFACTS = frozenset((NODE_MAPPINGS, STACK_TRACES, GRAPH_BREAK, "recompile_reasons"))
MARKER_ARTIFACTS = frozenset(
    f"{cache}_{what}"
    for cache in ("fx_graph_cache", "aotautograd_cache")
    for what in ("hit", "miss", "bypass")
)
KEPT_KINDS = frozenset((METRICS, OUTPUT_CODE, "dynamo_start"))
_DROPPED_METRICS = ("inductor_config", "dynamo_config", "functorch_config", "compiler_config",
                    "inductor_provenance", "stack_trace", "exception_stack_trace")  # fmt: skip
_PROFILED_KERNEL = re.compile(r'"(graph_\d+_\w+)"')  # the record's name, as a C++ string


class _Collector(logging.Handler):
    """Keeps structured-log records (trace_log) as (metadata, payload) pairs, and turns
    Inductor's "Graph Metrics" log (:data:`METRICS_LOGGER`) into a per-scheduler-node byte
    record."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            args, metadata = record.args, getattr(record, "metadata", None)
            if record.name == METRICS_LOGGER:
                if isinstance(args, dict) and "nodes_num_elem" in args:
                    self.records.append(_node_bytes_record(args["nodes_num_elem"]))
            elif isinstance(metadata, dict):
                kept = _keep(metadata, getattr(record, "payload", None))
                if kept is not None:
                    self.records.append(kept)
        except Exception:  # logging must never break a compilation
            pass


def _node_bytes_record(nodes: Any) -> dict[str, Any]:
    items = []
    for node, _ in nodes:
        origins = sorted(
            {o.name for sub in node.get_nodes() if sub.node is not None for o in sub.node.origins}
        )
        extern = type(node).__name__ == "ExternKernelSchedulerNode"
        kernel = getattr(node.node, "python_kernel_name", None) if extern else None
        items.append(
            {"node": node.get_name(), "bytes": int(node.get_read_write_buffers_sizes()),
             "origins": origins, "extern": extern, "kernel": kernel}
        )  # fmt: skip
    metadata: dict[str, Any] = {"artifact": {"name": NODE_BYTES, "encoding": "json"}}
    compile_id = torch._guards.CompileContext.current_compile_id()
    if compile_id is not None:
        if compile_id.compiled_autograd_id is not None:
            metadata["compiled_autograd_id"] = compile_id.compiled_autograd_id
        metadata["frame_id"] = compile_id.frame_id
        metadata["frame_compile_id"] = compile_id.frame_compile_id
    return {"metadata": metadata, "payload": json.dumps(items)}


def _keep(metadata: dict[str, Any], payload: Any) -> dict[str, Any] | None:
    """The record as written, trimmed; None for records not worth keeping."""
    artifact = metadata.get("artifact")
    name = artifact.get("name") if isinstance(artifact, dict) else None
    text = payload if isinstance(payload, str) else None
    if name in KEPT_ARTIFACTS:
        return {"metadata": metadata, "payload": text}
    if name in MARKER_ARTIFACTS:
        return {"metadata": metadata, "payload": None}
    kind = next((k for k in metadata if k in KEPT_KINDS), None)
    if kind == METRICS and isinstance(metadata[kind], dict):
        trimmed = {k: v for k, v in metadata[kind].items() if k not in _DROPPED_METRICS}
        return {"metadata": {**metadata, kind: trimmed}, "payload": None}
    if kind == OUTPUT_CODE:
        names = sorted(set(_PROFILED_KERNEL.findall(text or "")))
        return {"metadata": metadata, "payload": "\n".join(names) or None}
    if kind is not None:
        return {"metadata": metadata, "payload": None}
    return None


@contextmanager
def capture(path: Path) -> Iterator[None]:
    """Provenance tracking on and the structured compile log collected; written to ``path``
    (gzip JSON lines) on exit, also when the body raises. Logger and config are restored."""
    collector = _Collector()
    collector.records.append(
        {"metadata": {HEADER: {"version": 1, "torch": torch.__version__}}, "payload": None}
    )
    metrics_logger = logging.getLogger(METRICS_LOGGER)
    saved = (trace_log.level, metrics_logger.level, metrics_logger.propagate)
    trace_log.addHandler(collector)
    trace_log.setLevel(logging.DEBUG)
    metrics_logger.addHandler(collector)
    metrics_logger.setLevel(logging.INFO)
    metrics_logger.propagate = False  # the "Graph Metrics" text goes nowhere else
    try:
        with inductor_config.patch({"trace.provenance_tracking_level": 1}):
            yield
    finally:
        trace_log.removeHandler(collector)
        metrics_logger.removeHandler(collector)
        trace_log.setLevel(saved[0])
        metrics_logger.setLevel(saved[1])
        metrics_logger.propagate = saved[2]
        write(path, collector.records)


def write(path: Path, records: list[dict[str, Any]]) -> None:
    """``records`` as gzip JSON lines (values JSON cannot hold are written as their repr)."""
    lines = (json.dumps(r, default=repr) for r in records)
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode("utf-8"), mtime=0))
