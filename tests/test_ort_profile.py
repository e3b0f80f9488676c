"""ONNX Runtime profiles through ``traceviz.load`` (traceviz.parse.ort_profile, parse.readers).

Real profiles: ``tests/data/ort_all.profile.json`` (committed; onnxruntime 1.32, CPU, the block
of :func:`block_model` at ORT_ENABLE_ALL, 3 runs: made by :func:`write_profile`) and profiles
made fresh here with the installed onnxruntime. Every figure is checked against an independent
count of the JSON; hand-made profiles cover the odd cases (fences, a missing ``]``, GPU
providers, nested nodes, bad input).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import traceviz
from tests import ort_fixtures as fx
from tests.conftest import CORPUS, SAMPLES, corpus_files
from tests.mutation_fixtures import (
    HOSTILE_SETTINGS,
    MUTATIONS,
    ODD_VALUES,
    load_or_format_error,
    mutate,
)
from traceviz.analysis.traffic.estimates import TrafficRule
from traceviz.analysis.traffic.memory import Basis, KernelTraffic, memory_traffic
from traceviz.cli import main
from traceviz.errors import TraceFormatError
from traceviz.parse import readers
from traceviz.schema import DeviceKind, Kernels, OpCategory, Ops, Steps

DATA = Path(__file__).parent / "data"
COMMITTED = DATA / "ort_all.profile.json"
SIZES = ("activation_size", "parameter_size", "output_size")


# --- real profiles ---------------------------------------------------------------------------


def block_model() -> Any:
    """LayerNorm → MatMul+Add → Gelu (erf, as 5 nodes) → MatMul+Add → residual Add."""
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    h = 16

    def const(name: str, *shape: int) -> Any:
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * 0.3, name)

    def scalar(name: str, value: float) -> Any:
        return numpy_helper.from_array(np.array(value, np.float32), name)

    inits = [const("w1", h, 4 * h), const("b1", 4 * h), const("w2", 4 * h, h), const("b2", h)]
    inits += [const("g", h), const("be", h), scalar("half", 0.5), scalar("sqrt2", 2**0.5)]
    inits += [scalar("one", 1.0)]
    n = helper.make_node
    nodes = [
        n("LayerNormalization", ["x", "g", "be"], ["ln"], name="ln", axis=-1, epsilon=1e-5),
        n("MatMul", ["ln", "w1"], ["mm1"], name="fc1/MatMul"),
        n("Add", ["mm1", "b1"], ["h"], name="fc1/Add"),
        n("Div", ["h", "sqrt2"], ["d"], name="gelu/Div"),
        n("Erf", ["d"], ["e"], name="gelu/Erf"),
        n("Add", ["e", "one"], ["e1"], name="gelu/Add"),
        n("Mul", ["h", "e1"], ["m"], name="gelu/Mul"),
        n("Mul", ["m", "half"], ["g1"], name="gelu/Mul_1"),
        n("MatMul", ["g1", "w2"], ["mm2"], name="fc2/MatMul"),
        n("Add", ["mm2", "b2"], ["o"], name="fc2/Add"),
        n("Add", ["o", "x"], ["y"], name="residual"),
    ]
    io = [helper.make_tensor_value_info(v, TensorProto.FLOAT, [2, 4, h]) for v in "xy"]
    graph = helper.make_graph(nodes, "block", io[:1], io[1:], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def write_profile(out: Path, *, level: str = "all", runs: int = 3) -> Path:
    """Profile :func:`block_model` with onnxruntime (CPU, 1 thread) into ``out``."""
    pytest.importorskip("onnxruntime")
    src = fx.save(block_model(), out.with_suffix(".onnx"))
    x = np.random.default_rng(1).standard_normal((2, 4, 16)).astype(np.float32)
    fx.optimize(src, level, out.with_suffix(".opt.onnx"), feeds={"x": x}, profile=out, runs=runs)
    return out


@pytest.fixture(scope="module")
def fresh_profiles(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("ort")
    return [
        write_profile(folder / "disable.json", level="disable", runs=4),
        write_profile(folder / "all.json", level="all", runs=3),
    ]


def _plain_nodes(path: Path) -> list[dict[str, Any]]:
    """The profile's ``<node>_kernel_time`` events, read the plain way."""
    return [
        e
        for e in json.loads(path.read_text())
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")
    ]


