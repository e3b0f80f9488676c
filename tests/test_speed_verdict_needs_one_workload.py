"""No speed or memory verdict between traces of different workloads (issues 9 §4, 10 §4).

GIVEN an eager A100 training trace and a compiled A100 trace of another model (the guard finds
none of the compiled side's GEMM shapes in the eager one), WHEN they are compared, THEN the
fusion figures are withheld and so is the "compiled is 2.8× slower, run eager instead and save
139 ms per step" error that used to head the findings: step times of two models say nothing
about what compiling did. ``--force`` (the user vouches the traces are one workload) brings
the verdict back. The headline still shows both measured step times, without a verdict.
"""

from __future__ import annotations

import pytest

from tests.conftest import CORPUS, load_trace
from traceviz.analysis.compare import Comparison
from traceviz.analysis.timing.speed import SAME
from traceviz.diagnose.rules.slower import comparison_speed
from traceviz.pipeline import compare
from traceviz.report.views import headline

EAGER = CORPUS / "nvidia" / "a100_eager_train_control.json.gz"
COMPILED = CORPUS / "nvidia" / "a100_compiled_cudagraph_train_2023.json.gz"
PAIR_VERDICTS = {"compiled-slower", "no-significant-difference", "peak-memory-up"}

pytestmark = pytest.mark.skipif(not COMPILED.exists(), reason=f"corpus not found at {CORPUS}")


def _pair(force: bool) -> Comparison:
    return compare(load_trace(EAGER), load_trace(COMPILED), names=("eager", "compiled"),
                   force=force)  # fmt: skip


def test_unrelated_pair_gets_no_speed_verdict() -> None:
    comparison = _pair(force=False)
    assert comparison.fusion.comparability.withheld
    ids = {f.id for f in comparison.findings}
    assert "traces-not-comparable" in ids
    assert not ids & PAIR_VERDICTS
    speed = headline(comparison)[0].lower()  # the verdict sentence leads
    assert "slower" not in speed and "faster" not in speed
    assert "no speed verdict" in speed


def test_forced_pair_gets_the_verdict_back() -> None:
    comparison = _pair(force=True)
    verdict = comparison_speed(comparison)
    assert verdict.verdict != SAME  # the figures differ: the unforced test is not vacuous
    ids = {f.id for f in comparison.findings}
    assert "compiled-slower" in ids or "no-significant-difference" in ids
    speed = headline(comparison)[0].lower()  # the verdict sentence leads
    assert "no speed verdict" not in speed


def test_compiled_against_itself_keeps_its_speed_line() -> None:
    # withheld only because a is compiled: one workload, so the step times still compare
    flux = CORPUS / "amd" / "mi300x_compiled_flux_hipgraph.json.gz"
    comparison = compare(load_trace(flux), load_trace(flux))
    assert comparison.fusion.comparability.withheld
    assert not comparison.fusion.comparability.other_workload
    speed = headline(comparison)[0].lower()  # the verdict sentence leads
    assert "no speed verdict" not in speed
    (finding,) = [f for f in comparison.findings if f.id == "traces-not-comparable"]
    assert not any("speed" in line for line in finding.evidence_lines())
