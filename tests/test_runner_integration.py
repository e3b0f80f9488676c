"""The runner end to end on CPU: real models, real torch.compile, real traces.

GIVEN built-in models WHEN ``profile_model`` / ``traceviz run`` / ``traceviz demo`` run them
eagerly and compiled THEN the run directory holds both traces and a sane run.json; fusion and
graph breaks show in the traces; failures are recorded, not raised.

The measured eager trace carries nothing of traceviz's; the source lines have their own trace:
GIVEN a tiny model defined in this file WHEN ``profile_model`` runs it THEN
``eager.pt.trace.json.gz`` has no ``traceviz line`` marks (like the compiled trace),
``eager_lines.pt.trace.json.gz`` has them, run.json names it, every measured eager kernel gets
the line of its twin there, and the report's by-line table is the one the old single-trace
path gives on the lines trace.

Compiling tests are marked ``slow`` but run in the normal test command. Shapes, steps and
timed iterations are tiny to keep them to about a minute on two cores.
"""

from __future__ import annotations

import gzip
import inspect
import json
import textwrap
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

torch = pytest.importorskip("torch")

import traceviz  # noqa: E402
from tests.conftest import read_json  # noqa: E402
from traceviz import cli  # noqa: E402
from traceviz.analysis.fusion.line_transfer import transfer_lines  # noqa: E402
from traceviz.errors import UsageError  # noqa: E402
from traceviz.parse import load_trace  # noqa: E402
from traceviz.parse.compile_log import LINE_MARK_PREFIX  # noqa: E402
from traceviz.pipeline import compare, compare_run  # noqa: E402
from traceviz.rundir import read_run_dir  # noqa: E402
from traceviz.runner import SCHEMA_VERSION, Run, load_run, profile_model  # noqa: E402
from traceviz.runs.runinfo import (  # noqa: E402
    COMPILED_TRACE,
    EAGER_LINES_TRACE,
    EAGER_TRACE,
    RUN_JSON,
)
from traceviz.schema import KernelLines as KL  # noqa: E402
from traceviz.schema import Kernels, RegionKind, Regions, Steps  # noqa: E402
from traceviz.schema import Kernels as K  # noqa: E402
from traceviz.trace import Trace  # noqa: E402

FAST = {"device": "cpu", "steps": 2, "warmup": 1, "iters": 3}
FAST_ARGS = ["--device", "cpu", "--steps", "2", "--warmup", "1", "--iters", "3"]


@pytest.fixture(scope="module")
def pointwise_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """``pointwise`` through the Python API."""
    return profile_model("pointwise", out=tmp_path_factory.mktemp("runs") / "pointwise", **FAST)


@pytest.fixture(scope="module")
def graph_break_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """``graph-break`` through the command line."""
    out = tmp_path_factory.mktemp("runs") / "graph-break"
    assert cli.main(["run", "graph-break", *FAST_ARGS, "--out", str(out)]) == 0
    return load_run(out)


@pytest.fixture(params=["pointwise_run", "graph_break_run"])
def any_run(request: pytest.FixtureRequest) -> Run:
    return request.getfixturevalue(request.param)  # type: ignore[no-any-return]


def event_names(path: Path) -> Counter[str]:
    """Complete-event names of a trace, counted the plain way."""
    return Counter(e["name"] for e in read_json(path)["traceEvents"] if e.get("ph") == "X")


# ---------------------------------------------------------------- run.json


@pytest.mark.slow
def test_run_directory_and_json_fields_are_sane(any_run: Run) -> None:
    info, directory = any_run.info, any_run.directory
    assert {p.name for p in directory.iterdir()} >= {EAGER_TRACE, COMPILED_TRACE, RUN_JSON}
    assert load_run(directory).info == info  # what is on disk is what was returned
    assert info.schema_version == SCHEMA_VERSION and info.created_utc.endswith("+00:00")
    assert info.model.inputs and info.model.outputs
    assert all(s.dtype == "float32" and s.device == "cpu" for s in info.model.inputs)
    assert (info.options.device, info.options.steps, info.options.iters) == ("cpu", 2, 3)
    env = info.environment
    assert env.torch == str(torch.__version__) and env.python.count(".") == 2
    assert env.device == "cpu" and env.device_name and env.cpu_threads >= 1


