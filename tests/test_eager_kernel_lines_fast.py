"""eager_kernel_lines reads the op names and categories once per category, each source line
once per call, and builds its table in the declared dtypes (issue 14: every op name was
converted to text, each kernel stat'ed its file, and the table was cast after inference); the
table equals the old form's, kept here as the reference, on every sample and corpus trace."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests._reference import every_trace_file
from tests.conftest import SAMPLES, load_trace
from traceviz import schema
from traceviz.analysis import provenance
from traceviz.analysis.provenance import (
    _NONE,
    _PY_FRAME,
    LINE_MARK_PREFIX,
    _ints,
    _kernel_ops,
    _marks_around,
    eager_kernel_lines,
    is_library,
    propagate_down,
)
from traceviz.schema import KernelLines as KL
from traceviz.schema import OpCategory
from traceviz.schema import Ops as O
from traceviz.trace import Trace


def _user_frames_reference(ops: pd.DataFrame) -> dict[int, tuple[str, int, str, bool]]:
    names = ops[O.name].astype(str)
    marks = names.str.startswith(LINE_MARK_PREFIX)
    python = ops[O.category].astype(str) == OpCategory.PYTHON_FUNCTION.value
    out = {}
    for row, name, exact in zip(
        ops.index[marks | python], names[marks | python], marks[marks | python], strict=True
    ):
        match = _PY_FRAME.match(name.removeprefix(LINE_MARK_PREFIX) if exact else name)
        if match is None or match["file"].startswith("<") or is_library(match["file"]):
            continue
        out[int(row)] = (match["file"], int(match["line"]), match["function"], bool(exact))
    return out


def _reference(trace: Trace) -> pd.DataFrame:
    ops, kernels = trace.ops, trace.kernels
    if kernels.empty or ops.empty:
        return schema.empty_table(schema.KERNEL_LINES_DTYPES)
    frames = _user_frames_reference(ops)
    if not frames:
        return schema.empty_table(schema.KERNEL_LINES_DTYPES)
    python = [row for row, frame in frames.items() if not frame[3]]
    seed = np.full(len(ops), _NONE, dtype=np.int64)
    seed[python] = python
    parent = _ints(ops[O.parent_row], len(ops))
    depth = ops[O.depth].fillna(0).to_numpy(dtype=np.int64)
    owner = propagate_down(parent, depth, seed)
    marked = _marks_around(ops, [row for row, frame in frames.items() if frame[3]])
    rows = []
    for row, op_row in enumerate(_kernel_ops(kernels)):
        frame_row = _NONE if op_row < 0 else marked[op_row]
        frame_row = owner[op_row] if frame_row == _NONE and op_row >= 0 else frame_row
        if frame_row != _NONE:
            file, line, function, exact = frames[int(frame_row)]
            rows.append(
                {KL.kernel_row: row, KL.file: file, KL.line: line, KL.function: function,
                 KL.code: provenance.source_line(file, line), KL.exact: exact}
            )  # fmt: skip
    if not rows:
        return schema.empty_table(schema.KERNEL_LINES_DTYPES)
    return schema.conform(pd.DataFrame(rows), schema.KERNEL_LINES_DTYPES)


def _check(trace: Trace) -> pd.DataFrame:
    got = eager_kernel_lines(trace)
    pd.testing.assert_frame_equal(got, _reference(trace), check_exact=True)
    assert provenance._user_frames(trace.ops) == _user_frames_reference(trace.ops)
    return got


@pytest.mark.parametrize("path", every_trace_file())
def test_equal_to_the_reference_on_real_traces(path: Path) -> None:
    _check(load_trace(path))


def test_lines_of_files_not_on_this_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every code missing (None), and some missing: as the old form had them."""
    trace = load_trace(SAMPLES / "pointwise" / "eager_lines.pt.trace.json.gz")
    monkeypatch.setattr(provenance, "source_line", lambda file, line: None)
    got = _check(trace)
    assert len(got) and got[KL.code].isna().all()
    monkeypatch.setattr(provenance, "source_line", lambda f, n: None if n % 2 else f"line {n}")
    _check(trace)
