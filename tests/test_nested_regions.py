"""Compiled regions. The regions table adds up on every real trace: per kind, its rows' kernels
and the kernels outside every compiled region are the trace's kernels, count and time; region
device time ≤ region wall on CPU traces; a kind's wall time is the time its spans cover (per
thread, nested spans once), never more than the trace's span. Autograd's backward under
``CompiledFunctionBackward`` after the frame returned is a ``backward`` row; traces older than
the region marker have ``forward``/``backward`` rows. A step the profiler's stop cut short is
left out of per-step figures.

Nested regions: after a graph break the resumed frame's region (1/0) runs inside the region of
the frame that broke (0/0). A kernel belongs to the innermost region of each kind; the
graph-break gap table is computed once and the finding and the figure both show it. Region and
step numbers too large for the schema's integers do not crash the parser.

Where compiled code runs: each code span lies in the innermost Torch-Compiled Region of its
thread in the raw JSON; the shortcuts taken where there is nothing to find (no compiled-code
spans in an eager trace, no two spans in one step without graph breaks) return the tables the
general path gives; issue times are the launch's start, else the kernel's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import traceviz
from tests.conftest import (
    CORPUS,
    SAMPLES,
    corpus_params,
    kernel,
    launch,
    load_trace,
    op,
)
from tests.real_data import raw_events
from traceviz.analysis import kernels as kernel_analysis
from traceviz.analysis import regions
from traceviz.analysis.kernels import issued_inside
from traceviz.analysis.regions import CodeSpan, Frame, Gap, graph_break_gaps, region_stats
from traceviz.analysis.summary import summarize
from traceviz.analysis.timing.launch import launch_overhead
from traceviz.analysis.windows import PARTIAL_STEP_SHARE, full_steps, partial_steps, step_windows
from traceviz.diagnose.facts import facts_of_trace
from traceviz.diagnose.finding import Finding
from traceviz.diagnose.rules.breaks import graph_breaks
from traceviz.pipeline import compare
from traceviz.report.json_report import comparison_json
from traceviz.report.views import metrics_view, regions_view
from traceviz.schema import ActivityKind, DeviceKind, Kernels, Ops, RegionKind, Regions, Steps
from traceviz.trace import Trace

GRAPH_BREAK = SAMPLES / "graph-break" / "compiled.pt.trace.json.gz"
GAP_WALL = "step wall time between the compiled graphs"
GAP_KERNEL_TIME = "their time per step"
BETWEEN_BAR = "between regions of a step (graph-break gaps)"


EVERY_TRACE = [
    *corpus_params(),
    *(
        pytest.param(p, id=str(p.relative_to(SAMPLES)))
        for p in sorted(SAMPLES.glob("**/*.pt.trace.json.gz"))
    ),
]
MI250 = CORPUS / "amd" / "mi250_eager_train_rocm62.json.gz"


def _kernel_count(trace: Trace) -> int:
    return int((trace.kernels[Kernels.activity] == ActivityKind.KERNEL.value).sum())


def check_regions_partition(trace: Trace) -> None:
    """Per region kind: the rows' kernel counts and times add up to the kernels issued inside
    that kind's spans, never more than the trace holds; the frame rows and the kernels
    outside every region are the trace's kernels, count and time."""
    regions = trace.regions
    stats = region_stats(trace)
    total = _kernel_count(trace)
    for kind, rows in regions.groupby(Regions.kind, observed=True):
        counted = int(rows[Regions.kernel_count].sum())
        assert counted <= total, (kind, counted, total)
        if kind != RegionKind.FX_GRAPH_CALL.value:
            assert counted <= stats.inside_kernels
    frames = stats.frames
    assert int(frames[Frame.kernel_count].sum()) == stats.inside_kernels
    assert float(frames[Frame.kernel_time_us].sum()) == pytest.approx(
        stats.inside_time_us, rel=1e-9, abs=1e-6
    )
    assert stats.inside_kernels + stats.outside_kernels == total
    assert stats.between_kernels <= total
    parts = stats.code_time_us + stats.between_time_us + stats.other_time_us
    assert parts == pytest.approx(stats.inside_time_us + stats.outside_time_us, abs=1e-6)
    assert parts == pytest.approx(summarize(trace).kernel_time_us, abs=1e-6)
    assert set(frames[Frame.kind]) <= {"frame", "backward", "forward", "graph"}
    assert frames.loc[frames[Frame.kind] != "frame", Frame.kind].is_unique  # one row per part
    if trace.device_kind is DeviceKind.CPU:
        wall = np.nan_to_num(regions[Regions.dur_us].to_numpy(dtype=float))
        device = regions[Regions.kernel_time_us].to_numpy(dtype=float)
        assert np.all(device <= wall + 1e-3 * max(total, 1))
        assert float(frames[Frame.kernel_time_us].sum()) <= float(frames["wall_us"].sum())


