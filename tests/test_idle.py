"""Device idle time split over the whole step (analysis.idle) and the cpu-bound /
launch-bound findings built on it, on hand-made traces and every corpus trace; the part
"waiting on another stream / event" (event_wait_us): a device whose next work waits on a
cudaStreamWaitEvent is not in launch latency."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import traceviz
from tests.conftest import CORPUS, corpus_or_skip, corpus_params, kernel, launch, load_trace, op
from traceviz.analysis.timing.idle import LEADING, LONG_GAP_US, PARTS, CpuWork, IdleParts
from traceviz.analysis.timing.launch import StepOverhead, launch_overhead
from traceviz.analysis.timing.step_parts import GPU_PARTS, step_parts
from traceviz.analysis.timing.stream_waits import gated_activities, gated_launches
from traceviz.diagnose import diagnose_trace
from traceviz.diagnose.rules.idle import CPU_BOUND_ID
from traceviz.diagnose.rules.launch import LAUNCH_BOUND_ID
from traceviz.schema import DeviceKind

P = IdleParts


def _split(path):  # type: ignore[no-untyped-def]
    return launch_overhead(traceviz.load(path)).idle


def test_each_part_of_a_step(tmp_trace) -> None:
    # step 0-50; k1's launch returns at 5, k1 runs 10-20; the CPU is blocked in a sync 20-28,
    # k2's launch returns at 35, k2 runs 40-45; nothing more until the step ends at 50.
    path = tmp_trace(
        [
            op("ProfilerStep#1", 0, 50, cat="user_annotation"),
            launch("cudaLaunchKernel", 1, 4, 1),
            kernel("k1", 10, 10, 1),
            launch("cudaStreamSynchronize", 20, 8, 9),
            launch("cudaLaunchKernel", 30, 5, 2),
            kernel("k2", 40, 5, 2),
        ]
    )
    row = _split(path).per_step.iloc[0]
    assert row[P.idle_us] == 35 and row[P.busy_us] == 15
    assert row[P.blocked_us] == pytest.approx(8)  # 20-28
    assert row[P.cpu_wait_us] == pytest.approx(5 + 7 + 5)  # 0-5, 28-35, 45-50
    assert row[P.launch_latency_us] == pytest.approx(5 + 5)  # 5-10, 35-40
    assert row[P.between_us] == 0
    assert row[P.lead_us] == 10 and row[P.lead_cpu_wait_us] == 5
    assert row[P.trail_us] == 5 and row[P.trail_cpu_wait_us] == 5
    lo = launch_overhead(traceviz.load(path))  # the launch figures of the same step
    step = lo.per_step.iloc[0]
    assert step.wall_us == 50 and step.busy_us == 15 and step.idle_us == 35
    assert step.cpu_wait_us == row[P.cpu_wait_us]
    assert lo.launch_calls == 2 and lo.launch_api_us == 9  # kernel launches, not the sync
    assert lo.short_kernels == 0 and lo.delay_p50_us == pytest.approx(5)


def test_gap_with_work_already_queued_is_between_kernels(tmp_trace) -> None:
    path = tmp_trace(
        [
            op("ProfilerStep#1", 0, 40, cat="user_annotation"),
            launch("cudaLaunchKernel", 1, 4, 1),
            launch("cudaLaunchKernel", 6, 3, 2),
            kernel("k1", 10, 10, 1),
            kernel("k2", 30, 10, 2),  # issued at 9, before the device went idle at 20
        ]
    )
    row = _split(path).per_step.iloc[0]
    assert row[P.between_us] == pytest.approx(10)
    assert row[P.cpu_wait_us] == pytest.approx(5) and row[P.launch_latency_us] == 5


def _preprocess_step(preprocess_us: float, kernels: int = 20) -> list[dict]:
    """A vision step: 218 ms of preprocessing on the CPU, then the model's kernels."""
    events = [
        op("ProfilerStep#1", 0, preprocess_us + 400 + 50 * kernels, cat="user_annotation"),
        op("video_classification.preprocess", 10, preprocess_us, cat="user_annotation"),
        op("aten::resize_", 20, preprocess_us / 2),
    ]
    t = preprocess_us + 100
    for i in range(kernels):
        events += [
            launch("cudaLaunchKernel", t + 50 * i, 5, i + 1),
            kernel(f"conv{i}", t + 50 * i + 10, 40, i + 1),
        ]
    return events


