"""Scanning a batch ahead (:func:`traceviz.parse.native._scan_ahead`): on a large document the
next batch is scanned on a worker thread while this thread turns the last one into columns. The
tables must be those of scanning when asked for, on every real trace; the worker's errors are
raised in their turn; a caller that stops early stops the worker, even one that keeps the error.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SAMPLES, corpus_files
from tests.test_parse_native import CASES, _real_module, assert_same
from traceviz.parse import native, read
from traceviz.parse.build import Collector

pytestmark = pytest.mark.skipif(_real_module() is None, reason="_scan not built")

REAL = sorted(SAMPLES.glob("*/*.pt.trace.json*"))[:12] + corpus_files()


def _native(path: Path, monkeypatch: pytest.MonkeyPatch, *, ahead: bool) -> Any:
    with monkeypatch.context() as patch:
        patch.setattr(native, "AHEAD_BYTES", 0 if ahead else 1 << 62)
        patch.setattr(native, "BATCH_EVENTS", 4099)  # many batches even on small traces
        return native.parse_native(path, read.read_bytes(path))


def _scan_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "traceviz-scan"]


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_ahead_equals_when_asked_for(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _native(path, monkeypatch, ahead=False)
    got = _native(path, monkeypatch, ahead=True)
    assert expected is not None and got is not None
    assert_same(expected, got)
    assert not _scan_threads()


def test_a_caller_that_stops_early_stops_the_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Also when the caller keeps the error (``except ... as err``, a notebook's last
    traceback): that kept the generator's frame alive, and with it a worker polling forever
    with the scanner and the document's bytes."""
    events = json.dumps(CASES["copy_kinds"] * 200)[1:-1]
    path = tmp_path / "many.json"
    path.write_text('{"traceEvents": [' + events + "]}")
    monkeypatch.setattr(native, "AHEAD_BYTES", 0)
    monkeypatch.setattr(native, "BATCH_EVENTS", 3)
    taken = []
    add = Collector.add

    def add_two_then_fail(self: Collector, source: Any) -> None:
        if len(taken) == 2:
            raise KeyError("stop here")
        taken.append(len(source))
        add(self, source)

    monkeypatch.setattr(Collector, "add", add_two_then_fail)
    kept: BaseException | None = None
    try:
        native.parse_native(path, read.read_bytes(path))
    except KeyError as err:
        kept = err
    assert kept is not None and kept.__traceback__ is not None and taken == [3, 3]
    assert not _scan_threads()  # joined before the error left parse_native


class _FailingScanner:
    """Two batches of one event, then MemoryError, like a scanner out of memory."""

    def __init__(self) -> None:
        self.calls = 0
        self.strings = ["x"]
        self.raws: list[bytes] = []

    def next(self, _: int) -> Any:
        self.calls += 1
        if self.calls > 2:
            raise MemoryError("scanner")
        return 1, [b"\x04"], [b"\x00" * 8]


def test_the_workers_error_is_raised_after_the_batches_before_it() -> None:
    got = []
    with pytest.raises(MemoryError, match="scanner"):
        for batch in native._scan_ahead(_FailingScanner()):
            got.append(batch.n)
    assert got == [1, 1]
    assert not _scan_threads()
