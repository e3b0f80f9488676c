"""The scan-ahead worker of the native parse goes when a parse fails, even when the caller
keeps the error (``except ... as err``, a notebook's last traceback)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.test_parse_native import CASES, _real_module
from traceviz.parse import native, read
from traceviz.parse.build import Collector


def _scan_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "traceviz-scan" and t.is_alive()]


@pytest.mark.skipif(_real_module() is None, reason="_scan not built")
def test_a_kept_error_does_not_keep_the_scan_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A caller that keeps the error (``except ... as err``, a notebook's last traceback) kept
    the scan-ahead generator's frame alive, and with it a worker polling forever with the
    scanner and the document's bytes."""
    events = json.dumps(CASES["copy_kinds"] * 200)[1:-1]
    path = tmp_path / "many.json"
    path.write_text('{"traceEvents": [' + events + "]}")
    monkeypatch.setattr(native, "AHEAD_BYTES", 0)
    monkeypatch.setattr(native, "BATCH_EVENTS", 3)
    add = Collector.add
    calls = []

    def fail_on_the_third(self: Collector, source: Any) -> None:
        calls.append(len(source))
        if len(calls) == 3:
            raise KeyError("stop here")
        add(self, source)

    monkeypatch.setattr(Collector, "add", fail_on_the_third)
    kept: BaseException | None = None
    try:
        native.parse_native(path, read.read_bytes(path))
    except KeyError as err:
        kept = err
    assert kept is not None and kept.__traceback__ is not None
    assert not _scan_threads()
