"""`traceviz compare` computes what its output shows, and no more (issue 14: the text report
on a sample run within 1.5x of parsing its traces): what the text path leaves uncomputed is
computed when read (JSON, `traceviz summary`, the dashboard), with the same values."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from tests.conftest import SAMPLES, load_trace
from traceviz.analysis.summary import summarize
from traceviz.analysis.traffic.memory import memory_traffic, peak_allocated
from traceviz.commands.output import console
from traceviz.pipeline import compare_run
from traceviz.report.formats import renderer

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
