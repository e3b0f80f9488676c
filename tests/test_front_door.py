"""One front door: :func:`traceviz.pipeline.compare` takes every input a front end holds (two
traces, a run directory, a ready comparison); :func:`~traceviz.pipeline.open_report` only adds
labels from the file names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import traceviz
from tests.conftest import SAMPLES
from traceviz.analysis.compare import analyze, compare_sides
from traceviz.pipeline import Report, compare, open_report
from traceviz.rundir import read_run_dir

RUN = SAMPLES / "block"


def test_compare_takes_a_ready_comparison() -> None:
    run = read_run_dir(RUN)
    a, b = (analyze(traceviz.load(p), name=n) for p, n in ((run.eager, "e"), (run.compiled, "c")))
    plain = compare_sides(a, b)
    report = compare(plain)
    assert isinstance(report, Report) and report.names == ("e", "c")
    assert compare(report) is report  # never diagnosed twice


def test_open_report_is_compare_with_file_names() -> None:
    eager, compiled = RUN / "eager.pt.trace.json.gz", RUN / "compiled.pt.trace.json.gz"
    named = open_report(eager, compiled)
    assert named.names == ("eager", "compiled")
    plain = compare(eager, compiled, names=("eager", "compiled"))
    assert named.metrics.equals(plain.metrics)
    assert open_report(RUN).metrics.equals(compare(RUN).metrics)


def test_one_input_errors_name_what_to_give(tmp_path: Path) -> None:
    with pytest.raises(traceviz.UsageError, match=r"a run directory brings its own run\.json"):
        open_report(RUN, run_info={})  # was silently dropped
    with pytest.raises(traceviz.UsageError, match=f"{re.escape(str(tmp_path))}: give two traces"):
        compare(tmp_path, run_info={})  # not a run directory: that is the error
    with pytest.raises(traceviz.UsageError, match=r"traceviz.compare\(3\): give two traces"):
        compare(3)
