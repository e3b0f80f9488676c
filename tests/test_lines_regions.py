"""The regions table adds up (helper "lines"): its rows' kernels and the kernels outside every
compiled region are the trace's kernels, count and time. On the H200 attention-train run the
table showed frame 0/0 (85 kernels) and 20 outside: the 180 backward kernels, run by autograd
under ``CompiledFunctionBackward`` (with a ``## Call CompiledFxGraph ##`` inside) after the
frame returned, were in neither. They are a ``backward`` row now.

A step the profiler's stop cut short (the corpus MI250 trace ends with a 49 µs step 2 after a
9.3 ms step 1, no kernel in it) is left out of per-step figures."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import traceviz
from tests.conftest import CORPUS, SAMPLES, corpus_params, kernel, launch, load_trace, op
from traceviz.analysis.regions import Frame, region_stats
from traceviz.analysis.summary import summarize
from traceviz.analysis.timing.launch import launch_overhead
from traceviz.analysis.windows import PARTIAL_STEP_SHARE, full_steps, partial_steps, step_windows
from traceviz.pipeline import compare
from traceviz.report.json_report import comparison_json
from traceviz.report.views import metrics_view, regions_view
from traceviz.schema import ActivityKind, Kernels, Ops, Steps
from traceviz.trace import Trace

EVERY_TRACE = [
    *corpus_params(),
    *(
        pytest.param(p, id=str(p.relative_to(SAMPLES)))
        for p in sorted(SAMPLES.glob("**/*.pt.trace.json.gz"))
    ),
]
MI250 = CORPUS / "amd" / "mi250_eager_train_rocm62.json.gz"


def _measured(trace: Trace) -> tuple[int, float]:
    kernels = trace.kernels
    rows = kernels[kernels[Kernels.activity] == ActivityKind.KERNEL.value]
    return len(rows), float(np.nan_to_num(rows[Kernels.excl_dur_us].to_numpy(dtype=float)).sum())


def check_adds_up(trace: Trace) -> None:
    stats = region_stats(trace)
    count, time = _measured(trace)
    frames = stats.frames
    rows_count = int(frames[Frame.kernel_count].sum()) if len(frames) else 0
    rows_time = float(frames[Frame.kernel_time_us].sum()) if len(frames) else 0.0
    assert rows_count + stats.outside_kernels == count
    assert rows_time + stats.outside_time_us == pytest.approx(time, rel=1e-9, abs=1e-6)
    assert rows_count == stats.inside_kernels
    if len(frames):
        assert set(frames[Frame.kind]) <= {"frame", "backward", "forward", "graph"}
        graphs = frames.loc[frames[Frame.kind] != "frame", Frame.kind]
        assert graphs.is_unique  # one row per part of the compiled graphs outside frames


def _cpu_end(trace: traceviz.Trace) -> float:
    ops = trace.ops
    return float((ops[Ops.ts_us] + ops[Ops.dur_us].fillna(0.0)).max())


@pytest.mark.parametrize("path", EVERY_TRACE)
def test_regions_add_up_and_only_a_cut_last_step_is_partial(path: Path) -> None:
    """On every real trace: the regions add up; a step is left out only when it is the last,
    far shorter than the others and ends with the trace's CPU events; the full and partial
    steps are all steps."""
    trace = load_trace(path)
    check_adds_up(trace)
    steps = trace.steps
    left_out = partial_steps(trace)
    assert len(full_steps(trace)) + left_out == len(steps)
    summary = summarize(trace)
    assert summary.step_count + summary.partial_steps == len(steps)
    if left_out:
        durs = steps[Steps.dur_us].to_numpy(dtype=float)
        assert durs[-1] < PARTIAL_STEP_SHARE * float(np.min(durs[:-1]))
        assert float(steps[Steps.ts_us].iloc[-1]) + durs[-1] >= _cpu_end(trace) - 1e-3
    # only the MI250 trace has one among the corpus and sample traces
    assert bool(left_out) == (Path(path).resolve() == MI250.resolve())


def test_attention_train_backward_is_a_row() -> None:
    trace = load_trace(SAMPLES / "h200" / "attention-train" / "compiled.pt.trace.json.gz")
    frames = region_stats(trace).frames.set_index(Frame.kind)
    assert list(frames.index) == ["frame", "backward"]
    assert int(frames.loc["frame", Frame.kernel_count]) == 85
    assert int(frames.loc["backward", Frame.kernel_count]) == 180
    assert int(frames.loc["backward", Frame.calls]) == 5  # one backward per step


def test_backward_on_its_own_thread(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    """GIVEN a frame on thread 1 (one kernel), its backward on thread 2 under
    CompiledFunctionBackward with a graph call inside (two kernels) and one kernel outside;
    THEN the rows are frame 0/0 (1), backward (2), and 1 outside; the text says backward."""
    path = tmp_trace(
        [
            op("Torch-Compiled Region: 0/0", 0, 100),
            op("CompiledFunction", 5, 90),
            launch("cudaLaunchKernel", 10, 5, 1),
            kernel("triton_poi_fused_sin_0", 20, 5, 1),
            op("CompiledFunctionBackward", 200, 100, tid=2),
            op("## Call CompiledFxGraph fabc ##", 205, 90, tid=2, cat="user_annotation"),
            launch("cudaLaunchKernel", 210, 5, 2, tid=2),
            kernel("triton_poi_fused_cos_0", 220, 5, 2),
            launch("cudaLaunchKernel", 230, 5, 3, tid=2),
            kernel("triton_poi_fused_mul_0", 240, 5, 3),
            launch("cudaLaunchKernel", 400, 5, 4),
            kernel("triton_poi_fused_relu_0", 410, 5, 4),
        ]
    )
    trace = traceviz.load(path)
    stats = region_stats(trace)
    frames = stats.frames
    assert frames[Frame.kind].tolist() == ["frame", "backward"]
    assert frames[Frame.kernel_count].tolist() == [1, 2]
    assert frames[Frame.kernel_time_us].tolist() == [5.0, 10.0]
    assert frames[Frame.graph_keys].tolist()[1] == "fabc"
    assert stats.outside_kernels == 1
    check_adds_up(trace)
    view = regions_view(compare(trace, trace))
    assert [row[1] for row in view.rows] == ["0/0", "backward (outside frames)"] * 2


def test_compiled_function_alone_is_a_forward_row(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    """Traces older than the region marker (the corpus' 2023 cudagraph runs): CompiledFunction
    and CompiledFunctionBackward only; both are rows, and an FX-graph call alone is too."""
    path = tmp_trace(
        [
            op("CompiledFunction", 0, 100),
            launch("cudaLaunchKernel", 10, 5, 1),
            kernel("triton_poi_fused_sin_0", 20, 5, 1),
            op("CompiledFunctionBackward", 200, 100),
            launch("cudaLaunchKernel", 210, 5, 2),
            kernel("triton_poi_fused_cos_0", 220, 5, 2),
            op("## Call CompiledFxGraph fx1 ##", 500, 100, cat="user_annotation"),
            launch("cudaLaunchKernel", 510, 5, 3),
            kernel("triton_poi_fused_mul_0", 520, 5, 3),
        ]
    )
    trace = traceviz.load(path)
    stats = region_stats(trace)
    assert stats.frames[Frame.kind].tolist() == ["backward", "forward", "graph"]
    assert stats.frames[Frame.kernel_count].tolist() == [1, 1, 1]
    assert stats.outside_kernels == 0
    check_adds_up(trace)


@pytest.mark.parametrize(
    "name", ["a100_compiled_cudagraph_train_2023", "v100_train_compiledfunction_cudagraph"]
)
def test_corpus_compiled_function_traces_have_rows(name: str) -> None:
    path = CORPUS / "nvidia" / f"{name}.json.gz"
    if not path.is_file():
        pytest.skip(f"corpus not found at {CORPUS}")
    stats = region_stats(load_trace(path))
    assert set(stats.frames[Frame.kind]) == {"forward", "backward"}
    assert int(stats.frames[Frame.kernel_count].sum()) > 0


@pytest.mark.skipif(not MI250.is_file(), reason=f"corpus not found at {CORPUS}")
def test_mi250_cut_off_step_is_left_out() -> None:
    trace = load_trace(MI250)
    steps = trace.steps
    durs = steps[Steps.dur_us].to_numpy(dtype=float)
    assert len(steps) == 2 and durs[1] < PARTIAL_STEP_SHARE * durs[0]
    # the fragment ends where the trace's CPU events end
    assert float(steps[Steps.ts_us].iloc[-1]) + durs[1] == pytest.approx(_cpu_end(trace))
    assert partial_steps(trace) == 1 and len(full_steps(trace)) == 1
    summary = summarize(trace)
    assert summary.step_count == 1 and summary.partial_steps == 1
    assert summary.step_mean_us == pytest.approx(durs[0])  # not the mean of 9.3 ms and 49 µs
    assert summary.to_json()["partial_steps"] == 1
    launch = launch_overhead(trace)
    assert len(launch.per_step) == 1  # per-step figures over the full step only
    assert step_windows(trace).steps == [int(steps[Steps.step].iloc[0])]
    # the text and JSON say what the step count counts
    report = compare(trace, trace)
    comparison = report.comparison
    assert comparison.metric("step_count").a == 1
    note = metrics_view(comparison).note
    assert "1 partial step left out" in note
    doc = comparison_json(report)
    assert doc["traces"]["a"]["steps"] == 1 and doc["traces"]["a"]["partial_steps"] == 1


def _trace(tmp_trace, last_dur: float, tail: float = 0.0) -> traceviz.Trace:  # type: ignore[no-untyped-def]
    events = []
    for i in range(3):
        start = i * 1000.0
        events += [
            op(f"ProfilerStep#{i + 1}", start, 900.0, cat="user_annotation"),
            launch("cudaLaunchKernel", start + 10, 5, i + 1),
            kernel("k", start + 20, 100, i + 1),
        ]
    events.append(op("ProfilerStep#4", 3000.0, last_dur, cat="user_annotation"))
    if tail:
        events.append(op("aten::empty", 3000.0 + last_dur, tail))
    return traceviz.load(tmp_trace(events))


@pytest.mark.parametrize(
    ("last_dur", "tail", "partial"),
    [
        (30.0, 0.0, 1),  # a short last step at the end: cut by the profiler's stop
        (30.0, 50.0, 0),  # the trace goes on after it: it ended by itself, kept
        (800.0, 0.0, 0),  # a last step of ordinary length: kept
    ],
)
def test_a_last_step_is_partial_only_when_short_and_at_the_end(
    tmp_trace, last_dur: float, tail: float, partial: int
) -> None:  # type: ignore[no-untyped-def]
    trace = _trace(tmp_trace, last_dur, tail)
    assert partial_steps(trace) == partial
    assert summarize(trace).step_count == 4 - partial
    if partial:
        assert summarize(trace).step_mean_us == pytest.approx(900.0)
        assert len(launch_overhead(trace).per_step) == 3