def test_leading_preprocess_is_cpu_bound_and_named(tmp_trace) -> None:
    trace = traceviz.load(tmp_trace(_preprocess_step(218_000)))
    split = launch_overhead(trace).idle
    row = split.per_step.iloc[0]
    assert row[P.lead_cpu_wait_us] == pytest.approx(218_000 + 100 + 5, abs=1)
    work = split.cpu_work
    top = work.iloc[0]
    assert top[CpuWork.name] == "video_classification.preprocess"
    assert top[CpuWork.where] == LEADING and top[CpuWork.overlap_us] == pytest.approx(218_000)
    assert "aten::resize_" not in set(work[CpuWork.name])  # nested inside the annotation
    findings = diagnose_trace(trace)
    ids = [f.id for f in findings]
    assert CPU_BOUND_ID in ids and LAUNCH_BOUND_ID not in ids
    cpu = findings[ids.index(CPU_BOUND_ID)]
    assert "video_classification.preprocess 218 ms per step before the first kernel" in cpu.title
    assert cpu.est_gain_us == pytest.approx(row[P.cpu_wait_us])
    assert cpu is findings[0]  # the first finding a user reads


def test_many_short_waits_are_launch_bound_not_cpu_bound(tmp_trace) -> None:
    events = [op("ProfilerStep#1", 0, 2_000, cat="user_annotation")]
    for i in range(100):  # each launch takes 18 µs for a 2 µs kernel
        events += [
            launch("cudaLaunchKernel", 20 * i, 18, i + 1),
            kernel(f"k{i}", 20 * i + 19, 2, i + 1),
        ]
    trace = traceviz.load(tmp_trace(events))
    split = launch_overhead(trace).idle
    assert split.total(P.long_cpu_wait_us) == 0
    ids = [f.id for f in diagnose_trace(trace)]
    assert LAUNCH_BOUND_ID in ids and CPU_BOUND_ID not in ids


def test_step_without_device_work_waits_for_the_cpu(tmp_trace) -> None:
    path = tmp_trace(
        [
            op("ProfilerStep#1", 0, 100, cat="user_annotation"),
            op("ProfilerStep#2", 100, 100, cat="user_annotation"),
            launch("cudaLaunchKernel", 110, 5, 1),
            kernel("k", 120, 10, 1),
        ]
    )
    first = _split(path).per_step.iloc[0]
    assert first[P.cpu_wait_us] == 100 and first[P.lead_us] == 100


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_idle_parts_add_up(path) -> None:  # type: ignore[no-untyped-def]
    trace = load_trace(path)
    launch = launch_overhead(trace)
    split = launch.idle
    per = split.per_step
    parts = per[list(PARTS)].to_numpy(dtype=float)
    assert (parts >= -1e-6).all()
    np.testing.assert_allclose(parts.sum(axis=1), per[P.idle_us], rtol=1e-9, atol=1e-6)
    np.testing.assert_allclose(per[P.busy_us] + per[P.idle_us], per[P.wall_us], atol=1e-3)
    assert (per[P.lead_cpu_wait_us] <= per[P.lead_us] + 1e-6).all()
    assert (per[P.trail_cpu_wait_us] <= per[P.trail_us] + 1e-6).all()
    assert (per[P.long_cpu_wait_us] <= per[P.cpu_wait_us] + 1e-6).all()
    spans = split.blocked_spans
    assert float((spans[1] - spans[0]).sum()) == pytest.approx(split.total(P.blocked_us), abs=1e-3)
    # the CPU work credited to the wait never exceeds the wait, per step
    credited = split.cpu_work.groupby(CpuWork.step)[CpuWork.overlap_us].sum()
    for step, value in credited.items():
        assert value <= per[P.cpu_wait_us].iloc[int(step)] + 1e-3
    # where an activity follows a stream-wait call, some idle time is the wait's
    if gated_activities(trace).any():
        assert split.total(P.event_wait_us) > 0
    if trace.device_kind in (DeviceKind.CUDA, DeviceKind.ROCM):
        np.testing.assert_allclose(per[P.idle_us], launch.per_step[StepOverhead.idle_us], atol=1e-3)
        np.testing.assert_allclose(
            per[P.cpu_wait_us], launch.per_step[StepOverhead.cpu_wait_us], atol=1e-9
        )