def _cpu_end(trace: traceviz.Trace) -> float:
    ops = trace.ops
    return float((ops[Ops.ts_us] + ops[Ops.dur_us].fillna(0.0)).max())


@pytest.mark.parametrize("path", EVERY_TRACE)
def test_regions_add_up_and_only_a_cut_last_step_is_partial(path: Path) -> None:
    """On every real trace: the regions add up and each kind's wall time fits in the trace's
    span; a step is left out only when it is the last, far shorter than the others and ends
    with the trace's CPU events; the full and partial steps are all steps."""
    trace = load_trace(path)
    check_regions_partition(trace)
    summary = summarize(trace)
    for kind, wall in zip(
        summary.region_kinds["kind"], summary.region_kinds["wall_us"], strict=True
    ):
        assert wall <= summary.span_us + 1e-6, (kind, wall, summary.span_us)
    steps = trace.steps
    left_out = partial_steps(trace)
    assert len(full_steps(trace)) + left_out == len(steps)
    assert summary.step_count + summary.partial_steps == len(steps)
    if left_out:
        durs = steps[Steps.dur_us].to_numpy(dtype=float)
        assert durs[-1] < PARTIAL_STEP_SHARE * float(np.min(durs[:-1]))
        assert float(steps[Steps.ts_us].iloc[-1]) + durs[-1] >= _cpu_end(trace) - 1e-3
    # only the MI250 trace has one among the corpus and sample traces
    assert bool(left_out) == (Path(path).resolve() == MI250.resolve())


def test_graph_break_sample_region_rows_sum_to_its_kernels() -> None:
    trace = load_trace(GRAPH_BREAK)
    regions = trace.regions
    compiled = regions[regions[Regions.kind] == RegionKind.COMPILED_REGION.value]
    total = _kernel_count(trace)
    # the premise: the resumed frame's region runs inside the one that broke
    start = compiled[Regions.ts_us].to_numpy(dtype=float)
    end = start + compiled[Regions.dur_us].to_numpy(dtype=float)
    frame = compiled[Regions.frame_id].to_numpy(dtype=float)
    outer, inner = np.flatnonzero(frame == 0), np.flatnonzero(frame == 1)
    assert len(inner) and all(
        ((start[outer] <= start[i]) & (end[outer] >= end[i])).any() for i in inner
    )
    # so the spans of 0/0 hold every kernel, 1/0's too; the rows still add up to the kernels
    assert int(issued_inside(trace, compiled.iloc[outer]).sum()) == total
    assert int(compiled[Regions.kernel_count].sum()) == total
    calls = regions[regions[Regions.kind] == RegionKind.FX_GRAPH_CALL.value]
    assert int(calls[Regions.kernel_count].sum()) == total
    frames = region_stats(trace).frames.set_index(["frame_id", "recompile_id"])
    assert int(frames["kernel_count"].sum()) == total
    assert frames.loc[(1, 0), "kernel_count"] > 0
    assert frames.loc[(0, 0), "kernel_count"] + frames.loc[(1, 0), "kernel_count"] == total
    assert float(compiled[Regions.kernel_time_us].sum()) == pytest.approx(
        summarize(trace).kernel_time_us
    )


