"""The memory-traffic coverage guard: two totals get a Δ and ratio only when their estimates
cover about the same share of each side's kernel time (analysis/traffic/coverage.py)."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import traceviz
from tests.conftest import CORPUS, SAMPLES, kernel, launch, op
from tests.real_data import CORPUS_PAIRS
from traceviz.analysis.compare import Comparison, compare_sides
from traceviz.analysis.fusion.lines import read_log
from traceviz.analysis.provenance import compiled_kernel_provenance
from traceviz.analysis.traffic.coverage import COVERAGE_GAP, coverage, traffic_gap_note
from traceviz.analysis.traffic.memory import MemoryTraffic, memory_traffic
from traceviz.pipeline import compare_run
from traceviz.records import records
from traceviz.report.views import metrics_view

RO = SAMPLES / "h200" / "gpt2-reduce-overhead"
SAMPLE_RUNS = sorted(p.parent for p in SAMPLES.glob("**/run.json"))


def _gap(report: Comparison) -> float:
    ca, cb = coverage(report.a.traffic), coverage(report.b.traffic)
    assert ca is not None and cb is not None
    return abs(ca - cb)


def _check_row(report: Comparison) -> bool:
    """The est_bytes row agrees with the rule; True when the guard withheld Δ and ratio."""
    row = report.metric("est_bytes")
    a, b = report.a.traffic.total_bytes, report.b.traffic.total_bytes
    assert (row["a"], row["b"]) == (float(a), float(b))
    if _gap(report) > COVERAGE_GAP:
        assert math.isnan(row["delta"]) and math.isnan(row["ratio"])
        assert "no Δ or ratio" in row["description"]
        return True
    assert row["delta"] == float(b) - float(a) and row["ratio"] == float(b) / float(a)
    assert "no Δ" not in row["description"]
    return False


# --- real runs ----------------------------------------------------------------------------


def _ro_partial() -> Comparison:
    """The reduce-overhead run with the compiled side's traffic as the compile log's kernel
    bytes alone give it (the Triton calls; the replayed cuBLAS and attention kernels without
    a figure, as before the graph replays' library calls were read)."""
    report = compare_run(RO)
    trace, log = report.b.trace, read_log(RO / "compile_log.jsonl.gz")
    partial = memory_traffic(trace, provenance=compiled_kernel_provenance(trace, log))
    return compare_sides(report.a, dataclasses.replace(report.b, traffic=partial))


def test_reduce_overhead_traces_get_no_traffic_ratio() -> None:
    """GPT-2 under CUDA graphs, its replayed library kernels without a figure: compiled
    estimates cover a small part of its kernel time, so its smaller total (78 → 16 MiB) is
    not a saving and gets no Δ/ratio, with the reason shown."""
    report = _ro_partial()
    assert _gap(report) > 0.5  # eager ~95 %, compiled ~17 % (computed)
    assert _check_row(report)
    row = report.metric("est_bytes")
    ca, cb = coverage(report.a.traffic), coverage(report.b.traffic)
    assert ca is not None and cb is not None
    a, b = report.names
    assert f"{100 * ca:.1f}% of {a}'s" in row["description"]
    assert f"{100 * cb:.1f}% of {b}'s" in row["description"]
    view = metrics_view(report)
    traffic = next(r for r in view.rows if r[0] == "memory traffic")
    assert traffic[3:5] == ["–", "–"]
    assert view.note.startswith("memory traffic: no Δ or ratio")
    doc = json.loads(json.dumps(records(report.metrics), allow_nan=False))
    metric = next(m for m in doc if m["name"] == "est_bytes")
    assert metric["delta"] is None and metric["ratio"] is None
    assert report.fusion.est_bytes_saved is None
    assert "no Δ" not in metrics_view(compare_run(RO)).note  # the log fills them: compared


def test_reduce_overhead_figures_say_why() -> None:
    pytest.importorskip("plotly")
    from traceviz.report.figures.memory import memory_kind_figure
    from traceviz.report.figures.overview import metrics_figure, traffic_partial

    report = _ro_partial()
    assert traffic_partial(report)
    assert "Totals not comparable, no Δ or ratio" in memory_kind_figure(report).layout.title.text
    labels = list(metrics_figure(report).data[0].y)
    assert not any(str(label).startswith("memory traffic") for label in labels)


@pytest.mark.parametrize("run", SAMPLE_RUNS, ids=[str(p.relative_to(SAMPLES)) for p in SAMPLE_RUNS])
def test_sample_runs_keep_their_ratio_unless_broken(run: Path) -> None:
    """Every same-model sample run keeps its Δ/ratio: its covered shares are within the gap
    (the CUDA-graph run too, its replayed kernels given the compile log's bytes)."""
    report = compare_run(run)
    assert not _check_row(report)
    assert report.a.traffic.unestimated_time_us <= report.a.traffic.kernel_time_us
    assert report.b.traffic.unestimated_time_us <= report.b.traffic.kernel_time_us


@pytest.mark.parametrize("pair", CORPUS_PAIRS, ids=[a for a, _ in CORPUS_PAIRS])
def test_corpus_pairs_follow_the_rule(pair: tuple[str, str]) -> None:
    paths = [CORPUS / p for p in pair]
    if not all(p.exists() for p in paths):
        pytest.skip(f"corpus not found at {CORPUS}")
    report = traceviz.compare(*paths, force=True)
    assert _check_row(report)  # every corpus pair's covered shares are > 25 points apart


# --- the rule at its edges ----------------------------------------------------------------


@pytest.fixture(scope="module")
def real_traffic() -> MemoryTraffic:
    return compare_run(SAMPLES / "pointwise").a.traffic


def _with_share(traffic: MemoryTraffic, share: float | None) -> MemoryTraffic:
    return dataclasses.replace(traffic, unestimated_time_share=share)


@pytest.mark.parametrize(
    ("share_a", "share_b", "withheld"),
    [
        (0.0, 0.0, False),
        (0.0, COVERAGE_GAP, False),  # exactly the gap: still compared
        (0.05, 0.05 + COVERAGE_GAP, False),
        (0.0, COVERAGE_GAP + 0.001, True),
        (0.9, 0.0, True),
        (0.5, 0.5, False),  # both half covered: alike, compared
        (None, 0.9, False),  # a side without kernel time is not judged
        (0.9, math.nan, False),
    ],
)
def test_gap_rule_edges(
    real_traffic: MemoryTraffic, share_a: float | None, share_b: float | None, withheld: bool
) -> None:
    note = traffic_gap_note(
        _with_share(real_traffic, share_a), _with_share(real_traffic, share_b), ("x", "y")
    )
    assert (note is not None) == withheld
    if note is not None:
        assert "of x's kernel time" in note and "of y's" in note


def _pair(known_us: float, unknown_us: float, ext0: int) -> list[dict[str, Any]]:
    """A CUDA trace of one estimated kernel (aten::add with shapes) and one without a figure
    (an op with no rule), ``known_us`` and ``unknown_us`` long."""
    shapes = {"Input Dims": [[256, 256], [256, 256]], "Input type": ["float", "float"]}
    events: list[dict[str, Any]] = []
    for i, (name, dur, args) in enumerate(
        [("aten::add", known_us, shapes), ("mylib::opaque", unknown_us, {})]
    ):
        ext, ts = ext0 + i, 1000.0 * i
        events += [
            op(name, ts, 10, **{"External id": ext}, **args),
            launch("cudaLaunchKernel", ts + 1, 2, ext, **{"External id": ext}),
            kernel(f"k_{ext}", ts + 20, dur, ext, **{"External id": ext}),
        ]
    return events


@pytest.mark.parametrize(
    ("unknown_us", "withheld"), [(0.0, False), (10.0, False), (11.0, True), (50.0, True)]
)
def test_made_traces_at_the_edge(
    tmp_trace: Callable[..., Path], unknown_us: float, withheld: bool
) -> None:
    """a: fully estimated; b: the same plus an unestimated kernel taking ``unknown_us`` of
    100 µs kernel time (10 µs: exactly 10 points apart, still compared)."""
    a = tmp_trace(_pair(100.0, 0.0, 1)[:3])
    b = tmp_trace(_pair(100.0 - unknown_us, unknown_us, 1) if unknown_us else _pair(100, 0, 1)[:3])
    report = traceviz.compare(a, b, force=True)
    traffic = memory_traffic(report.b.trace)
    assert traffic.unestimated_time_us == pytest.approx(unknown_us)
    assert _check_row(report) == withheld
