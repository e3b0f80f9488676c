"""Memory traffic: one tiny hand-made trace per rule, then the real traces.

Memory figures add up, on every corpus and sample trace and on random groups: the measured
bytes are the trace file's memcpy/memset bytes and its allocator events are the file's
``[memory]`` events (a plain pass over the raw JSON), the estimated bytes are the per-kernel
sum, the kinds' rows add up to the per-kernel table, and split_bytes gives each group's total
out in full (ties, NaN, inf, negative and zero durations)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import traceviz
from tests.conftest import CORPUS, SAMPLES, corpus_params, kernel, launch, load_trace, op
from tests.real_data import raw_events
from traceviz.analysis.traffic import memory as memory_mod
from traceviz.analysis.traffic.estimates import TrafficRule
from traceviz.analysis.traffic.memory import (
    AllocatorUse,
    Basis,
    KernelTraffic,
    MemoryTraffic,
    TrafficByKind,
    memory_traffic,
    split_bytes,
)
from traceviz.schema import ActivityKind, Kernels

F4 = "float"


def dims(*shapes: list[int]) -> dict[str, Any]:
    """Input Dims / Input type args for float tensors (``[]`` shapes are Scalars)."""
    return {
        "Input Dims": list(shapes),
        "Input type": [F4 if s else "Scalar" for s in shapes],
    }


def launched(name: str, ts: float, dur: float, ext: int, **op_args: Any) -> list[dict]:
    """A CPU op that launches one kernel (``k_<name>``) by correlation ``ext``."""
    return [
        op(name, ts, 10, **{"External id": ext}, **op_args),
        launch("cudaLaunchKernel", ts + 1, 2, ext, **{"External id": ext}),
        kernel(f"k_{ext}", ts + 20, dur, ext, **{"External id": ext}),
    ]


def memory_event(ts: float, nbytes: int, total: int, device_type: int = 1) -> dict:
    return {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts,
            "args": {"Bytes": nbytes, "Total Allocated": total, "Device Type": device_type,
                     "Device Id": 0 if device_type else -1}}  # fmt: skip


def traffic_of(
    tmp_trace: Callable[..., Path], events: list[dict]
) -> tuple[traceviz.Trace, MemoryTraffic]:
    trace = traceviz.load(tmp_trace(events))
    return trace, memory_traffic(trace)


def row(result: MemoryTraffic, trace: traceviz.Trace, name: str) -> pd.Series:
    rows = result.per_kernel[(trace.kernels[Kernels.name] == name).to_numpy()]
    assert len(rows) == 1, name
    return rows.iloc[0]


# --- per-kernel rules --------------------------------------------------------------------


def test_memcpy_and_memset_bytes_are_measured(tmp_trace) -> None:
    trace, result = traffic_of(
        tmp_trace,
        [
            launch("cudaMemcpyAsync", 0, 2, 1),
            kernel("Memcpy HtoD (Pageable -> Device)", 10, 4, 1, cat="gpu_memcpy", bytes=4000),
            launch("cudaMemsetAsync", 20, 2, 2),
            kernel("Memset (Device)", 30, 1, 2, cat="gpu_memset", bytes=512),
        ],
    )
    copy = row(result, trace, "Memcpy HtoD (Pageable -> Device)")
    assert (copy.est_bytes, copy.basis, copy.rule) == (4000, "measured", "memcpy")
    assert copy.bandwidth_gbps == pytest.approx(4000 / 4 * 1e-3)  # bytes/µs → GB/s
    assert row(result, trace, "Memset (Device)").rule == "memset"
    assert result.measured_bytes == result.total_bytes == 4512
    assert result.estimated_bytes is None
    assert result.unestimated_time_share == 0.0


def test_eager_kernel_is_estimated_from_its_op_shapes(tmp_trace) -> None:
    trace, result = traffic_of(tmp_trace, launched("aten::add", 0, 2.0, 7, **dims([256], [256])))
    k = row(result, trace, "k_7")
    assert k.basis == Basis.ESTIMATED.value and k.rule == TrafficRule.POINTWISE.value
    assert k.est_bytes == 3 * 256 * 4  # read two, write one
    assert k.bandwidth_gbps == pytest.approx(3 * 256 * 4 / 2.0 * 1e-3)
    assert result.estimated_bytes == 3 * 256 * 4 and result.measured_bytes is None


@pytest.mark.parametrize(
    "op_name", ["aten::_efficient_attention_forward", "aten::_cudnn_attention_forward"]
)
def test_attention_kernel_from_its_innermost_op(tmp_trace, op_name: str) -> None:
    """The kernel's launching op is the innermost attention op (cuDNN's SDPA, which bf16 GPT-2
    on an H200 dispatched to, launches from ``aten::_cudnn_attention_forward``): q, k, v read,
    an output of q's shape written."""
    qkv = [2, 4, 64, 32]
    trace, result = traffic_of(tmp_trace, launched(op_name, 0, 4.0, 9, **dims(qkv, qkv, qkv, [])))
    k = row(result, trace, "k_9")
    assert k.rule == TrafficRule.ATTENTION.value
    assert k.est_bytes == 4 * (2 * 4 * 64 * 32) * 4  # three inputs read, one output written


