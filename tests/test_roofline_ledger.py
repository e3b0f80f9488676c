"""The fusion ledger (traceviz.analysis.roofline.ledger) on the H200 runs: eager credits never add
up to more than the eager kernels' time, no fused kernel beats its memory roof, and GPT-2's
fused GELU replaces its 16 eager kernels per step."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.conftest import SAMPLES
from traceviz.analysis.roofline.ledger import LedgerColumns, fusion_ledger
from traceviz.pipeline import compare_run
from traceviz.report.roofline_report import roofline_of
from traceviz.schema import Kernels

H200_RUNS = sorted(p for p in (SAMPLES / "h200").glob("*") if (p / "run.json").is_file())
C = LedgerColumns
GELU = "triton_poi_fused_add_addmm_mul_pow_tanh_view_4"


def ledger_of(run: Path):  # type: ignore[no-untyped-def]
    report = compare_run(run)
    compiled = roofline_of(report, "b")
    assert compiled is not None
    steps = (report.a.summary.step_count, report.b.summary.step_count)
    table = fusion_ledger(
        report.fusion, eager_traffic=report.a.traffic, compiled=compiled, steps=steps
    )
    return report, table


@pytest.mark.parametrize("run", H200_RUNS, ids=lambda p: p.name)
def test_credits_add_up_and_no_fused_kernel_beats_its_roof(run: Path) -> None:
    report, table = ledger_of(run)
    steps_a = max(report.a.summary.step_count, 1)
    eager_time = float(np.nansum(report.a.trace.kernels[Kernels.excl_dur_us].to_numpy(float)))
    assert table[C.eager_time_us].sum() * steps_a <= eager_time + 1e-6
    timed = table[table[C.fused_time_us] > 0]
    assert (timed[C.roof_us] <= timed[C.fused_time_us]).all()
    assert (table[C.pct_of_memory_roof].dropna() <= 100).all()


def test_gpt2_gelu_replaces_sixteen_eager_kernels_per_step() -> None:
    _, table = ledger_of(SAMPLES / "h200" / "gpt2")
    gelu = table[table[C.kernel] == GELU].iloc[0]
    assert gelu[C.eager_kernels] == 16 and gelu[C.fused_calls] == 2
    assert gelu[C.eager_bytes] > 10 * gelu[C.fused_bytes]  # fusion keeps the temporaries in
    assert gelu[C.saved_us] > 0 and gelu[C.bound] == "latency"


def test_no_peak_devices_have_no_roof_time() -> None:
    _, table = ledger_of(SAMPLES / "graph-break")
    assert len(table) and table[C.roof_us].isna().all()
    assert set(table[C.bound]) == {"no-peak"}
