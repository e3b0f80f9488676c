"""Each side's share of the diagnosis done on the side's own thread (traceviz/pipeline.py
``_side``, :func:`traceviz.diagnose.diagnose_side`): the single-trace rules of side b run on the
worker beside side a's analysis, none after the join, and the report is the one the plain
library path gives (sides analysed, then compared, then diagnosed) on one sample run per code
path and corpus pair, with and without the sides at once; a side diagnosed ahead in another role
is diagnosed again in its own."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

import traceviz
from tests.conftest import CORPUS, SAMPLES
from tests.real_data import CORPUS_PAIRS, SAMPLE_RUNS
from traceviz import diagnose as diagnose_module
from traceviz import pipeline
from traceviz.analysis.compare import Side, analyze
from traceviz.analysis.fusion.lines import read_log
from traceviz.diagnose import diagnose_side
from traceviz.diagnose.facts import facts_of_side, side_facts
from traceviz.diagnose.rules import TRACE_RULES
from traceviz.pipeline import compare, compare_sides
from traceviz.report.formats import renderer
from traceviz.rundir import RunDir, read_run_dir
from traceviz.settings import CONCURRENT_ENV

WORKER = "traceviz-side-b"
NAMES = ("eager", "compiled")


@pytest.fixture(autouse=True)
def any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sides at once whatever the files' sizes (the sample runs are under the threshold)."""
    monkeypatch.setattr(pipeline, "OVERLAP_MIN_BYTES", 0)


def _json(report: Any) -> str:
    return str(renderer("json").comparison(report, top=20))


def _run(name: str) -> RunDir:
    path = SAMPLES / name
    if not (path / "run.json").is_file():
        pytest.skip(f"sample run {path} not found")
    return read_run_dir(path)


def _corpus(pair: tuple[str, str]) -> tuple[Path, Path]:
    a, b = (CORPUS / p for p in pair)
    if not (a.exists() and b.exists()):
        pytest.skip(f"corpus not found at {CORPUS}")
    return a, b


def _run_report(run: RunDir) -> Any:
    """A run's two traces through the front door (traces loaded by ``traceviz.load``)."""
    return compare(run.eager, run.compiled, names=NAMES, run_info=run.info,
                   compile_log=run.compile_log, load=traceviz.load,
                   eager_lines=run.eager_lines)  # fmt: skip


def _run_reference(run: RunDir) -> Any:
    """The same report the plain way: fresh sides analysed, compared, then diagnosed after
    (``pipeline.compare_sides``: no side diagnosed ahead)."""
    dynamo = run.info.dynamo if run.info is not None else None
    a = analyze(traceviz.load(run.eager), name=NAMES[0])
    b = analyze(traceviz.load(run.compiled), name=NAMES[1], dynamo=dynamo,
                compile_log=read_log(run.compile_log))  # fmt: skip
    lines = traceviz.load(run.eager_lines) if run.eager_lines is not None else None
    return compare_sides(a, b, run_info=run.info, compile_log=run.compile_log, eager_lines=lines)


def _pair_reference(a: Path, b: Path) -> Any:
    sides = (analyze(traceviz.load(p), name=n) for p, n in zip((a, b), NAMES, strict=True))
    return compare_sides(*sides, force=True)


# --- where each side's share runs -----------------------------------------------------------


