"""run.json read back typed end to end: every sample run directory's run.json becomes a
:class:`RunInfo` on the comparison, old files without the newest fields read with defaults,
a malformed run.json is one TraceFormatError naming the file, and the JSON report's ``run``
is run.json's content."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import msgspec
import pytest

from tests.conftest import SAMPLES
from tests.runinfo_builder import run_info
from traceviz.errors import TraceFormatError
from traceviz.pipeline import compare, compare_run
from traceviz.report.json_report import comparison_json
from traceviz.rundir import read_run_dir
from traceviz.runs.runinfo import RUN_JSON, RunInfo, run_info_of

RUNS = sorted(p.parent for p in SAMPLES.glob(f"*/{RUN_JSON}"))


def test_there_are_sample_runs() -> None:
    assert len(RUNS) >= 3


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_sample_run_json_reads_typed_and_round_trips(run: Path) -> None:
    info = read_run_dir(run).info
    assert isinstance(info, RunInfo)
    on_disk = json.loads((run / RUN_JSON).read_text())
    typed = msgspec.to_builtins(info)
    # every field on disk is read as written; fields the file predates get their defaults
    for key, value in on_disk.items():
        assert typed[key] == value or _has_defaults_only(typed[key], value), key
    assert run_info_of(on_disk) == info  # a json.load'ed dict validates to the same object


def _has_defaults_only(typed: object, disk: object) -> bool:
    """``typed`` is ``disk`` plus keys ``disk`` lacks (new fields filled with defaults)."""
    if isinstance(typed, dict) and isinstance(disk, dict):
        return all(k in typed and _has_defaults_only(typed[k], v) for k, v in disk.items())
    if isinstance(typed, list) and isinstance(disk, list):
        return len(typed) == len(disk) and all(map(_has_defaults_only, typed, disk))
    return typed == disk


def test_an_old_run_json_without_newest_fields_reads_with_defaults(tmp_path: Path) -> None:
    run = RUNS[0]
    old = tmp_path / "old"
    shutil.copytree(run, old)
    data = json.loads((old / RUN_JSON).read_text())
    data["traces"].pop("compile_log", None)
    data["profiler"].pop("eager_with_stack", None)
    data["compile"].pop("fx_graph_cache_hits", None)
    (old / RUN_JSON).write_text(json.dumps(data))
    info = read_run_dir(old).info
    assert info.traces.compile_log is None and info.profiler.eager_with_stack is False
    assert info.compile.fx_graph_cache_hits == 0
    assert info.timing == read_run_dir(run).info.timing


def test_a_malformed_run_json_or_partial_dict_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(RUNS[0], bad)
    data = json.loads((bad / RUN_JSON).read_text())
    data["timing"]["eager"]["median_us"] = "fast"
    (bad / RUN_JSON).write_text(json.dumps(data))
    with pytest.raises(TraceFormatError, match=r"run\.json"):
        compare_run(bad)
    (bad / RUN_JSON).write_text("{not json")
    with pytest.raises(TraceFormatError, match=r"run\.json"):
        compare_run(bad)
    traces = (bad / "eager.pt.trace.json.gz", bad / "compiled.pt.trace.json.gz")
    with pytest.raises(TraceFormatError, match="run_info"):  # a partial dict: no traceback
        compare(*traces, run_info={"timing": {"eager": {}}})


@pytest.mark.parametrize("run", RUNS[:2], ids=lambda p: p.name)
def test_the_report_carries_run_json_typed_and_json_writes_it_back(run: Path) -> None:
    report = compare_run(run)
    assert isinstance(report.run_info, RunInfo)
    assert comparison_json(report)["run"] == msgspec.to_builtins(read_run_dir(run).info)


def test_builder_makes_a_valid_run_info() -> None:
    info = run_info(timing={"eager": {"samples_us": [3, 1, 2]}}, compile={"mode": "max-autotune"})
    assert info.timing.eager.median_us == 2 and info.timing.eager.iters == 3
    assert info.compile.mode == "max-autotune" and info.compile.backend == "inductor"