RESNET = "nvidia/v100_resnet50_eager_train_2021.json.gz"
RESNET_LEGACY = "nvidia/resnet50_eager_legacy_bare_array.json.gz"
DATALOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def test_resnet_is_cpu_bound_on_its_data_loader() -> None:
    """ResNet50 training (V100): the device waits for the CPU ~43% of the step, mostly while
    the single-process DataLoader runs; one cpu-bound finding names it, no launch-bound."""
    trace = corpus_or_skip(RESNET)
    launch = launch_overhead(trace)
    split = launch.idle
    wait_share = split.total(P.cpu_wait_us) / split.total(P.wall_us)
    assert 0.38 < wait_share < 0.48
    assert split.largest == P.cpu_wait_us
    assert split.total(P.long_cpu_wait_us) >= 0.5 * split.total(P.cpu_wait_us)
    work = split.cpu_work.groupby(CpuWork.name)[CpuWork.overlap_us].sum()
    assert work.idxmax() == DATALOADER
    findings = diagnose_trace(trace)
    ids = [f.id for f in findings]
    assert ids[0] == CPU_BOUND_ID and LAUNCH_BOUND_ID not in ids
    assert DATALOADER in findings[0].title


def test_legacy_resnet_leading_idle_is_the_data_loader() -> None:
    """From the second step on, ~50 ms of each step pass before the first kernel while the
    DataLoader runs (the old cpu-wait figure left this out)."""
    split = launch_overhead(corpus_or_skip(RESNET_LEGACY)).idle
    lead = split.per_step[P.lead_cpu_wait_us].to_numpy()[1:]
    assert ((lead > 45_000) & (lead < 65_000)).all()
    leading = split.cpu_work[split.cpu_work[CpuWork.where] == LEADING]
    top = leading.groupby(CpuWork.name)[CpuWork.overlap_us].sum()
    assert top.idxmax() == DATALOADER
    assert top.max() == pytest.approx(split.per_step[P.lead_cpu_wait_us].sum(), rel=0.02)


def test_long_gap_threshold_is_far_above_a_launch() -> None:
    assert LONG_GAP_US >= 100 * 10  # a kernel launch costs ~5-20 µs


def _vision_step() -> list[dict]:
    """Issue #10's vision trace in miniature: 218 ms of preprocessing before the first kernel,
    then the model, then a 126 ms copy of the result into pageable memory."""
    events = _preprocess_step(218_000)
    end = max(e["ts"] + e["dur"] for e in events if e["cat"] == "kernel")
    events[0]["dur"] = end + 126_000 + 1_000  # the ProfilerStep
    events += [
        op("aten::_local_scalar_dense", end + 10, 126_000),
        launch("cudaMemcpyAsync", end + 20, 125_980, 999),
        kernel("Memcpy DtoH (Device -> Pageable)", end + 30, 5, 999, cat="gpu_memcpy", bytes=8),
    ]
    return events