class RuleCalls:
    """Every trace rule wrapped: which thread ran it on which side's facts, and whether the
    sides had been joined (the comparison begun) by then."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[str, str, bool]] = []
        self.joined = False
        # the list diagnose_facts reads (traceviz.diagnose's name for it), each rule wrapped
        monkeypatch.setattr(diagnose_module, "TRACE_RULES", [self._wrap(r) for r in TRACE_RULES])
        compare_analysed = pipeline.compare_analysed

        def joined(*args: Any, **kwargs: Any) -> Any:
            self.joined = True
            return compare_analysed(*args, **kwargs)

        monkeypatch.setattr(pipeline, "compare_analysed", joined)

    def _wrap(self, rule: Any) -> Any:
        def wrapped(facts: Any) -> Any:
            thread = threading.current_thread().name
            self.calls.append((thread, facts.name, self.joined))
            return rule(facts)

        return wrapped

    def threads(self, name: str) -> set[str]:
        return {thread for thread, side, _ in self.calls if side == name}


def test_side_b_share_runs_on_its_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    run = _run("graph-break")
    calls = RuleCalls(monkeypatch)
    report = _run_report(run)
    assert report.findings
    assert calls.threads("compiled") == {WORKER}  # b's rules beside a's analysis
    assert calls.threads("eager") == {threading.current_thread().name}
    assert not any(joined for _, _, joined in calls.calls), "a trace rule ran after the join"
    assert len(calls.calls) == 2 * len(TRACE_RULES)  # each rule once a side: nothing redone


def test_one_after_the_other_shares_before_the_join(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CONCURRENT_ENV, "0")
    calls = RuleCalls(monkeypatch)
    _run_report(_run("graph-break"))
    assert calls.threads("compiled") == calls.threads("eager") == {"MainThread"}
    assert not any(joined for _, _, joined in calls.calls)
    assert len(calls.calls) == 2 * len(TRACE_RULES)


def test_side_returns_with_its_findings_kept() -> None:
    """``_side`` hands back a side whose facts in its role hold the findings and the tables
    the rules derive (the memo the comparison's diagnosis reads)."""
    run = _run("graph-break")
    side = pipeline._side(run.compiled, "compiled", traceviz.load, which="b", run_info=run.info)
    facts = side_facts(side, "b", run_info=run.info)
    assert {"findings", "chain_groups", "kernel_steps"} <= set(facts._memo)
    assert facts.variant == "compiled" and facts.expect_compiled
    assert facts._memo["findings"] == diagnose_side(side, "b", run_info=run.info)


# --- the same findings as the plain path ----------------------------------------------------


@pytest.mark.parametrize("concurrent", ["1", "0"])
@pytest.mark.parametrize("name", SAMPLE_RUNS)
def test_sample_runs_same_report_as_plain(
    monkeypatch: pytest.MonkeyPatch, name: str, concurrent: str
) -> None:
    monkeypatch.setenv(CONCURRENT_ENV, concurrent)
    run = _run(name)
    assert _json(_run_report(run)) == _json(_run_reference(run))


@pytest.mark.parametrize("concurrent", ["1", "0"])
@pytest.mark.parametrize("pair", CORPUS_PAIRS, ids=[a for a, _ in CORPUS_PAIRS])
def test_corpus_pairs_same_report_as_plain(
    monkeypatch: pytest.MonkeyPatch, pair: tuple[str, str], concurrent: str
) -> None:
    monkeypatch.setenv(CONCURRENT_ENV, concurrent)
    a, b = _corpus(pair)
    got = compare(a, b, names=NAMES, force=True, load=traceviz.load)
    assert _json(got) == _json(_pair_reference(a, b))


def test_side_diagnosed_ahead_in_another_role_is_diagnosed_again() -> None:
    """A side's share kept for one role (no run.json, or as side a) is not the comparison's
    when the side takes another: expect_compiled, variant and run.json are the comparison's."""
    run = _run("graph-break")
    assert run.info is not None
    dynamo = run.info.dynamo
    a = analyze(traceviz.load(run.eager), name=NAMES[0])
    b = analyze(traceviz.load(run.compiled), name=NAMES[1], dynamo=dynamo)
    diagnose_side(a, "b", run_info=None)  # the wrong side, no run.json
    diagnose_side(b, "b", run_info=None)  # no run.json
    ahead = side_facts(b, "b", run_info=None)
    report = compare_sides(a, b, run_info=run.info)
    fresh_a = analyze(traceviz.load(run.eager), name=NAMES[0])
    fresh_b = analyze(traceviz.load(run.compiled), name=NAMES[1], dynamo=dynamo)
    assert _json(report) == _json(compare_sides(fresh_a, fresh_b, run_info=run.info))
    assert side_facts(b, "b", run_info=run.info) is not ahead
    assert side_facts(b, "b", run_info=run.info).variant == "compiled"


def test_side_facts_is_the_comparisons() -> None:
    """What a side's thread fills is the very facts object the comparison's rules read."""
    run = _run("pointwise")
    sides = [
        pipeline._side(path, name, traceviz.load, which=which, run_info=run.info)
        for path, name, which in ((run.eager, "eager", "a"), (run.compiled, "compiled", "b"))
    ]
    report = compare_sides(*sides, run_info=run.info)
    for which, side in zip("ab", sides, strict=True):
        assert isinstance(side, Side)
        assert facts_of_side(report, which) is side_facts(side, which, run_info=run.info)
    with pytest.raises(ValueError, match="side must be"):
        side_facts(sides[0], "c", run_info=None)
