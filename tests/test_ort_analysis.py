"""ONNX Runtime profiles as first-class traces.

Kernel kinds by the node's op type, diagnosis that gives ORT advice (or none) instead of torch
advice, the first run named a warm-up, ``traceviz compare`` of two ORT levels and the
comparability guard on ORT pairs, ``Run.problems`` for ORT levels, and the finding for an ORT
level slower than level ``disable`` (as ``compiled-slower`` for a compiled model). Real
profiles: the committed ``tests/data/ort_all.profile.json`` and profiles made here by
onnxruntime (the block of :func:`tests.test_ort_profile.block_model` at two levels, the tiny
graphs of :mod:`tests.ort_fixtures`); hand-made profiles for the odd cases (a cold first run,
a CUDA provider with copy nodes, misleading node names).
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import traceviz
from tests.conftest import SAMPLES
from tests.test_ort_profile import COMMITTED, _node, _plain_nodes, _session, _write, write_profile
from traceviz.analysis.backends import BACKEND_DTYPES, ORT_PREFIX, BackendRow, BackendsView
from traceviz.analysis.fusion.comparable import comparability
from traceviz.analysis.kernel_kinds import (
    KernelKind,
    classify_kinds,
    classify_ort_kind,
    trace_kinds,
)
from traceviz.analysis.kernels import Classified, classify, kind_table
from traceviz.analysis.traffic.memory import memory_traffic
from traceviz.cli import main
from traceviz.diagnose import diagnose_trace
from traceviz.diagnose import ort_advice as ort
from traceviz.diagnose.backends import ORT_SLOWER_ID, backend_findings
from traceviz.diagnose.facts import chain_groups, facts_of_trace
from traceviz.diagnose.finding import Finding
from traceviz.runs.run import load_run
from traceviz.schema import Kernels, Steps, conform

#: Words of torch advice that must never reach an ORT profile's findings.
TORCH_ADVICE = re.compile(
    r"torch\.|torch_logs|dataloader|pin_memory|inductor|dynamo|max-autotune|reduce-overhead"
    r"|ProfilerStep|set_num_threads|cuda_graph",
    re.IGNORECASE,
)


@pytest.fixture(scope="module")
def levels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The block model profiled by onnxruntime at ORT_DISABLE_ALL and ORT_ENABLE_ALL."""
    folder = tmp_path_factory.mktemp("levels")
    return {
        "disable": write_profile(folder / "disable.json", level="disable", runs=4),
        "all": write_profile(folder / "all.json", level="all", runs=4),
    }


def _real(levels: dict[str, Path]) -> list[Path]:
    return [COMMITTED, *levels.values()]


# --- hand-made profiles ----------------------------------------------------------------------


def _profile(path: Path, runs: list[float], nodes: list[tuple[str, str, float]], **kw: Any) -> Path:
    """A profile of ``len(runs)`` model_run spans of the given durations (µs), each running
    ``nodes`` (name, op type, duration, with the node args ``kw``) one after the other."""
    events = [_session("session_initialization", 0, 50)]
    ts = 100.0
    for dur in runs:
        t = ts + 1
        for name, op_type, node_dur in nodes:
            events.append(_node(name, op_type, t, node_dur, **kw))
            t += node_dur + 1
        events.append(_session("model_run", ts, dur))
        ts += dur + 10
    return _write(path, events)


def _ids(findings: list[Finding]) -> list[str]:
    return [f.id for f in findings]


def _text(finding: Finding) -> str:
    return "\n".join([finding.title, *finding.evidence_lines(), finding.next_step])


# --- 1. kernel kinds by op type --------------------------------------------------------------