@pytest.mark.slow
def test_the_run_directory_stores_no_absolute_path(any_run: Run) -> None:
    """No folder of the machine that ran it (the checkout holding the built-in models, the
    temporary folder of Inductor's cache, the Python installation, the home folder) appears
    in any file of the run directory: each is written relative to the run directory."""
    import sys
    import tempfile

    from tests.conftest import REPO

    roots = {str(REPO), tempfile.gettempdir(), sys.prefix, str(Path.home())}
    for path in any_run.directory.iterdir():
        raw = path.read_bytes()
        text = (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode(errors="replace")
        for root in roots:
            assert f'"{root}/' not in text and f" {root}/" not in text, (path.name, root)


@pytest.mark.slow
def test_compile_timing_and_correctness_are_measured(any_run: Run) -> None:
    info = any_run.info
    assert info.compile.ok and info.compile.error is None
    assert info.compile.time_s is not None and info.compile.time_s > 0
    assert info.compile.inductor_config["cpp.enable_kernel_profile"] is True
    timing = info.timing
    assert timing.compiled is not None
    for stats in (timing.eager, timing.compiled):
        assert stats.iters == 3 and len(stats.samples_us) == 3
        assert 0 < stats.min_us <= stats.q1_us <= stats.median_us <= stats.q3_us <= stats.max_us
    assert timing.speedup == pytest.approx(timing.eager.median_us / timing.compiled.median_us)
    c = info.correctness
    assert c.checked and c.passed and c.outputs_compared == 1 and c.mismatched == []
    assert c.max_abs_error is not None and c.atol is not None and c.max_abs_error <= c.atol
    assert info.memory.eager.profiled_peak_bytes and info.memory.compiled
    assert info.memory.compiled.profiled_peak_bytes is not None


@pytest.mark.slow
def test_traces_hold_the_profiled_steps_only(any_run: Run) -> None:
    profiler = any_run.info.profiler
    assert profiler.record_shapes and profiler.profile_memory and profiler.cpp_kernel_profile
    for path in (any_run.eager_trace, any_run.compiled_trace):
        assert path is not None
        names = event_names(path)
        steps = [n for n in names if n.startswith("ProfilerStep#")]
        assert len(steps) == profiler.active == 2
        # compilation happened before profiling: no compile-time spans in the trace
        assert not any("compile_fx" in n or "Inductor" in n for n in names)


# ---------------------------------------------------------------- fusion and graph breaks


@pytest.mark.slow
def test_pointwise_compiles_into_fewer_kernels(pointwise_run: Run) -> None:
    eager, compiled = pointwise_run.load_eager(), pointwise_run.load_compiled()
    assert 0 < len(compiled.kernels) < len(eager.kernels)
    fused = [n for n in compiled.kernels[Kernels.name].astype(str) if "cpp_fused" in n]
    assert len(fused) == 2  # one fused kernel per profiled step
    assert len(eager.kernels) >= 2 * 6  # cos, relu, mul, add, sin, sigmoid per step
    # the same, counted the plain way over the JSON
    assert sum(n for name, n in event_names(pointwise_run.compiled_trace).items()  # type: ignore[arg-type]
               if "cpp_fused" in name) == 2  # fmt: skip
    assert pointwise_run.info.dynamo.graph_break_count == 0


@pytest.mark.slow
def test_graph_break_is_reported_with_a_reason_and_two_regions(graph_break_run: Run) -> None:
    dynamo = graph_break_run.info.dynamo
    assert dynamo.graph_break_count is not None and dynamo.graph_break_count >= 1
    assert dynamo.graphs is not None and dynamo.graphs >= 2
    first = dynamo.graph_breaks[0]
    assert first.reason and first.file and first.file.endswith("zoo.py") and first.line
    assert {c.compile_id for c in dynamo.compiles} >= {"0/0", "1/0"}
    assert dynamo.recompiles == 0
    regions = graph_break_run.load_compiled().regions
    compiled = regions[regions[Regions.kind] == RegionKind.COMPILED_REGION.value]
    assert compiled[Regions.frame_id].nunique() >= 2
    markers = {n for n in event_names(graph_break_run.compiled_trace)  # type: ignore[arg-type]
               if n.startswith("Torch-Compiled Region:")}  # fmt: skip
    assert len(markers) >= 2


@pytest.mark.slow
def test_global_settings_are_restored_after_a_run(pointwise_run: Run) -> None:
    import torch._inductor.config as inductor_config

    assert pointwise_run.ok
    assert inductor_config.cpp.enable_kernel_profile is False
    assert torch.is_grad_enabled()


# ---------------------------------------------------------------- failure paths (no Inductor)


def failing_backend(gm: torch.fx.GraphModule, example_inputs: list) -> None:
    raise RuntimeError("no kernels for you\nsecond line")


def off_by_one_backend(gm: torch.fx.GraphModule, example_inputs: list):  # type: ignore[no-untyped-def]
    def run(*args):  # type: ignore[no-untyped-def]
        return tuple(out + 1 for out in gm(*args))

    return run


def test_compile_failure_keeps_the_eager_trace_and_records_the_error(tmp_path: Path) -> None:
    run = profile_model("pointwise", backend=failing_backend, out=tmp_path, **FAST)
    assert not run.ok and not run.compile_ok
    error = run.info.compile.error
    assert error is not None and error.phase == "compile"
    assert error.type == "RuntimeError" and error.message == "no kernels for you"
    assert run.eager_trace is not None and run.eager_trace.is_file()
    assert run.compiled_trace is None and not (tmp_path / COMPILED_TRACE).exists()
    assert run.info.timing.compiled is None and run.info.correctness.checked is False
    on_disk = json.loads((tmp_path / RUN_JSON).read_text())
    assert on_disk["compile"]["error"]["message"] == "no kernels for you"
    assert on_disk["compile"]["backend"] == "failing_backend"


def test_output_mismatch_is_recorded(tmp_path: Path) -> None:
    run = profile_model("pointwise", backend=off_by_one_backend, out=tmp_path, **FAST)
    assert run.compile_ok and not run.ok
    c = run.info.correctness
    assert c.passed is False and c.mismatched == ["out"]
    assert c.max_abs_error == pytest.approx(1.0)
    assert "compiled outputs differ from eager" in run.problems()[0]


FAILING_FACTORY = """
    import torch
    import torch._dynamo

    if "traceviz_test_failing" not in torch._dynamo.list_backends(exclude_tags=()):

        @torch._dynamo.register_backend
        def traceviz_test_failing(gm, example_inputs):
            raise RuntimeError("backend refuses")

    def make():
        return torch.nn.ReLU(), (torch.randn(4, 4),)
"""


def test_cli_compile_failure_exits_1_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    factory = tmp_path / "failing.py"
    factory.write_text(textwrap.dedent(FAILING_FACTORY))
    out = tmp_path / "run"
    argv = ["run", f"{factory}:make", "--backend", "traceviz_test_failing", *FAST_ARGS]
    code = cli.main([*argv, "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 1
    assert "PROBLEM" in printed and "backend refuses" in printed
    assert (out / EAGER_TRACE).is_file() and not (out / COMPILED_TRACE).exists()
    assert load_run(out).info.compile.error is not None


def test_a_model_that_fails_eagerly_is_a_usage_error(tmp_path: Path) -> None:
    def broken(x: torch.Tensor) -> torch.Tensor:
        return x @ torch.ones(3, 3)  # wrong shape for x

    with pytest.raises(UsageError, match="the model fails in eager mode: RuntimeError"):
        profile_model(broken, (torch.ones(2, 2),), out=tmp_path, **FAST)


def test_training_step_with_a_fast_backend(tmp_path: Path) -> None:
    run = profile_model("mlp", backend="aot_eager", train=True, batch_size=4, out=tmp_path, **FAST)
    info = run.info
    assert run.ok and info.options.train and info.model.training
    assert info.model.inputs[0].shape == [4, 256]
    assert info.compile.inductor_config == {} and info.profiler.cpp_kernel_profile is True
    names = event_names(tmp_path / EAGER_TRACE)
    assert any("backward" in n.lower() or "Backward" in n for n in names)


def test_profile_model_accepts_a_module_and_profiles_both_in_turns(tmp_path: Path) -> None:
    """The profiled steps alternate in time (eager, compiled, eager, …), each trace numbered
    ProfilerStep#2.. as a session of its own; profiled one after the other (the old runner),
    every eager step came before every compiled one."""
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
    run = profile_model(model, {"input": torch.randn(2, 8)}, backend="eager", out=tmp_path, **FAST)
    assert run.ok and run.name == "Sequential"
    assert [s.path for s in run.info.model.inputs] == ["kwargs['input']"]
    assert run.info.model.parameters == 8 * 8 + 8
    eager, compiled = run.load_eager().steps, run.load_compiled().steps
    assert eager[Steps.step].tolist() == compiled[Steps.step].tolist() == [2, 3]
    starts = sorted(
        [(ts, "eager") for ts in eager[Steps.ts_us]]
        + [(ts, "compiled") for ts in compiled[Steps.ts_us]]
    )
    assert [side for _, side in starts] == ["eager", "compiled"] * 2
    assert not list(tmp_path.glob("interleaved*"))  # the session's trace is removed


# ---------------------------------------------------------------- demo


@pytest.mark.slow
def test_demo_runs_and_says_how_to_look_further(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "demo"
    assert cli.main(["demo", "--model", "pointwise", "--device", "cpu", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "speed verdict:" in printed and str(out) in printed
    assert "dashboard" in printed
    assert traceviz.load_run(out).ok


# ---------------------------------------------------------------- the source lines' own trace

HERE = str(Path(__file__).resolve())
LINES_PHASE = "eager: profiling source lines"


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.sin(x) * 2
        z = self.linear(y) + x
        return torch.tanh(z).sum(-1)


LINES = {
    first + i
    for source, first in [inspect.getsourcelines(Model.forward)]
    for i, text in enumerate(source)
    if any(call in text for call in ("torch.sin", "self.linear", "torch.tanh"))
}  # the lines of forward that call torch (computed, not written down)


class Phases:
    """A Reporter that records the phases it is told."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def phase(self, label: str, total: int | None = None) -> None:
        self.names.append(label)

    def advance(self, steps: int = 1) -> None:
        pass

    def done(self) -> None:
        pass


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, list[str]]:
    phases = Phases()
    run = profile_model(Model(), (torch.randn(8, 16),), out=tmp_path_factory.mktemp("r") / "m",
                        progress=phases, **FAST)  # fmt: skip
    return run, phases.names


def marks(trace: Trace) -> int:
    return int(trace.ops["name"].astype(str).str.startswith(LINE_MARK_PREFIX).sum())


@pytest.mark.slow
def test_the_measured_eager_trace_has_no_marks(made: tuple[Run, list[str]]) -> None:
    run, phases = made
    assert run.info.traces.eager_lines == EAGER_LINES_TRACE
    assert run.info.profiler.eager_line_marks and not run.info.profiler.eager_with_stack
    assert run.eager_lines_trace == run.directory / EAGER_LINES_TRACE
    assert load_run(run.directory).eager_lines_trace == run.eager_lines_trace
    assert read_run_dir(run.directory).eager_lines == run.eager_lines_trace
    eager, compiled = run.load_eager(), run.load_compiled()
    lines = load_trace(run.directory / EAGER_LINES_TRACE)
    assert marks(eager) == 0 and marks(compiled) == 0
    assert marks(lines) > 0
    assert (eager.ops["category"] == "python_function").sum() == 0
    assert len(eager.steps) == len(lines.steps) == FAST["steps"]
    # the extra pass is a progress line of its own, after eager's timing (the measured
    # traces are profiled later, eager and compiled interleaved)
    assert phases.index(LINES_PHASE) == phases.index("eager: timing") + 1
    assert phases.index(LINES_PHASE) < phases.index("eager and compiled: profiling, interleaved")


@pytest.mark.slow
def test_every_measured_eager_kernel_gets_its_line(made: tuple[Run, list[str]]) -> None:
    run, _ = made
    eager = run.load_eager()
    assert run.eager_lines_trace is not None
    got = transfer_lines(eager, load_trace(run.eager_lines_trace))
    assert got.coverage == 1.0  # a deterministic model: the same kernels in both passes
    assert got.located == got.kernels == len(eager.kernels) > 0
    # the run directory stores the file relative to itself (runner/portable.py)
    files = {str((run.directory / str(f)).resolve()) for f in got.lines[KL.file]}
    assert got.lines[KL.exact].all() and files == {str(Path(HERE).resolve())}
    assert set(got.lines[KL.line]) == LINES
    names = eager.kernels[K.name].astype(str)
    by_row = dict(zip(got.lines[KL.kernel_row], got.lines[KL.line], strict=True))
    sin = [by_row[r] for r in names.index[names == "aten::sin"]]
    assert sin and set(sin) == {min(LINES)}  # y = torch.sin(x) * 2 is the first marked line


def _same_rows(table: pd.DataFrame) -> pd.DataFrame:
    """by_line without the measured times, in a stable order (kernel lists as sets)."""
    keep = table[["file", "line", "code", "eager_kernels"]].copy()
    for column in ("eager_ops", "compiled_kernels", "fused_with"):
        keep[column] = table[column].map(lambda s: frozenset(str(s).split(", ")) - {""})
    return keep.sort_values(["file", "line"]).reset_index(drop=True)


@pytest.mark.slow
def test_by_line_is_the_old_single_trace_table(made: tuple[Run, list[str]]) -> None:
    run, _ = made
    report = compare_run(run.directory)
    assert report.line_transfer is not None and report.line_transfer.coverage == 1.0
    assert run.eager_lines_trace is not None and run.compile_log is not None
    old = compare(run.eager_lines_trace, run.compiled_trace, names=("eager", "compiled"),
                  compile_log=run.compile_log)  # fmt: skip
    new, before = report.fusion.by_line, old.fusion.by_line
    assert not new.empty and set(new["line"]) == LINES
    pd.testing.assert_frame_equal(_same_rows(new), _same_rows(before))
    # the times are the measured trace's, and the credits stay within what it measured
    measured = report.a.trace.kernels
    eager_us = measured[K.excl_dur_us].fillna(measured[K.dur_us]).sum()
    assert new["eager_kernels"].sum() <= len(measured)
    assert new["eager_time_us"].sum() <= eager_us * (1 + 1e-9)
    compiled = report.b.trace.kernels
    compiled_us = compiled[K.excl_dur_us].fillna(compiled[K.dur_us]).sum()
    assert new["compiled_time_us"].sum() <= compiled_us * (1 + 1e-9)


@pytest.mark.slow
def test_a_failing_lines_pass_leaves_a_run_without_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from traceviz.runner import lines

    def broken() -> None:
        raise RuntimeError("this model does not run under a TorchFunctionMode")

    monkeypatch.setattr(lines, "mark_lines", broken)
    run = profile_model(Model(), (torch.randn(8, 16),), out=tmp_path / "b", backend="eager",
                        **FAST)  # fmt: skip
    assert run.ok and run.info.traces.eager_lines is None
    assert not run.info.profiler.eager_line_marks and run.eager_lines_trace is None
    assert not (run.directory / EAGER_LINES_TRACE).exists()
    assert read_run_dir(run.directory).eager_lines is None
