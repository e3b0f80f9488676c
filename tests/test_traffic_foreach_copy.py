"""``aten::_foreach_copy_`` gets an estimated memory-traffic figure (traceviz.analysis.
traffic_foreach): its TensorList rows record shapes but no dtype, its multi-tensor kernels'
names give the types. Real traces: the H200 gpt2 reduce-overhead compiled trace (the fast path,
one kernel per op) and the corpus's MI300X Flux trace (the slow path: a copy_ per pair)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import traceviz
from tests.conftest import CORPUS, SAMPLES, kernel, launch, op
from traceviz.analysis.fusion.lines import read_log
from traceviz.analysis.traffic.args import dtype_bytes
from traceviz.analysis.traffic.foreach import (
    copy_itemsizes,
    foreach_copy_estimate,
    tensor_list_numels,
)
from traceviz.analysis.traffic.memory import Basis, KernelTraffic, MemoryTraffic, memory_traffic
from traceviz.schema import ActivityKind, Kernels, Ops

NS = "at::native::(anonymous namespace)::"
SAME = (  # the name torch 2.x gives the same-dtype fast path (as in the H200 trace), for T
    "void " + NS + "multi_tensor_apply_kernel<" + NS + "TensorListMetadata<2>, " + NS
    + "UnaryOpFunctor<{t}, 2, 1, 1>, at::native::Copy<{t}, {t}> >(...)"
)  # fmt: skip
MIXED = (  # the mixed-dtype fast path: self in D, src in S
    "void " + NS + "multi_tensor_apply_kernel<" + NS + "TensorListMetadata<2>, " + NS
    + "CopyFunctor<{d}, {s}, 2, 1, 1>, at::native::Copy<{d}, {s}> >(...)"
)  # fmt: skip
LISTS = {  # self: [4, 8] and [16]; src the same shapes
    "Input Dims": [[[4, 8], [16]], [[4, 8], [16]], []],
    "Input type": ["TensorList", "TensorList", "Scalar"],
}
REDUCE_OVERHEAD = SAMPLES / "h200" / "gpt2-reduce-overhead" / "compiled.pt.trace.json.gz"
FLUX = CORPUS / "amd" / "mi300x_compiled_flux_hipgraph.json.gz"


def _foreach(ext: int, ts: float, names_durs: list[tuple[str, float]], **args: Any) -> list[dict]:
    """One _foreach_copy_ op launching one kernel per (name, duration)."""
    events = [op("aten::_foreach_copy_", ts, 50, **{"External id": ext}, **args)]
    for i, (name, dur) in enumerate(names_durs):
        corr = 100 * ext + i
        events.append(launch("cudaLaunchKernel", ts + 1 + i, 1, corr, **{"External id": ext}))
        events.append(kernel(name, ts + 60 + 10 * i, dur, corr, **{"External id": ext}))
    return events


def _traffic(tmp_trace: Callable[..., Path], events: list[dict]) -> tuple[Any, MemoryTraffic]:
    trace = traceviz.load(tmp_trace(events), cache=False)
    return trace, memory_traffic(trace)


def _foreach_rows(trace: traceviz.Trace) -> np.ndarray:
    """Kernel rows whose launching op is an aten::_foreach_copy_."""
    op_row = trace.kernels[Kernels.op_row].to_numpy(dtype=np.int64, na_value=-1)
    names = trace.ops[Ops.name].astype(str).to_numpy()
    return np.array([r >= 0 and names[r] == "aten::_foreach_copy_" for r in op_row], dtype=bool)


def test_kernel_names_give_the_types() -> None:
    assert copy_itemsizes(SAME.format(t="long")) == (8, 8)
    assert copy_itemsizes(SAME.format(t="c10::BFloat16")) == (2, 2)
    assert copy_itemsizes(SAME.format(t="c10::complex<float>")) == (8, 8)
    assert copy_itemsizes(MIXED.format(d="c10::Half", s="float")) == (2, 4)
    assert copy_itemsizes(MIXED.format(d="double", s="short")) == (8, 2)
    assert copy_itemsizes(SAME.format(t="mystery_t")) is None
    assert copy_itemsizes(SAME.format(t="float").replace("Copy<", "Neg<")) is None
    assert copy_itemsizes("void at::native::vectorized_elementwise_kernel<4, float>") is None


def test_tensor_lists_are_read_or_refused() -> None:
    dims, types = json.dumps(LISTS["Input Dims"]), json.dumps(LISTS["Input type"])
    assert tensor_list_numels(dims, types) == ([32, 16], [32, 16])
    assert tensor_list_numels("[[], [], []]", types) is None  # lists not recorded
    assert tensor_list_numels("[[[4]], [[4], [2]], []]", types) is None  # lengths differ
    assert tensor_list_numels(dims, '["float", "float", "Scalar"]') is None
    assert tensor_list_numels("[[[4, -1]], [[4, 1]], []]", types) is None
    assert tensor_list_numels("not json", types) is None
    assert tensor_list_numels(None, types) is None
    estimate = foreach_copy_estimate(dims, types, [MIXED.format(d="c10::Half", s="float")] * 2)
    assert estimate is not None
    assert (estimate.bytes_read, estimate.bytes_written) == (48 * 4, 48 * 2)
    two_kinds = [SAME.format(t="float"), SAME.format(t="double")]
    assert foreach_copy_estimate(dims, types, two_kinds) is None
    assert foreach_copy_estimate(dims, types, []) is None


def test_a_tiny_fast_path_trace(tmp_trace) -> None:
    """Three ops: one kernel (bf16), two kernels split by duration (half from float), and one
    whose kernels disagree (no figure). The other rules are untouched: a plain kernel of an op
    without a rule keeps no figure."""
    events = [
        *_foreach(1, 0, [(SAME.format(t="c10::BFloat16"), 4.0)], **LISTS),
        *_foreach(2, 1000, [(MIXED.format(d="c10::Half", s="float"), d) for d in (1.0, 3.0)],
                  **LISTS),
        *_foreach(3, 2000, [(SAME.format(t="float"), 1.0), (SAME.format(t="double"), 1.0)],
                  **LISTS),
        op("aten::mystery_op", 3000, 10, **{"External id": 4}),
        launch("cudaLaunchKernel", 3001, 1, 400, **{"External id": 4}),
        kernel("k_mystery", 3020, 2, 400, **{"External id": 4}),
    ]  # fmt: skip
    trace, result = _traffic(tmp_trace, events)
    per = result.per_kernel
    est = per[KernelTraffic.est_bytes].to_numpy(dtype=float, na_value=np.nan)
    basis = per[KernelTraffic.basis].astype(str).to_numpy()
    ext = trace.kernels[Kernels.external_id].to_numpy(dtype=np.int64, na_value=-1)
    assert est[ext == 1].tolist() == [48 * 2 * 2]
    assert est[ext == 2].tolist() == [(48 * 4 + 48 * 2) / 4, (48 * 4 + 48 * 2) * 3 / 4]
    assert set(basis[ext <= 2]) == {Basis.ESTIMATED.value}
    assert set(per[KernelTraffic.rule].astype(str).to_numpy()[ext <= 2]) == {"copy"}
    assert np.isnan(est[ext >= 3]).all() and set(basis[ext >= 3]) == {Basis.NONE.value}
    assert result.estimated_bytes == 48 * 2 * 2 + 48 * 4 + 48 * 2


def _expected_fast_path(trace: traceviz.Trace, op_row: int, kernel_rows: np.ndarray) -> int:
    """The op's bytes computed here from its row and kernel names (independently of the
    module): Input Dims of both lists × the element size the kernel template names."""
    dims = json.loads(str(trace.ops[Ops.input_dims].iat[op_row]))
    types = {str(trace.kernels[Kernels.name].iat[r]) for r in kernel_rows}
    assert len(types) == 1
    element = types.pop().split("UnaryOpFunctor<", 1)[1].split(",", 1)[0]
    size = dtype_bytes(element)
    assert size
    return sum(math.prod(shape) * size for lst in dims[:2] for shape in lst)


@pytest.mark.skipif(not REDUCE_OVERHEAD.exists(), reason="sample_traces/h200 absent")
def test_the_h200_reduce_overhead_trace() -> None:
    """Every kernel a _foreach_copy_ launched has a figure now (it had none), equal per op to
    what its lists and kernel types give; the credits add up: per op to its bytes, over the
    trace to the total, with and without the compile log."""
    trace = traceviz.load(REDUCE_OVERHEAD, cache=False)
    rows = _foreach_rows(trace)
    assert rows.sum() >= 5
    log = read_log(REDUCE_OVERHEAD.parent / "compile_log.jsonl.gz")
    assert log is not None
    for result in (memory_traffic(trace), memory_traffic(trace, compile_log=log)):
        per = result.per_kernel
        assert set(per[KernelTraffic.basis].astype(str)[rows]) == {Basis.ESTIMATED.value}
        assert set(per[KernelTraffic.rule].astype(str)[rows]) == {"copy"}
        est = per[KernelTraffic.est_bytes].to_numpy(dtype=np.int64, na_value=0)
        op_row = trace.kernels[Kernels.op_row].to_numpy(dtype=np.int64, na_value=-1)
        for launcher in np.unique(op_row[rows]).tolist():
            mine = np.flatnonzero(rows & (op_row == launcher))
            assert est[mine].sum() == _expected_fast_path(trace, launcher, mine)
        known = per[KernelTraffic.est_bytes].notna().to_numpy()
        assert result.total_bytes == est[known].sum()
        by_kind = result.by_kind["est_bytes"].to_numpy(dtype=np.int64, na_value=0)
        assert by_kind.sum() == result.total_bytes


@pytest.mark.skipif(not FLUX.exists(), reason="corpus absent")
def test_the_flux_slow_path_credits_nothing_twice() -> None:
    """The MI300X Flux trace's _foreach_copy_ ops (bf16 and float tensors: the slow path)
    launch nothing themselves; one aten::copy_ per pair launches a measured memcpy. Their
    lists, as the module reads them, are the copies' shapes in order, and those shapes in the
    copies' dtypes are exactly the memcpy bytes: the TensorList reading is right."""
    trace = traceviz.load(FLUX, cache=False)
    assert not _foreach_rows(trace).any()
    ops = trace.ops
    foreach = np.flatnonzero(ops[Ops.name].astype(str).to_numpy() == "aten::_foreach_copy_")
    assert foreach.size == 4
    parent = ops[Ops.parent_row].to_numpy(dtype=np.int64, na_value=-1)
    kernels = trace.kernels
    kernel_op = kernels[Kernels.op_row].to_numpy(dtype=np.int64, na_value=-1)
    result = memory_traffic(trace)
    for row in foreach.tolist():
        lists = tensor_list_numels(
            str(ops[Ops.input_dims].iat[row]), str(ops[Ops.input_types].iat[row])
        )
        assert lists is not None and lists[0] == lists[1]
        copies = np.flatnonzero(parent == row)
        assert ops[Ops.name].astype(str).iloc[copies].eq("aten::copy_").all()
        shapes = [json.loads(str(ops[Ops.input_dims].iat[c]))[1] for c in copies.tolist()]
        assert [math.prod(s) for s in shapes] == lists[1]
        sizes = [dtype_bytes(json.loads(str(ops[Ops.input_types].iat[c]))[1]) for c in copies]
        copied = np.isin(kernel_op, copies)
        assert set(kernels[Kernels.activity].astype(str)[copied]) == {ActivityKind.MEMCPY.value}
        measured = kernels[Kernels.bytes].to_numpy(dtype=np.int64, na_value=0)[copied].sum()
        assert measured == sum(n * (s or 0) for n, s in zip(lists[1], sizes, strict=True))
        basis = result.per_kernel[KernelTraffic.basis].astype(str)[copied]
        assert set(basis) == {Basis.MEASURED.value}