def test_vision_step_one_true_first_finding(tmp_trace) -> None:
    from traceviz.diagnose.rules.copies import COPIES_ID, SYNC_ID

    trace = traceviz.load(tmp_trace(_vision_step()))
    split = launch_overhead(trace).idle
    row = split.per_step.iloc[0]
    assert row[P.blocked_us] == pytest.approx(125_980 - 5)  # all but the copy's own 5 µs
    assert row[P.cpu_wait_us] > row[P.blocked_us]
    findings = diagnose_trace(trace)
    assert findings[0].id == CPU_BOUND_ID
    assert (
        "video_classification.preprocess 218 ms per step before the first kernel"
        in findings[0].title
    )
    ids = [f.id for f in findings]
    assert LAUNCH_BOUND_ID not in ids and SYNC_ID in ids and COPIES_ID in ids
    copy = findings[ids.index(COPIES_ID)]
    assert "0.0% of the step" not in copy.title


def test_blocked_larger_than_wait_leaves_the_sync_finding_alone(tmp_trace) -> None:
    from traceviz.diagnose.rules.copies import SYNC_ID

    events = [op("ProfilerStep#1", 0, 10_000, cat="user_annotation")]
    events += [launch("cudaLaunchKernel", 10, 5, 1), kernel("k", 20, 100, 1)]
    events += [op("aten::item", 190, 9_000), launch("cudaStreamSynchronize", 200, 8_000, 2)]
    trace = traceviz.load(tmp_trace(events))
    split = launch_overhead(trace).idle
    assert split.largest == P.blocked_us
    ids = [f.id for f in diagnose_trace(trace)]
    assert ids[0] == SYNC_ID and CPU_BOUND_ID not in ids and LAUNCH_BOUND_ID not in ids


def test_compare_cpu_wait_metric_is_the_split() -> None:
    from traceviz.pipeline import compare

    a, b = corpus_or_skip(RESNET), corpus_or_skip("nvidia/v100_small_plain.json")
    comparison = compare(a, b, names=("a", "b"))
    metrics = comparison.metrics.set_index("name")
    for column, side in (("a", comparison.a), ("b", comparison.b)):
        value = metrics.loc["cpu_wait_us", column]
        assert value == pytest.approx(side.launch.idle.total(P.cpu_wait_us))


_LAYOUT = st.lists(
    st.tuples(
        st.floats(0, 2_000),  # launch start
        st.floats(0.5, 300),  # launch duration
        st.floats(-50, 500),  # kernel start after the launch starts
        st.floats(0, 400),  # kernel duration
        st.sampled_from([7, 8]),  # stream
        st.booleans(),  # linked to its launch (False: no correlation match)
    ),
    min_size=0,
    max_size=12,
)
_SYNCS = st.lists(st.tuples(st.floats(0, 2_500), st.floats(0, 600)), max_size=3)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(layout=_LAYOUT, syncs=_SYNCS)
def test_random_layouts_parts_add_up(tmp_trace, layout, syncs) -> None:  # type: ignore[no-untyped-def]
    events = [
        op("ProfilerStep#1", 0, 1_500, cat="user_annotation"),
        op("ProfilerStep#2", 1_500, 1_500, cat="user_annotation"),
        op("aten::work", 100, 900),
    ]
    for i, (ts, dur, offset, kdur, stream, linked) in enumerate(layout):
        events.append(launch("cudaLaunchKernel", ts, dur, i + 1))
        events.append(
            kernel(f"k{i}", ts + offset, kdur, i + 1 if linked else 10_000 + i, stream=stream)
        )
    for j, (ts, dur) in enumerate(syncs):
        events.append(launch("cudaStreamSynchronize", ts, dur, 20_000 + j))
    split = launch_overhead(traceviz.load(tmp_trace(events))).idle
    per = split.per_step
    parts = per[list(PARTS)].to_numpy(dtype=float)
    assert (parts >= -1e-6).all()
    np.testing.assert_allclose(parts.sum(axis=1), per[P.idle_us], atol=1e-6)
    assert (per[P.idle_us] <= per[P.wall_us] + 1e-6).all()
    credited = split.cpu_work.groupby(CpuWork.step)[CpuWork.overlap_us].sum()
    for step, value in credited.items():
        assert value <= per[P.cpu_wait_us].iloc[int(step)] + 1e-6