def _finding(facts) -> Finding:  # type: ignore[no-untyped-def]
    (found,) = graph_breaks(facts)
    return found


def _evidence(finding: Finding, label: str) -> float | None:
    values = [e.value for e in finding.evidence if not isinstance(e, str) and e.label == label]
    return float(values[0]) if values else None  # type: ignore[arg-type]


def _where_bars_ms(trace_name: str, eager: Trace, compiled: Trace) -> dict[str, float]:
    """The regions figure's "device time by where it was issued" bars of one side, ms."""
    pytest.importorskip("plotly", reason="plotly not installed (dashboard extra)")
    from traceviz.report.figures import regions_figure

    figure = regions_figure(compare(eager, compiled, names=("eager", trace_name)))
    return {
        str(t.name): float(t.y[0])
        for t in figure.data
        if t.type == "bar" and list(t.x) == [trace_name]
    }


def test_graph_break_sample_gap_series_is_the_findings_figure() -> None:
    trace = load_trace(GRAPH_BREAK)
    facts = facts_of_trace(trace, name="compiled")
    gaps = facts.regions.gaps
    n_steps = len(launch_overhead(trace).per_step)
    assert len(gaps) == n_steps  # one break per step
    assert (gaps[Gap.wall_us] > 0).all()
    assert gaps.equals(graph_break_gaps(trace))
    finding = _finding(facts)
    assert _evidence(finding, GAP_WALL) == pytest.approx(gaps[Gap.wall_us].sum() / n_steps)
    assert finding.est_gain_us == pytest.approx(gaps[Gap.wall_us].sum() / n_steps)
    assert facts.regions.between_kernels == int(gaps[Gap.kernel_count].sum())
    kernel_time = _evidence(finding, GAP_KERNEL_TIME)  # absent when no kernel runs in a gap
    assert (kernel_time or 0.0) == pytest.approx(gaps[Gap.kernel_time_us].sum() / n_steps)
    eager = load_trace(SAMPLES / "graph-break" / "eager.pt.trace.json.gz")
    bars = _where_bars_ms("compiled", eager, trace)
    assert bars[BETWEEN_BAR] == pytest.approx(gaps[Gap.kernel_time_us].sum() / 1e3)
    assert sum(bars.values()) == pytest.approx(summarize(trace).kernel_time_us / 1e3)


def _nested_break_trace(tmp_trace) -> Trace:  # type: ignore[no-untyped-def]
    """Two CPU steps; in each, region 0/0 holds graph call A, an eager aten::mul (the break)
    whose aten::copy_ nests inside it, then region 1/0 (nested in 0/0) with graph call B."""
    events = []
    for base in (0, 1000):
        events += [
            op(f"ProfilerStep#{base // 1000}", base, 1000, cat="user_annotation"),
            op("Torch-Compiled Region: 0/0", base + 10, 900),
            op("## Call CompiledFxGraph a ##", base + 20, 100, cat="user_annotation"),
            op("graph_0_cpp_fused_sin_0", base + 30, 40),
            op("aten::mul", base + 150, 60),
            op("aten::copy_", base + 160, 20),
            op("Torch-Compiled Region: 1/0", base + 300, 500),
            op("## Call CompiledFxGraph b ##", base + 310, 300, cat="user_annotation"),
            op("graph_1_cpp_fused_cos_0", base + 320, 50),
            op("aten::addmm", base + 400, 100),
            op("aten::copy_", base + 410, 30),
            op("graph_0_cpp_fused_relu_1", base + 850, 10),  # back in 0/0, after 1/0
        ]
    return traceviz.load(tmp_trace(events))