def test_committed_profile_is_small_and_real() -> None:
    assert COMMITTED.stat().st_size < 200_000
    events = json.loads(COMMITTED.read_text())
    assert {e["cat"] for e in events} == {"Session", "Node"}


def test_real_profiles_become_kernels_ops_and_steps(fresh_profiles: list[Path]) -> None:
    """Nodes become kernels, each its own op; one step per model_run, kernel time within each
    run's wall time; the bytes are the recorded sizes, and memory traffic takes them."""
    for path in [COMMITTED, *fresh_profiles]:
        plain = json.loads(path.read_text())
        nodes = _plain_nodes(path)
        runs = [e for e in plain if e["cat"] == "Session" and e["name"] == "model_run"]
        runs.sort(key=lambda e: float(e["ts"]))
        trace = traceviz.load(path)
        assert trace.device_kind is DeviceKind.CPU
        assert trace.meta.profiler_flags["providers"] == ["CPUExecutionProvider"]
        k, steps = trace.kernels, trace.steps
        assert len(k) == len(nodes) > 0
        expected_names = sorted(e["name"].removesuffix("_kernel_time") for e in nodes)
        assert sorted(k[Kernels.name].astype(str)) == expected_names
        assert sorted(k[Kernels.op_name].astype(str)) == sorted(e["args"]["op_name"] for e in nodes)
        assert k[Kernels.dur_us].sum() == sum(e["dur"] for e in nodes)
        # each kernel is its own op: same name as its op type, same time
        own = trace.ops.iloc[k[Kernels.op_row].to_numpy(dtype=np.int64)]
        assert (own[Ops.name].astype(str).to_numpy() == k[Kernels.op_name].astype(str)).all()
        assert (own[Ops.ts_us].to_numpy() == k[Kernels.ts_us].to_numpy()).all()
        assert (own[Ops.category] == OpCategory.CPU_OP.value).all()
        # one step per model_run, in time order
        assert list(steps[Steps.step]) == list(range(len(runs)))
        assert list(steps[Steps.dur_us]) == [e["dur"] for e in runs]
        assert trace.stats.events_in == len(plain) == trace.stats.accounted
        # every node in one run, the kernel time inside each run at most its wall time
        starts = steps[Steps.ts_us].to_numpy()
        ts = k[Kernels.ts_us].to_numpy()
        step_of = np.searchsorted(starts, ts, side="right") - 1
        ends = starts + steps[Steps.dur_us].to_numpy()
        assert (step_of >= 0).all() and (ts + k[Kernels.dur_us].to_numpy() <= ends[step_of]).all()
        per_step = pd.Series(k[Kernels.excl_dur_us].to_numpy()).groupby(step_of).sum()
        assert (per_step.to_numpy() <= steps[Steps.dur_us].to_numpy()[per_step.index]).all()
        assert k[Kernels.excl_dur_us].sum() <= k[Kernels.dur_us].sum()
        expected = sum(int(e["args"][key]) for e in nodes for key in SIZES)
        assert int(k[Kernels.bytes].sum()) == expected
        traffic = memory_traffic(trace)
        per = traffic.per_kernel
        assert (per[KernelTraffic.basis] == Basis.ESTIMATED.value).all()
        assert (per[KernelTraffic.rule] == TrafficRule.TENSOR_SIZES.value).all()
        assert traffic.estimated_bytes == traffic.total_bytes == expected
        assert traffic.measured_bytes is None and traffic.unestimated_time_us == 0.0
        assert int(traffic.by_kind["est_bytes"].sum()) == expected
        assert traffic.by_kind["time_us"].sum() == pytest.approx(k[Kernels.excl_dur_us].sum())


