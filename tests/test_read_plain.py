"""Reading a plain JSON trace's bytes: exactly the file, also when it grows while read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from traceviz.errors import TraceFormatError
from traceviz.parse.read import _read_plain, read_bytes


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
