"""The comparison: on chosen pairs (every sample run, corpus pairs of one vendor, across
vendors, CPU against GPU) each side's figures equal plain counts of its JSON and land on the right
side; every trace compares with itself (nothing changes) and with one other without error; the
CLI's output formats are stable.

`traceviz compare` computes what its output shows, and no more: what the text path leaves
uncomputed is computed when read (JSON, `traceviz summary`, the dashboard), with the same
values. A side with kernels but no CPU op at all (profiled with CUDA activities only) compares,
with no unfused chain on it.

No speed or memory verdict between traces of different workloads: an eager A100 training trace
against a compiled trace of another model (the guard finds none of the compiled side's GEMM
shapes in the eager one) withholds the fusion figures and the "compiled is slower" verdict;
``--force`` (the user vouches the traces are one workload) brings the verdict back. The
headline still shows both measured step times, without a verdict.

A device traceviz does not model is "not analysed", never "measured zero": GIVEN a trace of an
accelerator other than a CUDA/ROCm GPU (runtime calls of an unknown vendor, device events on
the device's own process), WHEN it is summarised or compared, THEN its device metrics are null
with basis ``not-analysed`` (text "n/a"), and an info finding ``device-not-analysed`` counts
what the trace holds."""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from rich.console import Console

import traceviz
from tests.conftest import (
    CORPUS,
    KERNEL_CATS,
    LAUNCH_NAMES,
    MEMCPY_CATS,
    SAMPLES,
    corpus_files,
    kernel,
    launch,
    load_trace,
    op,
    read_json,
    write_trace,
)
from tests.real_data import sample_params, sample_run, sample_runs
from traceviz.analysis import summary as summary_module
from traceviz.analysis.compare import (
    HOST_METRICS,
    METRICS,
    Comparison,
    Metric,
    Side,
    analyze,
    compare_sides,
)
from traceviz.analysis.device import NOT_ANALYSED, device_activity
from traceviz.analysis.fusion.chains import chain_members
from traceviz.analysis.kernels import classify
from traceviz.analysis.summary import summarize
from traceviz.analysis.timing.speed import SAME
from traceviz.analysis.traffic.memory import memory_traffic, peak_allocated
from traceviz.cli import main
from traceviz.commands.output import console
from traceviz.diagnose import diagnose_trace
from traceviz.diagnose.rules.slower import comparison_speed
from traceviz.pipeline import compare, compare_run
from traceviz.report.formats import renderer
from traceviz.report.json_report import comparison_json
from traceviz.report.text import render_comparison, render_summary
from traceviz.report.views import headline

STEP = re.compile(r"ProfilerStep#\d+")
RUN_FILES = ("eager.pt.trace.json.gz", "compiled.pt.trace.json.gz")

#: Corpus pairs (a, b) whose device figures are checked against plain counts: one vendor, the
#: same model in two trace schemas, across vendors, and a small trace against a big one.
CORPUS_PAIRS = [
    ("nvidia/a100_eager_train_control.json.gz",
     "nvidia/v100_train_compiledfunction_cudagraph.json.gz"),
    ("nvidia/resnet50_eager_legacy_bare_array.json.gz",
     "nvidia/v100_resnet50_eager_train_2021.json.gz"),
    ("nvidia/a100_compiled_cudagraph_train_2023.json.gz",
     "amd/mi300x_compiled_flux_hipgraph.json.gz"),
    ("amd/mi250_eager_train_rocm62.json.gz", "nvidia/v100_small_plain.json"),
]  # fmt: skip
#: CPU against GPU: the host figures (steps, compiled regions) still hold on both sides.
HOST_PAIRS = [("cpu/cpu_only_rank.json.gz", "nvidia/a100_compiled_triton_tiny.json.gz")]


def all_traces() -> list[Path]:
    return corpus_files() + [run / name for run in sample_runs() for name in RUN_FILES]


@cache
def side(path: Path) -> Side:
    return analyze(load_trace(path), name=path.name)