OP_KINDS = {
    "MatMul": "gemm", "Gemm": "gemm", "FusedMatMul": "gemm", "MatMulNBits": "gemm",
    "MatMulInteger": "gemm", "QGemm": "gemm", "FusedGemm": "gemm",
    "Conv": "conv", "FusedConv": "conv", "NchwcConv": "conv", "QLinearConv": "conv",
    "ConvTranspose": "conv", "com.microsoft.nchwc:Conv": "conv",
    "Attention": "attention", "MultiHeadAttention": "attention",
    "GroupQueryAttention": "attention", "PackedAttention": "attention",
    "LayerNormalization": "normalization", "SkipLayerNormalization": "normalization",
    "SimplifiedLayerNormalization": "normalization", "Softmax": "normalization",
    "BatchNormalization": "normalization", "SkipSimplifiedLayerNormalization": "normalization",
    "ReduceMean": "reduction", "ReduceSum": "reduction", "ArgMax": "reduction",
    "GlobalAveragePool": "reduction", "MaxPool": "reduction",
    "Transpose": "copy", "Reshape": "copy", "Gather": "copy", "GatherND": "copy",
    "Concat": "copy", "Slice": "copy", "Cast": "copy", "Split": "copy", "Expand": "copy",
    "Add": "pointwise", "Mul": "pointwise", "Div": "pointwise", "Erf": "pointwise",
    "Gelu": "pointwise", "FastGelu": "pointwise", "BiasGelu": "pointwise", "Relu": "pointwise",
    "Where": "pointwise", "IsNaN": "pointwise", "And": "pointwise", "Tanh": "pointwise",
    "Max": "pointwise", "Sum": "pointwise",
    "MemcpyFromHost": "memcpy", "MemcpyToHost": "memcpy",
    "MyCustomFusion": "other", "": "other",
}  # fmt: skip


@pytest.mark.parametrize(("op_type", "kind"), OP_KINDS.items())
def test_ort_op_types_have_their_kind(op_type: str, kind: str) -> None:
    assert classify_ort_kind(op_type).value == kind


def test_real_profiles_take_kinds_from_op_types_and_add_up(levels: dict[str, Path]) -> None:
    """Kinds by op type; the kind table and the traffic by kind add up to the nodes measured."""
    seen: set[str] = set()
    for path in _real(levels):
        trace = traceviz.load(path, cache=False)
        column = trace_kinds(trace)
        assert isinstance(column.dtype, pd.CategoricalDtype)
        assert list(column.cat.categories) == [k.value for k in KernelKind]
        kinds = column.astype(str)
        ops = trace.kernels[Kernels.op_name].astype(str)
        expected = [classify_ort_kind(o).value for o in ops]
        assert kinds.tolist() == expected
        assert classify(trace)[Classified.kind].astype(str).tolist() == expected
        seen |= set(zip(ops, kinds, strict=True))
        table = kind_table(classify(trace))
        assert table["count"].sum() == len(_plain_nodes(path))
        measured = float(trace.kernels[Kernels.excl_dur_us].sum())
        assert table["time_us"].sum() == pytest.approx(measured)
        traffic = memory_traffic(trace)
        assert traffic.total_bytes is not None
        assert traffic.total_bytes <= int(trace.kernels[Kernels.bytes].sum())
        by_kind = traffic.by_kind
        assert set(by_kind["kind"].astype(str)) <= {k.value for k in KernelKind} - {"other"}
    # what the block really runs at the two levels
    assert {("MatMul", "gemm"), ("Gemm", "gemm"), ("LayerNormalization", "normalization"),
            ("Gelu", "pointwise"), ("Erf", "pointwise"), ("Reshape", "copy")} <= seen  # fmt: skip
    assert not any(kind == "other" for _, kind in seen)


def test_node_names_do_not_decide_the_kind(tmp_path: Path) -> None:
    # the dynamo exporter names a MatMul after the attention it belongs to
    path = _profile(tmp_path / "p.json", [100, 100, 100],
                    [("node_scaled_dot_product_attention", "MatMul", 10),
                     ("node_softmax_copy", "Add", 5)])  # fmt: skip
    trace = traceviz.load(path, cache=False)
    assert set(trace_kinds(trace).astype(str)) == {"gemm", "pointwise"}
    by_name = classify_kinds(trace.kernels[Kernels.name], trace.kernels[Kernels.activity])
    assert "attention" in set(by_name.astype(str))  # what the name alone would have said


def test_kineto_traces_keep_their_name_kinds() -> None:
    trace = traceviz.load(SAMPLES / "mlp" / "compiled.pt.trace.json.gz")
    assert not trace.meta.is_onnxruntime and trace.meta.framework == "pytorch"
    by_name = classify_kinds(trace.kernels[Kernels.name], trace.kernels[Kernels.activity])
    assert trace_kinds(trace).astype(str).tolist() == by_name.astype(str).tolist()


