"""Nested compiled regions: the summary's region wall time counts once.

After a graph break, ``Torch-Compiled Region: 1/0`` runs inside ``0/0``'s span. The summary's
"compiled_region: 6 calls, wall time 1.43 ms" on the graph-break sample summed both spans, in a
trace whose whole time span is 1.38 ms. A kind's wall time is now the time its spans cover
(per thread, nested spans once), so it never exceeds the trace's span.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import SAMPLES, corpus_files, load_trace, op
from traceviz.analysis.summary import summarize

Make = Callable[..., Path]
TRACES = [*sorted(SAMPLES.glob("*/*.pt.trace.json.gz")), *corpus_files()]


@pytest.mark.parametrize("path", TRACES, ids=[str(p.name) for p in TRACES])
def test_region_wall_time_fits_in_the_trace(path: Path) -> None:
    summary = summarize(load_trace(path))
    for kind, wall in zip(
        summary.region_kinds["kind"], summary.region_kinds["wall_us"], strict=True
    ):
        assert wall <= summary.span_us + 1e-6, (kind, wall, summary.span_us)


def test_graph_break_sample_nested_region_counted_once() -> None:
    trace = load_trace(SAMPLES / "graph-break" / "compiled.pt.trace.json.gz")
    regions = trace.regions[trace.regions["kind"].astype(str) == "compiled_region"]
    table = summarize(trace).region_kinds
    wall = float(table.loc[table["kind"].astype(str) == "compiled_region", "wall_us"].iloc[0])
    outer = regions[regions["frame_id"] == 0]["dur_us"].sum()  # 1/0 lies inside each 0/0
    # to the nanosecond: the wall is a union of [ts, ts + dur] on absolute microsecond clocks
    # (~1e12), where float64 sums carry errors of ~1e-3 µs
    assert wall == pytest.approx(outer, abs=1e-2)
    assert wall < regions["dur_us"].sum()  # the nested 1/0 spans are not added again


def test_synthetic_nested_and_disjoint_spans(tmp_trace: Make) -> None:
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
