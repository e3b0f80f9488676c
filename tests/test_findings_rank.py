"""Findings rank by what fixing them would gain: severity follows the gain, not the CPU time a
call blocks, and Python frames count as recorded CPU work for ``cpu-bound``. Advice knows the
compile mode run.json records: no "try max-autotune" on a max-autotune run, no "compile with
reduce-overhead" on a run that asked for CUDA graphs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import traceviz
from tests.conftest import SAMPLES, kernel, launch, op
from traceviz.diagnose import diagnose_trace
from traceviz.diagnose.rules.copies import SYNC_ID
from traceviz.diagnose.rules.idle import CPU_BOUND_ID
from traceviz.diagnose.rules.slower import slower_next_step
from traceviz.runs.runinfo import run_info_of

PREPROCESS_US = 218_000.0


def _step(frame: str) -> list[dict]:
    """One 260 ms step: 218 ms of Python preprocessing (recorded only as a Python frame), then
    20 short kernels, then a 30 ms kernel during which the CPU sits 28.05 ms in a sync that
    returns 50 µs after the kernel ends (the device idles only those 50 µs of it)."""
    end = 260_000.0
    events = [
        op("ProfilerStep#1", 0, end, cat="user_annotation"),
        op(frame, 10, PREPROCESS_US, cat="python_function"),
    ]
    t = PREPROCESS_US + 100
    for i in range(20):
        events += [
            launch("cudaLaunchKernel", t + 50 * i, 5, i + 1),
            kernel(f"conv{i}", t + 50 * i + 10, 40, i + 1),
        ]
    events += [
        launch("cudaLaunchKernel", 219_900, 5, 100),
        kernel("big", 220_000, 30_000, 100),
        launch("cudaStreamSynchronize", 222_000, 28_050, 101),
    ]
    return events


def _diagnosed(tmp_trace, frame: str = "preprocess.py(12): decode_video"):  # type: ignore[no-untyped-def]
    """The findings by id, and their ids in report order."""
    found = diagnose_trace(traceviz.load(tmp_trace(_step(frame))))
    return {f.id: f for f in found}, [f.id for f in found]


def test_the_cpu_gap_outranks_a_sync_while_the_device_works(tmp_trace) -> None:
    """The sync is information (28 ms blocked, 10.8% of the step, but no gain); the Python
    frame is recorded CPU work, so the gap before the kernels is cpu-bound, a warning."""
    by_id, order = _diagnosed(tmp_trace)
    sync, cpu = by_id[SYNC_ID], by_id[CPU_BOUND_ID]
    assert sync.est_gain_us is not None and sync.est_gain_us < 100  # the 50 µs idle
    assert sync.severity.value == "info"
    assert cpu.severity.value == "warning" and "CPU-bound" in cpu.title
    covered = next(e for e in cpu.evidence if "wait covered" in getattr(e, "label", ""))
    assert covered.value > 0.9
    assert order.index(CPU_BOUND_ID) < order.index(SYNC_ID)
    assert cpu.est_gain_us > 200_000


def test_a_python_sleep_is_not_cpu_work(tmp_trace) -> None:
    by_id, order = _diagnosed(tmp_trace, "<built-in function sleep>")
    assert by_id[CPU_BOUND_ID].severity.value == "info"
    # both info: within a severity the larger gain (the 218 ms wait) before the 50 µs sync
    assert order.index(CPU_BOUND_ID) < order.index(SYNC_ID)


#: Advice to switch to max-autotune, as any rule words it.
TRY_AUTOTUNE = re.compile(r"(?i)\b(try|compile with)\b.{0,40}?max-autotune")
TRY_GRAPHS = re.compile(r'(?i)\bcompile with\b.{0,40}?mode="reduce-overhead"')


def _run(name: str) -> Path:
    run = SAMPLES / name
    if not (run / "run.json").exists():
        pytest.skip(f"sample run absent: {run}")
    return run


def _advice(run: Path, mode: str, options: dict[str, Any] | None = None) -> list[str]:
    """The next steps of the compiled trace's findings, run.json's compile mode set to
    ``mode`` (and its mode options to ``options``)."""
    info = json.loads((run / "run.json").read_text())
    info["compile"]["mode"] = mode
    info["compile"]["mode_options"] = options or {}
    trace = traceviz.load(run / "compiled.pt.trace.json.gz")
    return [f.next_step for f in diagnose_trace(trace, run_info=info, variant="compiled")]


@pytest.mark.parametrize("name", ["linear-add", "block"])  # extern-gemm; unfused-matmul-add
def test_no_max_autotune_advice_on_a_max_autotune_run(name: str) -> None:
    run = _run(name)
    assert any(TRY_AUTOTUNE.search(s) for s in _advice(run, "default"))  # not vacuous
    assert not any(TRY_AUTOTUNE.search(s) for s in _advice(run, "max-autotune"))


def test_no_reduce_overhead_advice_when_graphs_were_asked_for() -> None:
    run = _run("h200/gpt2")
    assert any(TRY_GRAPHS.search(s) for s in _advice(run, "default"))  # not vacuous
    asked = _advice(run, "reduce-overhead", {"triton.cudagraphs": True})
    assert not any(TRY_GRAPHS.search(s) for s in asked)
    assert any("asked for CUDA graphs" in s for s in asked)
    assert not any(TRY_AUTOTUNE.search(s) for s in _advice(run, "max-autotune"))


def test_compiled_slower_advice_follows_the_mode() -> None:
    info = json.loads((_run("linear-add") / "run.json").read_text())
    assert TRY_AUTOTUNE.search(slower_next_step(run_info_of(info)))
    info["compile"]["mode"] = "max-autotune"
    tuned = slower_next_step(run_info_of(info))
    assert not TRY_AUTOTUNE.search(tuned) and 'mode="reduce-overhead"' not in tuned
    assert 'mode="reduce-overhead"' in slower_next_step(None)
