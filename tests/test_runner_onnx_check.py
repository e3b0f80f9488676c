"""Output checks and culprit isolation of ONNX Runtime levels, on tiny onnx.helper graphs.

GIVEN an "exported" graph (MatMul → Add → Relu) and an "optimized" one where a fused node
replaces part of it WHEN the fused node is right THEN no culprit is found; WHEN a fused node's
attribute or weight is deliberately broken THEN isolation names that node and says what
differs; the level check (eager vs ORT outputs) and the ORT profile trimming are checked too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from traceviz.runner.onnx import check, isolate, sessions  # noqa: E402

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 8)).astype(np.float32)
W = RNG.standard_normal((8, 6)).astype(np.float32)
B = RNG.standard_normal(6).astype(np.float32)


def _model(nodes: list, initializers: dict[str, np.ndarray], opsets: dict[str, int]) -> object:
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 6])],
        initializer=[numpy_helper.from_array(v, name=k) for k, v in initializers.items()],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets.items()]
    )
    model.ir_version = 9
    return model


def exported() -> object:
    """x @ w + b, then relu: three nodes, as an exporter writes them."""
    return _model(
        [
            helper.make_node("MatMul", ["x", "w"], ["mm"], name="mm_node"),
            helper.make_node("Add", ["mm", "b"], ["lin"], name="add_node"),
            helper.make_node("Relu", ["lin"], ["y"], name="relu_node"),
        ],
        {"w": W, "b": B},
        {"": 18},
    )


def fused(*, alpha: float = 1.0, bias: np.ndarray = B) -> object:
    """The same as ORT would fuse it: Gemm (MatMul + Add) then Relu; ``alpha``/``bias``
    break it on purpose."""
    return _model(
        [
            helper.make_node("Gemm", ["x", "w", "b"], ["lin"], name="fused_gemm", alpha=alpha),
            helper.make_node("Relu", ["lin"], ["y"], name="relu_node"),
        ],
        {"w": W, "b": bias},
        {"": 18},
    )


def expected() -> np.ndarray:
    return np.maximum(X @ W + B, 0.0)


def test_intermediate_values_are_every_node_output() -> None:
    values = isolate.intermediate_values(exported(), {"x": X})
    assert set(values) == {"mm", "lin", "y"}
    np.testing.assert_allclose(values["lin"], X @ W + B, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(values["y"], expected(), rtol=1e-5, atol=1e-5)


def test_a_broken_attribute_or_weight_names_the_fused_node() -> None:
    assert isolate.find_culprit(exported(), fused(), {"x": X}) is None  # a correct graph
    culprit = isolate.find_culprit(exported(), fused(alpha=2.0), {"x": X})
    assert culprit is not None
    assert (culprit.node, culprit.op_type) == ("fused_gemm", "Gemm")
    assert culprit.error.startswith("output lin: max abs diff")
    worst = float(np.abs(2.0 * (X @ W) + B - (X @ W + B)).max())
    assert f"{worst:.3g}" in culprit.error
    culprit = isolate.find_culprit(exported(), fused(bias=B + 1.0), {"x": X})
    assert culprit is not None and culprit.node == "fused_gemm"
    assert "max abs diff 1 " in culprit.error  # every element off by exactly the bias shift


def test_a_node_that_raises_is_named_with_its_error() -> None:
    broken = fused()
    broken.graph.node[0].attribute.append(helper.make_attribute("transB", 1))  # 8x6 as 6x8
    culprit = isolate.find_culprit(exported(), broken, {"x": X})
    assert culprit is not None and culprit.node == "fused_gemm"
    assert culprit.error.startswith("Fail: ") and "fused_gemm" in culprit.error


def test_a_contrib_op_is_named_with_its_domain() -> None:
    """A com.microsoft FusedMatMul with a wrong alpha: the domain rides in op_type."""
    model = _model(
        [
            helper.make_node(
                "FusedMatMul", ["x", "w"], ["mm"], name="fmm", domain="com.microsoft", alpha=3.0
            ),
            helper.make_node("Add", ["mm", "b"], ["lin"], name="add_node"),
            helper.make_node("Relu", ["lin"], ["y"], name="relu_node"),
        ],
        {"w": W, "b": B},
        {"": 18, "com.microsoft": 1},
    )
    culprit = isolate.find_culprit(exported(), model, {"x": X})
    assert culprit is not None
    assert (culprit.node, culprit.op_type) == ("fmm", "com.microsoft:FusedMatMul")


def test_level_check_uses_the_dtype_tolerances() -> None:
    eager = [torch.from_numpy(expected())]
    good = check.level_check(eager, [expected() + 1e-6])
    assert good.passed is True and good.max_abs_diff is not None
    assert good.max_abs_diff == pytest.approx(1e-6, rel=0.1)
    assert (good.rtol, good.atol) == (1e-3, 1e-4)  # float32's
    bad = check.level_check(eager, [expected() + 0.5])
    assert bad.passed is False and bad.max_abs_diff == pytest.approx(0.5, rel=1e-6)
    assert check.level_check(eager, []).passed is False  # an output missing


def test_reference_check_of_a_good_and_a_broken_graph(tmp_path: Path) -> None:
    eager = [torch.from_numpy(expected())]
    good, bad = tmp_path / "good.onnx", tmp_path / "bad.onnx"
    onnx.save(fused(), good)
    onnx.save(fused(alpha=2.0), bad)
    ok = check.reference_check(good, {"x": X}, eager)
    assert ok.passed is True and ok.error is None
    broken = check.reference_check(bad, {"x": X}, eager)
    assert broken.passed is False and broken.max_abs_diff is not None and broken.max_abs_diff > 0.1


def test_reference_check_records_an_unknown_op_as_its_error(tmp_path: Path) -> None:
    model = _model(
        [helper.make_node("NoSuchOp", ["x"], ["y"], name="mystery", domain="example.custom")],
        {},
        {"": 18, "example.custom": 1},
    )
    path = tmp_path / "unknown.onnx"
    onnx.save(model, path)
    found = check.reference_check(path, {"x": X}, [torch.from_numpy(expected())])
    assert found.passed is None and found.error and "NoSuchOp" in found.error


def test_drop_runs_keeps_the_profiled_steps_only() -> None:
    def ev(name: str, cat: str, ts: int, dur: int) -> dict:
        return {"cat": cat, "name": name, "ts": ts, "dur": dur, "ph": "X", "pid": 1, "tid": 1}

    events = [
        ev("model_loading_uri", "Session", 0, 5),
        ev("session_initialization", "Session", 6, 9),
    ]
    for i, start in enumerate((100, 200, 300)):
        events += [
            ev("model_run", "Session", start, 50),
            ev(f"n{i}_kernel_time", "Node", start + 10, 5),
        ]
    kept = sessions.drop_runs(events, 1)
    names = [e["name"] for e in kept]
    assert names[:2] == ["model_loading_uri", "session_initialization"]
    assert names.count("model_run") == 2 and "n0_kernel_time" not in names
    assert {"n1_kernel_time", "n2_kernel_time"} <= set(names)
    assert json.loads(sessions._dump(kept)) == kept
    assert json.loads(sessions._closed('[\n{"a":1},\n{"b":2},\n')) == [{"a": 1}, {"b": 2}]


def test_round_robin_alternates_backends_and_keeps_every_sample() -> None:
    from traceviz.runner.onnx.latency import round_robin
    from traceviz.runner.progress import Silent

    order: list[str] = []
    calls = {name: (lambda n=name: order.append(n)) for name in ("eager", "compile", "ort")}
    timed = round_robin(calls, rounds=4, warmup=1, threads=3, sync=lambda: None, reporter=Silent())
    assert order == ["eager", "compile", "ort"] * 5  # one warm-up round, then four timed
    assert (timed.method, timed.threads) == ("round-robin", 3)
    assert [r.backend for r in timed.rows] == ["eager", "compile", "ort"]
    eager = timed.rows[0]
    for row in timed.rows:
        assert len(row.samples_us) == 4 and row.median_us == pytest.approx(
            float(np.median(row.samples_us)), rel=1e-3
        )
        assert row.ratio_to_eager == pytest.approx(row.median_us / eager.median_us)


def _job(steps: int = 2, warmup: int = 1) -> object:
    from traceviz.runner.onnx.backend import OrtJob

    return OrtJob(
        fn=None, args=(), kwargs={}, eager_outputs=torch.from_numpy(expected()), calls={},
        sync=lambda: None, device_type="cpu", warmup=warmup, steps=steps, iters=1,
    )  # fmt: skip


def _exported(tmp_path: Path, model: object) -> object:
    from traceviz.runner.onnx.export import Exported
    from traceviz.runs.runinfo_backends import EXPORTED_GRAPH, ExportInfo

    path = tmp_path / EXPORTED_GRAPH
    path.parent.mkdir(parents=True)
    onnx.save(model, path)
    return Exported(info=ExportInfo(exporter="dynamo"), path=path, feeds={"x": X})


def _level(tmp_path: Path, name: str, *, eager_shift: float = 0.0) -> Any:
    """Level ``name`` as the backend runs it on :func:`exported`'s graph (CPU, one thread, two
    profiled steps), checked against eager outputs ``expected() + eager_shift``."""
    from traceviz.runner.onnx.backend import _run_level

    done = _exported(tmp_path, exported())
    eager = [torch.from_numpy(expected() + eager_shift)]
    cpu = ["CPUExecutionProvider"]
    return _run_level(name, done, _job(), eager, 1, cpu, tmp_path / "onnx")  # type: ignore[arg-type]


def test_a_level_row_has_its_graph_check_and_steps_only_profile(tmp_path: Path) -> None:
    level = _level(tmp_path, "all")
    row = level.row
    assert row.error is None and level.session is not None
    assert (row.graph, row.profile) == ("onnx/ort_all.onnx", "onnx/ort_all.profile.json")
    assert row.nodes == len(onnx.load(str(tmp_path / row.graph)).graph.node)
    assert row.check is not None and row.check.passed is True and row.check.culprit is None
    assert row.check.reference is not None and row.check.reference.passed is True
    events = json.loads((tmp_path / row.profile).read_text())
    assert sum(e.get("name") == "model_run" for e in events) == 2


def test_a_failing_level_gets_its_culprit_in_the_row(tmp_path: Path) -> None:
    """The "exported" graph itself wrong vs eager at level disable: the check fails; the
    culprit search compares the graph with itself and finds nothing to blame."""
    check_ = _level(tmp_path, "disable", eager_shift=1.0).row.check
    assert (
        check_ is not None and check_.passed is False and check_.max_abs_diff == pytest.approx(1.0)
    )
    assert check_.culprit is None  # every node agrees with the exported graph


def test_an_unknown_offline_model_type_is_an_error_row(tmp_path: Path) -> None:
    level = _level(tmp_path, "transformers-nosuch")
    assert level.session is None and level.row.graph is None and level.row.check is None
    assert level.row.error is not None and "unknown model type 'nosuch'" in level.row.error


def test_a_broken_offline_graph_fails_its_check_and_names_the_culprit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An offline optimizer that writes a wrong fusion (Gemm with alpha 2): the level's row
    says FAIL, the reference evaluator agrees, and the culprit is the fused node."""

    def broken_optimizer(model_type: str, model: Path, dest: Path) -> None:
        onnx.save(fused(alpha=2.0), dest)

    monkeypatch.setattr(sessions, "offline_optimize", broken_optimizer)
    row = _level(tmp_path, "transformers-fake").row
    assert row.error is None and row.nodes == 2 and row.check is not None
    assert row.check.passed is False
    assert row.check.reference is not None and row.check.reference.passed is False
    assert row.check.culprit is not None
    assert (row.check.culprit.node, row.check.culprit.op_type) == ("fused_gemm", "Gemm")