@cache
def plain(path: Path) -> dict[str, float]:
    """Figures of one trace from a plain pass over its JSON (as in MANIFEST.md): device kernels,
    memcpys, launch calls, and the host side's ProfilerStep spans and compiled-region calls."""
    doc = read_json(path)
    events = doc if isinstance(doc, list) else doc["traceEvents"]
    complete = [e for e in events if e.get("ph") == "X"]
    kernels = [e for e in complete if e.get("cat") in KERNEL_CATS]
    memcpys = [e for e in complete if e.get("cat") in MEMCPY_CATS]
    host = [e for e in complete if e.get("cat") != "gpu_user_annotation"]
    steps = [e for e in host if STEP.fullmatch(str(e.get("name")))]
    cpu = [e for e in host if e.get("cat") in CPU_OP_CATS]
    return {
        "kernel_count": len(kernels),
        "kernel_time_us": sum(float(e.get("dur", 0)) for e in kernels),
        "memcpy_count": len(memcpys),
        "memcpy_bytes": sum(int(e.get("args", {}).get("bytes", 0)) for e in memcpys),
        "launch_count": sum(1 for e in complete if e.get("name") in LAUNCH_NAMES),
        "step_count": len(steps) - _cut_off_last_step(steps, cpu),
        "compiled_regions": sum(
            1 for e in host if str(e.get("name")).startswith("Torch-Compiled Region")
        ),
    }


#: Host events of the model's own work: operators, annotations, Python frames. Not runtime
#: calls (the profiler's stop syncs the device after the last step: MI250's hipDeviceSynchronize)
#: nor the whole-trace "Trace" envelope.
CPU_OP_CATS = {"cpu_op", "user_annotation", "python_function", "Operator"}


def _cut_off_last_step(steps: list[dict[str, Any]], cpu_ops: list[dict[str, Any]]) -> int:
    """1 when the last of two or more ProfilerStep spans is a fragment the profiler's stop cut
    off: it ends where the last CPU op ends and lasts under a quarter of the shortest other
    span (the corpus MI250 trace: 49 µs after 9288 µs); else 0. Its own pass over the events."""
    if len(steps) < 2:
        return 0
    spans = sorted((float(e["ts"]), float(e.get("dur", 0))) for e in steps)
    (start, dur), others = spans[-1], [d for _, d in spans[:-1]]
    cpu_end = max(float(e.get("ts", 0)) + float(e.get("dur", 0)) for e in cpu_ops)
    return int(start + dur >= cpu_end - 1e-3 and dur < 0.25 * min(others))


def _pair(a: Path, b: Path) -> Comparison:
    for path in (a, b):
        if not path.exists():
            pytest.skip(f"trace {path} not found (corpus: {CORPUS})")
    return compare_sides(side(a), side(b))


def _assert_figures(comparison: Comparison, a: Path, b: Path, names: list[str]) -> None:
    """Each named metric: a and b equal the plain counts of a and b, delta and ratio follow."""
    for name in names:
        row = comparison.metric(name)
        want_a, want_b = plain(a)[name], plain(b)[name]
        assert (row.a, row.b) == (pytest.approx(want_a), pytest.approx(want_b)), name
        assert row.delta == pytest.approx(want_b - want_a), name
        if want_a:
            assert row.ratio == pytest.approx(want_b / want_a), name
        else:
            assert math.isnan(row.ratio), name


DEVICE_FIGURES = ["kernel_count", "kernel_time_us", "memcpy_count", "memcpy_bytes", "launch_count"]
HOST_FIGURES = ["step_count", "compiled_regions"]


@pytest.mark.parametrize(("a", "b"), CORPUS_PAIRS, ids=lambda p: p.split("/")[-1].split(".")[0])
def test_corpus_pair_figures_equal_plain_counts(a: str, b: str) -> None:
    comparison = _pair(CORPUS / a, CORPUS / b)
    _assert_figures(comparison, CORPUS / a, CORPUS / b, DEVICE_FIGURES + HOST_FIGURES)
    kernels, steps = comparison.metric("kernels_per_step"), comparison.metric("step_count")
    for which in ("a", "b"):
        count = comparison.metric("kernel_count")[which]
        assert kernels[which] == pytest.approx(count / steps[which]), which


