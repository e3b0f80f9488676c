"""eager_kernel_lines: the user source line of each eager kernel is a frame the trace file holds
around its launching op — a plain pass over the raw JSON finds, for every row, a
``python_function`` event (or a runner's line mark, when ``exact``) named ``file(line):
function`` on the op's thread whose span holds the op's start; on every corpus trace and the
traces of real_data.SAMPLE_RUNS. Source text the machine does not have is left missing."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SAMPLES, load_trace
from tests.real_data import every_trace_file, raw_events
from traceviz.analysis import provenance
from traceviz.analysis.provenance import LINE_MARK_PREFIX, eager_kernel_lines
from traceviz.schema import KernelLines as KL
from traceviz.schema import Kernels, Ops

FRAME_CATS = {"python_function", "user_annotation", "cpu_op"}


def _frames(path: Path) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """(thread "pid/tid", event name) → the (start, end) µs of each raw span of that name."""
    events = raw_events(path)
    spans: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for e in events:
        if isinstance(e, dict) and e.get("ph") == "X" and e.get("cat") in FRAME_CATS:
            start = float(e["ts"])
            thread = f"{e.get('pid')}/{e.get('tid')}"
            spans[(thread, str(e.get("name")))].append((start, start + float(e.get("dur", 0))))
    return spans


@pytest.mark.parametrize("path", every_trace_file())
def test_each_line_is_a_raw_frame_around_the_op(path: Path) -> None:
    trace = load_trace(path)
    lines = eager_kernel_lines(trace)
    if lines.empty:
        return
    spans = _frames(path)
    kernels, ops = trace.kernels, trace.ops
    for row in lines.to_dict("records"):
        op: Any = ops.iloc[int(kernels[Kernels.op_row].iloc[int(row[KL.kernel_row])])]
        name = f"{row[KL.file]}({row[KL.line]}): {row[KL.function]}"
        name = LINE_MARK_PREFIX + name if row[KL.exact] else name
        start = float(op[Ops.ts_us])
        around = spans[(str(op[Ops.thread]), name)]
        assert any(s - 1e-3 <= start <= e + 1e-3 for s, e in around), (name, start)
    assert lines[KL.kernel_row].is_unique  # one line per kernel at most


def test_lines_of_files_not_on_this_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every code missing (None), and some missing: the rest of each row stays."""
    trace = load_trace(SAMPLES / "pointwise" / "eager_lines.pt.trace.json.gz")
    full = eager_kernel_lines(trace)
    monkeypatch.setattr(provenance, "source_line", lambda file, line: None)
    got = eager_kernel_lines(trace)
    assert len(got) == len(full) > 0 and got[KL.code].isna().all()
    assert got.drop(columns=KL.code).equals(full.drop(columns=KL.code))
    monkeypatch.setattr(provenance, "source_line", lambda f, n: None if n % 2 else f"line {n}")
    half = eager_kernel_lines(trace)
    assert (half[KL.code].isna() == (half[KL.line] % 2 == 1)).all()
