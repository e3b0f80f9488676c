"""`traceviz compare` computes what its output shows, and no more: what the text path leaves
uncomputed is computed when read (JSON, `traceviz summary`, the dashboard), with the same
values. A side with kernels but no CPU op at all (profiled with CUDA activities only) compares,
with no unfused chain on it.

No speed or memory verdict between traces of different workloads: an eager A100 training trace
against a compiled trace of another model (the guard finds none of the compiled side's GEMM
shapes in the eager one) withholds the fusion figures and the "compiled is slower" verdict;
``--force`` (the user vouches the traces are one workload) brings the verdict back. The
headline still shows both measured step times, without a verdict."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tests.conftest import CORPUS, SAMPLES, kernel, launch, load_trace, op, write_trace
from traceviz.analysis.compare import Comparison
from traceviz.analysis.fusion.chains import chain_members
from traceviz.analysis.kernels import classify
from traceviz.analysis.summary import summarize
from traceviz.analysis.timing.speed import SAME
from traceviz.analysis.traffic.memory import memory_traffic, peak_allocated
from traceviz.commands.output import console
from traceviz.diagnose.rules.slower import comparison_speed
from traceviz.pipeline import compare, compare_run
from traceviz.report.formats import renderer
from traceviz.report.views import headline

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
    assert "Compiled is 1.80× faster than eager" in _text(report)  # the headline's verdict
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


def _pair(force: bool) -> Comparison:
    return compare(load_trace(EAGER), load_trace(COMPILED), names=("eager", "compiled"),
                   force=force)  # fmt: skip


@needs_corpus
def test_unrelated_pair_gets_no_speed_verdict() -> None:
    comparison = _pair(force=False)
    assert comparison.fusion.comparability.withheld
    ids = {f.id for f in comparison.findings}
    assert "traces-not-comparable" in ids
    assert not ids & PAIR_VERDICTS
    speed = headline(comparison)[0].lower()  # the verdict sentence leads
    assert "slower" not in speed and "faster" not in speed
    assert "no speed verdict" in speed


@needs_corpus
def test_forced_pair_gets_the_verdict_back() -> None:
    comparison = _pair(force=True)
    verdict = comparison_speed(comparison)
    assert verdict.verdict != SAME  # the figures differ: the unforced test is not vacuous
    ids = {f.id for f in comparison.findings}
    assert "compiled-slower" in ids or "no-significant-difference" in ids
    speed = headline(comparison)[0].lower()  # the verdict sentence leads
    assert "no speed verdict" not in speed


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
