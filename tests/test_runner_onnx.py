"""``traceviz run MODEL --backends eager,compile,onnxruntime`` end to end on CPU.

GIVEN the built-in ``mlp`` WHEN run through the CLI with the ONNX Runtime backend THEN the run
directory holds the exported graph, one optimized graph and one ORT profile per level, run.json
records the export, every level (nodes, checks) and round-robin latency rows for every backend,
and each ORT profile holds exactly the profiled steps; option errors and a failing exporter
are reported, not raised as tracebacks.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")

from traceviz import cli  # noqa: E402
from traceviz.errors import UsageError  # noqa: E402
from traceviz.runner import Run, load_run, profile_model  # noqa: E402
from traceviz.runner.onnx import export, sessions  # noqa: E402
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
    import onnx

    from traceviz.runner.onnx import check, isolate

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
