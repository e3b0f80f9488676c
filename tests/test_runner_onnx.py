"""``traceviz run MODEL --backends eager,compile,onnxruntime`` end to end on CPU.

GIVEN the built-in ``mlp`` WHEN run through the CLI with the ONNX Runtime backend THEN the run
directory holds the exported graph, one optimized graph and one ORT profile per level, run.json
records the export, every level (nodes, checks) and round-robin latency rows for every backend,
and each ORT profile holds exactly the profiled steps; option errors and a failing exporter
are reported, not raised as tracebacks.

Output checks and culprit isolation, on tiny onnx.helper graphs: GIVEN an "exported" graph
(MatMul → Add → Relu) and an "optimized" one where a fused node replaces part of it WHEN the
fused node is right THEN no culprit is found; WHEN a fused node's attribute or weight is
deliberately broken THEN isolation names that node and says what differs; the level check
(eager vs ORT outputs) and the ORT profile trimming are checked too.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from traceviz import cli  # noqa: E402
from traceviz.errors import UsageError  # noqa: E402
from traceviz.runner import Run, load_run, profile_model  # noqa: E402
from traceviz.runner.onnx import check, export, isolate, sessions  # noqa: E402
from traceviz.runs.runinfo_backends import EXPORTED_GRAPH  # noqa: E402

STEPS, WARMUP, ITERS = 2, 1, 3
ARGS = ["--device", "cpu", "--steps", str(STEPS), "--warmup", str(WARMUP), "--iters", str(ITERS)]


@pytest.fixture(scope="module")
def mlp_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    out = tmp_path_factory.mktemp("runs") / "mlp-ort"
    argv = ["run", "mlp", *ARGS, "--backends", "eager,compile,onnxruntime", "--out", str(out)]
    assert cli.main(argv) == 0
    return load_run(out)


def _events(path: Path) -> list[dict]:
    events = json.loads(path.read_text())
    assert isinstance(events, list)
    return events


@pytest.mark.slow
def test_every_level_has_its_graph_profile_and_check(mlp_run: Run) -> None:
    info = mlp_run.info
    assert info.options.backends == ["eager", "compile", "onnxruntime"]
    ort_info = info.backends.onnxruntime
    assert ort_info is not None
    assert ort_info.export.exporter == "dynamo" and ort_info.export.opset == 18
    assert ort_info.export.path == EXPORTED_GRAPH and ort_info.export.seconds
    assert ort_info.export.inputs == ["x"] and ort_info.export.error is None
    assert (mlp_run.directory / EXPORTED_GRAPH).is_file()
    assert ort_info.ort_version == ort.__version__
    assert ort_info.threads == torch.get_num_threads() and ort_info.providers
    assert [lv.name for lv in ort_info.levels] == sessions.levels()
    assert {"disable", "basic", "extended", "all"} <= {lv.name for lv in ort_info.levels}
    for level in ort_info.levels:
        assert level.error is None, level.error
        assert level.graph == f"onnx/ort_{level.name}.onnx"
        assert level.profile == f"onnx/ort_{level.name}.profile.json"
        assert (mlp_run.directory / level.graph).is_file()
        assert level.nodes == sessions.node_count(mlp_run.directory / level.graph)
        assert level.session_seconds is not None and level.session_seconds > 0
        c = level.check
        assert c is not None and c.passed is True and c.culprit is None
        assert c.max_abs_diff is not None and c.max_abs_diff <= c.atol + c.rtol * 10  # type: ignore[operator]
        assert c.reference is not None and c.reference.passed is True


@pytest.mark.slow
def test_profiles_hold_the_profiled_steps_and_add_up(mlp_run: Run) -> None:
    ort_info = mlp_run.info.backends.onnxruntime
    assert ort_info is not None
    for level in ort_info.levels:
        assert level.profile is not None
        events = _events(mlp_run.directory / level.profile)
        runs = [e for e in events if e.get("name") == "model_run"]
        assert len(runs) == STEPS
        nodes = [e for e in events if e.get("cat") == "Node"]
        assert nodes and len(nodes) % STEPS == 0
        for run in runs:  # node time credited to a step never exceeds the step (sequential)
            inside = [n for n in nodes if run["ts"] <= n["ts"] <= run["ts"] + run["dur"]]
            assert inside and sum(n["dur"] for n in inside) <= run["dur"]
        assert len(nodes) == sum(  # every node event belongs to a kept step
            run["ts"] <= n["ts"] <= run["ts"] + run["dur"] for n in nodes for run in runs
        )


@pytest.mark.slow
def test_ort_profiles_load_with_traceviz(mlp_run: Run) -> None:
    if importlib.util.find_spec("traceviz.parse.ort_profile") is None:
        pytest.skip("the ORT profile reader (traceviz.parse.ort_profile) is not in this tree")
    import traceviz

    ort_info = mlp_run.info.backends.onnxruntime
    assert ort_info is not None and ort_info.levels[-1].profile is not None
    path = mlp_run.directory / ort_info.levels[-1].profile
    trace = traceviz.load(path)
    nodes = [e for e in _events(path) if e.get("cat") == "Node"]
    assert len(trace.kernels) == len(nodes)


@pytest.mark.slow
def test_latency_rows_cover_every_backend(mlp_run: Run) -> None:
    latency = mlp_run.info.latency
    ort_info = mlp_run.info.backends.onnxruntime
    assert latency is not None and ort_info is not None
    assert latency.method == "round-robin" and latency.threads == ort_info.threads
    names = [r.backend for r in latency.rows]
    assert names == ["eager", "compile"] + [f"onnxruntime:{lv.name}" for lv in ort_info.levels]
    eager = latency.rows[0].median_us
    for row in latency.rows:
        assert len(row.samples_us) == ITERS and all(s > 0 for s in row.samples_us)
        assert row.median_us == pytest.approx(float(np.median(row.samples_us)), rel=1e-3)
        q1, q3 = np.percentile(row.samples_us, [25, 75])
        assert row.iqr_us == pytest.approx(q3 - q1, rel=1e-3, abs=1e-3)
        assert row.ratio_to_eager == pytest.approx(row.median_us / eager)


@pytest.mark.slow
def test_a_rerun_without_onnxruntime_removes_the_onnx_files(mlp_run: Run, tmp_path: Path) -> None:
    """The default backends leave run.json's new sections empty and no onnx/ directory."""
    out = tmp_path / "plain"
    (out / "onnx").mkdir(parents=True)
    (out / "onnx" / "ort_all.onnx").write_bytes(b"stale")
    run = profile_model(
        "pointwise", device="cpu", steps=1, warmup=0, iters=1, batch_size=4, out=out
    )
    assert run.info.backends.onnxruntime is None and run.info.latency is None
    assert run.info.options.backends == ["eager", "compile"]
    assert not (out / "onnx").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--backends", "eager,onnx"], "--backends must be one of"),
        (["--backends", "eager,onnxruntime"], "must include eager and compile"),
        (["--backends", "eager,compile,onnxruntime", "--train"], "inference only"),
        (["--ort-offline", "transformers:gpt2"], "needs --backends"),
        (["--backends", "eager,compile,onnxruntime", "--ort-offline", "gpt2"], "transformers:"),
    ],
)
def test_bad_backend_options_are_one_line_usage_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert cli.main(["run", "pointwise", *argv, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "x").exists()  # refused before anything ran


class _TwoInputs(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.relu(a) * b + 1.0


def test_export_falls_back_to_the_legacy_exporter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the dynamo exporter fails, the legacy one writes the graph and the reason stays."""
    real = torch.onnx.export

    def failing_dynamo(*args: object, **kwargs: object) -> object:
        if kwargs.get("dynamo"):
            raise RuntimeError("dynamo exporter broke\nsecond line")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(torch.onnx, "export", failing_dynamo)
    a, b = torch.randn(3, 4), torch.randn(3, 4)
    done = export.export_model(_TwoInputs(), (a, b), {}, tmp_path)
    info = done.info
    assert info.exporter == "legacy" and info.error is None
    assert info.fallback_reason == "RuntimeError: dynamo exporter broke"
    assert info.inputs == ["a", "b"] and info.opset == 18 and done.path is not None
    session = ort.InferenceSession(str(done.path), providers=["CPUExecutionProvider"])
    (got,) = session.run(None, done.feeds)
    np.testing.assert_allclose(got, (torch.relu(a) * b + 1.0).numpy(), rtol=1e-6)


def test_export_failure_of_both_exporters_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(*args: object, **kwargs: object) -> object:
        raise ValueError("dynamo" if kwargs.get("dynamo") else "legacy")

    monkeypatch.setattr(torch.onnx, "export", failing)
    done = export.export_model(_TwoInputs(), (torch.ones(2), torch.ones(2)), {}, tmp_path)
    assert done.path is None and done.info.exporter is None
    assert (done.info.fallback_reason, done.info.error) == (
        "ValueError: dynamo",
        "ValueError: legacy",
    )


@pytest.fixture(scope="module")
def gpt2_export(tmp_path_factory: pytest.TempPathFactory) -> tuple[export.Exported, np.ndarray]:
    """The built-in gpt2 exported (no compile): the export and eager's logits."""
    if importlib.util.find_spec("transformers") is None:
        pytest.skip("needs transformers (traceviz[gpt2])")
    from traceviz.runner.zoo import gpt2

    model, (ids,) = gpt2(batch_size=1)
    model.eval()
    done = export.export_model(model, (ids,), {}, tmp_path_factory.mktemp("gpt2"))
    with torch.no_grad():
        return done, model(ids).numpy()


def test_gpt2_exports_with_an_explicit_attention_mask(
    gpt2_export: tuple[export.Exported, np.ndarray],
) -> None:
    done, expected = gpt2_export
    assert done.info.exporter == "dynamo" and done.info.attention_mask is True
    assert done.info.inputs == ["input_ids", "attention_mask"]
    ids = done.feeds["input_ids"]
    assert np.array_equal(done.feeds["attention_mask"], np.ones_like(ids))
    assert done.path is not None
    assert (done.path.parent / "model.onnx.data").is_file()  # weights beside the structure
    session = ort.InferenceSession(str(done.path), providers=["CPUExecutionProvider"])
    (logits,) = session.run(None, done.feeds)
    np.testing.assert_allclose(logits, expected, rtol=1e-3, atol=1e-4)


def test_isolation_names_a_broken_fused_node_of_real_gpt2(
    gpt2_export: tuple[export.Exported, np.ndarray], tmp_path: Path
) -> None:
    """ORT (extended) fuses gpt2; the fused graph passes. With the SkipLayerNormalization's
    epsilon set to 1.0 the level check fails and isolation names exactly that node."""
    done, expected = gpt2_export
    assert done.path is not None
    graph = tmp_path / "ort_extended.onnx"
    session, _ = sessions.timed_session(done.path, "extended", 1, ["CPUExecutionProvider"], graph)
    eager = [torch.from_numpy(expected)]
    assert check.level_check(eager, session.run(None, done.feeds)).passed is True
    exported, fused = onnx.load(str(done.path)), onnx.load(str(graph))
    assert isolate.find_culprit(exported, fused, done.feeds) is None
    skip = [n for n in fused.graph.node if n.op_type == "SkipLayerNormalization"]
    assert skip, "ORT no longer fuses SkipLayerNormalization in gpt2"
    for attribute in skip[0].attribute:
        if attribute.name == "epsilon":
            attribute.f = 1.0
    broken = ort.InferenceSession(fused.SerializeToString(), providers=["CPUExecutionProvider"])
    assert check.level_check(eager, broken.run(None, done.feeds)).passed is False
    culprit = isolate.find_culprit(exported, fused, done.feeds)
    assert culprit is not None
    assert (culprit.node, culprit.op_type) == (skip[0].name, "com.microsoft:SkipLayerNormalization")
    assert culprit.error.startswith(f"output {skip[0].output[0]}: max abs diff")


def test_non_hf_models_get_no_mask() -> None:
    fn, args, kwargs, masked = export.with_attention_mask(_TwoInputs(), (torch.ones(1),), {})
    assert not masked and isinstance(fn, _TwoInputs) and len(args) == 1 and kwargs == {}


def test_usage_error_names_the_extra_when_onnxruntime_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime → ImportError
    with pytest.raises(UsageError, match=r"needs onnxruntime .*pip install 'traceviz\[onnx\]'"):
        profile_model("pointwise", device="cpu", backends="eager,compile,onnxruntime")


def test_plain_runs_and_run_help_import_no_onnx_package() -> None:
    """`traceviz run --help`, the runner and its options load none of traceviz[onnx]."""
    from tests.light_import_fixtures import assert_imports_none

    code = (
        "import contextlib, io\n"
        "from traceviz.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    try:\n"
        "        main(['run', '--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "assert '--backends' in out.getvalue() and '--ort-offline' in out.getvalue()\n"
        "import traceviz.runner.profile, traceviz.runs.runinfo_backends\n"
    )
    assert_imports_none(code, ("onnx", "onnxruntime", "onnxscript"))


def test_bfloat16_inputs_are_an_export_error_not_a_crash(tmp_path: Path) -> None:
    a = torch.ones(2, 3, dtype=torch.bfloat16)
    done = export.export_model(_TwoInputs(), (a, a), {}, tmp_path)
    assert done.path is None and done.info.exporter is None and done.info.fallback_reason is None
    assert done.info.error is not None and "cannot be fed to ONNX Runtime" in done.info.error
    assert not (tmp_path / "onnx" / "model.onnx").exists()


# --- output checks and culprit isolation on tiny graphs ------------------------------------

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
    from traceviz.runs.runinfo_backends import ExportInfo

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