def test_idle_with_no_recorded_cpu_work_is_not_called_cpu_bound(tmp_trace) -> None:
    """The same long leading gap without the preprocess annotation (nothing recorded on the
    CPU meanwhile: a sleep, an unprofiled thread, or a step span outlasting the work): the
    idle is reported as measured, at info, without claiming the CPU was busy."""
    events = [e for e in _preprocess_step(218_000) if e["cat"] != "user_annotation"]
    events = [e for e in events if e["name"] != "aten::resize_"]
    events.insert(0, op("ProfilerStep#1", 0, 218_000 + 400 + 50 * 20, cat="user_annotation"))
    findings = diagnose_trace(traceviz.load(tmp_trace(events)))
    cpu = next(f for f in findings if f.id == CPU_BOUND_ID)
    assert cpu.severity.value == "info"
    assert "CPU-bound" not in cpu.title and "no CPU op or Python frame recorded" in cpu.title
    annotated = diagnose_trace(traceviz.load(tmp_trace(_preprocess_step(218_000))))
    assert next(f for f in annotated if f.id == CPU_BOUND_ID).severity.value == "warning"


@pytest.mark.parametrize("seed", range(10))
def test_outer_ops_order_is_lexsort(seed: int) -> None:
    """Starts in order with many ties (and sometimes out of order, or NaN): the order of the
    outer-ops search equals np.lexsort((-end, ts)) exactly."""
    from traceviz.analysis.timing.idle import _by_start_longer_first

    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 60))
    ts = np.sort(rng.integers(0, 12, n).astype(float))
    end = ts + rng.integers(0, 4, n)
    if seed % 5 == 3 and n > 2:
        ts[0], ts[-1] = ts[-1], ts[0]
    if seed % 5 == 4 and n > 2:
        ts[n // 2] = np.nan
    assert _by_start_longer_first(ts, end).tolist() == np.lexsort((-end, ts)).tolist()


def test_tied_kernels_a_sync_across_steps_and_an_empty_step(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    """GIVEN kernels tied on their start (k1 400-450, k2 400-480), a sync 900-1200 spanning
    the boundary of steps 0-1000 and 1000-2000, and a step 2000-2500 with no kernel THEN each
    step's busy time is the union of its kernels, the sync's blocked time is cut at the
    boundary (100 + 200 µs), and the empty step is all idle."""
    from traceviz.analysis.timing.blocking import BlockedStep, blocking_calls

    events = [
        op("ProfilerStep#1", 0, 1000),
        op("ProfilerStep#2", 1000, 1000),
        op("ProfilerStep#3", 2000, 500),
        op("outer", 5, 300),
        launch("cudaLaunchKernel", 10, 5, 1),
        launch("cudaLaunchKernel", 20, 5, 2),
        kernel("k1", 400, 50, 1),
        kernel("k2", 400, 80, 2),
        launch("cudaStreamSynchronize", 900, 300, 99),
        launch("cudaLaunchKernel", 1250, 5, 3),
        kernel("k3", 1300, 20, 3),
    ]
    trace = traceviz.load(tmp_trace(events))
    split = launch_overhead(trace).idle
    per_step = split.per_step
    assert per_step[P.busy_us].tolist() == [80.0, 20.0, 0.0]
    assert per_step[P.idle_us].tolist() == [920.0, 980.0, 500.0]
    assert per_step[P.blocked_us].tolist() == [100.0, 200.0, 0.0]
    assert per_step[P.cpu_wait_us].iat[2] == 500.0
    assert [s.tolist() for s in split.blocked_spans] == [[900.0], [1200.0]]
    parts = per_step[list(PARTS)].sum(axis=1)
    assert (parts <= per_step[P.idle_us] + 1e-6).all()
    assert blocking_calls(trace).per_step[BlockedStep.calls].tolist() == [1, 0, 0]


def test_a100_compiled_steps_wait_for_the_cpu_and_name_its_work() -> None:
    """The CUDA-graph training trace: several steps, CPU waits, the CPU work named in them."""
    path = CORPUS / "nvidia" / "a100_compiled_cudagraph_train_2023.json.gz"
    if not path.exists():
        pytest.skip(f"corpus trace not found: {path}")
    split = _split(path)
    assert len(split.per_step) > 1
    assert split.total(P.cpu_wait_us) > 0 and len(split.cpu_work) > 0
    assert split.total(P.idle_us) <= split.total(P.wall_us)


def test_windows_one_at_a_time_equal_all_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows not in order (overlapping, unordered, infinite) are split one at a time: on a
    real trace that path gives the in-order path's per-step tables and CPU work."""
    from tests.conftest import SAMPLES
    from traceviz.analysis.windows import StepWindows

    path = SAMPLES / "h200" / "gpt2" / "eager.pt.trace.json.gz"
    fast = launch_overhead(traceviz.load(path))
    monkeypatch.setattr(StepWindows, "in_order", lambda self: False)
    slow = launch_overhead(traceviz.load(path))
    assert len(fast.per_step) > 1 and fast.idle.total(P.cpu_wait_us) > 0
    pd.testing.assert_frame_equal(fast.per_step, slow.per_step, rtol=1e-9)
    pd.testing.assert_frame_equal(fast.idle.per_step, slow.idle.per_step, rtol=1e-9)
    pd.testing.assert_frame_equal(fast.idle.cpu_work, slow.idle.cpu_work, rtol=1e-9)
    assert slow.idle.recorded_us == pytest.approx(fast.idle.recorded_us)


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


@pytest.mark.parametrize("wait_name", ["cudaStreamWaitEvent", "hipStreamWaitEvent"])
def test_work_behind_a_stream_wait_is_not_launch_latency(tmp_trace, wait_name: str) -> None:  # type: ignore[no-untyped-def]
    trace = traceviz.load(tmp_trace(_waiting_step(wait_name)))
    overhead = launch_overhead(trace)
    row = overhead.idle.per_step.iloc[0]
    # 20-26: waiting for the CPU to launch k2; 26-80: k2's stream waited on the event
    assert row[P.event_wait_us] == pytest.approx(54)
    assert row[P.launch_latency_us] == pytest.approx(5)  # 5-10, before k1 (no wait call)
    assert row[P.cpu_wait_us] == pytest.approx(5 + 6 + 10)  # 0-5, 20-26, 90-100
    assert row[P.idle_us] == pytest.approx(sum(row[p] for p in PARTS))
    # the step breakdown shows the part
    assert P.event_wait_us in GPU_PARTS
    assert dict(step_parts(trace, overhead))[P.event_wait_us] == pytest.approx(54)


def test_only_the_launch_right_after_a_wait_on_its_thread_is_gated(tmp_trace) -> None:
    trace = traceviz.load(tmp_trace(_waiting_step()))
    gated = gated_launches(trace)
    names = trace.launches["name"].astype(str).tolist()
    assert [n for n, g in zip(names, gated, strict=True) if g] == ["cudaLaunchKernel"]
    assert trace.launches["ts_us"].to_numpy()[gated].tolist() == [24]
    kernels = trace.kernels["name"].astype(str).to_numpy()
    assert kernels[gated_activities(trace)].tolist() == ["k2"]
    # a wait on another thread gates nothing
    events = _waiting_step()
    events[3] = launch("cudaStreamWaitEvent", 22, 1, 2, tid=2)
    row = _split(tmp_trace(events)).per_step.iloc[0]
    assert row[P.event_wait_us] == 0
    assert row[P.launch_latency_us] == pytest.approx(5 + 54)


def test_the_idle_figure_draws_the_part() -> None:
    pytest.importorskip("plotly", reason="plotly not installed (dashboard extra)")
    from traceviz.report.figures.launch import _STEP_PARTS

    assert _STEP_PARTS[P.event_wait_us][0] == "device idle, waiting on another stream / event"
