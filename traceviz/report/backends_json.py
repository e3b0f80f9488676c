"""The ``backends`` and ``onnxruntime`` sections of the comparison JSON (docs/compare-json.md,
"Backends and ONNX Runtime"); both null for a run without ONNX Runtime data."""

from __future__ import annotations

from typing import Any

from traceviz.analysis.backends import BackendsView
from traceviz.records import records


def backends_json(view: BackendsView | None) -> list[dict[str, Any]] | None:
    """One row per backend (:class:`~traceviz.analysis.backends.BackendRow` columns)."""
    return None if view is None else records(view.rows)


def onnxruntime_json(view: BackendsView | None) -> dict[str, Any] | None:
    """The export, op counts per graph, the fused nodes mapped back and the folded nodes."""
    if view is None:
        return None
    return {
        "export": dict(view.export),
        "ort_version": view.ort_version,
        "threads": view.threads,
        "latency_method": view.latency_method,
        "levels": view.levels,
        "fastest": fastest.to_json() if (fastest := view.fastest) is not None else None,
        "op_counts": records(view.op_counts),
        "fusion": records(view.fusion),
        "folded": records(view.folded),
        "problems": list(view.problems),
    }