def test_one_op_with_several_kernels_splits_its_bytes_by_duration(tmp_trace) -> None:
    events = [
        op("aten::mm", 0, 50, **{"External id": 3}, **dims([64, 32], [32, 16])),
        launch("cudaLaunchKernel", 1, 2, 10, **{"External id": 3}),
        launch("cudaLaunchKernel", 5, 2, 11, **{"External id": 3}),
        kernel("gemm_main", 20, 3.0, 10, **{"External id": 3}),
        kernel("splitk_reduce", 30, 1.0, 11, **{"External id": 3}),
    ]
    trace, result = traffic_of(tmp_trace, events)
    total = (64 * 32 + 32 * 16 + 64 * 16) * 4
    main, reduce = row(result, trace, "gemm_main"), row(result, trace, "splitk_reduce")
    assert main.est_bytes + reduce.est_bytes == total == result.estimated_bytes
    assert main.est_bytes == pytest.approx(total * 0.75, abs=1)
    assert main.bandwidth_gbps == pytest.approx(reduce.bandwidth_gbps, rel=1e-3)


def test_split_is_exact_and_even_without_durations() -> None:
    groups = np.array([5, 5, 5, 9], dtype=np.int64)
    totals = np.array([10, 10, 10, 7], dtype=np.int64)
    even = split_bytes(groups, totals, np.array([np.nan, 1.0, 1.0, 2.0]))
    assert even.tolist()[:3] in ([3, 4, 3], [4, 3, 3], [3, 3, 4]) and sum(even[:3]) == 10
    assert even[3] == 7
    zero = split_bytes(groups[:3], totals[:3], np.zeros(3))
    assert sum(zero) == 10


def test_triton_kernel_uses_its_launch_op_args_or_kernel_num_gb(tmp_trace) -> None:
    events = [
        *launched("triton_poi_fused_add_cos_0", 0, 1.0, 1, **dims([100], [100], [100], [])),
        *launched("triton_poi_fused_mul_1", 100, 1.0, 2, kernel_num_gb=2e-6, **dims([100], [100])),
    ]
    trace, result = traffic_of(tmp_trace, events)
    args = row(result, trace, "k_1")
    assert (args.est_bytes, args.rule) == (1200, TrafficRule.TRITON_ARGS.value)
    num_gb = row(result, trace, "k_2")
    assert (num_gb.est_bytes, num_gb.rule) == (2000, TrafficRule.INDUCTOR_NUM_GB.value)


def test_cpu_trace_kernels_are_their_own_ops(tmp_trace) -> None:
    trace, result = traffic_of(
        tmp_trace,
        [
            op("aten::relu", 0, 20, **dims([1024])),
            op("aten::clamp_min", 1, 15, **dims([1024], [])),
            op("graph_0_cpp_fused_cos_0", 30, 10),  # Inductor C++ kernels record no inputs
        ],
    )
    assert trace.device_kind is traceviz.schema.DeviceKind.CPU
    clamp = row(result, trace, "aten::clamp_min")
    assert clamp.est_bytes == 2 * 1024 * 4 and clamp.basis == "estimated"
    assert row(result, trace, "graph_0_cpp_fused_cos_0").basis == "none"
    assert result.unestimated_time_share == pytest.approx(10 / 25)


def test_kernels_without_an_estimate_are_none_and_counted_in_time_share(tmp_trace) -> None:
    events = [
        *launched("aten::add", 0, 3.0, 1, **dims([8], [8])),
        *launched("aten::mystery_op", 100, 1.0, 2, **dims([8])),  # no rule
        launch("cudaLaunchKernel", 200, 2, 3),
        kernel("orphan_kernel", 210, 4.0, 3),  # no op at all
    ]
    trace, result = traffic_of(tmp_trace, events)
    assert row(result, trace, "k_2").basis == "none"
    orphan = row(result, trace, "orphan_kernel")
    assert orphan.basis == "none" and pd.isna(orphan.est_bytes) and pd.isna(orphan.rule)
    assert np.isnan(orphan.bandwidth_gbps)
    assert result.unestimated_time_share == pytest.approx(5.0 / 8.0)
    assert result.unestimated_time_us == pytest.approx(5.0)


