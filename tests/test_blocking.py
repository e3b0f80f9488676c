"""Blocking host calls (analysis.blocking) and the findings built on them (sync-in-step,
host-device-copy), on hand-made traces and the real corpus; the runner's step-sync mark hides
only its own call. Every raw sync of a corpus trace is a blocking call:
tests/test_parse_corpus.py. The calls' issuers, the timeline's lanes and the idle
split's main thread against the raw JSON, and on tiny made traces for the edge cases (empty
names, ties, CPU-only lanes)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import traceviz
from tests.conftest import (
    CORPUS,
    SAMPLES,
    corpus_or_skip,
    corpus_params,
    kernel,
    launch,
    load_trace,
    op,
)
from tests.real_data import raw_events
from traceviz.analysis.timing.blocking import (
    STALL_FACTOR,
    STALL_MIN_US,
    BlockedStep,
    BlockingColumns,
    BlockReason,
    blocking_calls,
    blocking_reasons,
    issuers,
)
from traceviz.analysis.timing.idle import _main_thread
from traceviz.analysis.timing.timeline import _is_gpu, _lanes
from traceviz.diagnose import Severity, diagnose_trace
from traceviz.diagnose.facts import facts_of_trace
from traceviz.diagnose.rules.copies import COPIES_ID, SYNC_ID, SYNC_WARNING_SHARE
from traceviz.parse.compile_log import STEP_SYNC_MARK
from traceviz.schema import Kernels, Launches

B = BlockingColumns


def _step(events: list[dict], dur: float = 10_000) -> list[dict]:
    return [op("ProfilerStep#1", 0, dur, cat="user_annotation"), *events]


def _item_via_pageable_copy(start: float, blocked: float) -> list[dict]:
    """``tensor.item()``: a Python frame, aten::item → aten::_local_scalar_dense → an async
    memcpy into pageable memory that blocks ``blocked`` µs."""
    return [
        op("<built-in method item of Tensor object>", start - 10, blocked + 40,
           cat="python_function"),
        op("aten::item", start - 5, blocked + 30),
        op("aten::_local_scalar_dense", start - 2, blocked + 20),
        launch("cudaMemcpyAsync", start, blocked, 90),
        kernel("Memcpy DtoH (Device -> Pageable)", start + blocked - 20, 5, 90,
               cat="gpu_memcpy", bytes=8),
    ]  # fmt: skip


def _kernels(n: int, start: float, *, launch_us: float = 5.0) -> list[dict]:
    out: list[dict] = []
    for i in range(n):
        t = start + 20 * i
        out += [launch("cudaLaunchKernel", t, launch_us, 1 + i), kernel(f"k{i}", t + 8, 5, 1 + i)]
    return out


def test_pageable_copy_blocks_with_its_issuer_and_frame(tmp_trace) -> None:
    path = tmp_trace(_step([*_kernels(3, 10), *_item_via_pageable_copy(1000, 4000)]))
    calls = blocking_calls(traceviz.load(path)).calls
    assert len(calls) == 1
    row = calls.iloc[0]
    assert row[B.name] == "cudaMemcpyAsync" and row[B.reason] == BlockReason.PAGEABLE_COPY.value
    assert row[B.dur_us] == 4000 and row[B.step] == 0
    assert row[B.step_share] == pytest.approx(4000 / 10_000)
    assert row[B.op] == "aten::_local_scalar_dense"  # innermost op, not the ProfilerStep
    assert row[B.frame] == "<built-in method item of Tensor object>"
    assert row[B.copy_kind] == "DtoH" and row[B.bytes] == 8
    # a pinned async copy does not block
    events = [
        launch("cudaMemcpyAsync", 100, 5, 90),
        kernel("Memcpy HtoD (Pinned -> Device)", 110, 5, 90, cat="gpu_memcpy", bytes=8),
    ]
    assert blocking_calls(traceviz.load(tmp_trace(_step(events)))).calls.empty


def test_every_kind_of_blocking_call(tmp_trace) -> None:
    stalled = STALL_MIN_US * 2
    events = [
        *_kernels(5, 10),
        launch("cudaLaunchKernel", 200, stalled, 50),  # 5 µs median → stalled
        kernel("k_late", 200 + stalled + 5, 5, 50),
        launch("cudaMemcpy", 1000, 300, 60),  # no Async: synchronous
        kernel("Memcpy HtoD (Pageable -> Device)", 1200, 50, 60, cat="gpu_memcpy", bytes=64),
        launch("hipMemcpyWithStream", 2000, 100, 61),
        launch("cudaStreamSynchronize", 3000, 6, 62),
        launch("cudaDeviceSynchronize", 3100, 7, 63),
        launch("cudaEventSynchronize", 3200, 8, 64),
        launch("cudaStreamWaitEvent", 3300, 500, 65),  # device-side wait: the CPU goes on
    ]
    calls = blocking_calls(traceviz.load(tmp_trace(_step(events)))).calls
    reasons = dict(zip(calls[B.name], calls[B.reason], strict=True))
    assert reasons == {
        "cudaLaunchKernel": BlockReason.STALLED_LAUNCH.value,
        "cudaMemcpy": BlockReason.SYNC_COPY.value,
        "hipMemcpyWithStream": BlockReason.SYNC_COPY.value,
        "cudaStreamSynchronize": BlockReason.SYNC.value,
        "cudaDeviceSynchronize": BlockReason.SYNC.value,
        "cudaEventSynchronize": BlockReason.SYNC.value,
    }
    assert stalled >= STALL_FACTOR * 5


def test_blocked_time_per_step_is_a_union_clipped_to_the_step(tmp_trace) -> None:
    # two threads block at once, and one call runs past the step's end
    events = [
        launch("cudaStreamSynchronize", 100, 400, 1),
        launch("cudaStreamSynchronize", 300, 400, 2, tid=2),
        launch("cudaDeviceSynchronize", 9_900, 500, 3),
    ]
    blocking = blocking_calls(traceviz.load(tmp_trace(_step(events))))
    step = blocking.per_step.iloc[0]
    assert step[BlockedStep.calls] == 3
    assert step[BlockedStep.blocked_us] == pytest.approx(600 + 100)
    assert blocking.blocked_us <= blocking.wall_us


@pytest.mark.parametrize("blocked_us", [6.0, 14_000.0])
def test_sync_severity_follows_the_idle_while_blocked(tmp_trace, blocked_us: float) -> None:
    events = [*_kernels(3, 10), op("aten::item", 495, blocked_us + 10)]
    events += [launch("cudaStreamSynchronize", 500, blocked_us, 99)]
    findings = diagnose_trace(traceviz.load(tmp_trace(_step(events, dur=100_000))))
    sync = next(f for f in findings if f.id == SYNC_ID)
    share = blocked_us / 100_000
    expected = Severity.WARNING if share >= SYNC_WARNING_SHARE else Severity.INFO
    assert sync.severity is expected
    text = " ".join(str(e) for e in sync.evidence)
    assert "cudaStreamSynchronize" in text and "aten::item" in text
    blocked = next(e for e in sync.evidence if not isinstance(e, str) and "blocked" in e.label)
    assert blocked.value == pytest.approx(blocked_us) and blocked.share == pytest.approx(share)


def test_copy_that_blocks_the_step_is_not_zero_percent(tmp_trace) -> None:
    events = [*_kernels(3, 10), *_item_via_pageable_copy(1000, 8000)]
    findings = diagnose_trace(traceviz.load(tmp_trace(_step(events))))
    copy = next(f for f in findings if f.id == COPIES_ID)
    assert "80.0% of the step" in copy.title and "see sync-in-step" in copy.title
    assert copy.severity is Severity.INFO  # the blocked time is the sync finding's warning
    sync = next(f for f in findings if f.id == SYNC_ID)
    assert sync.severity is Severity.WARNING
    assert any("aten::_local_scalar_dense" in str(e) for e in sync.evidence)


FLUX = "amd/mi300x_compiled_flux_hipgraph.json.gz"
CUDAGRAPH_TRAIN = "nvidia/a100_compiled_cudagraph_train_2023.json.gz"


def test_flux_blocking_device_to_host_copy() -> None:
    """The real case of issue #10 §1: one hipMemcpyWithStream (.cpu(), DtoH) blocks the CPU
    for 114 ms of a 250 ms step; it was reported as 0.0% of the step."""
    trace = corpus_or_skip(FLUX)
    calls = blocking_calls(trace).calls
    top = calls.loc[calls[B.dur_us].idxmax()]
    assert top[B.name] == "hipMemcpyWithStream" and top[B.reason] == BlockReason.SYNC_COPY.value
    assert top[B.dur_us] == pytest.approx(113_918.926)
    assert top[B.step_share] == pytest.approx(0.456, abs=0.001)
    assert top[B.copy_kind] == "DtoH" and top[B.bytes] == 393_216
    assert top[B.op] == "aten::copy_" and "method cpu of Tensor" in top[B.frame]
    findings = diagnose_trace(trace)
    sync = next(f for f in findings if f.id == SYNC_ID)
    # the device works through the 114 ms block: the gain (device idle while blocked) is
    # under 0.1% of the step, so the severity (issue 24 §3: it follows the gain) is info
    assert sync.est_gain_us is not None and sync.est_gain_us < 1000
    assert sync.severity is Severity.INFO
    assert "hipMemcpyWithStream" in sync.title or any(
        "hipMemcpyWithStream" in str(e) for e in sync.evidence
    )
    copy = next(f for f in findings if f.id == COPIES_ID)
    assert "45.7% of the step" in copy.title and copy.severity is Severity.INFO


def test_cudagraph_training_pageable_loss_read() -> None:
    """Each step reads 704 B back into pageable memory; the call blocks ~68% of the step."""
    calls = blocking_calls(corpus_or_skip(CUDAGRAPH_TRAIN)).calls
    pageable = calls[(calls[B.reason] == BlockReason.PAGEABLE_COPY.value) & (calls[B.step] >= 0)]
    worst = pageable.groupby(B.step)[B.step_share].max()
    assert len(worst) == 5 and (worst > 0.6).all() and (worst < 0.7).all()


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_blocked_time_fits_in_the_steps(path) -> None:  # type: ignore[no-untyped-def]
    blocking = blocking_calls(load_trace(path))
    per = blocking.per_step
    assert (per[BlockedStep.blocked_us] <= per[BlockedStep.wall_us] + 1e-6).all()
    shares = blocking.calls[B.step_share].to_numpy(dtype=float)
    assert (shares[np.isfinite(shares)] <= 1 + 1e-9).all()
    durs = blocking.calls[B.dur_us].to_numpy(dtype=float)
    assert (durs >= 0).all()


def test_timeline_draws_blocking_calls_in_their_own_colour(tmp_trace) -> None:
    pytest.importorskip("plotly.graph_objects", reason="plotly not installed (dashboard extra)")
    from traceviz.pipeline import compare
    from traceviz.report import figures

    events = _step([*_kernels(3, 10), *_item_via_pageable_copy(1000, 4000)])
    events.append(launch("cudaStreamSynchronize", 6000, 50, 77))
    fig = figures.timeline_figure(compare(tmp_trace(events), tmp_trace(events)))
    by_kind = {trace.name: trace for trace in fig.data}
    blocking = by_kind["blocking call"]
    assert blocking.line.color == figures.KIND_COLORS["blocking call"]
    assert blocking.line.color != figures.KIND_COLORS["launch call"]
    texts = " ".join(t for t in blocking.text if t)
    assert "cudaMemcpyAsync" in texts and "cudaStreamSynchronize" in texts
    launches = " ".join(t for t in by_kind["launch call"].text if t)
    assert "cudaMemcpyAsync" not in launches and "cudaLaunchKernel" in launches


def _closing_sync(start: float, blocked: float, correlation: int) -> list[dict]:
    """The runner's wait for the device at the end of a profiled CUDA step."""
    return [
        op(STEP_SYNC_MARK, start - 2, blocked + 4, cat="user_annotation"),
        launch("cudaDeviceSynchronize", start, blocked, correlation),
    ]


