"""The front door (:mod:`traceviz.pipeline`): every input (two traces, analysed sides, a run
directory, a ready comparison) becomes one report, the same for every front end, each trace
analysed once; :func:`~traceviz.pipeline.open_report` only adds labels from the file names; bad
input is one clear error that says what to give."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

import traceviz
from tests.conftest import SAMPLES, kernel, launch, load_trace, op
from traceviz.analysis.compare import Comparison, analyze, compare_sides
from traceviz.diagnose import diagnose, sort_findings
from traceviz.errors import TraceFormatError, UsageError
from traceviz.pipeline import Report, compare, compare_run, open_report, report_of
from traceviz.rundir import read_run_dir
from traceviz.runs.runinfo import RunInfo


def _run(name: str = "graph-break") -> Path:
    path = SAMPLES / name
    if not (path / "run.json").is_file():
        pytest.skip(f"sample run {path} not found")
    return path


def _ids(report: Report) -> list[str]:
    return [f"{f.id}:{f.trace}" for f in report.findings]


def _tiny(tmp_trace, scale: float):  # type: ignore[no-untyped-def]
    """Two steps of an add and a mul kernel; ``scale`` stretches the kernels."""
    events = []
    for step in range(2):
        t0 = step * 1000.0
        events.append(op(f"ProfilerStep#{step}", t0, 900.0))
        for i, name in enumerate(("aten::add", "aten::mul")):
            corr = step * 10 + i + 1
            start = t0 + 10 + i * 200
            events.append(op(name, start, 50.0))
            events.append(launch("cudaLaunchKernel", start + 5, 10.0, corr))
            events.append(kernel(f"{name[6:]}_kernel", start + 30, 40.0 * scale, corr))
    return tmp_trace(events)


def test_a_run_directory_becomes_one_diagnosed_report() -> None:
    run = _run()
    report = open_report(run)
    assert isinstance(report, Report) and isinstance(report, Comparison)
    assert report.names == ("eager", "compiled")
    assert report.metrics.equals(compare(run).metrics)
    assert isinstance(report.run_info, RunInfo)
    assert report.run_info == read_run_dir(run).info  # typed, as the run directory has it
    plain = compare_sides(report.a, report.b, run_info=report.run_info)
    assert [f.id for f in report.findings] == [f.id for f in sort_findings(diagnose(plain))]
    assert report.findings, "the graph-break sample has findings"
    assert report_of(report) is report and compare(report) is report  # never diagnosed twice
    ready = compare(plain)  # a ready comparison: its report
    assert isinstance(ready, Report) and ready.names == report.names


def test_every_front_end_gets_the_same_report() -> None:
    from traceviz.commands.compare import build

    run = _run()
    args = argparse.Namespace(a=str(run), b=None, names=None, compile_log=None, force=False, top=5)
    reports = [build(args), compare_run(run), traceviz.compare(*_pair(run), **_run_kwargs(run))]
    pytest.importorskip("panel", reason="panel not installed (dashboard extra)")
    from traceviz.dashboard.loading import comparison_from_args

    found = comparison_from_args([str(run)])
    assert found is not None
    reports.append(found)
    first = reports[0]
    for other in reports[1:]:
        assert other.names == first.names
        assert other.metrics.equals(first.metrics)
        assert _ids(other) == _ids(first)


def _pair(run: Path) -> tuple[Path, Path]:
    return run / "eager.pt.trace.json.gz", run / "compiled.pt.trace.json.gz"


def _run_kwargs(run: Path) -> dict:  # type: ignore[type-arg]
    info = read_run_dir(run)
    return {"names": ("eager", "compiled"), "run_info": info.info, "compile_log": info.compile_log}


def test_analysed_sides_are_reused_and_relabelled() -> None:
    eager, compiled = _pair(_run("pointwise"))
    side_a = analyze(load_trace(eager), name="x")
    side_b = analyze(load_trace(compiled), name="compiled")
    report = compare(side_a, side_b, names=("eager", "compiled"))
    assert report.b is side_b  # same label: the very same analysed side
    assert report.a.name == "eager" and report.a.kernels is side_a.kernels  # relabelled, not redone


def test_plain_comparison_and_report_are_distinct_types() -> None:
    eager, compiled = _pair(_run("pointwise"))
    plain = compare_sides(
        analyze(load_trace(eager), name="a"), analyze(load_trace(compiled), name="b")
    )
    assert not hasattr(plain, "findings")  # analysis knows nothing of diagnosis
    assert not hasattr(plain, "_repr_html_")
    report = report_of(plain)
    assert report.comparison is report and report.kinds is plain.kinds
    assert "<table>" in report._repr_html_()


def test_two_tiny_traces_by_path(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    a, b = _tiny(tmp_trace, 1.0), _tiny(tmp_trace, 2.0)
    report = open_report(a, b)
    assert report.names == (a.stem, b.stem)
    assert report.metric("kernel_count").a == report.metric("kernel_count").b == 4
    assert report.metric("kernel_time_us").b == pytest.approx(2 * report.metric("kernel_time_us").a)
    assert report.metrics.equals(compare(a, b, names=(a.stem, b.stem)).metrics)
    by_objects = open_report(traceviz.load(a), traceviz.load(b))
    assert by_objects.names == ("a", "b")
    assert by_objects.metrics.equals(report.metrics)


def test_bad_input_is_one_clear_error(tmp_path: Path, tmp_trace) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UsageError, match="give two traces, or a run directory"):
        open_report(tmp_path)
    missing = tmp_path / "missing.json"
    with pytest.raises(TraceFormatError, match=r"missing\.json"):
        open_report(missing, _tiny(tmp_trace, 1.0))
    with pytest.raises(UsageError, match="two non-empty labels"):
        compare(_tiny(tmp_trace, 1.0), _tiny(tmp_trace, 1.0), names=("a", ""))
    with pytest.raises(UsageError, match=r"a run directory brings its own run\.json"):
        open_report(_run(), run_info={})
    with pytest.raises(UsageError, match=f"{re.escape(str(tmp_path))}: give two traces"):
        compare(tmp_path, run_info={})  # not a run directory: that is the error
    with pytest.raises(UsageError, match=r"traceviz.compare\(3\): give two traces"):
        compare(3)


def test_trace_facts_derive_from_the_one_analysed_side() -> None:
    from traceviz.diagnose.facts import facts_of_side, facts_of_trace

    report = open_report(_run("pointwise"))
    facts = facts_of_side(report, "b")
    assert facts.kernels is report.b.kernels and facts.launch is report.b.launch  # not redone
    assert facts_of_side(report, "b") is facts  # built once per side and role
    lone = facts_of_trace(report.b.trace, name="compiled")
    again = analyze(report.b.trace, name="compiled")
    assert lone.kernels.equals(again.kernels) and lone.kernels.equals(facts.kernels)
    assert lone.summary.kernel_count == again.summary.kernel_count == facts.summary.kernel_count


def test_the_demo_shows_what_compare_shows_for_its_run() -> None:
    import io

    from rich.console import Console

    from traceviz.commands.demo import show_result
    from traceviz.report.text import render_comparison

    run = _run("pointwise")
    shown, expected = io.StringIO(), io.StringIO()
    show_result(traceviz.load_run(run), Console(file=shown, width=160, color_system=None))
    render_comparison(compare_run(run), Console(file=expected, width=160, color_system=None), top=5)
    assert shown.getvalue() == expected.getvalue()
    assert "Findings" in shown.getvalue()
