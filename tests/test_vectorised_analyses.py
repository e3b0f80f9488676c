"""The blocking calls' issuers, the timeline's lanes and the idle split's main thread on real
traces against the raw JSON (chain links: test_tables_match_raw_json.py), and on tiny
hand-made ones for the edge cases (empty names, ties, CPU-only lanes)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import CORPUS, SAMPLES, kernel, launch, load_trace, op
from tests.real_data import raw_events
from traceviz.analysis.timing.blocking import BlockReason, blocking_reasons, issuers
from traceviz.analysis.timing.idle import _main_thread
from traceviz.analysis.timing.timeline import _is_gpu, _lanes
from traceviz.diagnose.facts import facts_of_trace
from traceviz.schema import Kernels, Launches

OP_CATS = {"cpu_op", "Operator", "user_annotation"}
FRAME_CAT = "python_function"
# CUDA eager, CUDA graphs, ROCm with Python frames, an H200 run, a CPU run
TRACES = [
    CORPUS / "nvidia" / "a100_eager_train_control.json.gz",
    CORPUS / "nvidia" / "a100_compiled_cudagraph_train_2023.json.gz",
    CORPUS / "amd" / "mi300x_compiled_flux_hipgraph.json.gz",
    SAMPLES / "h200" / "gpt2" / "eager.pt.trace.json.gz",
    SAMPLES / "pointwise" / "compiled.pt.trace.json.gz",
]
CALLS = 1500  # launches checked per trace (the first ones)


def _load(path: Path) -> Any:
    if not path.is_file():
        pytest.skip(f"{path} not found")
    return load_trace(path)


def _raw_spans(path: Path) -> dict[tuple[str, bool], list[tuple[float, float, str]]]:
    """(thread "pid/tid", is a Python frame) → the raw op or frame spans (start, end, name),
    ``ProfilerStep#`` spans and empty names left out."""
    out: dict[tuple[str, bool], list[tuple[float, float, str]]] = defaultdict(list)
    for e in raw_events(path):
        cat, name = e.get("cat"), str(e.get("name", ""))
        if e.get("ph") != "X" or "ts" not in e or (cat not in OP_CATS and cat != FRAME_CAT):
            continue
        if not name or name.startswith("ProfilerStep#"):
            continue
        start = float(e["ts"])
        out[(f"{e.get('pid')}/{e.get('tid')}", cat == FRAME_CAT)].append(
            (start, start + float(e.get("dur", 0.0)), name)
        )
    return out


def _crossed(spans: dict[tuple[str, bool], list[tuple[float, float, str]]]) -> set[str]:
    """The threads where a span starts inside another (ops and frames together) and ends
    after it: there the op stack traceviz walks from a call's frame may not hold an
    annotation that crosses the frames (the MI300X trace's ``execute_diffusion_…``)."""
    crossed = set()
    for thread in {t for t, _ in spans}:
        both = sorted(spans.get((thread, False), []) + spans.get((thread, True), []),
                      key=lambda s: (s[0], s[0] - s[1]))  # fmt: skip
        open_: list[float] = []
        for start, end, _ in both:
            while open_ and open_[-1] <= start:
                open_.pop()
            if open_ and end > open_[-1]:
                crossed.add(thread)
                break
            open_.append(end)
    return crossed


Spans = tuple[np.ndarray, np.ndarray, list[str]]  # starts, ends (µs), names
NO_SPANS: Spans = (np.zeros(0), np.zeros(0), [])


def _arrays(spans: list[tuple[float, float, str]]) -> Spans:
    return np.array([s[0] for s in spans]), np.array([s[1] for s in spans]), [s[2] for s in spans]


def _innermost(spans: Spans, at: float) -> str | bool | None:
    """The name of the innermost span holding ``at`` (latest start, then shortest); False
    where two spans of different names tie for it (either may be the innermost)."""
    starts, ends, names = spans
    holding = np.flatnonzero((starts <= at) & (at < ends))
    if not holding.size:
        return None
    latest = holding[starts[holding] == starts[holding].max()]
    inner = latest[ends[latest] == ends[latest].min()]
    tied = {names[i] for i in inner.tolist()}
    return names[int(inner[0])] if len(tied) == 1 else False