# --- 2. diagnosis: ORT advice, never torch advice --------------------------------------------


def test_no_torch_advice_on_real_profiles(levels: dict[str, Path]) -> None:
    for path in _real(levels):
        trace = traceviz.load(path, cache=False)
        assert trace.meta.is_onnxruntime
        for finding in diagnose_trace(trace):
            assert not TORCH_ADVICE.search(finding.next_step), (finding.id, finding.next_step)
            assert finding.docs_url is None or "onnxruntime.ai" in finding.docs_url


def test_no_torch_advice_comparing_two_levels(levels: dict[str, Path]) -> None:
    report = traceviz.compare(levels["disable"], levels["all"], names=("disable", "all"))
    ids = _ids(report.findings)
    assert "traces-not-comparable" not in ids
    assert not {"no-compiled-region", "compile-in-window", "no-record-shapes", "graph-break",
                "recompile", "extern-gemm", "unfused-matmul-add", "launch-bound",
                "sync-in-step", "large-intermediates"} & set(ids)  # fmt: skip
    for finding in report.findings:
        assert not TORCH_ADVICE.search(finding.next_step), (finding.id, finding.next_step)


def test_erf_gelu_chain_gets_the_graph_optimization_advice(
    levels: dict[str, Path], tmp_path: Path
) -> None:
    # the chains themselves (whatever their share of a run on a busy machine)
    disable = chain_groups(facts_of_trace(traceviz.load(levels["disable"], cache=False)))
    assert any({"gelu/Div", "gelu/Erf", "gelu/Mul_1"} <= set(g.ops) for g in disable)
    fused = chain_groups(facts_of_trace(traceviz.load(levels["all"], cache=False)))
    assert fused == []  # ORT_ENABLE_ALL made the GELU one Gelu node: nothing left to chain
    measured = traceviz.load(levels["disable"], cache=False).kernels[Kernels.dur_us].sum()
    assert 0 < sum(g.time_us for g in disable) <= measured  # credited at most once
    # the finding's advice, on a hand-made chain that takes most of the run
    nodes = [("gelu/Div", "Div", 20), ("gelu/Erf", "Erf", 20), ("gelu/Add", "Add", 20),
             ("gelu/Mul", "Mul", 20)]  # fmt: skip
    path = _profile(tmp_path / "p.json", [100, 100, 100], nodes)
    findings = diagnose_trace(traceviz.load(path, cache=False))
    (chain,) = [f for f in findings if f.id == "unfused-chain"]
    assert chain.next_step == ort.CHAIN_STEP and chain.docs_url == ort.GRAPH_OPTIMIZATIONS


def test_time_outside_nodes_is_orts_executor(tmp_path: Path) -> None:
    path = _profile(tmp_path / "p.json", [100, 100, 100], [("a", "Add", 10), ("b", "Mul", 10)])
    findings = diagnose_trace(traceviz.load(path, cache=False))
    (overhead,) = [f for f in findings if f.id == "framework-overhead"]
    assert "ORT's executor" in overhead.title and "dispatcher" not in overhead.title
    assert overhead.next_step == ort.OVERHEAD_STEP


def test_too_few_runs_say_model_run(tmp_path: Path) -> None:
    path = _profile(tmp_path / "p.json", [100, 100], [("a", "MatMul", 80)])
    (few,) = [f for f in diagnose_trace(traceviz.load(path, cache=False)) if f.id == "few-steps"]
    assert "only 2 model_run" in _text(few) and few.next_step == ort.STEPS_STEP


