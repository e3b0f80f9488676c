"""Review of session 7 (issue 14): bugs a user would hit in what landed, each test failing
without its fix."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import kernel, launch, load_trace, op, write_trace
from tests.test_parse_native import CASES, _real_module
from traceviz.analysis.chains import chain_members
from traceviz.analysis.kernels import classify
from traceviz.parse import native, read
from traceviz.parse.build import Collector
from traceviz.pipeline import compare


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


def _kernels_only(path: Path) -> Path:
    """A trace of pointwise kernels and no CPU op (profiled with CUDA activities only)."""
    events = [kernel(f"triton_poi_fused_mul_{i}", 20.0 + 3 * i, 2.0, i + 1) for i in range(4)]
    return write_trace(path, events)


def _eager_pair_side(path: Path) -> Path:
    events: list[dict[str, Any]] = []
    for i in range(4):
        events.append(op("aten::add", 10.0 * i, 8.0))
        events.append(launch("cudaLaunchKernel", 10.0 * i + 1, 3.0, i + 1))
        events.append(kernel(f"triton_poi_fused_add_{i}", 10.0 * i + 5, 1.0, i + 1))
    return write_trace(path, events)


@pytest.mark.parametrize("kernels_only_side", ["a", "b"])
def test_a_side_without_ops_compares(tmp_path: Path, kernels_only_side: str) -> None:
    """chain_members indexed the (empty) ops table's flags at row 0 for kernels of no known
    op: IndexError out of ``traceviz compare`` when a side has three or more fusible kernels
    and no CPU op at all."""
    bare = load_trace(_kernels_only(tmp_path / "bare.json"))
    other = load_trace(_eager_pair_side(tmp_path / "other.json"))
    assert bare.ops.empty and len(bare.kernels) == 4
    a, b = (bare, other) if kernels_only_side == "a" else (other, bare)
    report = compare(a, b, force=True)
    side = report.comparison.a if kernels_only_side == "a" else report.comparison.b
    assert side.trace is bare
    members = chain_members(bare, classify(bare), np.full(len(bare.kernels), 0))
    assert members.empty