def test_by_kind_totals(tmp_trace) -> None:
    events = [
        *launched("aten::add", 0, 3.0, 1, **dims([8], [8])),
        *launched("aten::mul", 100, 1.0, 2, **dims([8], [8])),
        launch("cudaMemcpyAsync", 200, 2, 3),
        kernel("Memcpy DtoD (Device -> Device)", 210, 2.0, 3, cat="gpu_memcpy", bytes=64),
    ]
    kernels_named = {"k_1": "vectorized_elementwise_kernel", "k_2": "vectorized_elementwise_k2"}
    for event in events:
        event["name"] = kernels_named.get(event["name"], event["name"])
    _, result = traffic_of(tmp_trace, events)
    by_kind = result.by_kind.set_index(TrafficByKind.kind)
    pointwise = by_kind.loc["pointwise"]
    assert pointwise[TrafficByKind.count] == 2
    assert pointwise[TrafficByKind.estimated_bytes] == 2 * 96
    assert pd.isna(pointwise[TrafficByKind.measured_bytes])
    assert pointwise[TrafficByKind.time_us] == pytest.approx(4.0)
    memcpy = by_kind.loc["memcpy"]
    assert memcpy[TrafficByKind.measured_bytes] == memcpy[TrafficByKind.est_bytes] == 64
    assert result.by_kind[TrafficByKind.kind].iloc[0] == "pointwise"  # largest time first
    assert result.total_bytes == 2 * 96 + 64


def test_empty_trace_has_no_figures(tmp_trace) -> None:
    _, result = traffic_of(tmp_trace, [op("ProfilerStep#1", 0, 10, cat="user_annotation")])
    assert result.per_kernel.empty and result.by_kind.empty and result.allocator.empty
    assert result.total_bytes is None and result.unestimated_time_share is None
    assert result.peak_allocated_bytes is None and result.allocated_bytes_per_step is None


def test_rejects_non_traces() -> None:
    with pytest.raises(TypeError):
        memory_traffic("trace.json")  # type: ignore[arg-type]


# --- allocator ---------------------------------------------------------------------------


def test_allocator_peak_and_bytes_per_step(tmp_trace) -> None:
    events = [
        op("ProfilerStep#1", 0, 100, cat="user_annotation"),
        op("ProfilerStep#2", 100, 100, cat="user_annotation"),
        *launched("aten::add", 10, 1.0, 1, **dims([8], [8])),
        memory_event(5, 1000, 1000),
        memory_event(6, -1000, 0),
        memory_event(50, 300, 300),
        memory_event(150, 500, 800),
        memory_event(250, 4000, 4800),  # after the last step: counts for the peak only
        memory_event(50, 7, 7, device_type=0),  # CPU memory on a GPU trace
    ]
    _, result = traffic_of(tmp_trace, events)
    assert result.peak_allocated_bytes == 4800
    assert result.allocated_bytes_per_step == pytest.approx((1000 + 300 + 500) / 2)
    table = result.allocator.set_index(AllocatorUse.device_type)
    assert table.loc["cpu", AllocatorUse.peak_allocated_bytes] == 7
    assert table.loc["cuda", AllocatorUse.allocated_bytes] == 5800
    assert table.loc["cuda", AllocatorUse.events] == 5


def test_allocator_without_steps_has_no_per_step_figure(tmp_trace) -> None:
    _, result = traffic_of(tmp_trace, [op("aten::add", 0, 5), memory_event(1, 64, 64, 0)])
    assert result.peak_allocated_bytes == 64
    assert result.allocated_bytes_per_step is None


# --- real traces -------------------------------------------------------------------------


