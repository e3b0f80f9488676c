"""A comparison where one side has kernels but no CPU op at all (a trace profiled with CUDA
activities only) compares, and finds no unfused chain on that side."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import kernel, launch, load_trace, op, write_trace
from traceviz.analysis.fusion.chains import chain_members
from traceviz.analysis.kernels import classify
from traceviz.pipeline import compare


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
