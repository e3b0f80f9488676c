"""One tiny hand-made trace (or value) per parsing, linking and classification rule; and the one
builder of CPU kernels from ops rows (traceviz.parse.build.kernels_from_ops) with its "pid/tid"
thread label, used by the Kineto CPU-only path and the ONNX Runtime profile reader alike."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import traceviz
from tests.conftest import CORPUS, SAMPLES, kernel, launch, op, write_trace
from traceviz.parse import build
from traceviz.parse.columns import nullable_ints
from traceviz.parse.nesting import depths, parents, sort_order
from traceviz.schema import DeviceKind, Kernels, LaunchClass, Ops, RegionKind
from traceviz.trace import Trace


def test_kernel_links_to_launch_by_correlation_and_to_op_by_external_id(tmp_trace) -> None:
    path = tmp_trace(
        [
            op("aten::add", 10, 20, **{"External id": 5}),
            launch("cudaLaunchKernel", 15, 4, 99, **{"External id": 5}),
            kernel("add_kernel", 30, 2, 99, **{"External id": 5}),
        ]
    )
    k = traceviz.load(path).kernels.iloc[0]
    assert k.launch_name == "cudaLaunchKernel"
    assert k.launch_delay_us == pytest.approx(30 - (15 + 4))
    assert k.op_name == "aten::add" and k.op_link == "external_id"
    assert k.thread == "1/1"


def test_kernel_without_external_id_links_to_innermost_enclosing_cpu_op(tmp_trace) -> None:
    path = tmp_trace(
        [
            op("outer", 0, 100, cat="user_annotation"),
            op("aten::linear", 10, 50),
            op("aten::addmm", 20, 30),
            launch("cudaLaunchKernel", 25, 5, 7),
            kernel("gemm", 40, 10, 7),
        ]
    )
    k = traceviz.load(path).kernels.iloc[0]
    assert (k.op_name, k.op_link) == ("aten::addmm", "time")


def test_launch_outside_any_cpu_op_links_to_enclosing_python_frame(tmp_trace) -> None:
    path = tmp_trace(
        [
            op("graphs.py(139): replay", 0, 100, cat="python_function"),
            launch("hipGraphLaunch", 10, 5, 3),
            kernel("k1", 20, 1, 3),
            kernel("k2", 22, 1, 3),
        ]
    )
    kernels = traceviz.load(path).kernels
    assert list(kernels.op_name) == ["graphs.py(139): replay"] * 2


def test_graph_replay_kernels_share_the_graph_launch(tmp_trace) -> None:
    path = tmp_trace(
        [launch("cudaGraphLaunch", 0, 5, 42)] + [kernel(f"k{i}", 10 + i, 1, 42) for i in range(3)]
    )
    trace = traceviz.load(path)
    assert trace.kernels.in_graph.all()
    assert set(trace.kernels.graph_launch_row) == {0}
    assert trace.launches.launch_class[0] == LaunchClass.GRAPH_LAUNCH.value
    assert trace.launches.kernel_count[0] == 3


def test_external_ids_that_mirror_correlation_are_not_op_links(tmp_trace) -> None:
    # 2022-2023 Kineto wrote the correlation id into "External id" of kernels and launches.
    path = tmp_trace(
        [
            op("aten::mul", 0, 50, **{"External id": 7}),
            op("aten::add", 100, 50, **{"External id": 1}),
            launch("cudaLaunchKernel", 110, 5, 7, **{"External id": 7}),
            kernel("add_kernel", 130, 2, 7, **{"External id": 7}),
        ]
    )
    k = traceviz.load(path).kernels.iloc[0]
    assert (k.op_name, k.op_link) == ("aten::add", "time")


def test_rocm_streams_as_hex_strings_and_hip_launches(tmp_trace) -> None:
    path = tmp_trace(
        [
            launch("hipExtModuleLaunchKernel", 0, 5, 1, stream="0x0"),
            kernel("Cijk_gemm", 10, 3, 1, stream="0x1a"),
        ],
        roctracer_version=4.1,
    )
    trace = traceviz.load(path)
    assert trace.device_kind is DeviceKind.ROCM
    assert trace.kernels.stream[0] == 0x1A
    assert trace.launches.launch_class[0] == LaunchClass.KERNEL_LAUNCH.value


def test_odd_numeric_values_are_handled_not_fatal(tmp_trace) -> None:
    path = tmp_trace(
        [
            kernel("a", "N/A", 1, 1, **{"est. achieved occupancy %": "inf"}),
            kernel("b", 5, None, 2**60, registers="N/A"),
            {"ph": "X", "cat": "kernel", "name": "c", "pid": 0, "tid": 7, "ts": 9},
            op("record_param_comms", 1, 1, **{"External id": 10159970886766084423}),
        ]
    )
    trace = traceviz.load(path)
    k = trace.kernels.set_index("name")
    assert pd.isna(k.loc["a", "ts_us"]) and k.loc["a", "occupancy_pct"] == float("inf")
    assert pd.isna(k.loc["b", "dur_us"]) and pd.isna(k.loc["b", "registers"])
    assert k.loc["b", "correlation"] == 2**60
    assert pd.isna(k.loc["c", "dur_us"])
    assert pd.isna(trace.ops.external_id[0])  # beyond int64: kept as missing, not a crash


def test_nesting_depth_parent_and_self_time(tmp_trace) -> None:
    path = tmp_trace(
        [
            op("aten::linear", 0, 100),
            op("aten::t", 5, 10),
            op("aten::addmm", 20, 70),
            op("aten::copy_", 30, 10),
            op("other_thread", 0, 100, tid=2),
        ]
    )
    ops = traceviz.load(path).ops.set_index("name")
    assert ops.loc["aten::linear", "depth"] == 0 and pd.isna(ops.loc["aten::linear", "parent_row"])
    assert ops.loc["aten::copy_", "depth"] == 2
    assert ops.loc["aten::linear", "self_us"] == pytest.approx(100 - 10 - 70)
    assert ops.loc["aten::addmm", "self_us"] == pytest.approx(60)
    assert ops.loc["other_thread", "depth"] == 0


def test_cpu_kernels_are_ops_that_compute_themselves(tmp_trace) -> None:
    path = tmp_trace(
        [
            op("aten::linear", 0, 100),
            op("aten::t", 1, 5),
            op("aten::transpose", 2, 2),
            op("aten::addmm", 10, 80),
            op("aten::expand", 11, 1),
            op("aten::copy_", 13, 5),
            op("aten::layer_norm", 200, 50),
            op("aten::native_layer_norm", 201, 45),
            op("aten::empty", 202, 1),
            op("aten::contiguous", 300, 20),
            op("aten::clone", 301, 18),
            op("aten::empty_like", 302, 2),
            op("aten::copy_", 305, 10),
            op("graph_0_cpp_fused_cos_relu_0", 400, 10),
            op("Torch-Compiled Region: 0/0", 390, 40),
        ]
    )
    trace = traceviz.load(path)
    assert trace.device_kind is DeviceKind.CPU
    assert list(trace.kernels.name) == [
        "aten::addmm", "aten::copy_", "aten::native_layer_norm", "aten::copy_",
        "graph_0_cpp_fused_cos_relu_0",
    ]  # fmt: skip
    assert (trace.kernels.op_link == "self").all()
    region = trace.regions.iloc[0]
    assert (region.kind, region.frame_id, region.recompile_id) == ("compiled_region", 0, 0)
    assert region.kernel_count == 1 and region.kernel_time_us == pytest.approx(10)


def test_compiled_region_markers_and_steps(tmp_trace) -> None:
    key = "fal4xpiah2v6blbfmwwonu52dvevbsmlh743q5tkclrt4gcqpzea"
    path = tmp_trace(
        [
            op("ProfilerStep#3", 0, 1000, cat="user_annotation"),
            op("Torch-Compiled Region: 1/2", 10, 500),
            op(f"## Call CompiledFxGraph {key} ##", 20, 400, cat="user_annotation"),
            op("triton_poi_fused_add_cos_sin_0", 30, 50, **{"External id": 9}),
            launch("cuLaunchKernel", 40, 5, 11, **{"External id": 9}),
            kernel("triton_poi_fused_add_cos_sin_0", 60, 4, 11),
            op("CompiledFunctionBackward", 600, 100, tid=2),
        ]
    )
    trace = traceviz.load(path)
    regions = trace.regions.set_index("kind")
    assert regions.loc[RegionKind.COMPILED_REGION.value, "frame_id"] == 1
    assert regions.loc[RegionKind.COMPILED_REGION.value, "recompile_id"] == 2
    assert regions.loc[RegionKind.FX_GRAPH_CALL.value, "graph_key"] == key
    assert regions.loc[RegionKind.FX_GRAPH_CALL.value, "kernel_time_us"] == pytest.approx(4)
    assert regions.loc[RegionKind.COMPILED_FUNCTION_BACKWARD.value, "kernel_count"] == 0
    assert trace.steps.step.tolist() == [3]


def test_memory_events_and_ignored_counts(tmp_trace) -> None:
    memory = {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 5,
              "args": {"Bytes": 512, "Total Allocated": 1024, "Total Reserved": 2048,
                       "Device Type": 1, "Device Id": 0}}  # fmt: skip
    flow = {"ph": "s", "id": 1, "pid": 1, "tid": 1, "ts": 1, "cat": "ac2g", "name": "ac2g"}
    meta = {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main"}}
    weird = {"ph": "B", "name": "begin", "pid": 1, "tid": 1, "ts": 1}
    unknown = {"ph": "X", "cat": "mystery", "name": "m", "pid": 1, "tid": 1, "ts": 1, "dur": 1}
    trace = traceviz.load(tmp_trace([memory, flow, meta, weird, unknown]))
    assert trace.memory.total_allocated_bytes[0] == 1024
    assert trace.memory.device_type[0] == "cuda"
    assert trace.stats.ignored == {"flow": 1, "metadata": 1, "phase_B": 1}
    assert trace.spans.category[0] == "mystery"
    assert trace.meta.thread_names == {"1/1": "main"}
    assert trace.stats.accounted == trace.stats.events_in == 5


def test_bare_array_and_legacy_categories(tmp_path: Path) -> None:
    events = [
        {"ph": "X", "cat": "Operator", "name": "aten::mm", "pid": 1, "tid": "1", "ts": 0,
         "dur": 50, "args": {"External id": 3, "Input dims": [[2, 3], [3, 4]]}},
        {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": "1", "ts": 5,
         "dur": 5, "args": {"correlation": 8, "external id": 3}},
        {"ph": "X", "cat": "Kernel", "name": "gemm", "pid": 0, "tid": "stream 7", "ts": 20,
         "dur": 5, "args": {"correlation": 8, "external id": 3, "device": 0}},
    ]  # fmt: skip
    path = tmp_path / "legacy.json.gz"
    path.write_bytes(gzip.compress(json.dumps(events).encode()))
    trace = traceviz.load(path)
    assert trace.meta.legacy_schema
    k = trace.kernels.iloc[0]
    assert (k.op_name, k.stream, k.launch_name) == ("aten::mm", 7, "cudaLaunchKernel")
    assert trace.ops.input_dims[0] == "[[2, 3], [3, 4]]"


def test_corpus_graph_replay_and_vllm_linking() -> None:
    flux = CORPUS / "amd/mi300x_compiled_flux_hipgraph.json.gz"
    vllm = CORPUS / "amd/mi300x_vllm_full_graph_replay.json.gz"
    if not flux.exists():
        pytest.skip(f"corpus not found at {CORPUS}")
    flux_kernels = traceviz.load(flux).kernels
    assert flux_kernels.in_graph.sum() > 0
    vllm_trace = traceviz.load(vllm)
    replayed = vllm_trace.kernels[vllm_trace.kernels.in_graph]
    assert len(replayed) == 421  # one hipGraphLaunch with kernels that have no External id
    assert replayed.op_row.notna().all()


def test_cpu_op_wrapping_a_scalar_with_to_still_computes(tmp_trace) -> None:
    path = tmp_trace(
        [
            op("aten::mul", 0, 40),
            op("aten::to", 1, 10),
            op("aten::_to_copy", 2, 8),
            op("aten::copy_", 3, 5),
        ]
    )
    assert list(traceviz.load(path).kernels.name) == ["aten::mul", "aten::copy_"]


# Integer fields given as text: what the parser keeps, and never an error for odd digits.
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("7", 7),
        (" 42 ", 42),
        ("0x10", 16),
        ("stream 7", 7),
        ("²", None),  # a superscript: str.isdigit() says digit, int() refuses it
        ("x²3", 3),
        ("٣", 3),  # an Arabic-Indic digit: a decimal digit int() reads
        ("", None),
        ("none", None),
        (None, None),
        (3.0, 3),
        (float("nan"), None),
    ],
)
def test_text_and_odd_values_become_ints_or_na(value: object, expected: int | None) -> None:
    got = nullable_ints([value, 1])
    assert got[1] == 1
    if expected is None:
        assert got[0] is pd.NA
    else:
        assert got[0] == expected


# Nesting beside zero-length spans: a span's parent is the innermost span that encloses it,
# even where empty (0 µs) spans start at the same instant, as integer-µs traces have them (an
# aten::to of 0 µs at the start of an aten::clamp): the depths and parents of a plain stack pass.
# (start, duration) on one thread: a step [0, 100]; an op [10, 20] holding a clamp [10, 14]
# and, at the clamp's start, two empty ops; then an empty op alone at 50.
SPANS = [(0, 100), (10, 20), (10, 4), (10, 0), (10, 0), (50, 0), (60, 5), (60, 0)]


def _stack_pass(spans: list[tuple[float, float]]) -> tuple[list[int], list[int]]:
    """Depth and parent index of each span by a stack over spans sorted as sort_order does;
    a span that ends where another starts does not enclose it."""
    parent, depth, open_ = [-1] * len(spans), [0] * len(spans), []
    for i, (start, dur) in enumerate(spans):
        while open_ and (sum(spans[open_[-1]]) < start + dur or sum(spans[open_[-1]]) <= start):
            open_.pop()
        parent[i] = open_[-1] if open_ else -1
        depth[i] = len(open_)
        open_.append(i)
    return depth, parent


@pytest.mark.parametrize("shift", [0.0, 1e6])  # at 0 and far along a large clock
def test_empty_spans_at_a_start_do_not_lift_their_neighbours(shift: float) -> None:
    starts = np.array([s + shift for s, _ in SPANS], dtype=float)
    durs = np.array([d for _, d in SPANS], dtype=float)
    threads = np.zeros(len(SPANS), dtype=np.int64)
    order = sort_order(threads, starts, durs)
    assert list(order) == list(range(len(SPANS)))  # already in the sorted order
    depth = depths(starts, starts + durs, durs)
    parent = parents(depth, threads)
    want_depth, want_parent = _stack_pass(SPANS)
    assert depth.tolist() == want_depth
    assert parent.tolist() == want_parent
    assert parent[2] == 1 and parent[3] == 2 and parent[4] == 2  # under the clamp, not above


# --- CPU kernels from ops rows ----------------------------------------------------------------

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