def test_the_runners_closing_sync_is_not_a_blocking_call(tmp_trace) -> None:
    """The sync inside the runner's ``traceviz step sync`` annotation is the harness: left
    out of the calls, the per-step blocked time and the findings; the model's own sync in the
    same step still counts."""
    events = [*_kernels(3, 10), *_closing_sync(5000, 4000, 98)]
    trace = traceviz.load(tmp_trace(_step(events)))
    blocking = blocking_calls(trace)
    assert blocking.calls.empty and blocking.blocked_us == 0
    assert not any(f.id == SYNC_ID for f in diagnose_trace(trace))

    events += [op("aten::item", 495, 310), launch("cudaStreamSynchronize", 500, 300, 99)]
    blocking = blocking_calls(traceviz.load(tmp_trace(_step(events))))
    assert list(blocking.calls[B.name]) == ["cudaStreamSynchronize"]
    assert blocking.calls[B.op].tolist() == ["aten::item"]
    assert blocking.blocked_us == pytest.approx(300)
    # without the runner's annotation (a user's own loop), the same sync is the model's
    events = [*_kernels(3, 10), launch("cudaDeviceSynchronize", 5000, 4000, 98)]
    blocking = blocking_calls(traceviz.load(tmp_trace(_step(events))))
    assert list(blocking.calls[B.name]) == ["cudaDeviceSynchronize"]
    assert blocking.blocked_us == pytest.approx(4000)