@pytest.mark.parametrize("path", TRACES, ids=lambda p: "/".join(p.parts[-2:]))
def test_issuers_are_the_innermost_raw_op_and_frame(path: Path) -> None:
    trace = _load(path)
    spans = _raw_spans(path)
    crossed = _crossed(spans)
    arrays = {key: _arrays(found) for key, found in spans.items()}
    rows = np.arange(min(len(trace.launches), CALLS), dtype=np.int64)
    got_ops, got_frames = issuers(trace, rows)
    calls = trace.launches.iloc[rows]
    checked = 0
    for i, (ts, thread) in enumerate(
        zip(calls[Launches.ts_us].tolist(), calls[Launches.thread].astype(str), strict=True)
    ):
        for got, frame in ((got_ops[i], False), (got_frames[i], True)):
            want = _innermost(arrays.get((thread, frame), NO_SPANS), ts)
            if want is not False and not (got is None and thread in crossed):
                assert got == want, (i, ts, thread, frame)
                checked += want is not None
    assert checked or not len(rows)


def test_real_launches_have_issuers() -> None:
    """The check above is not vacuous: A100 eager launches have ops, MI300X ones frames too."""
    for path, frames_too in ((TRACES[0], False), (TRACES[2], True)):
        trace = _load(path)
        found, frames = issuers(trace, np.arange(len(trace.launches), dtype=np.int64))
        assert sum(x is not None for x in found) > 100
        assert not frames_too or sum(x is not None for x in frames) > 100


@pytest.mark.parametrize("path", TRACES, ids=lambda p: "/".join(p.parts[-2:]))
def test_lanes_main_thread_and_reasons(path: Path) -> None:
    """Kernels share a lane exactly when they share a device and stream (a GPU trace; the
    launching thread where no stream is known) or a thread (CPU), lanes numbered in order of
    first kernel; the main thread launches the most; reasons are known ones."""
    trace = _load(path)
    kernels = facts_of_trace(trace).kernels
    lanes = _lanes(trace, kernels).tolist()
    if _is_gpu(trace):
        keys = [
            (str(d), str(s)) if s == s and s is not None else ("thread", str(t))
            for d, s, t in zip(kernels[Kernels.device].astype(object),
                               kernels[Kernels.stream].astype(object),
                               kernels[Kernels.thread].astype(object), strict=True)
        ]  # fmt: skip
    else:
        keys = [str(t) for t in kernels[Kernels.thread].astype(object)]
    order = list(dict.fromkeys(keys))
    assert lanes == [order.index(k) for k in keys]
    threads = trace.launches[Launches.thread].astype(str)
    assert _main_thread(trace) == (None if threads.empty else threads.value_counts().index[0])
    reasons = blocking_reasons(trace)
    assert set(reasons.tolist()) <= {"", *(r.value for r in BlockReason)}


# --- edge cases -----------------------------------------------------------------------------


def test_issuers_skip_an_empty_name_for_the_enclosing_one(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    events = [
        op("ProfilerStep#1", 0, 1000),
        op("frame.py(1): f", 5, 700, cat="python_function"),
        op("outer", 10, 500),
        op("", 20, 100),  # empty name: taken, then replaced by the enclosing "outer"
        launch("cudaLaunchKernel", 30, 5, 1),
        kernel("k", 40, 5, 1),
        launch("cudaLaunchKernel", 600, 5, 2),  # only the step encloses it
        kernel("k", 610, 5, 2),
    ]
    trace = load_trace(tmp_trace(events))
    rows = np.arange(len(trace.launches), dtype=np.int64)
    got = issuers(trace, rows)
    assert got[0].tolist() == ["outer", None]
    assert got[1].tolist() == ["frame.py(1): f", "frame.py(1): f"]


def test_main_thread_tie_goes_to_the_first_thread(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    events = [
        launch("cudaLaunchKernel", 10, 5, 1, tid=9),
        launch("cudaLaunchKernel", 20, 5, 2, tid=3),
        launch("cudaLaunchKernel", 30, 5, 3, tid=3),
        launch("cudaLaunchKernel", 40, 5, 4, tid=9),
        *(kernel("k", 100 + 10 * i, 5, i) for i in range(1, 5)),
    ]
    trace = load_trace(tmp_trace(events))
    threads = trace.launches[Launches.thread].astype(str)
    assert _main_thread(trace) == str(threads.value_counts().index[0]) == threads.iloc[0]


def test_lanes_number_streams_in_order_of_first_kernel(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    def on(stream: int, ts: float, corr: int) -> dict:
        k = kernel("k", ts, 5, corr)
        k["args"]["stream"] = stream
        return k

    events = [
        *(launch("cudaLaunchKernel", 10 * i, 2, i) for i in range(1, 5)),
        on(20, 100, 1), on(7, 110, 2), on(20, 120, 3), on(13, 130, 4),
    ]  # fmt: skip
    trace = load_trace(tmp_trace(events))
    kernels = facts_of_trace(trace).kernels
    got = _lanes(trace, kernels)
    streams = kernels[Kernels.stream].tolist()
    assert [int(got[streams.index(s)]) for s in (20, 7, 13)] == [0, 1, 2]