@pytest.mark.parametrize(("a", "b"), HOST_PAIRS, ids=lambda p: p.split("/")[-1].split(".")[0])
def test_cpu_against_gpu_host_figures_equal_plain_counts(a: str, b: str) -> None:
    comparison = _pair(CORPUS / a, CORPUS / b)
    _assert_figures(comparison, CORPUS / a, CORPUS / b, HOST_FIGURES)
    assert comparison.metric("kernel_count").b == plain(CORPUS / b)["kernel_count"]


@pytest.mark.parametrize("run", sample_params())
def test_sample_run_figures(run: Path) -> None:
    """A CPU run: steps and compiled regions equal plain counts (regions only on the compiled
    side); memcpy and launches do not apply (null, not 0: plainly none in the JSON); kernel
    figures are those of each side's own summary."""
    eager, compiled = (run / name for name in RUN_FILES)
    comparison = compare_sides(side(eager), side(compiled))
    _assert_figures(comparison, eager, compiled, HOST_FIGURES)
    for name in ("memcpy_count", "launch_count"):
        assert plain(eager)[name] == plain(compiled)[name] == 0, name
        row = comparison.metric(name)
        assert math.isnan(row.a) and math.isnan(row.b) and row.basis == "not-applicable", name
    assert comparison.metric("compiled_regions").a == 0 < comparison.metric("compiled_regions").b
    for which, path in (("a", eager), ("b", compiled)):
        summary = side(path).summary
        assert comparison.metric("kernel_count")[which] == summary.kernel_count > 0
        assert comparison.metric("kernel_time_us")[which] == pytest.approx(summary.kernel_time_us)


def _metric_names() -> set[str]:
    return {m.name for m in METRICS} | {"eager_kernels_per_compiled_kernel", "est_bytes_saved"}


def _check_rows(metrics: pd.DataFrame, same: Callable[[float, float], bool]) -> None:
    assert set(metrics["name"]) == _metric_names()
    assert metrics["name"].is_unique
    for row in metrics.itertuples():
        if pd.notna(row.a) and pd.notna(row.b):
            if row.name == "est_bytes" and "no Δ or ratio" in row.description:
                assert math.isnan(row.delta) and math.isnan(row.ratio)  # the coverage guard
                continue
            assert row.delta == pytest.approx(row.b - row.a), row.name
            assert same(row.a, row.b), row.name


def trace_params() -> list[Any]:
    traces = all_traces()
    if len(traces) < 2:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"no traces in {CORPUS}"))]
    return [pytest.param(p, id=f"{p.parent.name}/{p.name}") for p in traces]


@pytest.mark.parametrize("path", trace_params())
def test_every_trace_compares_with_itself_and_the_next(path: Path) -> None:
    """Against itself every side figure is unchanged (delta 0, ratio 1 where defined); against
    the next trace in the list (GPU/CPU, vendors and schemas mixed) the comparison completes
    with every metric row, and each delta is b − a."""
    traces = all_traces()
    comparison = compare_sides(side(path), side(path))
    _check_rows(comparison.metrics, lambda a, b: a == b)
    ratios = comparison.metrics.dropna(subset=["ratio"])
    assert (ratios["ratio"] == 1).all(), ratios[ratios["ratio"] != 1]["name"].tolist()
    following = traces[(traces.index(path) + 1) % len(traces)]
    _check_rows(compare_sides(side(path), side(following)).metrics, lambda a, b: True)


def test_pointwise_run_fuses_the_chain_and_graph_break_shows_its_regions() -> None:
    run = sample_run("pointwise")
    comparison = compare(
        run / "eager.pt.trace.json.gz",
        run / "compiled.pt.trace.json.gz",
        names=("eager", "compiled"),
        run_info=json.loads((run / "run.json").read_text()),
    )
    assert comparison.metric("kernel_count").b < comparison.metric("kernel_count").a
    fused = comparison.fusion.kernels[comparison.fusion.kernels.is_fusion]
    assert len(fused) >= 1
    assert any("cos" in str(ops) for ops in fused.eager_ops)
    # the graph-break run shows its regions
    comparison = compare(
        sample_run("graph-break") / "eager.pt.trace.json.gz",
        sample_run("graph-break") / "compiled.pt.trace.json.gz",
    )
    assert comparison.metric("graph_breaks").b >= 1
    assert comparison.metric("compiled_frames").b >= 2
    assert comparison.metric("compiled_regions").a == 0


