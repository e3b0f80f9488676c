"""Findings rank by what fixing them would gain (issue 24 §3): severity follows the gain, not
the CPU time a call blocks, and Python frames count as recorded CPU work for ``cpu-bound``."""

from __future__ import annotations

import traceviz
from tests.conftest import kernel, launch, op
from traceviz.diagnose import diagnose_trace
from traceviz.diagnose.rules.copies import SYNC_ID
from traceviz.diagnose.rules.idle import CPU_BOUND_ID

PREPROCESS_US = 218_000.0


def _step(frame: str = "preprocess.py(12): decode_video") -> list[dict]:
    """One 260 ms step: 218 ms of Python preprocessing (recorded only as a Python frame), then
    20 short kernels, then a 30 ms kernel during which the CPU sits 28.05 ms in a sync that
    returns 50 µs after the kernel ends (the device idles only those 50 µs of it)."""
    end = 260_000.0
    events = [
        op("ProfilerStep#1", 0, end, cat="user_annotation"),
        op(frame, 10, PREPROCESS_US, cat="python_function"),
    ]
    t = PREPROCESS_US + 100
    for i in range(20):
        events += [
            launch("cudaLaunchKernel", t + 50 * i, 5, i + 1),
            kernel(f"conv{i}", t + 50 * i + 10, 40, i + 1),
        ]
    events += [
        launch("cudaLaunchKernel", 219_900, 5, 100),
        kernel("big", 220_000, 30_000, 100),
        launch("cudaStreamSynchronize", 222_000, 28_050, 101),
    ]
    return events


def _findings(tmp_trace, events):  # type: ignore[no-untyped-def]
    return {f.id: f for f in diagnose_trace(traceviz.load(tmp_trace(events)))}, [
        f.id for f in diagnose_trace(traceviz.load(tmp_trace(events)))
    ]


def test_a_sync_while_the_device_works_is_information(tmp_trace) -> None:
    by_id, _ = _findings(tmp_trace, _step())
    sync = by_id[SYNC_ID]
    assert sync.est_gain_us is not None and sync.est_gain_us < 100  # the 50 µs idle
    assert sync.severity.value == "info"  # 28 ms blocked (10.8% of the step), but no gain


def test_python_frames_are_recorded_cpu_work(tmp_trace) -> None:
    by_id, _ = _findings(tmp_trace, _step())
    cpu = by_id[CPU_BOUND_ID]
    assert cpu.severity.value == "warning"
    assert "CPU-bound" in cpu.title
    covered = next(e for e in cpu.evidence if "wait covered" in getattr(e, "label", ""))
    assert covered.value > 0.9


def test_the_cpu_gap_outranks_the_sync(tmp_trace) -> None:
    by_id, order = _findings(tmp_trace, _step())
    assert order.index(CPU_BOUND_ID) < order.index(SYNC_ID)
    assert by_id[CPU_BOUND_ID].est_gain_us > 200_000


def test_a_python_sleep_is_not_cpu_work(tmp_trace) -> None:
    by_id, _ = _findings(tmp_trace, _step("<built-in function sleep>"))
    assert by_id[CPU_BOUND_ID].severity.value == "info"


def test_within_a_severity_the_larger_gain_comes_first(tmp_trace) -> None:
    _, order = _findings(tmp_trace, _step("<built-in function sleep>"))
    # both info now: the 218 ms wait before the 50 µs sync
    assert order.index(CPU_BOUND_ID) < order.index(SYNC_ID)
