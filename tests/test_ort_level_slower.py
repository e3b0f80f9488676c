"""An ONNX Runtime level slower than level ``disable`` gets a finding (issue 24 §3), as a
compiled model slower than eager gets ``compiled-slower``: its graph optimizations cost time."""

from __future__ import annotations

import dataclasses
from typing import Any

import pandas as pd
import pytest

from tests.conftest import SAMPLES
from traceviz.analysis.backends import BACKEND_DTYPES, ORT_PREFIX, BackendRow, BackendsView
from traceviz.diagnose.backends import ORT_SLOWER_ID, backend_findings
from traceviz.schema import conform

ORT_RUN = SAMPLES / "gpt2-ort"


def _view_of(*rows: tuple[str, float, float, bool | None, str]) -> BackendsView:
    """A backends view of (backend, median µs, IQR µs, outputs passed, error) rows."""
    table = pd.DataFrame(
        [
            {**dict.fromkeys(BACKEND_DTYPES), "backend": b, "step_median_us": m,
             "step_iqr_us": q, "check_passed": ok, "error": e, "ratio_to_eager": m / rows[0][1]}
            for b, m, q, ok, e in rows
        ]
    )  # fmt: skip
    empty = pd.DataFrame()
    return BackendsView(rows=conform(table, BACKEND_DTYPES), op_counts=empty, fusion=empty,
                        folded=empty)  # fmt: skip


def _slower(view: Any) -> list[Any]:
    return [f for f in backend_findings(view) if f.id == ORT_SLOWER_ID]


def test_a_level_slower_than_disable_is_a_finding() -> None:
    view = _view_of(
        ("eager", 100.0, 10.0, None, ""),
        ("compile", 80.0, 10.0, True, ""),
        ("onnxruntime:disable", 50.0, 4.0, True, ""),
        ("onnxruntime:all", 70.0, 4.0, True, ""),  # 1.4x disable, 20 µs apart, spreads 4
        ("onnxruntime:basic", 52.0, 4.0, True, ""),  # 4% slower: within the tolerance
        ("onnxruntime:extended", 90.0, 4.0, False, ""),  # wrong outputs: outputs-differ's
    )
    (finding,) = _slower(view)
    assert "level all is 1.40× slower than level disable" in finding.title
    assert finding.severity.value == "warning"
    assert finding.est_gain_us == pytest.approx(20.0)


def test_a_slower_level_within_the_spread_is_not() -> None:
    view = _view_of(
        ("eager", 100.0, 10.0, None, ""),
        ("onnxruntime:disable", 50.0, 30.0, True, ""),
        ("onnxruntime:all", 60.0, 30.0, True, ""),  # 10 µs apart, spreads 30 and 30
    )
    assert _slower(view) == []


@pytest.mark.skipif(not (ORT_RUN / "run.json").exists(), reason="sample gpt2-ort run absent")
def test_the_gpt2_sample_run() -> None:
    """The sample run: every level is faster than disable, so no finding; the same run with
    level ``layout`` timed 1.3× slower than disable gets one."""
    pytest.importorskip("onnx")
    from traceviz.pipeline import compare_run

    report = compare_run(ORT_RUN)
    view = report.backends
    assert view is not None and "disable" in view.levels
    assert _slower(view) == []
    assert ORT_SLOWER_ID not in {f.id for f in report.findings}
    rows = view.rows.copy()
    at = rows[BackendRow.backend] == ORT_PREFIX + "layout"
    base = rows.loc[rows[BackendRow.backend] == ORT_PREFIX + "disable", BackendRow.step_median_us]
    rows.loc[at, BackendRow.step_median_us] = 1.3 * float(base.iloc[0])
    (finding,) = _slower(dataclasses.replace(view, rows=rows))
    assert "level layout is 1.30× slower" in finding.title
