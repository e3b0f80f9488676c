"""ONNX Runtime sessions: one per optimization level, each keeping the graph it optimized to.

Level names (run.json ``levels[].name``) map to ``GraphOptimizationLevel`` members; ``layout``
exists only in ORT versions that have ``ORT_ENABLE_LAYOUT``. A timed session writes the
optimized graph (``SessionOptions.optimized_model_filepath``); a separate profiled session runs
the warm-up and profiled steps, and its profile keeps the profiled steps only.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from traceviz.runner.onnx.extra import require

LEVEL_MEMBERS = {
    "disable": "ORT_DISABLE_ALL",
    "basic": "ORT_ENABLE_BASIC",
    "extended": "ORT_ENABLE_EXTENDED",
    "layout": "ORT_ENABLE_LAYOUT",
    "all": "ORT_ENABLE_ALL",
}
EXTERNAL_BYTES = 1024  # initializers this large or larger go to the graph's .data file
OFFLINE_PREFIX = "transformers-"  # the offline optimizer's level name: transformers-<model_type>


def levels() -> list[str]:
    """The level names this onnxruntime has, lowest first."""
    ort = require("onnxruntime")
    return [n for n, m in LEVEL_MEMBERS.items() if hasattr(ort.GraphOptimizationLevel, m)]


def graph_level(level: str) -> Any:
    """The ``GraphOptimizationLevel`` a level row runs at (the offline optimizer's graph runs
    as written: no further ORT optimization)."""
    ort = require("onnxruntime")
    member = "ORT_DISABLE_ALL" if level.startswith(OFFLINE_PREFIX) else LEVEL_MEMBERS[level]
    return getattr(ort.GraphOptimizationLevel, member)


def providers(device_type: str) -> list[str]:
    """CUDA then CPU for a CUDA run when this ORT has the CUDA provider; else CPU."""
    ort = require("onnxruntime")
    available = ort.get_available_providers()
    if device_type == "cuda" and "CUDAExecutionProvider" in available:
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]
    return ["CPUExecutionProvider"]


def session_options(level: str, threads: int, *, optimized: Path | None = None) -> Any:
    ort = require("onnxruntime")
    options = ort.SessionOptions()
    options.graph_optimization_level = graph_level(level)
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only (the NCHWc serialization warning is expected)
    # Idle pool threads must not spin after a run: the round-robin alternates with torch,
    # and spinning ORT threads would steal its cores.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if optimized is not None:  # the graph in <name>.onnx, its weights beside it in <name>.onnx.data
        options.optimized_model_filepath = str(optimized)
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_file_name", weights_file(optimized)
        )
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes", str(EXTERNAL_BYTES)
        )
    return options


def timed_session(
    model: Path, level: str, threads: int, provider_list: list[str], optimized: Path
) -> tuple[Any, float]:
    """A session at ``level`` that writes its optimized graph to ``optimized``; the session and
    its creation wall time in seconds."""
    ort = require("onnxruntime")
    options = session_options(level, threads, optimized=optimized)
    start = time.perf_counter()
    session = ort.InferenceSession(str(model), options, providers=provider_list)
    return session, time.perf_counter() - start


def profile_steps(
    model: Path,
    level: str,
    threads: int,
    provider_list: list[str],
    feeds: dict[str, np.ndarray],
    *,
    warmup: int,
    steps: int,
    dest: Path,
) -> None:
    """Run ``warmup + steps`` steps in a profiled session; write ORT's profile of the last
    ``steps`` (and the session events) to ``dest``."""
    ort = require("onnxruntime")
    with tempfile.TemporaryDirectory(prefix="traceviz-ort-") as tmp:
        options = session_options(level, threads)
        options.enable_profiling = True
        options.profile_file_prefix = str(Path(tmp) / "ort")
        session = ort.InferenceSession(str(model), options, providers=provider_list)
        for _ in range(warmup + steps):
            session.run(None, feeds)
        written = Path(session.end_profiling())
        events = json.loads(_closed(written.read_text()))
    dest.write_text(_dump(drop_runs(events, warmup)))


def drop_runs(events: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """ORT profile events without the first ``count`` ``model_run`` spans and every event
    inside them (the warm-up steps); session loading and initialization are kept."""
    runs = sorted(
        (e for e in events if e.get("cat") == "Session" and e.get("name") == "model_run"),
        key=lambda e: e.get("ts", 0),
    )[:count]
    spans = [(e["ts"], e["ts"] + e.get("dur", 0)) for e in runs]

    def inside(event: dict[str, Any]) -> bool:
        ts = event.get("ts")
        return ts is not None and any(a <= ts <= b for a, b in spans)

    return [e for e in events if not inside(e)]


def _closed(text: str) -> str:
    """ORT's profile text, with the closing bracket a crashed writer may have left off."""
    stripped = text.rstrip().rstrip(",")
    return stripped if stripped.endswith("]") else stripped + "]"


def _dump(events: list[dict[str, Any]]) -> str:
    """A JSON array, one event a line, as ORT writes it."""
    return "[\n" + ",\n".join(json.dumps(e, separators=(",", ":")) for e in events) + "\n]\n"


def weights_file(graph: Path) -> str:
    """The name of a graph's external-weights file, beside it: ``<graph file name>.data``."""
    return graph.name + ".data"


def node_count(path: Path) -> int:
    import onnx

    return len(onnx.load(str(path), load_external_data=False).graph.node)


def offline_optimize(model_type: str, model: Path, dest: Path) -> None:
    """``onnxruntime.transformers.optimizer`` on ``model`` (its Python fusions only, opt_level
    0), written to ``dest``. Raises whatever it raises: the caller records it."""
    optimizer = require("onnxruntime.transformers.optimizer")
    if model_type not in optimizer.MODEL_TYPES:
        known = ", ".join(sorted(optimizer.MODEL_TYPES))
        raise ValueError(f"unknown model type {model_type!r} (known: {known})")
    optimized = optimizer.optimize_model(
        str(model), model_type=model_type, num_heads=0, hidden_size=0, opt_level=0
    )
    optimized.save_model_to_file(str(dest))
