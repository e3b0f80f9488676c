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
ort-level-slower            an ONNX Runtime level (outputs passing) is ≥5% slower     warning
                            than level ``disable``, clearly (the gap exceeds half
                            their IQRs summed): its optimizations cost time, like
                            compiled-slower for torch.compile
==========================  ========================================================  ========
"""

from __future__ import annotations

import math
from typing import Any

from traceviz.analysis.backends import ORT_PREFIX, BackendRow, BackendsView
from traceviz.analysis.timing.speed import TOLERANCE
from traceviz.diagnose.finding import Evidence, Finding, Severity, Unit
from traceviz.records import records

__all__ = ["ORT_DOCS", "ORT_SLOWER_ID", "backend_findings"]

ORT_DOCS = "https://onnxruntime.ai/docs/performance/model-optimizations/graph-optimizations.html"
ORT_SLOWER_ID = "ort-level-slower"
#: The ONNX Runtime level every other level is judged against: no graph optimization.
BASELINE_LEVEL = "disable"
#: A level this much slower than the baseline (and clearly, see ort-level-slower) is a finding:
#: the tolerance of compiled-slower (:data:`~traceviz.analysis.timing.speed.TOLERANCE`).
ORT_SLOWER_TOLERANCE = TOLERANCE


def backend_findings(view: BackendsView | None) -> list[Finding]:
    """Every backends finding of ``view`` (none without one)."""
    if view is None:
        return []
    rows = records(view.rows)
    findings = [f for row in rows for f in (_outputs_differ(row), _failed(row)) if f]
    faster = _faster(view, rows)
    return findings + ([faster] if faster else []) + _slower_levels(view, rows)


def _slower_levels(view: BackendsView, rows: list[dict[str, Any]]) -> list[Finding]:
    """Each ONNX Runtime level whose outputs pass and whose median step is at least
    :data:`ORT_SLOWER_TOLERANCE` above level ``disable``'s, by more than half their IQRs
    summed (the separation test of ``faster-backend``): that level's graph optimizations
    cost time."""
    by_name = {str(r[BackendRow.backend]): r for r in rows}
    base = by_name.get(ORT_PREFIX + BASELINE_LEVEL)
    base_us = _number(base[BackendRow.step_median_us]) if base is not None else None
    if base is None or base_us is None or base_us <= 0:
        return []
    out = []
    for name, row in by_name.items():
        median = _number(row[BackendRow.step_median_us])
        if not name.startswith(ORT_PREFIX) or row is base or median is None:
            continue
        if row[BackendRow.check_passed] is False or row[BackendRow.error]:
            continue
        spread, level = _half_iqrs(row, base), name.removeprefix(ORT_PREFIX)
        if median / base_us < 1 + ORT_SLOWER_TOLERANCE or median - base_us <= spread:
            continue
        out.append(
            Finding(
                id=ORT_SLOWER_ID,
                severity=Severity.WARNING,
                title=f"ONNX Runtime level {level} is {median / base_us:.2f}× slower than level "
                f"{BASELINE_LEVEL} per step",
                evidence=(
                    Evidence(f"{name} median step", median, Unit.US),
                    Evidence(f"{ORT_PREFIX}{BASELINE_LEVEL} median step", base_us, Unit.US),
                    Evidence(f"{level} / {BASELINE_LEVEL}", median / base_us, Unit.FACTOR),
                    Evidence("half the IQRs summed", spread, Unit.US),
                    f"timing: {view.latency_method or 'run.json timing'}; outputs checked "
                    "against eager",
                ),
                est_gain_us=median - base_us,
                gain_basis=f"measured: median step times outside the profiler; running level "
                f"{BASELINE_LEVEL} instead saves this per step",
                next_step=f"Compare the {level} graph's fusions with {BASELINE_LEVEL}'s in the "
                "Backends view: a fused node ORT runs slower on this provider costs more than "
                "it saves. Deploy the fastest level whose outputs pass, or disable that fusion "
                "(SessionOptions.add_session_config_entry("
                "'optimization.disable_specified_optimizers', '<fusion name>')).",
                docs_url=ORT_DOCS,
            )
        )
    return out


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
    spread = _half_iqrs(by_name[best.backend], compiled)
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


def _half_iqrs(a: dict[str, Any], b: dict[str, Any]) -> float:
    """Half the two rows' step IQRs summed (an unknown IQR counts 0): the separation test."""
    return sum(_number(r[BackendRow.step_iqr_us]) or 0.0 for r in (a, b)) / 2


def _number(value: Any) -> float | None:
    if value is None:
        return None
    number = float(value)
    return None if math.isnan(number) else number
