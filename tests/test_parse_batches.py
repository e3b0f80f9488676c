"""The batched parse (issue 14): events are decoded and turned into columns a batch at a time.
Whatever the batch size, every table, the metadata and the event counts are exactly those of a
one-batch parse; errors name the event by its index in the whole file."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import traceviz
from tests.conftest import CORPUS, SAMPLES, corpus_files, kernel, launch, op, write_trace
from tests.test_table_store import assert_same_trace
from traceviz.errors import TraceFormatError
from traceviz.parse import read
from traceviz.trace import Trace

ONE_BATCH = 10**9


def _load(path: Path, batch: int, monkeypatch: pytest.MonkeyPatch) -> Trace:
    with monkeypatch.context() as patch:
        patch.setattr(read, "BATCH_EVENTS", batch)
        return traceviz.load(path, cache=False)


def _assert_same(a: Trace, b: Trace) -> None:
    assert_same_trace(b, a)
    assert b.stats.events_in == b.stats.accounted


def test_corpus_parses_the_same_in_small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    files = corpus_files()
    if not files:
        pytest.skip(f"corpus not found at {CORPUS}")
    checked = 0
    for path in files:
        try:
            whole = _load(path, ONE_BATCH, monkeypatch)
        except TraceFormatError as err:  # a deliberately broken file fails the same way
            with pytest.raises(TraceFormatError) as again:
                _load(path, 1000, monkeypatch)
            assert str(again.value) == str(err)
            continue
        _assert_same(whole, _load(path, 1000, monkeypatch))
        checked += 1
    assert checked >= 10


@pytest.mark.parametrize("batch", [1, 7, 64])
def test_sample_runs_parse_the_same_in_tiny_batches(
    batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = sorted(SAMPLES.glob("*/*.pt.trace.json.gz"))
    assert paths
    for path in paths[:6]:
        _assert_same(_load(path, ONE_BATCH, monkeypatch), _load(path, batch, monkeypatch))


def _mixed_events() -> list[dict]:
    """Ops on two threads (one written as "1" and 1), launches, kernels, a memcpy, flows,
    metadata and a [memory] instant, spread so every batch of a few events holds a mix."""
    events: list[dict] = [
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "worker"}},
    ]
    for i in range(12):
        tid = 1 if i % 3 else "1"
        events.append(op(f"aten::op{i % 4}", 100.0 * i, 50.0, tid=tid, **{"External id": i + 1}))
        events.append(op("aten::inner", 100.0 * i + 5, 10.0, tid=tid))
        events.append(launch("cudaLaunchKernel", 100.0 * i + 6, 2.0, 500 + i, tid=tid))
        events.append(kernel(f"k{i % 5}", 100.0 * i + 20, 5.0, 500 + i))
        events.append({"ph": "s", "id": i, "pid": 1, "tid": 1, "ts": 100.0 * i, "cat": "ac2g"})
    events.append(
        kernel("Memcpy HtoD (Pageable -> Device)", 2000.0, 3.0, 999, cat="gpu_memcpy", bytes=64)
    )
    events.append({"ph": "i", "name": "[memory]", "pid": 1, "tid": 2, "ts": 5.0,
                   "args": {"Bytes": 512, "Device Type": 1, "Device Id": 0}})  # fmt: skip
    events.append(op("bad", 5.0, -3.0, tid=2))  # an impossible duration: ignored, counted
    return events


@pytest.mark.parametrize("batch", [1, 2, 3, 5, 8])
def test_hand_made_trace_same_in_any_batch_size(
    batch: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_trace(tmp_path / "mixed.json", _mixed_events())
    whole = _load(path, ONE_BATCH, monkeypatch)
    _assert_same(whole, _load(path, batch, monkeypatch))
    assert whole.stats.ignored == {"bad_duration": 1, "flow": 12, "metadata": 1}
    assert list(whole.ops["thread"].cat.categories) == ["1/1", "1/2"]


@pytest.mark.parametrize("bare", [False, True])
def test_a_bad_event_is_named_by_its_index_in_the_file(
    bare: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = [op(f"op{i}", float(i), 1.0) for i in range(12)]
    events[10]["ts"] = {"not": "a number"}
    doc: object = events if bare else {"traceEvents": events}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    where = "$[10].ts" if bare else "$.traceEvents[10].ts"
    for batch in (4, ONE_BATCH):
        with pytest.raises(TraceFormatError, match=r"not a profiler trace") as err:
            _load(path, batch, monkeypatch)
        assert where in str(err.value), str(err.value)


def test_invalid_utf8_in_a_later_batch_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = json.dumps({"traceEvents": [op(f"op{i}", float(i), 1.0) for i in range(12)]})
    data = text.encode().replace(b"op11", b"op\x8011")
    path = tmp_path / "bad-utf8.json.gz"
    path.write_bytes(gzip.compress(data))
    messages = set()
    for batch in (4, ONE_BATCH):
        with pytest.raises(TraceFormatError) as err:
            _load(path, batch, monkeypatch)
        messages.add(str(err.value))
    assert len(messages) == 1, messages  # the same message whatever the batch size
    assert str(path) in messages.pop()


def test_nan_in_a_later_batch_takes_the_lenient_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = json.dumps({"traceEvents": [op(f"op{i}", float(i), 1.0) for i in range(12)]})
    path = tmp_path / "nan.json"
    path.write_text(text.replace('"dur": 1.0', '"dur": NaN'))
    small, whole = _load(path, 4, monkeypatch), _load(path, ONE_BATCH, monkeypatch)
    _assert_same(whole, small)
    assert whole.ops["dur_us"].isna().sum() == 12