def check_consistent(trace: traceviz.Trace, result: MemoryTraffic) -> None:
    """Invariants every result holds."""
    per = result.per_kernel
    assert list(per.columns) == [
        KernelTraffic.est_bytes, KernelTraffic.basis, KernelTraffic.rule,
        KernelTraffic.bandwidth_gbps,
    ]  # fmt: skip
    assert per.index.equals(trace.kernels.index)
    has = per[KernelTraffic.est_bytes].notna()
    assert (has == (per[KernelTraffic.basis] != Basis.NONE.value)).all()
    assert (has == per[KernelTraffic.rule].notna()).all()
    assert (per[KernelTraffic.est_bytes].dropna() >= 0).all()
    measured = per[KernelTraffic.basis] == Basis.MEASURED.value
    activity = trace.kernels[Kernels.activity]
    assert not (measured & (activity == ActivityKind.KERNEL.value)).any()
    total = int(per[KernelTraffic.est_bytes].dropna().sum())
    assert (result.total_bytes or 0) == total
    assert (result.measured_bytes or 0) + (result.estimated_bytes or 0) == total
    assert int(result.by_kind[TrafficByKind.count].sum()) == len(trace.kernels)
    if result.unestimated_time_share is not None:
        assert 0.0 <= result.unestimated_time_share <= 1.0


@pytest.mark.parametrize("path", corpus_params())
def test_every_corpus_trace(path: Path) -> None:
    trace = load_trace(path)
    result = memory_traffic(trace)
    check_consistent(trace, result)
    copies = trace.kernels[Kernels.activity] != ActivityKind.KERNEL.value
    exact = int(trace.kernels.loc[copies.to_numpy(), Kernels.bytes].dropna().sum())
    assert (result.measured_bytes or 0) == exact


def corpus_trace(relative: str) -> traceviz.Trace:
    path = CORPUS / relative
    if not path.is_file():
        pytest.skip(f"corpus trace {relative} not found under {CORPUS}")
    return load_trace(path)


def test_a100_triton_kernel_from_its_launch_op() -> None:
    trace = corpus_trace("nvidia/a100_compiled_triton_tiny.json.gz")
    result = memory_traffic(trace)
    k = row(result, trace, "triton_poi_fused_add_cos_sin_0")
    assert k.est_bytes == 3 * 10 * 10 * 4  # two inputs and the output, fp32 [10, 10]
    assert k.rule == TrafficRule.TRITON_ARGS.value
    assert result.unestimated_time_share == 0.0


def test_mi300x_llama_block_is_fully_estimated() -> None:
    trace = corpus_trace("amd/mi300x_compiled_llama_block_tiny.json.gz")
    result = memory_traffic(trace)
    assert result.unestimated_time_share == 0.0
    names = trace.kernels[Kernels.name].astype(str)
    gemms = names.str.startswith("Cijk_").to_numpy()  # hipBLASLt, launched by aten::mm
    assert gemms.sum() == 7
    assert set(result.per_kernel.loc[gemms, KernelTraffic.rule]) == {TrafficRule.MATMUL.value}
    by_name = dict(zip(names, result.per_kernel[KernelTraffic.rule], strict=True))
    assert by_name["triton_poi_fused__unsafe_view_add_3"] == TrafficRule.TRITON_ARGS.value
    assert by_name["attn_fwd"] == TrafficRule.ATTENTION.value


def sample(model: str, variant: str) -> Path:
    path = SAMPLES / model / f"{variant}.pt.trace.json.gz"
    if not path.is_file():
        pytest.skip(f"sample trace {path} not found (make it with sample_traces/make.sh)")
    return path


def test_pointwise_sample_pair() -> None:
    eager = load_trace(sample("pointwise", "eager"))
    compiled = load_trace(sample("pointwise", "compiled"))
    eager_result, compiled_result = memory_traffic(eager), memory_traffic(compiled)
    check_consistent(eager, eager_result)
    check_consistent(compiled, compiled_result)
    assert eager_result.unestimated_time_share == 0.0  # every eager aten op has a rule
    assert eager_result.estimated_bytes is not None and eager_result.estimated_bytes > 0
    # the C++ kernel records no inputs: no estimate, and the share says so
    assert compiled_result.estimated_bytes is None
    assert compiled_result.unestimated_time_share == 1.0
    if eager_result.allocated_bytes_per_step and compiled_result.allocated_bytes_per_step:
        assert compiled_result.allocated_bytes_per_step < eager_result.allocated_bytes_per_step


def test_cudnn_attention_of_a_real_bf16_run() -> None:
    """bf16 GPT-2 on an H200: SDPA runs as cuDNN kernels launched from
    ``aten::_cudnn_attention_forward``; each gets the attention rule."""
    path = SAMPLES / "h200" / "gpt2-bf16" / "eager.pt.trace.json.gz"
    if not path.is_file():
        pytest.skip(f"sample trace {path} not found")
    trace = load_trace(path)
    result = memory_traffic(trace)
    names = trace.kernels[Kernels.name].astype(str)
    cudnn = names.str.startswith("cudnn_generated").to_numpy()
    assert cudnn.sum() == 10  # one per layer, two layers, five steps
    rules = set(result.per_kernel.loc[cudnn, KernelTraffic.rule])
    assert rules == {TrafficRule.ATTENTION.value}
    check_consistent(trace, result)