def test_kernels_belong_to_the_innermost_region(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    trace = _nested_break_trace(tmp_trace)
    assert trace.device_kind is DeviceKind.CPU and _kernel_count(trace) == 14
    regions = trace.regions
    by_name = regions.groupby(Regions.name, observed=True)[
        [Regions.kernel_count, Regions.kernel_time_us]
    ].sum()
    # per step: 0/0 holds sin, mul, copy_ (in mul), relu; 1/0 holds cos, addmm, copy_ (in addmm)
    assert by_name.loc["Torch-Compiled Region: 0/0", Regions.kernel_count] == 8
    assert by_name.loc["Torch-Compiled Region: 1/0", Regions.kernel_count] == 6
    assert by_name.loc["Torch-Compiled Region: 0/0", Regions.kernel_time_us] == 2 * (40 + 60 + 10)
    assert by_name.loc["Torch-Compiled Region: 1/0", Regions.kernel_time_us] == 2 * (50 + 100)
    assert by_name.loc["## Call CompiledFxGraph a ##", Regions.kernel_count] == 2
    assert by_name.loc["## Call CompiledFxGraph b ##", Regions.kernel_count] == 6
    check_regions_partition(trace)


def test_nested_break_gap_table_feeds_finding_and_figure(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    trace = _nested_break_trace(tmp_trace)
    facts = facts_of_trace(trace, name="compiled")
    gaps = facts.regions.gaps
    # between graph call a (ends at +120) and graph call b (starts at +310), each step
    assert list(gaps[Gap.start_us]) == [120, 1120] and list(gaps[Gap.end_us]) == [310, 1310]
    assert list(gaps[Gap.kernel_count]) == [2, 2]  # aten::mul and its aten::copy_
    assert list(gaps[Gap.kernel_time_us]) == [60, 60]  # mul's 60 µs hold the copy's 20
    assert facts.regions.between_kernels == 4 and facts.regions.between_time_us == 120
    finding = _finding(facts)
    assert _evidence(finding, GAP_WALL) == pytest.approx(190)
    assert _evidence(finding, GAP_KERNEL_TIME) == pytest.approx(60)
    assert _evidence(finding, "kernels between the compiled graphs per step") == 2
    eager = traceviz.load(
        tmp_trace([op("ProfilerStep#0", 0, 100, cat="user_annotation"), op("aten::sin", 1, 5)])
    )
    bars = _where_bars_ms("compiled", eager, trace)
    assert bars[BETWEEN_BAR] == pytest.approx(gaps[Gap.kernel_time_us].sum() / 1e3)
    # the gap kernels run inside region 0/0: shown once, as gap time, not also as "inside"
    assert sum(bars.values()) == pytest.approx(summarize(trace).kernel_time_us / 1e3)


def test_gpu_kernels_in_nested_regions_are_credited_once(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    path = tmp_trace(
        [
            op("Torch-Compiled Region: 0/0", 0, 1000),
            launch("cudaLaunchKernel", 10, 5, 1),
            kernel("triton_poi_fused_sin_0", 20, 5, 1),
            op("Torch-Compiled Region: 1/0", 300, 500),
            launch("cudaLaunchKernel", 310, 5, 2),
            kernel("triton_poi_fused_cos_0", 320, 5, 2),
            launch("cudaLaunchKernel", 900, 5, 3),
            kernel("triton_poi_fused_relu_0", 910, 5, 3),
        ]
    )
    trace = traceviz.load(path)
    counts = trace.regions.set_index(Regions.name)[Regions.kernel_count]
    assert counts["Torch-Compiled Region: 0/0"] == 2 and counts["Torch-Compiled Region: 1/0"] == 1
    check_regions_partition(trace)


HUGE = "99999999999999999999"  # > 2**64


def test_huge_region_and_step_numbers_do_not_crash(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    path = tmp_trace(
        [
            op(f"ProfilerStep#{HUGE}", 0, 1000, cat="user_annotation"),
            op("ProfilerStep#1", 2000, 1000, cat="user_annotation"),
            op(f"Torch-Compiled Region: {HUGE}/0", 10, 500),
            op(f"Torch-Compiled Region: 0/{HUGE}", 2010, 500),
            op("graph_0_cpp_fused_sin_0", 20, 40),
            op("graph_0_cpp_fused_sin_0", 2020, 40),
        ]
    )
    trace = traceviz.load(path)
    # a step number beyond 64 bits is not a step marker; the span stays an annotation op
    assert list(trace.steps["step"]) == [1]
    assert f"ProfilerStep#{HUGE}" in set(trace.ops["name"].astype(str))
    # a region number beyond 32 bits is <NA>; the region and its kernels are kept
    regions = trace.regions.set_index(Regions.name)
    assert pd.isna(regions.loc[f"Torch-Compiled Region: {HUGE}/0", Regions.frame_id])
    assert regions.loc[f"Torch-Compiled Region: {HUGE}/0", Regions.recompile_id] == 0
    assert pd.isna(regions.loc[f"Torch-Compiled Region: 0/{HUGE}", Regions.recompile_id])
    assert int(regions[Regions.kernel_count].sum()) == 2
    stats = region_stats(trace)
    assert stats.region_calls == 2 and stats.inside_kernels == 2
    summarize(trace)
    launch_overhead(trace)
    graph_breaks(facts_of_trace(trace, name="huge"))
    pytest.importorskip("plotly", reason="plotly not installed (dashboard extra)")
    from traceviz.report.figures import regions_figure

    comparison = compare(trace, trace)
    assert comparison.regions.empty  # no frame row without its numbers (documented) ...
    assert comparison.metric("compiled_regions").a == 2  # ... but the regions are counted
    regions_figure(comparison)


def test_largest_numbers_that_fit_are_kept(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    path = tmp_trace(
        [
            op(f"ProfilerStep#{2**63 - 1}", 0, 1000, cat="user_annotation"),
            op(f"Torch-Compiled Region: {2**31 - 1}/{2**31 - 1}", 10, 500),
        ]
    )
    trace = traceviz.load(path)
    assert list(trace.steps["step"]) == [2**63 - 1]
    assert trace.regions[Regions.frame_id].iloc[0] == 2**31 - 1


Make = Callable[..., Path]


def test_nested_region_counted_once(tmp_trace: Make) -> None:
    trace = load_trace(SAMPLES / "graph-break" / "compiled.pt.trace.json.gz")
    regions = trace.regions[trace.regions["kind"].astype(str) == "compiled_region"]
    table = summarize(trace).region_kinds
    wall = float(table.loc[table["kind"].astype(str) == "compiled_region", "wall_us"].iloc[0])
    outer = regions[regions["frame_id"] == 0]["dur_us"].sum()  # 1/0 lies inside each 0/0
    # to the nanosecond: the wall is a union of [ts, ts + dur] on absolute microsecond clocks
    # (~1e12), where float64 sums carry errors of ~1e-3 µs
    assert wall == pytest.approx(outer, abs=1e-2)
    assert wall < regions["dur_us"].sum()  # the nested 1/0 spans are not added again
    # made nested and disjoint spans
    path = tmp_trace([
        op("Torch-Compiled Region: 0/0", 0, 100),
        op("Torch-Compiled Region: 1/0", 20, 30),  # inside 0/0
        op("Torch-Compiled Region: 0/0", 200, 50),
        op("aten::mul", 210, 10),
    ])  # fmt: skip
    import traceviz

    table = summarize(traceviz.load(path)).region_kinds
    wall = float(table.loc[table["kind"].astype(str) == "compiled_region", "wall_us"].iloc[0])
    assert wall == pytest.approx(150.0)


FRAME = "Torch-Compiled Region: "
# H200 runs with and without a graph break, CUDA graphs; a CPU run; corpus compiled traces
# (CUDA graphs, ROCm HIP graphs) and an eager one
SPAN_TRACES = [
    *(SAMPLES / run / f"{side}.pt.trace.json.gz"
      for run in ("h200/graph-break", "h200/gpt2-reduce-overhead", "pointwise")
      for side in ("eager", "compiled")),
    *(CORPUS / name for name in ("nvidia/a100_compiled_cudagraph_train_2023.json.gz",
                                 "nvidia/v100_train_compiledfunction_cudagraph.json.gz",
                                 "amd/mi300x_compiled_flux_hipgraph.json.gz",
                                 "amd/mi250_eager_train_rocm62.json.gz")),
]  # fmt: skip


def _load(path: Path):  # type: ignore[no-untyped-def]
    if not path.is_file():
        pytest.skip(f"{path} not found")
    return load_trace(path)


def _ids(path: Path) -> str:
    return "/".join(path.parts[-2:])


@pytest.mark.parametrize("path", SPAN_TRACES, ids=_ids)
def test_each_code_span_lies_in_its_raw_frame(path: Path) -> None:
    spans = regions.code_spans(_load(path))
    frames = [
        (f"{e.get('pid')}/{e.get('tid')}", float(e["ts"]), float(e["ts"]) + float(e["dur"]),
         str(e["name"]).removeprefix(FRAME))
        for e in raw_events(path)
        if e.get("ph") == "X" and str(e.get("name", "")).startswith(FRAME)
    ]  # fmt: skip
    for thread, start, end, frame in spans[
        [CodeSpan.thread, CodeSpan.start_us, CodeSpan.end_us, CodeSpan.frame]
    ].itertuples(index=False):
        holding = [f for f in frames if f[0] == thread and f[1] <= start + 1e-3
                   and f[2] >= end - 1e-3]  # fmt: skip
        assert holding, (thread, start, frame)
        assert frame == max(holding, key=lambda f: f[1])[3]  # the innermost: latest start


@pytest.mark.parametrize("path", SPAN_TRACES, ids=_ids)
def test_shortcuts_equal_the_general_path(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = _load(path)
    fast_gaps, fast_of = regions._gap_table(trace)
    monkeypatch.setattr(regions, "_share_a_step", lambda threads, steps: True)
    slow_gaps, slow_of = regions._gap_table(trace)
    pd.testing.assert_frame_equal(fast_gaps, slow_gaps, check_exact=True)
    assert list(fast_gaps.dtypes.astype(str)) == list(slow_gaps.dtypes.astype(str))
    np.testing.assert_array_equal(fast_of, slow_of)


@pytest.mark.parametrize("path", SPAN_TRACES, ids=_ids)
def test_issue_times_and_inside(path: Path) -> None:
    trace = _load(path)
    kernels = trace.kernels
    launch = kernels["launch_ts_us"].fillna(kernels["ts_us"])
    want = launch.to_numpy(dtype=float, na_value=np.nan)
    np.testing.assert_array_equal(kernel_analysis.issue_us(kernels), want)
    inside = kernel_analysis.issued_inside(trace, trace.regions)
    assert inside.dtype == bool and len(inside) == len(kernels)
    if trace.regions.empty:
        assert not inside.any()


def test_sample_runs_take_the_fast_paths() -> None:
    """The shortcuts are taken where they should be (else the test above proves nothing)."""
    eager = load_trace(SAMPLES / "pointwise" / "eager.pt.trace.json.gz")
    compiled = load_trace(SAMPLES / "pointwise" / "compiled.pt.trace.json.gz")
    assert regions.code_spans(eager).empty
    spans = regions.code_spans(compiled)
    assert len(spans) == 3  # one compiled call per step, no graph break
    assert regions._gap_table(compiled)[0].empty
    # the graph-break sample still finds its gaps
    trace = load_trace(SAMPLES / "graph-break" / "compiled.pt.trace.json.gz")
    gaps, gap_of = regions._gap_table(trace)
    assert len(gaps) > 0
    assert int((gap_of >= 0).sum()) == int(gaps["kernel_count"].sum())


def test_share_a_step() -> None:
    threads = np.array(["1/1", "1/1", "1/2"], dtype=object)
    assert not regions._share_a_step(threads, np.array([0, 1, 0]))
    assert regions._share_a_step(threads, np.array([0, 0, 1]))
    assert not regions._share_a_step(threads, np.array([-1, -1, 0]))  # outside every step
    assert not regions._share_a_step(threads[:0], np.zeros(0, dtype=np.int64))


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
    check_regions_partition(trace)
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
    check_regions_partition(trace)


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