def test_gpu_provider_copies_get_io_binding(tmp_path: Path) -> None:
    nodes = [
        ("in_copy", "MemcpyFromHost", 20),
        ("mm", "MatMul", 30),
        ("out_copy", "MemcpyToHost", 25),
    ]
    path = _profile(tmp_path / "p.json", [100, 100, 100], nodes, provider="CUDAExecutionProvider")
    trace = traceviz.load(path, cache=False)
    findings = diagnose_trace(trace)
    (copies,) = [f for f in findings if f.id == "host-device-copy"]
    assert copies.next_step == ort.IO_BINDING_STEP
    # 45 µs of copy nodes per 100 µs run: measured, credited once
    assert copies.est_gain_us == pytest.approx(45.0)
    assert copies.est_gain_us <= trace.kernels[Kernels.dur_us].sum() / len(trace.steps)
    assert "launch-bound" not in _ids(findings) and "cpu-bound" not in _ids(findings)


def test_unknown_provider_is_named_not_torch_profiled(tmp_path: Path) -> None:
    path = _profile(tmp_path / "p.json", [100, 100, 100], [("a", "MatMul", 30)],
                    provider="OpenVINOExecutionProvider")  # fmt: skip
    findings = diagnose_trace(traceviz.load(path, cache=False))
    (device,) = [f for f in findings if f.id == "device-not-analysed"]
    assert "OpenVINOExecutionProvider" in device.title
    assert device.docs_url == ort.PROFILING and not TORCH_ADVICE.search(device.next_step)


# --- 3. the first run: a warm-up, kept measured ----------------------------------------------


def test_cold_first_run_is_a_warm_up_not_noise(tmp_path: Path) -> None:
    runs = [5000.0, 100.0, 104.0, 98.0]
    path = _profile(tmp_path / "p.json", runs, [("a", "MatMul", 80)])
    trace = traceviz.load(path, cache=False)
    assert trace.steps[Steps.dur_us].tolist() == runs  # kept, measured
    findings = diagnose_trace(trace)
    assert "noisy-steps" not in _ids(findings)
    (warm,) = [f for f in findings if f.id == "warm-up-step"]
    factor = runs[0] / float(np.median(runs[1:]))
    assert f"{factor:.1f}×" in warm.title and "warm-up" in warm.title


def test_warm_up_and_noisy_runs_say_both(tmp_path: Path) -> None:
    runs = [5000.0, 100.0, 300.0, 100.0]
    path = _profile(tmp_path / "p.json", runs, [("a", "MatMul", 80)])
    findings = diagnose_trace(traceviz.load(path, cache=False))
    (noisy,) = [f for f in findings if f.id == "noisy-steps"]
    assert "first run 50.0× the median of the others: session warm-up" in _text(noisy)
    assert "slowest / fastest step (runs after the first): 3.00×" in _text(noisy)
    assert noisy.next_step == ort.NOISY_STEP and "warm-up-step" not in _ids(findings)


def test_a_slow_later_run_is_still_noise(tmp_path: Path) -> None:
    # the committed profile's slow run is the second one (16 ms among ~0.2 ms): not a warm-up
    findings = diagnose_trace(traceviz.load(COMMITTED, cache=False))
    assert "noisy-steps" in _ids(findings) and "warm-up-step" not in _ids(findings)
    runs = [100.0, 5000.0, 100.0, 100.0]
    path = _profile(tmp_path / "p.json", runs, [("a", "MatMul", 80)])
    (noisy,) = [
        f for f in diagnose_trace(traceviz.load(path, cache=False)) if f.id == "noisy-steps"
    ]
    assert "session warm-up" not in _text(noisy)


def test_kineto_traces_keep_the_noisy_steps_finding(tmp_path: Path) -> None:
    from tests.conftest import op, write_trace

    events = [op(f"ProfilerStep#{i}", i * 6000, d, cat="user_annotation")
              for i, d in enumerate([5000, 100, 104, 98])]  # fmt: skip
    events.append(op("aten::relu", 6010, 50))
    findings = diagnose_trace(traceviz.load(write_trace(tmp_path / "t.json", events)))
    (noisy,) = [f for f in findings if f.id == "noisy-steps"]
    assert "session warm-up" not in _text(noisy) and "warm-up-step" not in _ids(findings)
    assert "torch.set_num_threads" in noisy.next_step  # torch advice stays on torch traces


def test_warmup_factor_needs_two_other_runs() -> None:
    assert ort.warmup_factor(np.array([900.0, 100.0])) is None
    assert ort.warmup_factor(np.array([250.0, 100.0, 100.0])) is None  # 2.5× < 3×
    assert ort.warmup_factor(np.array([300.0, 100.0, 100.0])) == pytest.approx(3.0)


