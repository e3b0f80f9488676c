"""The measured eager trace carries nothing of traceviz's; the source lines have their own trace.

GIVEN a tiny model defined in this file WHEN ``profile_model`` runs it (real torch.compile,
CPU) THEN ``eager.pt.trace.json.gz`` has no ``traceviz line`` marks (like the compiled trace),
``eager_lines.pt.trace.json.gz`` has them, run.json names it, every measured eager kernel gets
the line of its twin there, and the report's by-line table is the one the old single-trace
path gives on the lines trace. Compiling tests are marked ``slow``.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pandas as pd
import pytest

torch = pytest.importorskip("torch")

from traceviz.analysis.fusion.line_transfer import transfer_lines  # noqa: E402
from traceviz.parse import load_trace  # noqa: E402
from traceviz.parse.compile_log import LINE_MARK_PREFIX  # noqa: E402
from traceviz.pipeline import compare, compare_run  # noqa: E402
from traceviz.rundir import read_run_dir  # noqa: E402
from traceviz.runner import Run, load_run, profile_model  # noqa: E402
from traceviz.runs.runinfo import EAGER_LINES_TRACE  # noqa: E402
from traceviz.schema import KernelLines as KL  # noqa: E402
from traceviz.schema import Kernels as K  # noqa: E402
from traceviz.trace import Trace  # noqa: E402

FAST = {"device": "cpu", "steps": 2, "warmup": 1, "iters": 3}
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
