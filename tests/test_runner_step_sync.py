"""The runner's closing wait for the device in each profiled step is annotated, so that the
analysis can tell the harness's sync from the model's (analysis.blocking leaves it out)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from traceviz.parse.compile_log import STEP_SYNC_MARK  # noqa: E402
from traceviz.runner import measure  # noqa: E402
from traceviz.runner.progress import Silent  # noqa: E402


def _names(path: Path) -> list[str]:
    return [str(e.get("name", "")) for e in json.loads(path.read_text())["traceEvents"]]


def test_on_cuda_the_sync_runs_inside_the_mark(tmp_path: Path) -> None:
    """On a CUDA device the closing sync is wrapped in the ``traceviz step sync`` annotation
    (recorded here by a CPU profiler: the wrapping needs no GPU)."""
    calls: list[int] = []
    marked = measure._marked_sync(lambda: calls.append(1), torch.device("cuda"))
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        marked()
    prof.export_chrome_trace(str(tmp_path / "t.json"))
    assert calls == [1]
    assert _names(tmp_path / "t.json").count(STEP_SYNC_MARK) == 1


def test_on_cpu_the_trace_stays_unannotated(tmp_path: Path) -> None:
    """On CPU the sync is a no-op: profiled steps carry no mark, and the sync still runs once
    per step."""
    cpu = torch.device("cpu")
    sync = measure.synchronizer(cpu)
    assert measure._marked_sync(sync, cpu) is sync
    synced: list[int] = []
    x = torch.ones(8)
    measure.profile_steps(
        lambda: x.cos(),
        lambda: synced.append(1),
        device=cpu,
        steps=2,
        path=tmp_path / "cpu.json",
        reporter=Silent(),
    )
    names = _names(tmp_path / "cpu.json")
    assert STEP_SYNC_MARK not in names
    assert any(n.startswith("ProfilerStep#") for n in names)
    assert len(synced) == measure.PROFILER_WAIT + measure.PROFILER_WARMUP + 2