@pytest.mark.parametrize("fmt", ["text", "json", "markdown"])
def test_cli_formats(fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = sample_run("pointwise")
    out = tmp_path / f"out.{fmt}"
    assert main(["compare", str(run), "--format", fmt, "-o", str(out), "--top", "3"]) == 0
    text = out.read_text()
    assert ("kernel_count" if fmt == "json" else "kernel time") in text
    if fmt == "json":
        doc = json.loads(text)
        assert doc["schema_version"] == 1 and doc["names"] == {"a": "eager", "b": "compiled"}
        assert {"metrics", "kinds", "regions", "fusion", "findings"} <= doc.keys()
        names = {m["name"] for m in doc["metrics"]}
        required = {"kernel_count", "kernel_time_us", "launch_count", "launch_api_time_us",
                    "est_bytes", "memcpy_bytes", "compiled_regions", "graph_breaks"}  # fmt: skip
        assert required <= names
    if fmt == "markdown":
        assert text.startswith("# traceviz: eager vs compiled")


def test_cli_rejects_a_single_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.json"
    path.write_text('{"traceEvents": []}')
    assert main(["compare", str(path)]) == 2
    assert "run directory" in capsys.readouterr().err


SUMMARY_TABLES = ("activities", "top_kernels", "launch_classes", "region_kinds")
RUNS = sorted(p.parent.name for p in SAMPLES.glob("*/run.json"))


def _text(report: object) -> str:
    buffer = io.StringIO()
    renderer("text").comparison(report, top=10)(console(file=buffer, width=80))  # type: ignore[arg-type]
    return buffer.getvalue()


@pytest.fixture(scope="module")
def pointwise():  # type: ignore[no-untyped-def]
    return compare_run(SAMPLES / "pointwise", load=lambda p: load_trace(p))


def test_text_compare_leaves_summary_tables_uncomputed(pointwise) -> None:  # type: ignore[no-untyped-def]
    assert "Findings" in _text(pointwise)
    for side in (pointwise.a, pointwise.b):
        computed = [t for t in SUMMARY_TABLES if t in vars(side.summary)]
        assert computed == [], f"the text report computed {computed}"


@pytest.mark.parametrize("run", RUNS)
def test_summary_tables_read_later_equal_eager_ones(run: str) -> None:
    for name in ("eager", "compiled"):
        trace = load_trace(SAMPLES / run / f"{name}.pt.trace.json.gz")
        lazy = summarize(trace, top=3)
        # the same tables computed at once, as before they were lazy
        kernels = trace.kernels
        from traceviz.analysis import summary as module

        is_kernel = (kernels["activity"] == "kernel").to_numpy()
        pd.testing.assert_frame_equal(lazy.activities, module._activities(kernels))
        pd.testing.assert_frame_equal(lazy.top_kernels, module._top_kernels(kernels[is_kernel], 3))
        pd.testing.assert_frame_equal(
            lazy.launch_classes, module._grouped(trace.launches, "launch_class", "dur_us")
        )
        pd.testing.assert_frame_equal(lazy.region_kinds, module._region_kinds(trace.regions))
        assert len(lazy.top_kernels) <= 3
        # the summary's JSON (traceviz summary --format json) still holds every table
        data = lazy.to_json()
        for table in SUMMARY_TABLES:
            assert data[table] == lazy.to_json()[table]
            assert isinstance(data[table], list)
        assert len(data["top_kernels"]) == min(3, kernels.loc[is_kernel, "name"].nunique())


@pytest.mark.parametrize("run", RUNS)
def test_peak_taken_from_traffic_is_the_allocator_peak(run: str) -> None:
    report = compare_run(SAMPLES / run, load=lambda p: load_trace(p))
    for side in (report.a, report.b):
        assert side.summary.peak_allocated_bytes == peak_allocated(side.trace)
        assert side.summary.peak_allocated_bytes == memory_traffic(side.trace).peak_allocated_bytes


def test_summary_given_a_peak_keeps_it_and_none_is_a_value() -> None:
    trace = load_trace(SAMPLES / "pointwise" / "eager.pt.trace.json.gz")
    assert summarize(trace).peak_allocated_bytes == peak_allocated(trace) is not None
    assert summarize(trace, peak_allocated_bytes=None).peak_allocated_bytes is None
    assert summarize(trace, peak_allocated_bytes=7).peak_allocated_bytes == 7


def test_provenance_asked_twice_is_computed_once_and_copied(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from traceviz.analysis import provenance
    from traceviz.analysis.fusion.lines import read_log

    run = SAMPLES / "attention"
    trace = load_trace(run / "compiled.pt.trace.json.gz")
    log = read_log(run / "compile_log.jsonl.gz")
    calls: list[int] = []
    compute = provenance._provenance
    monkeypatch.setattr(provenance, "_provenance", lambda t, g: calls.append(1) or compute(t, g))
    monkeypatch.setattr(provenance, "_last", None)
    first = provenance.compiled_kernel_provenance(trace, log)
    assert len(first) and calls == [1]
    first.loc[:, "prov_kernel"] = "changed by the caller"
    second = provenance.compiled_kernel_provenance(trace, log)
    assert calls == [1]  # the same pair: not computed again
    pd.testing.assert_frame_equal(second, compute(trace, log))  # the caller's change not kept
    provenance.compiled_kernel_provenance(trace, read_log(run / "compile_log.jsonl.gz"))
    assert calls == [1, 1]  # another log object: computed


def test_compare_computes_provenance_once(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from traceviz.analysis import provenance

    calls: list[int] = []
    compute = provenance._provenance
    monkeypatch.setattr(provenance, "_provenance", lambda t, g: calls.append(1) or compute(t, g))
    report = compare_run(SAMPLES / "attention", load=lambda p: load_trace(p))
    assert calls == [1]
    assert report.fusion.by_line.shape[0] > 0


def test_kernel_names_decoded_once_and_never_raise() -> None:
    from traceviz.analysis.inductor_names import _decoded, fused_kernel_ops

    _decoded.cache_clear()
    name = "graph_0_cpp_fused_add_cos_mul_relu_sigmoid_sin_0"
    first = fused_kernel_ops(name)
    assert first is not None and first.ops == ("add", "cos", "mul", "relu", "sigmoid", "sin")
    assert fused_kernel_ops(name) is first  # decoded once, the same immutable value
    assert _decoded.cache_info().hits == 1
    for odd in (None, float("nan"), ["a list"], {"a": 1}, 3):
        assert fused_kernel_ops(odd) is None  # type: ignore[arg-type]


def test_speed_verdict_computed_once_per_compare(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from traceviz.diagnose.rules import slower

    calls: list[int] = []
    verdict = slower.speed_verdict
    monkeypatch.setattr(
        slower, "speed_verdict", lambda a, b, **kw: calls.append(1) or verdict(a, b, **kw)
    )
    monkeypatch.setattr(slower, "_last", None)
    report = compare_run(SAMPLES / "pointwise", load=lambda p: load_trace(p))
    assert "Compiled is 1.80x faster than eager" in _text(report)  # the verdict, in a pipe
    assert calls == [1]  # the rule's and the headline's: one bootstrap
    other = compare_run(SAMPLES / "mlp", load=lambda p: load_trace(p))
    assert slower.comparison_speed(other) == verdict(
        other.a.trace, other.b.trace, run_info=other.run_info
    )
    assert slower.comparison_speed(report) == verdict(
        report.a.trace, report.b.trace, run_info=report.run_info
    )


def _kernels_only(path: Path) -> Path:
    """A trace of pointwise kernels and no CPU op (profiled with CUDA activities only)."""
    events = [kernel(f"triton_poi_fused_mul_{i}", 20.0 + 3 * i, 2.0, i + 1) for i in range(4)]
    return write_trace(path, events)


def _eager_pair_side(path: Path) -> Path:
    events: list[dict[str, Any]] = []
    for i in range(4):
        events.append(op("aten::add", 10.0 * i, 8.0))
        events.append(launch("cudaLaunchKernel", 10.0 * i + 1, 3.0, i + 1))
        events.append(kernel(f"triton_poi_fused_add_{i}", 10.0 * i + 5, 1.0, i + 1))
    return write_trace(path, events)


@pytest.mark.parametrize("kernels_only_side", ["a", "b"])
def test_a_side_without_ops_compares(tmp_path: Path, kernels_only_side: str) -> None:
    """chain_members indexed the (empty) ops table's flags at row 0 for kernels of no known
    op: IndexError out of ``traceviz compare`` when a side has three or more fusible kernels
    and no CPU op at all."""
    bare = load_trace(_kernels_only(tmp_path / "bare.json"))
    other = load_trace(_eager_pair_side(tmp_path / "other.json"))
    assert bare.ops.empty and len(bare.kernels) == 4
    a, b = (bare, other) if kernels_only_side == "a" else (other, bare)
    report = compare(a, b, force=True)
    side = report.comparison.a if kernels_only_side == "a" else report.comparison.b
    assert side.trace is bare
    members = chain_members(bare, classify(bare), np.full(len(bare.kernels), 0))
    assert members.empty


EAGER = CORPUS / "nvidia" / "a100_eager_train_control.json.gz"
COMPILED = CORPUS / "nvidia" / "a100_compiled_cudagraph_train_2023.json.gz"
PAIR_VERDICTS = {"compiled-slower", "no-significant-difference", "peak-memory-up"}

needs_corpus = pytest.mark.skipif(not COMPILED.exists(), reason=f"corpus not found at {CORPUS}")


@needs_corpus
@pytest.mark.parametrize("force", [False, True])
def test_unrelated_pair_gets_a_speed_verdict_only_when_forced(force: bool) -> None:
    comparison = compare(load_trace(EAGER), load_trace(COMPILED), names=("eager", "compiled"),
                         force=force)  # fmt: skip
    ids = {f.id for f in comparison.findings}
    speed = headline(comparison)[0].lower()  # the verdict sentence leads
    if force:
        # the figures differ: the unforced case is not vacuous
        assert comparison_speed(comparison).verdict != SAME
        assert "compiled-slower" in ids or "no-significant-difference" in ids
        assert "no speed verdict" not in speed
    else:
        assert comparison.fusion.comparability.withheld and "traces-not-comparable" in ids
        assert not ids & PAIR_VERDICTS
        assert "slower" not in speed and "faster" not in speed
        assert "no speed verdict" in speed


@needs_corpus
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


# --- a device traceviz does not model -----------------------------------------------------

MTIA = CORPUS / "other" / "mtia_inference_nongpu_device.json.gz"
RULE = "device-not-analysed"


def _mtia_like(tmp_trace: Any) -> Path:
    """Two CPU ops, three runtime calls of an unknown vendor, four events on device pid 9."""

    def device_event(name: str, ts: float, dur: float, tid: int) -> dict[str, Any]:
        return {"ph": "X", "cat": "acc_events", "name": name, "pid": 9, "tid": tid, "ts": ts,
                "dur": dur, "args": {"stream": tid}}  # fmt: skip

    def runtime(name: str, ts: float, dur: float) -> dict[str, Any]:
        return {"ph": "X", "cat": "acc_runtime", "name": name, "pid": 1, "tid": 1, "ts": ts,
                "dur": dur, "args": {"correlation": int(ts)}}  # fmt: skip

    events = [
        op("aten::mm", 0, 50),
        op("aten::add", 60, 20),
        runtime("runFunction", 10, 5),
        runtime("enqueueCommand memcpyHtoDAsync", 20, 3),
        runtime("synchronizeStream", 62, 10),
        device_event("pe_exe", 15, 30, 100),
        device_event("pe_exe", 25, 30, 101),
        device_event("dma_request", 40, 2, 102),
        device_event("dma_request", 50, 4, 102),
    ]
    return tmp_trace(events, deviceProperties=[{"id": 9, "name": "ACC"}])


def test_device_events_found_without_device_ids(tmp_trace: Any) -> None:
    """No deviceProperties: the device is the process with neither CPU ops nor runtime calls."""
    path = _mtia_like(tmp_trace)
    doc = json.loads(path.read_text())
    del doc["deviceProperties"]
    path.write_text(json.dumps(doc))
    held = device_activity(traceviz.load(path))
    assert held is not None and held.device_events == 4 and held.device_names == ()


def test_synthetic_device_is_counted_null_not_zero_with_a_finding(tmp_trace: Any) -> None:
    path = _mtia_like(tmp_trace)
    trace = traceviz.load(path)
    held = device_activity(trace)
    assert held is not None
    assert held.runtime_calls == 3
    assert held.runtime_time_us == pytest.approx(18.0)
    assert held.device_events == 4
    assert held.device_event_time_us == pytest.approx(66.0)
    assert held.categories == ("acc_events",)
    assert held.device_names == ("ACC",)
    summary = summarize(trace)
    assert summary.basis == NOT_ANALYSED and not summary.analysed
    data = summary.to_json()
    assert all(data[key] is None for key in summary_module.DEVICE_FIGURES)
    assert data["device_activity"]["device_events"] == 4
    console = Console(record=True, width=120)
    render_summary(summary, console)
    text = console.export_text()
    assert "n/a (device not analysed)" in text and "all figures measured" not in text
    findings = [f for f in diagnose_trace(trace) if f.id == RULE]
    assert len(findings) == 1 and findings[0].severity.value == "info"
    assert "acc_events" in " ".join(findings[0].evidence_lines())
    comparison = traceviz.compare(path, path, names=("x", "y"))
    _check_metrics(comparison.metrics, both_unanalysed=True)


def _check_metrics(metrics: Any, *, both_unanalysed: bool) -> None:
    for row in metrics.to_dict("records"):
        if row[Metric.name] in HOST_METRICS:
            assert row[Metric.basis] != NOT_ANALYSED, row
            continue
        assert row[Metric.basis] == NOT_ANALYSED, row
        assert row[Metric.a] != row[Metric.a]  # NaN: side a is never analysed here
        if both_unanalysed:
            assert row[Metric.b] != row[Metric.b]


def test_analysed_traces_never_say_not_analysed() -> None:
    """Every modelled trace (CPU samples) keeps measured/estimated metrics and no finding."""
    run = SAMPLES / "pointwise"
    comparison = traceviz.compare(run / "eager.pt.trace.json.gz", run / "compiled.pt.trace.json.gz")
    assert NOT_ANALYSED not in set(comparison.metrics[Metric.basis])
    assert RULE not in {f.id for f in comparison.findings}
    assert comparison.a.summary.analysed and comparison.a.summary.device_activity is None


@pytest.mark.skipif(not MTIA.exists(), reason=f"corpus not found at {CORPUS}")
def test_mtia_corpus_trace_against_cuda(tmp_path: Path) -> None:
    """The real MTIA trace: counts equal an independent pass over its JSON; nothing "0 kernels,
    100% idle, measured"; text shows n/a; JSON nulls launch/memory sections."""
    doc = read_json(MTIA)
    device_ids = {str(d["id"]) for d in doc["deviceProperties"]}
    events = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    on_device = [
        e for e in events
        if str(e.get("pid")) in device_ids and not str(e.get("cat", "")).endswith("_runtime")
    ]  # fmt: skip
    runtime = [e for e in events if str(e.get("cat", "")).endswith("_runtime")]
    cuda = CORPUS / "nvidia" / "v100_small_plain.json"
    comparison = traceviz.compare(MTIA, cuda, names=("mtia", "v100"))
    held = comparison.a.summary.device_activity
    assert held is not None
    assert held.device_events == len(on_device) > 0
    assert held.device_event_time_us == pytest.approx(sum(e["dur"] for e in on_device))
    assert held.runtime_calls == len(runtime) > 0
    assert set(held.categories) == {str(e["cat"]) for e in on_device}
    _check_metrics(comparison.metrics, both_unanalysed=False)
    assert comparison.metric("kernel_count")[Metric.b] == comparison.b.summary.kernel_count
    finding = [f for f in comparison.findings if f.id == RULE]
    assert [f.trace for f in finding] == ["mtia"]
    console = Console(record=True, width=160)
    render_comparison(comparison, console)
    text = console.export_text()
    assert "kernels n/a → " in text and "(not-analysed)" in text
    data = json.loads(json.dumps(comparison_json(comparison)))
    assert data["launch"]["a"] is None and data["memory"]["a"] is None
    assert data["launch"]["b"] is not None
    assert data["traces"]["a"]["basis"] == NOT_ANALYSED
    assert data["traces"]["a"]["device_activity"]["device_events"] == len(on_device)
