"""traceviz.parse.read: a plain file's bytes are exactly the file, also when it grows while
read; the two decoders (decode_events: whole; decode_batches: in batches) share one document
check (BOM, bare array or object) and one strict decode: on every form of document they return
the same events and header, and fail with the same clear error. The batched parse (issue 14):
whatever the batch size, every table, the metadata and the event counts are exactly those of a
one-batch parse; errors name the event by its index in the whole file."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

import traceviz
from tests.conftest import CORPUS, SAMPLES, corpus_files, kernel, launch, op, write_trace
from tests.test_table_store import assert_same_trace
from traceviz.errors import TraceFormatError
from traceviz.parse import load_trace, read, readers
from traceviz.parse.events import Event
from traceviz.parse.read import _read_plain, read_bytes
from traceviz.trace import Trace

EVENTS = [op("aten::mm", 0.0, 5.0), kernel("gemm", 10.0, 3.0, 1), op("aten::relu", 20.0, 2.0)]


def _both(path: Path, data: bytes) -> tuple[tuple[list[Event], Any], tuple[list[Event], Any]]:
    events, doc = read.decode_events(path, data)
    batches, count, header = read.decode_batches(path, data)
    batched = [event for batch in batches for event in batch]
    assert count == len(batched)
    return (events, doc), (batched, header)


def _same(a: list[Event], b: list[Event]) -> None:
    assert [msgspec.json.encode(e) for e in a] == [msgspec.json.encode(e) for e in b]


@pytest.mark.parametrize("bom", [False, True], ids=["plain", "bom"])
@pytest.mark.parametrize("bare", [False, True], ids=["document", "bare-array"])
@pytest.mark.parametrize("nan", [False, True], ids=["finite", "nan-literal"])
def test_both_decoders_read_every_form_alike(bom: bool, bare: bool, nan: bool) -> None:
    text = json.dumps(EVENTS if bare else {"traceName": "t", "traceEvents": EVENTS}, indent=1)
    if nan:
        text = text.replace('"dur": 2.0', '"dur": NaN')
    data = (read.UTF8_BOM if bom else b"") + b"  \n" + text.encode()
    (events, doc), (batched, header) = _both(Path("t.json"), data)
    assert len(events) == len(EVENTS)
    assert [e.name for e in events] == [e["name"] for e in EVENTS]
    _same(events, batched)
    assert (doc is None) == bare and (header is None) == bare
    if not bare:
        assert doc.traceName == header.traceName == "t"


@pytest.mark.parametrize(
    "text",
    ['{"traceEvents": 5}', "[1, 2]", '{"traceEvents": [{"ts": {"a": 1}}]}'],
    ids=["events-not-a-list", "bare-not-events", "bad-field"],
)
def test_both_decoders_reject_the_wrong_shape_naming_the_file(text: str) -> None:
    path = Path("odd.json")
    with pytest.raises(TraceFormatError, match="not a profiler trace") as whole:
        read.decode_events(path, text.encode())
    with pytest.raises(TraceFormatError, match="not a profiler trace") as batched:
        batches, _, _ = read.decode_batches(path, text.encode())
        for _ in batches:
            pass
    assert "odd.json" in str(whole.value) and "odd.json" in str(batched.value)


def test_both_decoders_agree_on_a_real_sample() -> None:
    path = SAMPLES / "attention" / "compiled.pt.trace.json.gz"
    data = read.read_bytes(path)
    (events, doc), (batched, header) = _both(path, data)
    assert len(events) > 0
    _same(events, batched)
    assert doc.header() == header.header()
    # the Kineto reader (parse/readers.py) reads them into the trace load_trace gives
    assert_same_trace(readers.KINETO.read(path, data), load_trace(path, cache=False))


class _GrowsAfterFstat:
    """A file handle whose file gains ``extra`` bytes between the fstat and the first read
    (a profiler still writing the trace)."""

    def __init__(self, path: Path, extra: bytes) -> None:
        self._path, self._extra = path, extra
        self._handle = path.open("rb")
        self._grown = False

    def fileno(self) -> int:
        return self._handle.fileno()

    def read(self, n: int) -> bytes:
        if not self._grown:
            with self._path.open("ab") as out:
                out.write(self._extra)
            self._grown = True
        data: bytes = self._handle.read(n)
        return data

    def close(self) -> None:
        self._handle.close()


def _grown_read(tmp_path: Path, body: bytes, extra: bytes, cap: int) -> Any:
    path = tmp_path / "t.json"
    path.write_bytes(body)
    handle = _GrowsAfterFstat(path, extra)
    try:
        return _read_plain(path, handle, cap)
    finally:
        handle.close()


def test_reads_exactly_the_file(tmp_path: Path) -> None:
    body = b'{"traceEvents": []}' + b" " * 70_000
    path = tmp_path / "t.json"
    path.write_bytes(body)
    assert read_bytes(path) == body


def test_a_file_that_grows_while_read_is_read_whole(tmp_path: Path) -> None:
    body, extra = b"x" * 50_000, b"y" * 30_000
    assert _grown_read(tmp_path, body, extra, cap=1_000_000) == body + extra


def test_a_file_that_grows_past_the_cap_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="grew while read"):
        _grown_read(tmp_path, b"x" * 1_000, b"y" * 2_000, cap=2_500)


def test_growth_up_to_the_cap_is_kept(tmp_path: Path) -> None:
    data = _grown_read(tmp_path, b"x" * 1_000, b"y" * 1_500, cap=2_500)
    assert len(data) == 2_500


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
