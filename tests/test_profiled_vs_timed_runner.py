"""The runner profiles eager and compiled under the same conditions: one profiler
session whose steps alternate between them, split into one trace per side in the format a
session of its own writes (``ProfilerStep#2`` … in order, metadata and the profiler's span).

GIVEN a hand-made session trace (two sides, the plan the runner follows), WHEN it is split,
THEN each side's file holds exactly its kept steps' events, renumbered, and parses as a trace
whose steps are those steps. The plan needs torch (skipped without); a real interleaved run:
test_runner_integration.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

import traceviz
from tests.conftest import kernel, launch, op
from traceviz.runner.split_trace import split_trace
from traceviz.schema import Steps

# What the runner's plan is for 2 steps per side (see test_profile_plan_alternates_sides).
PLAN = [
    ("eager", False), ("compiled", False),  # the schedule's wait and warm-up steps
    ("eager", False), ("eager", True), ("compiled", False), ("compiled", True),
    ("eager", False), ("eager", True), ("compiled", False), ("compiled", True),
]  # fmt: skip
STEP_US = 100.0


def _step(n: int) -> dict[str, Any]:
    return op(f"ProfilerStep#{n}", n * STEP_US, STEP_US - 5, cat="user_annotation")


def _session(path: Path) -> Path:
    """A CUDA-like session: per step a CPU op, its launch, its kernel (named after the side
    and the session step), the step span and its device annotation; metadata and the
    profiler's own span and iteration mark."""
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python"}},
        {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans",
         "tid": "PyTorch Profiler", "ts": 150.0, "dur": 900.0},
        {"ph": "i", "name": "Iteration Start: PyTorch Profiler", "pid": "Spans",
         "tid": "PyTorch Profiler", "ts": 150.0, "s": "g"},
    ]  # fmt: skip
    for n in range(2, len(PLAN)):  # recorded: after the wait step (the warm-up one is dropped)
        side = PLAN[n][0]
        t0 = n * STEP_US
        events += [
            _step(n),
            op(f"aten::{side}_{n}", t0 + 10, 30),
            launch("cudaLaunchKernel", t0 + 15, 5, correlation=n),
            kernel(f"{side}_kernel_{n}", t0 + 30, 40, correlation=n),
            {"ph": "X", "cat": "gpu_user_annotation", "name": f"ProfilerStep#{n}",
             "pid": 0, "tid": 7, "ts": t0 + 30, "dur": 40},
        ]  # fmt: skip
    data = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU"}],
            "traceEvents": events}  # fmt: skip
    path.write_text(json.dumps(data))
    return path


def _names(path: Path) -> list[str]:
    with gzip.open(path, "rt") as fh:
        return [str(e.get("name")) for e in json.load(fh)["traceEvents"]]


def test_each_side_gets_its_kept_steps_renumbered_and_parses_with_them_only(tmp_path: Path) -> None:
    raw = _session(tmp_path / "session.json")
    paths = {"eager": tmp_path / "eager.json.gz", "compiled": tmp_path / "compiled.json.gz"}
    split_trace(raw, PLAN, paths)
    eager, compiled = _names(paths["eager"]), _names(paths["compiled"])
    assert [n for n in eager if "kernel" in n] == ["eager_kernel_3", "eager_kernel_7"]
    assert [n for n in compiled if "kernel" in n] == ["compiled_kernel_5", "compiled_kernel_9"]
    for names in (eager, compiled):
        assert sorted(n for n in names if n.startswith("ProfilerStep#")) == [
            "ProfilerStep#2",
            "ProfilerStep#2",
            "ProfilerStep#3",
            "ProfilerStep#3",
        ]  # fmt: skip (CPU span and device annotation per step)
        assert "process_name" in names and "PyTorch Profiler (0)" in names
        assert not any(n.endswith(("_2", "_4", "_6", "_8")) for n in names)  # dropped steps
    for side, first in (("eager", 3), ("compiled", 5)):
        trace = traceviz.load(paths[side])
        assert trace.steps[Steps.step].tolist() == [2, 3]
        assert trace.steps[Steps.ts_us].tolist() == [first * STEP_US, (first + 4) * STEP_US]
        assert sorted(trace.kernels["name"].astype(str)) == [
            f"{side}_kernel_{first}", f"{side}_kernel_{first + 4}",
        ]  # fmt: skip


def test_a_side_without_kept_steps_is_an_error(tmp_path: Path) -> None:
    raw = _session(tmp_path / "session.json")
    plan = [(side, False) for side, _ in PLAN]
    with pytest.raises(ValueError, match="no step of eager"):
        split_trace(raw, plan, {"eager": tmp_path / "eager.json.gz"})


def test_profile_plan_alternates_sides() -> None:
    pytest.importorskip("torch", reason="the runner needs torch")
    from traceviz.runner.measure import profile_plan

    assert profile_plan(["eager", "compiled"], 2) == PLAN
    alone = profile_plan(["eager"], 3)
    assert alone == [("eager", False)] * 2 + [("eager", True)] * 3  # a session of its own
    wide = profile_plan(["eager", "compiled"], 3, block=2)
    assert [side for side, kept in wide if kept] == ["eager"] * 2 + ["compiled"] * 2 + [
        "eager", "compiled",
    ]  # fmt: skip


def test_pinned_threads_are_restored() -> None:
    torch = pytest.importorskip("torch", reason="the runner needs torch")
    from traceviz.runner.measure import pinned_threads

    before = torch.get_num_threads()
    with pinned_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


# --- a real run: eager and compiled profiled in turns ---------------------------------------


def _tiny_model() -> tuple[Any, tuple[Any, ...]]:
    torch = pytest.importorskip("torch", reason="the runner needs torch")
    return torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU()), (torch.randn(4, 16),)


@pytest.mark.slow
def test_a_compiled_model_failing_under_the_profiler_leaves_the_eager_trace(
    tmp_path: Path,
) -> None:
    torch = pytest.importorskip("torch", reason="the runner needs torch")
    from traceviz.runner import profile_model

    def fails_when_profiled(gm: Any, example_inputs: Any) -> Any:
        def call(*args: Any) -> Any:
            if torch.autograd._profiler_enabled():
                raise RuntimeError("fails under the profiler")
            return gm(*args)

        return call

    model, inputs = _tiny_model()
    run = profile_model(
        model, inputs, device="cpu", backend=fails_when_profiled, steps=3, warmup=1, iters=3,
        out=tmp_path / "run",
    )  # fmt: skip
    error = run.info.compile.error
    assert error is not None and error.phase == "profiling" and not run.ok
    assert run.compiled_trace is None and run.info.timing.compiled is None
    assert run.load_eager().steps[Steps.step].tolist() == [2, 3, 4]