def test_input_shapes_become_kineto_style_dims() -> None:
    trace = traceviz.load(COMMITTED)
    node = _plain_nodes(COMMITTED)[0]
    row = trace.kernels.index[trace.kernels[Kernels.ts_us] == node["ts"]][0]
    op_row = int(trace.kernels.at[row, Kernels.op_row])
    shapes = node["args"]["input_type_shape"]
    dims = json.loads(trace.ops.at[op_row, Ops.input_dims])
    types = json.loads(trace.ops.at[op_row, Ops.input_types])
    assert dims == [next(iter(s.values())) for s in shapes]
    assert types == [next(iter(s)) for s in shapes]


def test_summary_text_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    plain = json.loads(COMMITTED.read_text())
    nodes = _plain_nodes(COMMITTED)
    runs = [e for e in plain if e["name"] == "model_run"]
    assert main(["summary", str(COMMITTED), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["device"] == "cpu"
    assert data["kernel_count"] == len(nodes)
    assert data["step_count"] == len(runs)
    assert data["step_mean_us"] == pytest.approx(sum(e["dur"] for e in runs) / len(runs))
    assert data["events_in"] == len(plain) and data["events_ignored"] == 0
    (kernels,) = data["activities"]
    assert kernels["bytes"] == sum(int(e["args"][key]) for e in nodes for key in SIZES)
    names = {row["name"] for row in data["top_kernels"]}
    assert names <= {e["name"].removesuffix("_kernel_time") for e in nodes}
    assert main(["summary", str(COMMITTED)]) == 0
    out = capsys.readouterr().out
    assert f"{len(nodes)} (" in out and f"{len(runs)}, mean" in out


def test_gzip_and_cache_round_trip(tmp_path: Path) -> None:
    packed = tmp_path / "p.json.gz"
    packed.write_bytes(gzip.compress(COMMITTED.read_bytes()))
    trace = traceviz.load(packed)
    plain = traceviz.load(COMMITTED)
    pd.testing.assert_frame_equal(trace.kernels, plain.kernels)
    again = traceviz.load(trace.save(tmp_path / "cache"))
    pd.testing.assert_frame_equal(again.kernels, plain.kernels)
    pd.testing.assert_frame_equal(again.steps, plain.steps)


# --- the reader seam -------------------------------------------------------------------------


def test_readers_claim_their_own_files() -> None:
    data = COMMITTED.read_bytes()
    assert readers.reader_for(COMMITTED, data) is readers.ORT_PROFILE
    sample = SAMPLES / "mlp" / "eager.pt.trace.json.gz"
    kineto = gzip.decompress(sample.read_bytes())
    assert readers.reader_for(sample, kineto) is readers.KINETO
    assert readers.READERS[-1] is readers.KINETO


def test_no_corpus_trace_is_taken_for_an_ort_profile() -> None:
    files = corpus_files()
    if not files:
        pytest.skip(f"corpus not found at {CORPUS}")
    for path in files:
        with path.open("rb") as handle:
            gz = handle.read(2) == b"\x1f\x8b"
        opener: Any = gzip.open if gz else open
        with opener(path, "rb") as handle:
            head = handle.read(readers.HEAD_BYTES)
        assert readers.reader_for(path, head) is readers.KINETO, path


# --- hand-made profiles ----------------------------------------------------------------------


def _node(
    name: str, op_type: str, ts: float, dur: float, *, tid: int = 1, **args: Any
) -> dict[str, Any]:
    base = {
        "op_name": op_type,
        "provider": "CPUExecutionProvider",
        "node_index": "0",
        "activation_size": "64",
        "parameter_size": "16",
        "output_size": "32",
        "input_type_shape": [{"float": [4, 4]}],
        "thread_scheduling_stats": {"main_thread": {"thread_pool_name": "p"}},
    }
    return {"cat": "Node", "pid": 7, "tid": tid, "dur": dur, "ts": ts, "ph": "X",
            "name": f"{name}_kernel_time", "args": base | args}  # fmt: skip


def _session(name: str, ts: float, dur: float) -> dict[str, Any]:
    return {"cat": "Session", "pid": 7, "tid": 1, "dur": dur, "ts": ts, "ph": "X",
            "name": name, "args": {}}  # fmt: skip


def _write(path: Path, events: list[dict[str, Any]], *, close: bool = True) -> Path:
    text = "[\n" + ",\n".join(json.dumps(e) for e in events)
    path.write_text(text + ("\n]\n" if close else ",\n"))
    return path


def _run(ts: float, *nodes: dict[str, Any]) -> list[dict[str, Any]]:
    return [*nodes, _session("model_run", ts, 100)]


def test_fences_are_ignored_and_counted(tmp_path: Path) -> None:
    fence = {"cat": "Node", "pid": 7, "tid": 1, "dur": 1, "ts": 11, "ph": "X",
             "name": "a_fence_before", "args": {"op_name": "Add"}}  # fmt: skip
    after = fence | {"name": "a_fence_after", "ts": 30}
    events = [
        _session("session_initialization", 0, 5),
        *_run(10, fence, _node("a", "Add", 12, 8), after),
    ]
    trace = traceviz.load(_write(tmp_path / "f.json", events))
    assert len(trace.kernels) == 1
    assert trace.stats.ignored == {"fence": 2}
    assert trace.stats.events_in == 5 == trace.stats.accounted


def test_missing_closing_bracket_is_tolerated(tmp_path: Path) -> None:
    events = _run(10, _node("a", "Add", 12, 8), _node("b", "Mul", 30, 5))
    closed = traceviz.load(_write(tmp_path / "closed.json", events))
    cut = traceviz.load(_write(tmp_path / "cut.json", events, close=False))
    pd.testing.assert_frame_equal(cut.kernels, closed.kernels)
    assert cut.stats == closed.stats
    bare = tmp_path / "bare.json"
    bare.write_text(_write(tmp_path / "x.json", events).read_text().rstrip().removesuffix("]"))
    assert len(traceviz.load(bare).kernels) == 2


def test_thread_scheduling_stats_as_string(tmp_path: Path) -> None:
    events = _run(10, _node("a", "Add", 12, 8, thread_scheduling_stats='{"main_thread": {}}'))
    trace = traceviz.load(_write(tmp_path / "s.json", events))
    assert len(trace.kernels) == 1


@pytest.mark.parametrize(
    ("provider", "kind"),
    [
        ("CUDAExecutionProvider", DeviceKind.CUDA),
        ("ROCMExecutionProvider", DeviceKind.ROCM),
        ("DmlExecutionProvider", DeviceKind.OTHER),
    ],
)
def test_device_kind_from_provider(tmp_path: Path, provider: str, kind: DeviceKind) -> None:
    events = _run(10, _node("a", "MatMul", 12, 8, provider=provider), _node("s", "Shape", 30, 1))
    path = _write(tmp_path / "gpu.json", events)
    trace = traceviz.load(path)
    assert trace.device_kind is kind
    assert trace.meta.profiler_flags["providers"] == sorted([provider, "CPUExecutionProvider"])
    assert main(["summary", str(path), "--format", "json"]) == 0


def test_nested_nodes_count_their_time_once(tmp_path: Path) -> None:
    # an If node runs its subgraph's nodes inside its own span
    events = _run(0, _node("if", "If", 10, 50), _node("then/add", "Add", 20, 15),
                  _node("then/mul", "Mul", 40, 10))  # fmt: skip
    trace = traceviz.load(_write(tmp_path / "n.json", events))
    k = trace.kernels.set_index(Kernels.name)
    assert k.at["if", Kernels.excl_dur_us] == 25
    assert trace.kernels[Kernels.excl_dur_us].sum() == 50  # the wall time of the If


def test_sizes_missing_or_odd(tmp_path: Path) -> None:
    events = _run(
        0,
        _node("none", "Add", 10, 5, activation_size=None, parameter_size=None, output_size=None),
        _node("partial", "Add", 20, 5, parameter_size=None),
        _node("negative", "Add", 30, 5, output_size="-4"),
        _node("ints", "Add", 40, 5, activation_size=8, parameter_size=0, output_size=8),
    )
    trace = traceviz.load(_write(tmp_path / "b.json", events))
    got = trace.kernels.set_index(Kernels.name)[Kernels.bytes]
    assert pd.isna(got["none"]) and pd.isna(got["negative"])
    assert got["partial"] == 96 and got["ints"] == 16
    traffic = memory_traffic(trace).per_kernel
    assert list(traffic[KernelTraffic.basis].astype(str)) == [
        Basis.NONE.value,
        Basis.ESTIMATED.value,
        Basis.NONE.value,
        Basis.ESTIMATED.value,
    ]


def test_other_events_are_kept_or_counted(tmp_path: Path) -> None:
    events = [
        *_run(0, _node("a", "Add", 10, 5)),
        {"cat": "Api", "pid": 7, "tid": 1, "dur": 3, "ts": 1, "ph": "X", "name": "x", "args": {}},
        {"cat": "Node", "pid": 7, "tid": 1, "ts": 2, "ph": "i", "name": "mark", "args": {}},
        _node("neg", "Add", 50, -5),
    ]
    trace = traceviz.load(_write(tmp_path / "o.json", events))
    assert len(trace.spans) == 1
    assert trace.stats.ignored == {"bad_duration": 1, "not_complete:i": 1}
    assert trace.stats.events_in == 5 == trace.stats.accounted


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('[{"cat": "Node", "ph": "X", "name": "a_kernel_time", "ts": 1, "dur": ', "not valid JSON"),
        ('[{"cat": "Session", "ph": "X", "name": "model_run", "args": "no"}]', "not an ONNX"),
        ('[{"cat": "Node", "ph": "X", "name": "a", "args": {}}, 7]', "not an ONNX"),
    ],
)
def test_bad_profiles_name_the_file(tmp_path: Path, text: str, reason: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(TraceFormatError, match=reason) as err:
        traceviz.load(path)
    assert err.value.path == str(path)
    assert main(["summary", str(path)]) == 2


# --- hostile input ---------------------------------------------------------------------------


@HOSTILE_SETTINGS
@given(mutation=MUTATIONS)
def test_mutated_real_profile_loads_or_raises(
    tmp_path: Path, mutation: tuple[str, int, bytes]
) -> None:
    path = tmp_path / "mutant.json"
    path.write_bytes(mutate(COMMITTED.read_bytes(), *mutation))
    load_or_format_error(path)


@HOSTILE_SETTINGS
@given(
    key=st.sampled_from(["ph", "cat", "name", "pid", "tid", "ts", "dur", "args"]),
    arg=st.sampled_from([*SIZES, "op_name", "provider", "input_type_shape", "node_index"]),
    in_args=st.booleans(),
    value=ODD_VALUES,
    index=st.integers(min_value=1, max_value=10**6),
)
def test_odd_field_values_load_or_raise(
    tmp_path: Path, key: str, arg: str, in_args: bool, value: Any, index: int
) -> None:
    events = json.loads(COMMITTED.read_text())
    event = events[index % len(events)]
    if in_args:
        event["args"][arg] = value
    else:
        event[key] = value
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(events))
    trace = load_or_format_error(path)
    if trace is not None:
        assert (trace.kernels[Kernels.bytes].dropna() >= 0).all()
        memory_traffic(trace)
