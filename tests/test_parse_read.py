"""traceviz.parse.read: a plain file's bytes are exactly the file, also when it grows while
read; the two decoders (decode_events: whole; decode_batches: in batches) share one document
check (BOM, bare array or object) and one strict decode: on every form of document they return
the same events and header, and fail with the same clear error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tests.conftest import SAMPLES, kernel, op
from tests.test_table_store import assert_same_trace
from traceviz.errors import TraceFormatError
from traceviz.parse import load_trace, read, readers
from traceviz.parse.events import Event
from traceviz.parse.read import _read_plain, read_bytes

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
