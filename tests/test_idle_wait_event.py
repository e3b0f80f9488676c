"""The idle split's part "waiting on another stream / event" (analysis.idle, event_wait_us):
a device whose next work waits on a cudaStreamWaitEvent is not in launch latency."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

import traceviz
from tests.conftest import CORPUS, corpus_files, kernel, launch, load_trace, op
from traceviz.analysis.timing.idle import PARTS, IdleParts
from traceviz.analysis.timing.launch import launch_overhead
from traceviz.analysis.timing.step_parts import GPU_PARTS, step_parts
from traceviz.analysis.timing.stream_waits import gated_activities, gated_launches, is_stream_wait
from traceviz.schema import Launches

P = IdleParts


def _split(path: Path):  # type: ignore[no-untyped-def]
    return launch_overhead(traceviz.load(path)).idle


def _waiting_step(wait_name: str = "cudaStreamWaitEvent") -> list[dict]:
    """Step 0-100: k1 runs 10-20; the CPU makes a stream wait on an event at 22, launches k2
    (returns at 26), which starts at 80 (its stream waited); k3 launched at 30 runs 85-90."""
    return [
        op("ProfilerStep#1", 0, 100, cat="user_annotation"),
        launch("cudaLaunchKernel", 1, 4, 1),
        kernel("k1", 10, 10, 1),
        launch(wait_name, 22, 1, 2),
        launch("cudaLaunchKernel", 24, 2, 3),
        kernel("k2", 80, 5, 3),
        launch("cudaLaunchKernel", 30, 2, 4),
        kernel("k3", 85, 5, 4),
    ]


def test_work_behind_a_stream_wait_is_not_launch_latency(tmp_trace) -> None:
    row = _split(tmp_trace(_waiting_step())).per_step.iloc[0]
    # 20-26: waiting for the CPU to launch k2; 26-80: k2's stream waited on the event
    assert row[P.event_wait_us] == pytest.approx(54)
    assert row[P.launch_latency_us] == pytest.approx(5)  # 5-10, before k1 (no wait call)
    assert row[P.cpu_wait_us] == pytest.approx(5 + 6 + 10)  # 0-5, 20-26, 90-100
    assert row[P.idle_us] == pytest.approx(sum(row[p] for p in PARTS))


def test_hip_stream_wait_counts_too(tmp_trace) -> None:
    row = _split(tmp_trace(_waiting_step("hipStreamWaitEvent"))).per_step.iloc[0]
    assert row[P.event_wait_us] == pytest.approx(54)


def test_only_the_launch_right_after_the_wait_is_gated(tmp_trace) -> None:
    trace = traceviz.load(tmp_trace(_waiting_step()))
    gated = gated_launches(trace)
    names = trace.launches["name"].astype(str).tolist()
    assert [n for n, g in zip(names, gated, strict=True) if g] == ["cudaLaunchKernel"]
    assert trace.launches["ts_us"].to_numpy()[gated].tolist() == [24]
    kernels = trace.kernels["name"].astype(str).to_numpy()
    assert kernels[gated_activities(trace)].tolist() == ["k2"]


def test_a_wait_on_another_thread_gates_nothing(tmp_trace) -> None:
    events = _waiting_step()
    events[3] = launch("cudaStreamWaitEvent", 22, 1, 2, tid=2)
    row = _split(tmp_trace(events)).per_step.iloc[0]
    assert row[P.event_wait_us] == 0
    assert row[P.launch_latency_us] == pytest.approx(5 + 54)


def test_the_step_breakdown_shows_the_part(tmp_trace) -> None:
    trace = traceviz.load(tmp_trace(_waiting_step()))
    assert P.event_wait_us in GPU_PARTS
    parts = dict(step_parts(trace, launch_overhead(trace)))
    assert parts[P.event_wait_us] == pytest.approx(54)


def test_the_idle_figure_draws_the_part() -> None:
    pytest.importorskip("plotly", reason="plotly not installed (dashboard extra)")
    from traceviz.report.figures.launch import _STEP_PARTS

    assert _STEP_PARTS[P.event_wait_us][0] == "device idle, waiting on another stream / event"


def _has_stream_waits(path: Path) -> bool:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as f:
        return "StreamWaitEvent" in f.read()


def _waiting_corpus() -> list:  # type: ignore[type-arg]
    files = [p for p in corpus_files() if _has_stream_waits(p)]
    if not files:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"no corpus at {CORPUS}"))]
    return [pytest.param(p, id=str(p.relative_to(CORPUS))) for p in files]


@pytest.mark.parametrize("path", _waiting_corpus())
def test_corpus_traces_with_stream_waits(path: Path) -> None:
    """Every real trace with stream-wait calls: the five parts add to the idle time per step,
    and where an activity follows a wait, some idle time is the wait's, not launch latency."""
    trace = load_trace(path)
    assert is_stream_wait(trace.launches[Launches.name]).any()
    split = launch_overhead(trace).idle
    per = split.per_step
    parts = per[list(PARTS)].to_numpy(dtype=float).sum(axis=1)
    idle = per[P.idle_us].to_numpy(dtype=float)
    np.testing.assert_allclose(parts, idle, rtol=1e-9, atol=1e-6)
    assert (per[P.event_wait_us].to_numpy(dtype=float) >= 0).all()
    if gated_activities(trace).any():
        assert split.total(P.event_wait_us) > 0
