"""Findings' estimated gains fit the step they are to be saved from.

GIVEN the sample runs (run.json's step times, measured outside the profiler) and the corpus
pairs (profiled steps only)
WHEN the diagnosis estimates a gain per step
THEN no gain exceeds its trace's step (the timed median, else the profiled mean), CPU-side
waits are scaled to the timed step by the device's busy time, the basis says how, and a
trace without timed steps says its gain is per profiled step.

Findings rank by what fixing them would gain: severity follows the gain, not the CPU time a
call blocks, and Python frames count as recorded CPU work for ``cpu-bound``. Advice knows the
compile mode run.json records: no "try max-autotune" on a max-autotune run, no "compile with
reduce-overhead" on a run that asked for CUDA graphs.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import traceviz
from tests.conftest import CORPUS, SAMPLES, kernel, launch, op
from traceviz.diagnose import diagnose_trace
from traceviz.diagnose.facts import (
    TraceFacts,
    facts_of_side,
    step_limit_us,
    timed_step_us,
    within_step,
)
from traceviz.diagnose.finding import Finding, Severity
from traceviz.diagnose.rules.copies import SYNC_ID
from traceviz.diagnose.rules.gemm import add_share
from traceviz.diagnose.rules.idle import CPU_BOUND_ID
from traceviz.diagnose.rules.slower import slower_next_step
from traceviz.pipeline import Report, compare, compare_run
from traceviz.rundir import is_run_dir
from traceviz.runs.runinfo import run_info_of
from traceviz.schema import Kernels

RUNS = sorted(p.parent for p in SAMPLES.glob("**/run.json")) if SAMPLES.is_dir() else []
PAIRS = [
    (
        "nvidia/a100_eager_train_control.json.gz",
        "nvidia/a100_compiled_cudagraph_train_2023.json.gz",
    ),
    (
        "nvidia/v100_resnet50_eager_train_2021.json.gz",
        "nvidia/v100_train_compiledfunction_cudagraph.json.gz",
    ),
    ("amd/mi250_eager_train_rocm62.json.gz", "amd/mi300x_compiled_flux_hipgraph.json.gz"),
    ("amd/mi250_eager_train_rocm62.json.gz", "amd/mi300x_compiled_llama_block_tiny.json.gz"),
]
#: The findings whose gain is CPU-side time (device idle waiting for or blocked by the CPU).
CPU_SIDE = ("launch-bound", "cpu-bound", "sync-in-step")


def run_report(path: Path) -> Report:
    if not is_run_dir(path):
        pytest.skip(f"{path} not found")
    return compare_run(path)


def pair_report(a: str, b: str) -> Report:
    if not (CORPUS / a).is_file() or not (CORPUS / b).is_file():
        pytest.skip(f"corpus not found at {CORPUS}")
    return compare(CORPUS / a, CORPUS / b, force=True)


def sides(report: Report) -> dict[str, TraceFacts]:
    return {f.name: f for f in (facts_of_side(report.comparison, w) for w in ("a", "b"))}


def check_within_steps(report: Report) -> int:
    """Every gain at most its trace's step (a pair's finding: the longer side's); the count."""
    facts = sides(report)
    limits = {name: step_limit_us(f) for name, f in facts.items()}
    checked = 0
    for finding in report.findings:
        gain = finding.est_gain_us
        if gain is None:
            continue
        if finding.trace in limits:
            limit = limits[finding.trace]
        else:
            limit = max((v for v in limits.values() if v is not None), default=None)
        assert limit is not None, finding.id
        assert gain <= limit * (1 + 1e-9), (finding.id, finding.trace, gain, limit)
        checked += 1
    return checked


@pytest.mark.parametrize("path", RUNS, ids=lambda p: p.relative_to(SAMPLES).as_posix())
def test_no_gain_exceeds_the_timed_step_of_any_sample_run(path: Path) -> None:
    report = run_report(path)
    check_within_steps(report)
    for finding in report.findings:
        if finding.est_gain_us is not None and finding.trace:
            facts = sides(report)[finding.trace]
            assert timed_step_us(facts) is not None  # every sample run's run.json is timed


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{Path(p[0]).stem}-{Path(p[1]).stem}")
def test_no_gain_exceeds_the_profiled_step_of_a_corpus_pair(pair: tuple[str, str]) -> None:
    report = pair_report(*pair)
    assert check_within_steps(report) > 0
    for finding in report.findings:
        if finding.id in CPU_SIDE and finding.est_gain_us is not None:
            # no run.json: the wait is as profiled, and the basis says so
            assert "per profiled step" in finding.gain_basis, finding.gain_basis
            assert "scaled" not in finding.gain_basis


