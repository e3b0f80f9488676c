"""The runner keeps the compiler's record and the eager source lines (real torch.compile, CPU).

GIVEN a model defined in this file WHEN ``profile_model`` runs it THEN the run directory holds
``compile_log.jsonl.gz`` whose provenance names this file's exact lines, the eager kernels map
to the same exact lines, every compiled Inductor kernel row is explained, and every global
setting the runner touched is restored. Compiling tests are marked ``slow``.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import torch._inductor.config as inductor_config  # noqa: E402
from torch._logging._internal import trace_log  # noqa: E402

from traceviz.analysis.provenance import (  # noqa: E402
    compiled_kernel_provenance,
    eager_kernel_lines,
)
from traceviz.parse import load_trace  # noqa: E402
from traceviz.parse.compile_log import COMPILE_LOG, read_compile_log  # noqa: E402
from traceviz.rundir import read_run_dir  # noqa: E402
from traceviz.runner import Run, load_run, profile_model  # noqa: E402
from traceviz.schema import KernelLines as KL  # noqa: E402
from traceviz.schema import KernelProvenance as KP  # noqa: E402
from traceviz.schema import Kernels as K  # noqa: E402
from traceviz.schema import ProvenanceKernels as P  # noqa: E402
from traceviz.schema import ProvenanceLines as L  # noqa: E402

FAST = {"device": "cpu", "steps": 2, "warmup": 1, "iters": 3}
HERE = str(Path(__file__).resolve())


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(32, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.cos(x)
        y = torch.relu(y)
        z = self.linear(y) + x
        return z.mean(-1)


def line_of(text: str) -> int:
    """The line number of ``text`` in Model.forward (computed, not written down)."""
    source, first = inspect.getsourcelines(Model.forward)
    return first + next(i for i, line in enumerate(source) if text in line)


COS, RELU, LINEAR, MEAN = (line_of(t) for t in ("torch.cos", "torch.relu", "self.linear", "mean"))


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    def state() -> tuple[object, ...]:
        ours = [h for h in trace_log.handlers if type(h).__module__.startswith("traceviz")]
        return (inductor_config.trace.provenance_tracking_level, inductor_config.fx_graph_cache,
                trace_log.level, ours)  # fmt: skip

    before = state()
    made = profile_model(
        Model(), (torch.randn(16, 32),), out=tmp_path_factory.mktemp("r") / "m", **FAST
    )
    assert state() == before  # the runner restores what it changed (torch may add its own)
    return made


@pytest.mark.slow
def test_run_json_names_the_compile_log(run: Run) -> None:
    assert run.info.traces.compile_log == COMPILE_LOG
    assert run.compile_log == run.directory / COMPILE_LOG and run.compile_log.is_file()
    assert load_run(run.directory).compile_log == run.compile_log
    assert read_run_dir(run.directory).compile_log == run.compile_log
    assert run.info.profiler.eager_line_marks and not run.info.profiler.eager_with_stack
    assert run.eager_lines_trace is not None
    marked = load_trace(run.eager_lines_trace)  # the measured eager trace has no marks
    # the marks name the lines; Python frames would only slow the profiled eager steps down
    assert (marked.ops["category"] == "python_function").sum() == 0
    assert marked.ops["name"].str.startswith("traceviz line ").any()


def _stored(run: Run, file: object) -> str:
    """A source path as the run directory stores it (relative to itself: runner/portable.py),
    made absolute again."""
    return str((run.directory / str(file)).resolve())


@pytest.mark.slow
def test_the_compile_log_names_this_files_exact_lines(run: Run) -> None:
    log = read_compile_log(run.directory)
    lines = log.lines[[_stored(run, f) == HERE for f in log.lines[L.file]]]
    by_kernel = lines.groupby(L.kernel)[L.line].apply(set).to_dict()
    assert by_kernel["extern_kernels.addmm"] == {LINEAR}
    cos_kernel = [k for k in by_kernel if "cos" in k]
    assert len(cos_kernel) == 1 and by_kernel[cos_kernel[0]] == {COS, RELU}
    assert MEAN in set().union(*by_kernel.values())
    assert log.frames["compile_time_s"].iloc[0] > 0
    assert log.kernels[P.est_bytes].notna().all()  # caches off: Inductor estimated every kernel


@pytest.mark.slow
def test_eager_kernels_map_to_this_files_exact_lines(run: Run) -> None:
    assert run.eager_lines_trace is not None
    trace = load_trace(run.eager_lines_trace)  # the marked pass; its twins are line_transfer's
    lines = eager_kernel_lines(trace).set_index(KL.kernel_row)
    names = trace.kernels[K.name].astype(str)
    assert len(lines) == len(trace.kernels) and lines[KL.exact].all()
    assert {_stored(run, f) for f in lines[KL.file]} == {HERE}
    got = {names[r]: line for r, line in lines[KL.line].items()}
    assert got["aten::cos"] == COS  # relu runs as aten::clamp_min on CPU: found by its line
    assert got["aten::addmm"] == LINEAR and got["aten::add"] == LINEAR
    assert set(lines[KL.line]) == {COS, RELU, LINEAR, MEAN}
    assert lines.loc[names.index[names == "aten::cos"][0], KL.code] == "y = torch.cos(x)"


@pytest.mark.slow
def test_every_compiled_kernel_is_explained(run: Run) -> None:
    trace = run.load_compiled()
    prov = compiled_kernel_provenance(trace, read_compile_log(run.directory))
    names = trace.kernels[K.name].astype(str)
    generated = set(trace.kernels.index[names.str.match(r"^graph_\d+_cpp_")])
    assert generated and generated <= set(prov[KP.kernel_row])
    addmm = set(trace.kernels.index[names == "aten::addmm"])
    assert addmm <= set(prov[KP.kernel_row])
    assert set(prov[KP.pre_grad_nodes]) >= {"linear"}


@pytest.mark.slow
def test_training_backward_kernels_map_to_the_backward_graph(tmp_path: Path) -> None:
    made = profile_model(Model(), (torch.randn(16, 32),), train=True, out=tmp_path / "t", **FAST)
    log = read_compile_log(made.directory)
    assert set(log.kernels[P.graph_index]) == {0, 1}  # forward and backward graphs
    trace = made.load_compiled()
    prov = compiled_kernel_provenance(trace, log)
    names = trace.kernels[K.name].astype(str)
    generated = set(trace.kernels.index[names.str.match(r"^graph_\d+_cpp_")])
    assert generated <= set(prov[KP.kernel_row]) and prov[KP.kernel_row].is_unique
    backward = prov[prov[KP.prov_kernel].str.contains(re.escape("[1]:"))]
    assert not backward.empty


def test_line_marks_restore_and_fold_library_frames() -> None:
    from traceviz.runner.lines import mark_lines, user_frame

    frame = user_frame(inspect.currentframe())
    assert frame is not None and frame.f_code.co_filename == HERE
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        with mark_lines():
            call_line = inspect.getframeinfo(inspect.currentframe()).lineno + 1  # type: ignore[arg-type]
            torch.relu(torch.ones(3))
        torch.relu(torch.ones(3))  # after the block: not marked
    names = [e.name for e in prof.events()]
    marked = [n for n in names if n.startswith("traceviz line ")]
    function = "test_line_marks_restore_and_fold_library_frames"
    # torch.ones and torch.relu on the marked line; nothing after the block
    assert marked == [f"traceviz line {HERE}({call_line}): {function}"] * 2
    assert names.count("aten::relu") == 2
