"""The JSON form of a comparison (``traceviz compare --format json``), documented in
``docs/compare-json.md`` and versioned by :data:`COMPARE_SCHEMA_VERSION`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import pandas as pd

from traceviz.analysis.backends import BackendsView
from traceviz.analysis.compare import Comparison, Side
from traceviz.analysis.timing.blocking import BlockingColumns
from traceviz.diagnose.rules.slower import comparison_speed
from traceviz.records import plain, records
from traceviz.report.bundle import Report
from traceviz.report.json_numbers import whole_counts
from traceviz.report.roofline_report import bridge_of, ledger_json, roofline_json, rooflines_of

#: Rows of the longest tables kept per side (the calls/ops with most time come first).
BLOCKING_CALLS_SHOWN = 50
IDLE_CPU_WORK_SHOWN = 50

COMPARE_SCHEMA_VERSION = 1


def comparison_json(comparison: Report, *, top: int = 20) -> dict[str, Any]:
    """A JSON-ready dict; ``top`` bounds the long lists (fusion kernels, eager-only ops).
    Counts, ids and byte sizes are ints (:func:`~traceviz.report.json_numbers.whole_counts`)."""
    fusion = comparison.fusion
    rooflines = rooflines_of(comparison)  # the roofline and the ledger use b's: once each
    data = {
        "schema_version": COMPARE_SCHEMA_VERSION,
        "names": {"a": comparison.names[0], "b": comparison.names[1]},
        "traces": {"a": _trace(comparison.a), "b": _trace(comparison.b)},
        "metrics": records(comparison.metrics),
        "kinds": records(comparison.kinds),
        "regions": records(comparison.regions),
        "launch": {side: _analysed(comparison.side(side), _launch) for side in ("a", "b")},
        "memory": {side: _analysed(comparison.side(side), _memory) for side in ("a", "b")},
        "fusion": {
            "eager_kernels_per_compiled_kernel": plain(fusion.eager_kernels_per_compiled_kernel),
            "est_bytes_saved": plain(fusion.est_bytes_saved),
            "kernels": records(fusion.kernels, limit=top),
            "eager_only": records(fusion.eager_only, limit=top),
            "not_fusions": records(fusion.not_fusions, limit=top),
            "by_line": records(fusion.by_line, limit=top),
            "lines_from": _lines_from(comparison),
            "comparable": _comparable(fusion.comparability),
        },
        "run": msgspec.to_builtins(comparison.run_info),
        "backends": backends_json(comparison.backends),
        "onnxruntime": onnxruntime_json(comparison.backends),
        "speed": comparison_speed(comparison).to_json(),
        "roofline": roofline_json(comparison, top=top, rooflines=rooflines),
        "bridge": bridge.to_json() if (bridge := bridge_of(comparison)) is not None else None,
        "fusion_ledger": ledger_json(comparison, rooflines["b"], top=top),
        # each side's profiled step median against run.json's timed one; null without timing
        "profiled_vs_timed": check.to_json() if (check := comparison.profiled_timing) else None,
        "findings": [f.to_json() if hasattr(f, "to_json") else f for f in comparison.findings],
    }
    return whole_counts(data)  # counts as integers, whatever the column dtype


def _lines_from(comparison: Comparison) -> dict[str, Any] | None:
    """Where a's source lines came from when a run's separate lines trace gave them: how many
    of a's kernels found their twin there (docs/compare-json.md, "The fusion map")."""
    transfer = comparison.line_transfer
    if transfer is None:
        return None
    return {
        "trace": "lines trace",
        "kernels": transfer.kernels,
        "matched": transfer.matched,
        "located": transfer.located,
        "coverage": plain(transfer.coverage),
    }


def _comparable(verdict: Any) -> dict[str, Any]:
    """The comparability guard's verdict (docs/compare-json.md, "The guard")."""
    return {
        "comparable": bool(verdict.comparable),
        "forced": bool(verdict.forced),
        "reasons": list(verdict.reasons),
        "failed_checks": list(getattr(verdict, "failed", ())),
        "signature_overlap": plain(verdict.signature_overlap),
        "fused_op_overlap": plain(verdict.fused_op_overlap),
    }


def _trace(side: Side) -> dict[str, Any]:
    meta = side.trace.meta
    activity = side.summary.device_activity
    return {
        "name": side.name,
        "source": meta.source,
        "device": meta.device_kind.value,
        "device_names": sorted(set(meta.device_names)),
        "steps": side.summary.step_count,
        "partial_steps": side.summary.partial_steps,
        "events_in": side.trace.stats.events_in,
        "basis": side.summary.basis,
        "device_activity": activity.to_json() if activity is not None else None,
    }


def _analysed(side: Side, section: Callable[[Side], dict[str, Any]]) -> dict[str, Any] | None:
    """A per-side section of device figures; null where the side's device is not analysed."""
    return section(side) if side.summary.analysed else None


def _launch(side: Side) -> dict[str, Any]:
    launch = side.launch
    # blocking calls, the longest first (ties in time order)
    longest = launch.blocking.calls.sort_values(
        BlockingColumns.dur_us, ascending=False, kind="stable"
    )
    return {
        "launch_calls": launch.launch_calls,
        "launch_api_us": plain(launch.launch_api_us),
        "mean_launch_us": plain(launch.mean_launch_us),
        "delay_p50_us": plain(launch.delay_p50_us),
        "delay_p90_us": plain(launch.delay_p90_us),
        "short_kernels": launch.short_kernels,
        "idle_us": plain(launch.idle_us),
        "cpu_wait_us": plain(launch.cpu_wait_us),
        "per_step": records(launch.per_step),
        "idle_per_step": records(launch.idle.per_step),
        "idle_cpu_work": _numbered(
            records(launch.idle.cpu_work, limit=IDLE_CPU_WORK_SHOWN), launch.idle.per_step
        ),
        "blocked_us": plain(launch.blocking.blocked_us),
        "blocking_calls": _numbered(
            records(longest, limit=BLOCKING_CALLS_SHOWN),
            launch.idle.per_step,
        ),
    }


def _numbered(rows: list[dict[str, Any]], per_step: pd.DataFrame) -> list[dict[str, Any]]:
    """``rows`` whose ``step`` is a step window's index (−1: outside every step) with the
    ProfilerStep number instead, as every other table of the JSON gives it (null outside any
    step, or for the whole-trace window of a trace without steps). ``per_step`` is a table
    with one row per step window, in window order, and its ProfilerStep ``step``."""
    numbers = [plain(n) if pd.notna(n) else None for n in per_step["step"].tolist()]
    for row in rows:
        at = row.get("step")
        row["step"] = numbers[at] if isinstance(at, int) and 0 <= at < len(numbers) else None
    return rows


def _memory(side: Side) -> dict[str, Any]:
    traffic = side.traffic
    return {
        "total_bytes": plain(traffic.total_bytes),
        "unestimated_time_share": plain(traffic.unestimated_time_share),
        "peak_allocated_bytes": plain(traffic.peak_allocated_bytes),
        "by_kind": records(traffic.by_kind),
    }


# The backends and onnxruntime sections (docs/compare-json.md, "Backends and ONNX Runtime"):
# both null for a run without ONNX Runtime data.


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
