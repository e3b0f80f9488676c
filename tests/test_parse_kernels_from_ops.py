"""The one builder of CPU kernels from ops rows (traceviz.parse.build.kernels_from_ops) and the
one "pid/tid" thread label (build.thread_label), used by the Kineto CPU-only path
(cpu_kernel_table) and by the ONNX Runtime profile reader alike."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import traceviz
from tests.conftest import SAMPLES, op, write_trace
from traceviz.parse import build
from traceviz.schema import Kernels, Ops
from traceviz.trace import Trace

ORT_PROFILES = [
    Path(__file__).parent / "data" / "ort_all.profile.json",
    *sorted((SAMPLES / "gpt2-ort" / "onnx").glob("*.profile.json")),
]


def test_thread_label_writes_one_label_per_thread() -> None:
    assert build.thread_label(7, 12) == "7/12"
    assert build.thread_label(7.0, " 12 ") == "7/12"
    assert build.thread_label("7", 12.0) == build.thread_label(7, 12)
    assert build.thread_label(None, 3) == "?/3"
    assert build.thread_label(1.5, None) == "1.5/?"


def _check_kernels_are_their_ops(trace: Trace) -> None:
    """Each kernel is its own ops row (time, duration, thread, op name), and per thread the
    exclusive times credit at most the measured busy time."""
    kernels, ops = trace.kernels, trace.ops
    assert len(kernels) > 0
    rows = kernels[Kernels.op_row].to_numpy(dtype=np.int64)
    mine = ops.iloc[rows]
    np.testing.assert_array_equal(kernels[Kernels.ts_us].to_numpy(), mine[Ops.ts_us].to_numpy())
    np.testing.assert_array_equal(kernels[Kernels.dur_us].to_numpy(), mine[Ops.dur_us].to_numpy())
    assert list(kernels[Kernels.thread].astype(str)) == list(mine[Ops.thread].astype(str))
    assert list(kernels[Kernels.op_name].astype(str)) == list(mine[Ops.name].astype(str))
    assert set(kernels[Kernels.op_link].astype(str)) == {"self"}
    assert kernels[Kernels.ts_us].is_monotonic_increasing
    # only the op names kernels use are categories (the session events are not)
    used = set(kernels[Kernels.op_name].astype(str))
    assert set(kernels[Kernels.op_name].cat.categories) == used
    excl = kernels[Kernels.excl_dur_us].to_numpy()
    assert (excl >= -1e-9).all() and (excl <= kernels[Kernels.dur_us].to_numpy() + 1e-9).all()
    for _, group in kernels.groupby(Kernels.thread, observed=True):
        start = group[Kernels.ts_us].min()
        end = (group[Kernels.ts_us] + group[Kernels.dur_us]).max()
        assert group[Kernels.excl_dur_us].sum() <= end - start + 1e-6


@pytest.mark.parametrize("path", ORT_PROFILES, ids=lambda p: p.name)
def test_ort_kernels_are_their_node_ops(path: Path) -> None:
    trace = traceviz.load(path, cache=False)
    _check_kernels_are_their_ops(trace)
    kernels = trace.kernels
    # the kernel name is the node's own name (the op name is its operator type)
    suffix = "_kernel_time"
    nodes = [
        e
        for e in json.loads(path.read_text())
        if e.get("cat") == "Node" and e.get("ph") == "X" and e["name"].endswith(suffix)
    ]
    assert Counter(kernels[Kernels.name].astype(str)) == Counter(
        e["name"][: -len(suffix)] for e in nodes
    )
    assert Counter(kernels[Kernels.op_name].astype(str)) == Counter(
        e["args"]["op_name"] for e in nodes
    )
    assert kernels[Kernels.bytes].notna().any()
    assert kernels[Kernels.external_id].isna().all()


@pytest.mark.parametrize("run", ["attention", "gpt2-ort"])
@pytest.mark.parametrize("side", ["eager", "compiled"])
def test_cpu_run_kernels_are_their_ops(run: str, side: str) -> None:
    trace = traceviz.load(SAMPLES / run / f"{side}.pt.trace.json.gz", cache=False)
    _check_kernels_are_their_ops(trace)
    kernels = trace.kernels
    assert list(kernels[Kernels.name].astype(str)) == list(kernels[Kernels.op_name].astype(str))
    assert kernels[Kernels.bytes].isna().all()


def test_hand_made_cpu_trace_kernels_are_the_work_ops(tmp_path: Path) -> None:
    events = [
        op("aten::linear", 0, 100, **{"External id": 1}),  # a wrapper: its addmm does the work
        op("aten::addmm", 10, 60, **{"External id": 2}),
        op("aten::relu", 200, 20, tid=2, **{"External id": 3}),
    ]
    trace = traceviz.load(write_trace(tmp_path / "cpu.json", events), cache=False)
    kernels = trace.kernels
    work = events[1:]
    assert list(kernels[Kernels.name].astype(str)) == [e["name"] for e in work]
    assert list(kernels[Kernels.dur_us]) == [e["dur"] for e in work]
    assert list(kernels[Kernels.excl_dur_us]) == [e["dur"] for e in work]  # nothing nested
    assert list(kernels[Kernels.external_id]) == [e["args"]["External id"] for e in work]
    assert list(kernels[Kernels.thread].astype(str)) == [
        build.thread_label(e["pid"], e["tid"]) for e in work
    ]
    assert kernels[Kernels.bytes].isna().all()