H200_RUNS = [p for p in RUNS if p.parent.name == "h200"]


@pytest.mark.parametrize("path", H200_RUNS, ids=lambda p: p.name)
def test_cpu_side_waits_are_scaled_to_the_timed_step(path: Path) -> None:
    """The wait per profiled step times (timed step − device busy per profiled step) / device
    idle per profiled step, at most 1: worked out here from the side's own figures."""
    report = run_report(path)
    facts = sides(report)
    seen = 0
    for finding in report.findings:
        if finding.id not in ("launch-bound", "cpu-bound") or finding.est_gain_us is None:
            continue
        side = facts[finding.trace]
        launch = side.launch
        wait = side.per_step(launch.cpu_wait_us)
        idle = side.per_step(launch.idle_us)
        busy = side.per_step(launch.wall_us - launch.idle_us)
        timed = side.timing()
        assert timed is not None
        scale = min(max(timed.median_us - busy, 0.0) / idle, 1.0)
        assert finding.est_gain_us == pytest.approx(wait * scale, rel=1e-9)
        assert finding.est_gain_us <= timed.median_us - busy + 1e-6  # what the step can lose
        assert f"scaled by {scale:.2f} to the timed step" in finding.gain_basis
        seen += 1
    assert seen, [f.id for f in report.findings]  # every H200 run is launch-bound somewhere


def test_cpu_trace_gains_are_scaled_by_the_timed_step() -> None:
    """CPU runs: a graph break's CPU wall time and an eager chain's CPU op time are scaled by
    the timed step over the profiled one (both lengthened by the profiler)."""
    for run, rule, side_name in (("graph-break", "graph-break", "compiled"),
                                 ("pointwise", "unfused-chain", "eager")):  # fmt: skip
        report = run_report(SAMPLES / run)
        side = sides(report)[side_name]
        timed = timed_step_us(side)
        assert timed is not None and timed < side.step_us  # the profiler lengthened the step
        found = [f for f in report.findings if f.id == rule and f.trace == side_name]
        assert len(found) == 1
        scale = timed / side.step_us
        assert f"scaled by {scale:.2f} to the timed step" in found[0].gain_basis
        assert "capped" not in found[0].gain_basis
        assert found[0].est_gain_us is not None and found[0].est_gain_us < timed


def test_within_step_caps_a_gain_at_the_timed_step_and_says_so() -> None:
    report = run_report(SAMPLES / "h200" / "block")
    side = sides(report)["compiled"]
    timed = timed_step_us(side)
    assert timed is not None
    big = Finding("x", Severity.INFO, "t", est_gain_us=10 * timed, gain_basis="b", trace="compiled")
    capped = within_step(side, big)
    assert capped.est_gain_us == timed
    assert capped.gain_basis.startswith("b; capped at the whole step (run.json's median step")
    small = Finding("x", Severity.INFO, "t", est_gain_us=timed / 2, gain_basis="b")
    assert within_step(side, small) is small


def test_reduce_overhead_wait_is_cpu_time_around_the_replays() -> None:
    report = run_report(SAMPLES / "h200" / "gpt2-reduce-overhead")
    found = [f for f in report.findings if f.id == "launch-bound" and f.trace == "compiled"]
    assert len(found) == 1
    finding = found[0]
    assert "around its CUDA graph replays" in finding.title
    assert "already replay" in finding.next_step and "reduce-overhead" not in finding.next_step
    assert "Dynamo's guards" in finding.gain_basis
    evidence = {e.label: e.value for e in finding.evidence if not isinstance(e, str)}
    assert evidence["kernels replayed by graphs"] > 0.95
    assert evidence["kernels launched one by one per step"] <= 1
    before = evidence["waiting for the CPU before the first kernel, per step"]
    assert before > 0.5 * evidence["device waiting for the CPU per step"]
    # CUDA graphs cannot remove the wait, and it is not kernels launched outside the graph
    assert "CUDA graphs remove" not in finding.gain_basis
    assert "still launched one by one" not in finding.next_step
    # the eager side's wait is launches: there CUDA graphs are the advice
    eager = [f for f in report.findings if f.id == "launch-bound" and f.trace == "eager"]
    assert eager and 'mode="reduce-overhead"' in eager[0].next_step


