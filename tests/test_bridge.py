"""The step bridge (traceviz.analysis.roofline.bridge): eager − compiled step time split into parts
whose sum plus the remainder is the measured difference, on every sample run (CPU and H200, the runs
where compiling does not pay included) and on plain trace pairs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import SAMPLES
from traceviz.analysis.roofline.bridge import (
    BRIDGE_PARTS,
    PROFILED,
    TIMED,
    BridgeParts,
    step_bridge,
)
from traceviz.analysis.timing.launch import StepOverhead, step_windows
from traceviz.pipeline import compare, compare_run
from traceviz.schema import Kernels

RUNS = sorted(p.parent for p in SAMPLES.glob("*/run.json")) + sorted(
    p.parent for p in (SAMPLES / "h200").glob("*/run.json")
)


def _id(path: Path) -> str:
    return str(path.relative_to(SAMPLES))


@pytest.mark.parametrize("run", RUNS, ids=_id)
def test_parts_and_remainder_add_up_to_the_timed_difference(run: Path) -> None:
    report = compare_run(run)
    bridge = step_bridge(report.a, report.b, run_info=report.run_info)
    assert bridge is not None and bridge.basis == TIMED
    timing = report.run_info.timing  # type: ignore[union-attr]
    assert timing is not None and timing.compiled is not None
    assert bridge.difference_us == timing.eager.median_us - timing.compiled.median_us
    parts = bridge.parts
    assert list(parts[BridgeParts.part]) == [p for p, _ in BRIDGE_PARTS]
    total = math.fsum([*parts[BridgeParts.delta_us], bridge.remainder_us])
    assert total == pytest.approx(bridge.difference_us, rel=1e-12, abs=1e-9)
    deltas = parts[BridgeParts.a_us] - parts[BridgeParts.b_us]
    assert np.allclose(deltas, parts[BridgeParts.delta_us])


@pytest.mark.parametrize("name", ["conv-bn-relu", "graph-break"])
def test_runs_where_compiling_does_not_pay_have_a_negative_difference(name: str) -> None:
    report = compare_run(SAMPLES / "h200" / name)
    bridge = step_bridge(report.a, report.b, run_info=report.run_info)
    assert bridge is not None and bridge.difference_us < 0
    by_part = dict(
        zip(bridge.parts[BridgeParts.part], bridge.parts[BridgeParts.delta_us], strict=True)
    )
    # the compiled side pays more on the CPU than its kernels save (sample_traces/h200/README)
    assert by_part["cpu_overhead"] < 0
    assert abs(by_part["cpu_overhead"]) > abs(by_part["fused_pointwise"] + by_part["library"])


@pytest.mark.parametrize("run", RUNS, ids=_id)
def test_kernel_parts_never_credit_more_than_the_device_time_of_the_steps(run: Path) -> None:
    """Credits add up: each side's kernel parts per step sum to at most the device time of the
    device activities that start inside its steps (CPU-only traces: their exclusive time)."""
    report = compare_run(run)
    bridge = step_bridge(report.a, report.b, run_info=report.run_info)
    assert bridge is not None
    kernel_parts = bridge.parts[BridgeParts.part].isin(
        ["fused_pointwise", "library", "layout_copy", "other_kernels"]
    )
    for side, column in ((report.a, BridgeParts.a_us), (report.b, BridgeParts.b_us)):
        kernels = side.trace.kernels
        windows = step_windows(side.trace)
        starts = kernels[Kernels.ts_us].to_numpy(dtype=float)
        inside = windows.index_of(starts) >= 0
        dur = kernels[Kernels.excl_dur_us].to_numpy(dtype=float, na_value=0.0)
        measured = float(np.nansum(dur[inside])) / len(windows.steps)
        credited = float(bridge.parts.loc[kernel_parts, column].sum())
        assert 0 < credited <= measured * (1 + 1e-9) + 1e-6  # float rounding of the clip


def test_a_plain_pair_uses_the_profiled_step_medians() -> None:
    run = SAMPLES / "h200" / "pointwise"
    report = compare(run / "eager.pt.trace.json.gz", run / "compiled.pt.trace.json.gz")
    bridge = step_bridge(report.a, report.b)
    assert bridge is not None and bridge.basis == PROFILED
    wall = report.a.launch.per_step[StepOverhead.wall_us].to_numpy(dtype=float)
    assert bridge.step_a_us == pytest.approx(float(np.median(wall)))
    total = math.fsum([*bridge.parts[BridgeParts.delta_us], bridge.remainder_us])
    assert total == pytest.approx(bridge.difference_us, abs=1e-9)
    assert bridge.to_json()["basis"] == PROFILED