# --- 4. compare two ORT levels -----------------------------------------------------------------


def test_compare_two_levels_json(
    levels: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["compare", str(levels["disable"]), str(levels["all"]), "--format", "json",
            "--names", "disable", "all", "--no-cache"]  # fmt: skip
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    metrics = {m["name"]: m for m in doc["metrics"]}
    for side, path in (("a", levels["disable"]), ("b", levels["all"])):
        nodes = _plain_nodes(path)
        runs = [e for e in json.loads(path.read_text()) if e["name"] == "model_run"]
        assert metrics["kernel_count"][side] == len(nodes)
        assert metrics["step_count"][side] == len(runs)
        assert metrics["kernels_per_step"][side] == pytest.approx(len(nodes) / len(runs))
    assert doc["fusion"]["comparable"]["comparable"] is True
    kinds = {(row["side"], row["kind"]): row["count"] for row in doc["kinds"]}
    a_ops = [e["args"]["op_name"] for e in _plain_nodes(levels["disable"])]
    gemms = sum(classify_ort_kind(o) is KernelKind.GEMM for o in a_ops)
    assert kinds[("a", "gemm")] == gemms == a_ops.count("MatMul") > 0
    assert ("a", "other") not in kinds and ("b", "other") not in kinds


def test_fusion_credits_add_up_on_two_levels(levels: dict[str, Path]) -> None:
    report = traceviz.compare(levels["disable"], levels["all"], names=("disable", "all"))
    fusion = report.fusion
    table = fusion.kernels
    a = traceviz.load(levels["disable"], cache=False)
    b = traceviz.load(levels["all"], cache=False)
    assert table["eager_kernels"].sum() <= len(a.kernels)
    assert table["eager_time_us"].sum() <= a.kernels[Kernels.excl_dur_us].sum() + 1e-6
    assert table["time_us"].sum() <= b.kernels[Kernels.dur_us].sum() + 1e-6
    # each node of a is credited to at most one node of b: the same-name nodes match 1:1
    same = set(a.kernels[Kernels.name].astype(str)) & set(b.kernels[Kernels.name].astype(str))
    assert same and set(table["kernel"].astype(str)) >= same


def test_guard_refuses_other_models_and_other_frameworks(
    tmp_path: Path, levels: dict[str, Path]
) -> None:
    assert comparability(traceviz.load(levels["disable"]), traceviz.load(levels["all"])).comparable
    other = _profile(tmp_path / "other.json", [100, 100, 100], [("mm", "MatMul", 50)],
                     input_type_shape=[{"float": [3, 7]}])  # fmt: skip
    verdict = comparability(traceviz.load(levels["all"]), traceviz.load(other))
    assert not verdict.comparable and "tensor shapes" in verdict.reasons[0]
    torch_trace = traceviz.load(SAMPLES / "block" / "eager.pt.trace.json.gz")
    mixed = comparability(torch_trace, traceviz.load(levels["all"]))
    assert not mixed.comparable and mixed.reasons[0].startswith("frameworks differ")
    report = traceviz.compare(levels["all"], other, names=("all", "other"))
    (refused,) = [f for f in report.findings if f.id == "traces-not-comparable"]
    assert "ONNX Runtime" in refused.next_step and not TORCH_ADVICE.search(refused.next_step)


def test_guard_accepts_real_level_pairs_from_the_tiny_graphs(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    from tests import ort_fixtures as fx

    for build in (fx.matmul_add, fx.gelu_erf, fx.skip_layer_norm):
        src = build(tmp_path / f"{build.__name__}.onnx")
        feeds = fx.feeds_for(src)
        profiles = []
        for level in ("disable", "all"):
            prof = tmp_path / f"{build.__name__}_{level}.json"
            fx.optimize(src, level, tmp_path / f"{build.__name__}_{level}.onnx", feeds=feeds,
                        profile=prof, runs=3)  # fmt: skip
            profiles.append(traceviz.load(prof, cache=False))
        assert comparability(*profiles).comparable, build.__name__


def _conv_bn_relu(path: Path) -> Path:
    """Conv → BatchNormalization → Relu (BASIC folds the norm; ALL adds NCHWc layout nodes)."""
    from onnx import TensorProto, helper, numpy_helper

    from tests import ort_fixtures as fx

    rng = np.random.default_rng(0)

    def init(name: str, a: np.ndarray) -> Any:
        return numpy_helper.from_array(a.astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["bn"], name="bn"),
        helper.make_node("Relu", ["bn"], ["y"], name="relu"),
    ]
    inits = [init("w", rng.standard_normal((16, 8, 3, 3))), init("s", np.ones(16)),
             init("b", np.zeros(16)), init("m", np.zeros(16)), init("v", np.ones(16))]  # fmt: skip
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, c, 32, 32])
          for n, c in (("x", 8), ("y", 16))]  # fmt: skip
    graph = helper.make_graph(nodes, "conv", io[:1], io[1:], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return fx.save(model, path)


def test_conv_levels_kinds_and_guard(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    from tests import ort_fixtures as fx

    src = _conv_bn_relu(tmp_path / "conv.onnx")
    feeds = {"x": np.random.default_rng(1).standard_normal((1, 8, 32, 32)).astype(np.float32)}
    traces = {}
    for level in ("disable", "basic", "all"):
        prof = tmp_path / f"{level}.json"
        fx.optimize(src, level, tmp_path / f"{level}.onnx", feeds=feeds, profile=prof, runs=3)
        traces[level] = traceviz.load(prof, cache=False)
    for trace in traces.values():
        ops = trace.kernels[Kernels.op_name].astype(str)
        kinds = trace_kinds(trace).astype(str)
        assert (kinds[ops == "Conv"] == "conv").all() and (kinds == "conv").any()
        assert not (kinds == "other").any(), sorted(set(ops[kinds == "other"]))
    assert "BatchNormalization" not in set(traces["basic"].kernels[Kernels.op_name].astype(str))
    for level in ("basic", "all"):
        assert comparability(traces["disable"], traces[level]).comparable, level


# --- 5. Run.problems ---------------------------------------------------------------------------


def _run_dir(
    tmp_path: Path, levels_json: list[dict[str, Any]], export_error: str | None = None
) -> Path:
    dest = tmp_path / "run"
    shutil.copytree(SAMPLES / "mlp", dest)
    info = json.loads((dest / "run.json").read_text())
    info["backends"] = {"onnxruntime": {
        "export": {"exporter": None if export_error else "dynamo", "opset": 18, "seconds": 1.0,
                   "path": None if export_error else "onnx/model.onnx", "error": export_error},
        "ort_version": "1.32.0", "providers": ["CPUExecutionProvider"], "threads": 1,
        "levels": levels_json,
    }}  # fmt: skip
    (dest / "run.json").write_text(json.dumps(info))
    return dest


def _level(name: str, **kw: Any) -> dict[str, Any]:
    return {"name": name, "graph": f"onnx/ort_{name}.onnx", "profile": None, "nodes": 3,
            "session_seconds": 0.1, "check": None, "error": None} | kw  # fmt: skip


def test_run_problems_list_failed_ort_levels(tmp_path: Path) -> None:
    ok = {"passed": True, "max_abs_diff": 1e-7, "atol": 1e-5, "rtol": 1e-3}
    bad = {"passed": False, "max_abs_diff": 0.25, "max_rel_diff": 0.5, "atol": 1e-5, "rtol": 1e-3,
           "culprit": {"node": "fused_gelu", "op_type": "com.microsoft:FastGelu",
                       "error": "output 0 differs by 0.25"}}  # fmt: skip
    ref_bad = ok | {"reference": {"passed": False, "max_abs_diff": 0.125}}
    run = load_run(_run_dir(tmp_path, [
        _level("disable", check=ok), _level("basic", check=bad),
        _level("extended", error="InvalidGraph: node fused_gelu has no input"),
        _level("all", check=ref_bad),
    ]))  # fmt: skip
    baseline = load_run(SAMPLES / "mlp").problems()
    problems = run.problems()[len(baseline) :]
    assert problems == [
        "ONNX Runtime level basic: outputs differ from eager: max abs diff 0.25 (rtol 0.001, "
        "atol 1e-05); culprit com.microsoft:FastGelu node fused_gelu: output 0 differs by 0.25",
        "ONNX Runtime level extended failed: InvalidGraph: node fused_gelu has no input",
        "ONNX Runtime level all: the reference evaluator (onnx.reference) disagrees with eager "
        "(max abs diff 0.125) although ORT's outputs match",
    ]


def test_run_problems_name_a_failed_export_and_none_for_a_clean_run(tmp_path: Path) -> None:
    failed = _run_dir(tmp_path / "a", [], export_error="UnsupportedOperatorError: aten::foo")
    assert "ONNX export failed: UnsupportedOperatorError: aten::foo" in load_run(failed).problems()
    ok = {"passed": True, "max_abs_diff": 1e-7, "atol": 1e-5, "rtol": 1e-3}
    clean = _run_dir(tmp_path / "b", [_level(n, check=ok) for n in ("disable", "all")])
    assert load_run(clean).problems() == load_run(SAMPLES / "mlp").problems()


# --- 6. a level slower than disable ------------------------------------------------------------


def _view_of(*rows: tuple[str, float, float, bool | None]) -> BackendsView:
    """A backends view of (backend, median µs, IQR µs, outputs passed) rows."""
    table = pd.DataFrame(
        [
            {**dict.fromkeys(BACKEND_DTYPES), "backend": b, "step_median_us": m,
             "step_iqr_us": q, "check_passed": ok, "error": "", "ratio_to_eager": m / rows[0][1]}
            for b, m, q, ok in rows
        ]
    )  # fmt: skip
    empty = pd.DataFrame()
    return BackendsView(rows=conform(table, BACKEND_DTYPES), op_counts=empty, fusion=empty,
                        folded=empty)  # fmt: skip


def _slower(view: Any) -> list[Finding]:
    return [f for f in backend_findings(view) if f.id == ORT_SLOWER_ID]


def test_a_level_slower_than_disable_is_a_finding_unless_within_the_spread() -> None:
    view = _view_of(
        ("eager", 100.0, 10.0, None),
        ("compile", 80.0, 10.0, True),
        ("onnxruntime:disable", 50.0, 4.0, True),
        ("onnxruntime:all", 70.0, 4.0, True),  # 1.4x disable, 20 µs apart, spreads 4
        ("onnxruntime:basic", 52.0, 4.0, True),  # 4% slower: within the tolerance
        ("onnxruntime:extended", 90.0, 4.0, False),  # wrong outputs: outputs-differ's
    )
    (finding,) = _slower(view)
    assert "level all is 1.40× slower than level disable" in finding.title
    assert finding.severity.value == "warning"
    assert finding.est_gain_us == pytest.approx(20.0)
    spread = _view_of(
        ("eager", 100.0, 10.0, None),
        ("onnxruntime:disable", 50.0, 30.0, True),
        ("onnxruntime:all", 60.0, 30.0, True),  # 10 µs apart, spreads 30 and 30
    )
    assert _slower(spread) == []


@pytest.mark.skipif(not (SAMPLES / "gpt2-ort" / "run.json").exists(), reason="no gpt2-ort run")
def test_the_gpt2_sample_run_has_no_slower_level_until_one_is_made_slower() -> None:
    pytest.importorskip("onnx")
    from traceviz.pipeline import compare_run

    report = compare_run(SAMPLES / "gpt2-ort")
    view = report.backends
    assert view is not None and "disable" in view.levels
    assert _slower(view) == []
    assert ORT_SLOWER_ID not in {f.id for f in report.findings}
    rows = view.rows.copy()
    at = rows[BackendRow.backend] == ORT_PREFIX + "layout"
    base = rows.loc[rows[BackendRow.backend] == ORT_PREFIX + "disable", BackendRow.step_median_us]
    rows.loc[at, BackendRow.step_median_us] = 1.3 * float(base.iloc[0])
    (finding,) = _slower(dataclasses.replace(view, rows=rows))
    assert "level layout is 1.30× slower" in finding.title