@pytest.mark.parametrize(
    ("name", "share"),
    [
        ("aten::add", 1.0),
        ("triton_poi_fused_add_0", 1.0),
        ("triton_poi_fused__unsafe_view_add_2", 1.0),
        ("graph_0_cpp_fused__unsafe_view_add_cos_gelu_mul_relu_0", 1 / 5),
        ("triton_poi_fused_add_native_layer_norm_0", 1 / 2),
    ],
)
def test_an_adds_own_share_of_its_kernel(name: str, share: float) -> None:
    assert add_share(name) == pytest.approx(share)


def test_matmul_add_gain_is_not_a_whole_fused_kernel() -> None:
    """block (CPU): the adds fused into kernels that also do cos, gelu… promise their own
    share, well under half those kernels' time per step."""
    report = run_report(SAMPLES / "block")
    found = [f for f in report.findings if f.id == "unfused-matmul-add"]
    assert found, [f.id for f in report.findings]
    by_name = {s.name: s for s in (report.comparison.a, report.comparison.b)}
    for finding in found:
        side = by_name[finding.trace]
        kernels = side.trace.kernels
        names = kernels[Kernels.name].astype(str)
        more = names.str.contains("_cos_") & names.str.contains("_gelu_")
        per_step = float(kernels.loc[more, Kernels.dur_us].sum()) / side.summary.step_count
        assert finding.est_gain_us is not None
        assert finding.est_gain_us < 0.5 * per_step, (finding.est_gain_us, per_step)


def test_a_separate_add_kernel_is_promised_whole() -> None:
    """linear-add, eager: aten::mm then aten::add: the add kernel's whole time, no share."""
    report = run_report(SAMPLES / "linear-add")
    found = [f for f in report.findings if f.id == "unfused-matmul-add"]
    assert len(found) == 1
    values = {e.label: e.value for e in found[0].evidence if not isinstance(e, str)}
    assert "the adds' own share per step (estimated)" not in values
    side = sides(report)[found[0].trace]
    timed = timed_step_us(side)
    assert timed is not None
    whole = float(values["the add kernels' time per step"])
    scale = min(timed / side.step_us, 1.0)  # a CPU trace: its ops are CPU time
    assert found[0].est_gain_us == pytest.approx(whole * scale, rel=1e-9)


def graph_steps(replayed: int, direct: int) -> list[dict[str, object]]:
    """Three 400 µs steps: 250 µs of CPU work, one graph launch replaying ``replayed``
    kernels (sharing its correlation id), then ``direct`` kernels launched one by one."""
    events: list[dict[str, object]] = []
    for s in range(3):
        t0 = s * 1000
        events.append(op(f"ProfilerStep#{s}", t0, 400, cat="user_annotation"))
        events.append(op("aten::work", t0 + 1, 250))
        corr = s * 100 + 1
        events.append(launch("cudaGraphLaunch", t0 + 260, 10, corr))
        events += [kernel(f"triton_poi_fused_add_{k}", t0 + 275 + 3 * k, 2, corr)
                   for k in range(replayed)]  # fmt: skip
        for k in range(direct):
            events.append(launch("cudaLaunchKernel", t0 + 300 + 10 * k, 8, corr + 1 + k))
            events.append(kernel(f"k{k}", t0 + 310 + 10 * k, 1, corr + 1 + k))
    return events


@pytest.mark.parametrize(("replayed", "direct", "replay_advice"), [(10, 1, True), (1, 9, False)])
def test_launch_bound_advice_follows_how_many_kernels_graphs_replay(
    tmp_trace, replayed: int, direct: int, replay_advice: bool
) -> None:
    """Made traces: most kernels replayed → the wait is CPU time around the replays; most
    launched one by one despite a graph → those launches are the advice. Without run.json
    the gain stays per profiled step, and within the step."""
    trace = traceviz.load(tmp_trace(graph_steps(replayed, direct)), cache=False)
    found = [f for f in diagnose_trace(trace) if f.id == "launch-bound"]
    assert len(found) == 1
    finding = found[0]
    assert ("around its CUDA graph replays" in finding.title) is replay_advice
    assert ("CUDA graphs remove" in finding.gain_basis) is not replay_advice
    assert ("still launched one by one" in finding.next_step) is not replay_advice
    assert finding.gain_basis.endswith("per profiled step (the profiler's own overhead "
                                       "lengthens CPU-side time)")  # fmt: skip
    assert finding.est_gain_us is not None and 0 < finding.est_gain_us <= 400


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