def test_a100_cudagraph_training_blocks_for_every_reason() -> None:
    calls = blocking_calls(corpus_or_skip(CUDAGRAPH_TRAIN)).calls
    assert set(calls[B.reason]) >= {"sync", "pageable_copy", "stalled_launch"}


# The runner's ``traceviz step sync`` annotation hides only the call made directly inside it
# (the runner's own ``torch.cuda.synchronize``): a model's sync issued by an op nested inside
# the annotation, or on another thread while it is open, is still a blocking call.


def _one_kernel_step(events: list[dict]) -> list[dict]:
    return _step([launch("cudaLaunchKernel", 10, 5, 1), kernel("k0", 18, 5, 1), *events])


def test_a_sync_nested_in_the_mark_or_on_another_thread_still_blocks(tmp_trace) -> None:
    events = [
        op(STEP_SYNC_MARK, 4990, 4020, cat="user_annotation"),
        op("aten::item", 5000, 310),
        launch("cudaStreamSynchronize", 5005, 300, 99),  # inside aten::item, inside the mark
        launch("cudaDeviceSynchronize", 5400, 3500, 98),  # the runner's own: directly inside
    ]
    blocking = blocking_calls(traceviz.load(tmp_trace(_one_kernel_step(events))))
    assert blocking.calls[B.name].tolist() == ["cudaStreamSynchronize"]
    assert blocking.calls[B.op].tolist() == ["aten::item"]
    assert blocking.blocked_us == pytest.approx(300)
    # a sync on another thread while the mark is open
    events = [
        op(STEP_SYNC_MARK, 4990, 4020, cat="user_annotation"),
        launch("cudaDeviceSynchronize", 5000, 4000, 98),
        op("aten::item", 6000, 310, tid=2),
        launch("cudaStreamSynchronize", 6005, 300, 99, tid=2),
    ]
    blocking = blocking_calls(traceviz.load(tmp_trace(_one_kernel_step(events))))
    assert blocking.calls[B.name].tolist() == ["cudaStreamSynchronize"]
    assert blocking.blocked_us == pytest.approx(300)


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