COPY_CATS = {"gpu_memcpy", "gpu_memset", "Memcpy", "Memset"}
TRACES = [
    *corpus_params(),
    *(
        pytest.param(p, id=p.relative_to(SAMPLES).as_posix())
        for p in sorted(SAMPLES.glob("**/*.pt.trace.json.gz"))
    ),
]


def _raw(path: Path) -> tuple[int, int]:
    """The file's memcpy/memset bytes (``args.bytes``) and its ``[memory]`` events."""
    events = raw_events(path)
    copied = sum(
        int((e.get("args") or {}).get("bytes") or 0)
        for e in events
        if e.get("ph") == "X" and e.get("cat") in COPY_CATS
    )
    return copied, sum(1 for e in events if e.get("name") == "[memory]")


@pytest.mark.parametrize("path", TRACES)
def test_memory_figures_add_up_to_the_raw_json(path: Path) -> None:
    trace = load_trace(path)
    got = memory_traffic(trace)
    copied, memory_events = _raw(path)
    assert (got.measured_bytes or 0) == copied
    est = got.per_kernel[KernelTraffic.est_bytes].dropna()
    assert got.total_bytes == (int(est.sum()) if len(est) else None)
    assert (got.measured_bytes or 0) + (got.estimated_bytes or 0) == (got.total_bytes or 0)
    assert int(got.by_kind[TrafficByKind.count].sum()) == len(got.per_kernel)
    assert int(got.by_kind[TrafficByKind.est_bytes].sum()) == (got.total_bytes or 0)
    use = memory_mod.allocator_use(trace)
    assert int(use[AllocatorUse.events].sum()) == len(trace.memory) == memory_events


@pytest.mark.parametrize("seed", range(30))
def test_split_bytes_gives_each_group_its_total(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 60))
    groups = rng.integers(0, max(1, n // 2 + 1), size=n).astype(np.int64)
    totals_by_group = rng.integers(0, 10**12, size=groups.max(initial=0) + 1)
    totals = totals_by_group[groups].astype(np.int64)
    dur = rng.choice([0.0, -1.0, np.nan, 1.5, 3.0, 1e-9, 7.25], size=n)
    dur = np.where(rng.random(n) < 0.5, rng.random(n) * 10, dur)
    got = split_bytes(groups, totals, dur)
    assert got.dtype == np.int64 and (got >= 0).all()
    for g in np.unique(groups):
        mine = groups == g
        assert int(got[mine].sum()) == int(totals_by_group[g])
        known = dur[mine] > 0
        if known.all() and mine.sum() > 1:  # by duration: a longer call never gets less
            order = np.argsort(dur[mine], kind="stable")
            assert (np.diff(got[mine][order]) >= -1).all()


def test_split_bytes_single_rows_and_empty() -> None:
    dur = np.array([np.nan, np.inf, -2.0, 0.0, 4.0])
    groups = np.arange(5, dtype=np.int64)
    totals = np.array([3, 5, 7, 11, 2**40 + 1], dtype=np.int64)
    assert split_bytes(groups, totals, dur).tolist() == totals.tolist()  # one row: all of it
    assert split_bytes(groups[:1], totals[:1], dur[:1]).tolist() == [3]
    assert split_bytes(groups[:0], totals[:0], dur[:0]).size == 0


def test_by_kind_leaves_out_a_row_without_a_kind() -> None:
    rng = np.random.default_rng(7)
    n = 12
    per_kernel = pd.DataFrame(
        {
            KernelTraffic.est_bytes: pd.array(rng.integers(0, 10**6, size=n), dtype="Int64"),
            KernelTraffic.basis: pd.Categorical(["estimated"] * n),
        }
    )
    kinds = pd.Series(pd.Categorical(["gemm", "pointwise", "copy"] * 4))
    kinds.iloc[3] = np.nan
    got = memory_mod._by_kind(per_kernel, kinds, np.ones(n))
    assert int(got[TrafficByKind.count].sum()) == n - 1
    kept = per_kernel[KernelTraffic.est_bytes].drop(index=3)
    assert int(got[TrafficByKind.est_bytes].sum()) == int(kept.sum())
