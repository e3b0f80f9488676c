"""Findings about a run's backends (eager, compile, ONNX Runtime levels): is each still
correct, did each run, and which is fastest. They judge the
:class:`~traceviz.analysis.backends.BackendsView` the front door attaches to a run directory's
report; :func:`backend_findings` returns them unsorted (the front door merges and sorts).

==========================  ========================================================  ========
id                          trigger                                                   severity
==========================  ========================================================  ========
backend-outputs-differ      an ONNX Runtime level's outputs fail the check against    error
                            eager (names the culprit node the runner isolated)
backend-failed              an ONNX Runtime level did not run (its error)             warning
faster-backend              the fastest backend whose outputs pass is not compile,    info
                            and its median step is clearly below compile's
==========================  ========================================================  ========
"""

from __future__ import annotations

import math
from typing import Any

from traceviz.analysis.backends import ORT_PREFIX, BackendRow, BackendsView
from traceviz.diagnose.finding import Evidence, Finding, Severity, Unit
from traceviz.records import records

__all__ = ["ORT_DOCS", "backend_findings"]

ORT_DOCS = "https://onnxruntime.ai/docs/performance/model-optimizations/graph-optimizations.html"


def backend_findings(view: BackendsView | None) -> list[Finding]:
    """Every backends finding of ``view`` (none without one)."""
    if view is None:
        return []
    rows = records(view.rows)
    findings = [f for row in rows for f in (_outputs_differ(row), _failed(row)) if f]
    faster = _faster(view, rows)
    return findings + ([faster] if faster else [])


def _outputs_differ(row: dict[str, Any]) -> Finding | None:
    backend = str(row[BackendRow.backend])
    if not backend.startswith(ORT_PREFIX) or row[BackendRow.check_passed] is not False:
        return None
    evidence: list[Evidence | str] = []
    if row[BackendRow.max_abs_diff] is not None:
        evidence.append(Evidence("max |output − eager output|", row[BackendRow.max_abs_diff]))
    if row[BackendRow.culprit]:
        evidence.append(f"culprit: {row[BackendRow.culprit]}")
    level = backend.removeprefix(ORT_PREFIX)
    return Finding(
        id="backend-outputs-differ",
        severity=Severity.ERROR,
        title=f"ONNX Runtime level {level}: outputs differ from eager",
        evidence=tuple(evidence),
        next_step=(
            "Deploy a lower level whose outputs pass, or disable the fusion that made the "
            "culprit node (SessionOptions.add_session_config_entry("
            "'optimization.disable_specified_optimizers', '<fusion name>'))."
        ),
        docs_url=ORT_DOCS,
    )


def _failed(row: dict[str, Any]) -> Finding | None:
    if not row[BackendRow.error]:
        return None
    backend = str(row[BackendRow.backend])
    return Finding(
        id="backend-failed",
        severity=Severity.WARNING,
        title=f"{backend} did not run",
        evidence=(str(row[BackendRow.error]),),
        next_step="See the error; the other backends' figures stand without it.",
        docs_url=ORT_DOCS,
    )


def _faster(view: BackendsView, rows: list[dict[str, Any]]) -> Finding | None:
    """The fastest passing backend, when it is not compile and its median is below compile's
    by more than half their IQRs summed (the rough separation test of ``Fastest``)."""
    best = view.fastest
    by_name = {str(r[BackendRow.backend]): r for r in rows}
    compiled = by_name.get("compile")
    if best is None or best.backend == "compile" or compiled is None:
        return None
    median = _number(compiled[BackendRow.step_median_us])
    if median is None:
        return None
    gap = median - best.median_us
    spread = (
        (_number(by_name[best.backend][BackendRow.step_iqr_us]) or 0.0)
        + (_number(compiled[BackendRow.step_iqr_us]) or 0.0)
    ) / 2
    if gap <= spread:
        return None
    return Finding(
        id="faster-backend",
        severity=Severity.INFO,
        title=f"{best.backend} is faster than compile ({median / best.median_us:.2f}×)",
        evidence=(
            Evidence(f"{best.backend} median step", best.median_us, Unit.US),
            Evidence("compile median step", median, Unit.US),
            f"timing: {view.latency_method or 'run.json timing'}; outputs checked against eager",
        ),
        est_gain_us=gap,
        gain_basis="measured: median step times outside the profiler",
        next_step=f"Consider deploying {best.backend}; its fusions are in the Backends view.",
        docs_url=ORT_DOCS,
    )


def _number(value: Any) -> float | None:
    if value is None:
        return None
    number = float(value)
    return None if math.isnan(number) else number
