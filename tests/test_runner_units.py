"""The runner's small pieces: output comparison (TF32-aware), timing statistics (interleaved),
the profiled steps' sync mark, peak memory, display.

GIVEN hand-made tensors, samples, trace events or run records WHEN measured or shown THEN the
documented numbers come out. No compilation here.
"""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from unittest import mock

import msgspec
import pytest
from rich.console import Console

torch = pytest.importorskip("torch")

from tests.test_runner_options import sample_info  # noqa: E402
from traceviz.parse.compile_log import STEP_SYNC_MARK  # noqa: E402
from traceviz.runner import dynamo, measure  # noqa: E402
from traceviz.runner.compare import (  # noqa: E402
    compare_outputs,
    move_inputs,
    tensor_specs,
    tf32_in_effect,
)
from traceviz.runner.display import print_run  # noqa: E402
from traceviz.runner.progress import Silent  # noqa: E402
from traceviz.runs.run import Run  # noqa: E402
from traceviz.runs.runinfo import Correctness  # noqa: E402

# ---------------------------------------------------------------- correctness


def test_identical_outputs_pass_with_zero_error() -> None:
    x = torch.randn(4, 5)
    result = compare_outputs((x, {"b": x * 2}), (x.clone(), {"b": x * 2}))
    assert result.passed and result.outputs_compared == 2
    assert result.max_abs_error == 0.0 and result.max_rel_error == 0.0
    assert (result.rtol, result.atol) == (1e-3, 1e-4)


def test_rounding_differences_pass_and_real_differences_fail() -> None:
    x = torch.ones(8)
    assert compare_outputs(x, x + 1e-6).passed
    failed = compare_outputs([x, x], [x, x + 0.5])
    assert failed.passed is False and failed.mismatched == ["out[1]"]
    assert failed.max_abs_error == pytest.approx(0.5)
    assert failed.max_rel_error == pytest.approx(0.5)


def test_bfloat16_outputs_get_the_looser_tolerance() -> None:
    x = torch.ones(8, dtype=torch.bfloat16)
    result = compare_outputs(x, x * 1.0078125)  # one bf16 ulp at 1.0
    assert result.passed and result.rtol == 5e-2


def test_each_output_is_checked_with_its_own_dtype_s_tolerance() -> None:
    logits = torch.linspace(-2, 2, 64)
    aux = torch.ones(8, dtype=torch.bfloat16)
    # a 1% error in the float32 output: within bfloat16's bounds, far outside float32's
    result = compare_outputs((logits, aux), (logits * 1.01, aux.clone()))
    assert result.passed is False and result.mismatched == ["out[0]"]
    assert result.tolerances == {"float32": [1e-3, 1e-4], "bfloat16": [5e-2, 5e-2]}
    assert (result.rtol, result.atol) == (5e-2, 5e-2)  # the loosest, for the summary line
    assert "float32: rtol 0.001" in result.tolerance_text()
    rounding = compare_outputs((logits, aux), (logits + 1e-6, aux * 1.0078125))
    assert rounding.passed and rounding.over_rtol == 0


def test_matching_nans_and_infinities_agree_but_a_lone_nan_does_not() -> None:
    x = torch.tensor([float("nan"), float("-inf"), 1.0])
    assert compare_outputs(x, x.clone()).passed
    y = x.clone()
    y[2] = float("nan")
    assert compare_outputs(x, y).passed is False
    z = x.clone()
    z[1] = 0.0
    assert compare_outputs(x, z).passed is False


def test_integer_outputs_must_be_equal_and_structures_must_match() -> None:
    ids = torch.arange(5)
    assert compare_outputs(ids, ids.clone()).passed
    assert compare_outputs(ids, ids + 1).passed is False
    different = compare_outputs((ids,), [ids])
    assert different.passed is False and different.note == "output structures differ"
    assert compare_outputs(torch.ones(3), torch.ones(4)).passed is False  # shapes differ


def test_tensor_specs_and_input_casting() -> None:
    inputs = (torch.ones(2, 3), {"ids": torch.arange(4)})
    moved = move_inputs(inputs, torch.device("cpu"), torch.bfloat16)
    assert moved[0].dtype == torch.bfloat16 and moved[1]["ids"].dtype == torch.int64
    specs = tensor_specs(moved, "args")
    assert [(s.path, s.shape, s.dtype) for s in specs] == [
        ("args[0]", [2, 3], "bfloat16"),
        ("args[1]['ids']", [4], "int64"),
    ]


# CUDA runs float32 convolutions in TF32 by default: a compiled conv differs from eager by TF32
# rounding (1e-3 on an H200 conv-bn-relu run), which float32's tolerances call a mismatch.


def test_tf32_tolerance_passes_tf32_rounding_and_still_fails_real_errors() -> None:
    x = torch.linspace(-2, 2, 64)
    assert compare_outputs(x, x + 1e-3).passed is False  # float32 bounds
    relaxed = compare_outputs(x, x + 1e-3, tf32=True)
    assert relaxed.passed and relaxed.tf32 and (relaxed.rtol, relaxed.atol) == (5e-3, 5e-3)
    assert compare_outputs(x, x + 0.05, tf32=True).passed is False
    half = torch.ones(8, dtype=torch.bfloat16)  # lower precision and integers: not loosened
    result = compare_outputs(half, half.clone(), tf32=True)
    assert result.rtol == 5e-2 and result.tf32 is False  # bf16's own, looser bounds
    ids = torch.arange(4)
    assert compare_outputs(ids, ids.clone(), tf32=True).tf32 is False


def test_tf32_in_effect_only_on_cuda_with_convolutions_or_tf32_matmuls() -> None:
    conv = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU())
    mlp = torch.nn.Sequential(torch.nn.Linear(4, 4))
    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    assert tf32_in_effect(conv, cpu) is False
    with torch.backends.cudnn.flags(allow_tf32=True):
        assert tf32_in_effect(conv, cuda) is True
        with mock.patch.object(torch, "get_float32_matmul_precision", return_value="highest"):
            assert tf32_in_effect(mlp, cuda) is False
        with mock.patch.object(torch, "get_float32_matmul_precision", return_value="high"):
            assert tf32_in_effect(mlp, cuda) is True
    with torch.backends.cudnn.flags(allow_tf32=False):
        assert tf32_in_effect(conv, cuda) is False


# ---------------------------------------------------------------- timing and memory


def test_timing_stats_are_median_and_quartiles() -> None:
    stats = measure.timing_stats([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (stats.median_us, stats.q1_us, stats.q3_us, stats.iqr_us) == (3.0, 2.0, 4.0, 2.0)
    assert (stats.min_us, stats.max_us, stats.mean_us, stats.iters) == (1.0, 5.0, 3.0, 5)
    assert stats.samples_us == [5.0, 1.0, 3.0, 2.0, 4.0]


# Eager and compiled are timed interleaved, so that load which comes and goes on a shared
# machine weighs on both sides alike (the verdict compares their medians).


def _counts(samples: dict[str, list[float]]) -> dict[str, int]:
    return {name: len(values) for name, values in samples.items()}


def test_each_round_runs_every_call_once_in_turn() -> None:
    order: list[str] = []
    synced: list[int] = []
    calls = {"eager": lambda: order.append("eager"), "compiled": lambda: order.append("compiled")}
    samples = measure.interleaved_samples(calls, lambda: synced.append(1), 4, Silent())
    assert order == ["eager", "compiled"] * 4
    assert _counts(samples) == {"eager": 4, "compiled": 4}
    assert all(v >= 0 for values in samples.values() for v in values)
    assert len(synced) == 2 * len(order)  # before and after every timed step
    assert "alternate" in measure.timing_method(torch.device("cpu"), interleaved=True)
    assert "alternate" not in measure.timing_method(torch.device("cpu"))


def test_drift_weighs_on_both_sides_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine that slows down as the run goes on (a fake clock: each step takes 1 ms more
    than the one before): timed one after the other, the side timed last looks 2.6x slower;
    interleaved, both see the same slowdown."""
    now = {"t": 0.0, "cost": 0.0}
    monkeypatch.setattr(measure.time, "perf_counter", lambda: now["t"])

    def step() -> None:
        now["cost"] += 1e-3
        now["t"] += now["cost"]

    samples = measure.interleaved_samples(
        {"eager": step, "compiled": step}, lambda: None, 6, Silent()
    )
    eager, compiled = sum(samples["eager"]), sum(samples["compiled"])
    assert compiled / eager == pytest.approx(42 / 36)  # steps 2,4,..,12 ms against 1,3,..,11


def test_blocks_time_each_side_on_its_own_warm_caches() -> None:
    order: list[str] = []
    calls = {"eager": lambda: order.append("e"), "compiled": lambda: order.append("c")}
    samples = measure.interleaved_samples(calls, lambda: None, 2, Silent(), block=3)
    # one untimed step at each switch, then three timed ones
    assert "".join(order) == "eeeecccceeeecccc"
    assert _counts(samples) == {"eager": 6, "compiled": 6}
    cut = measure.interleaved_samples(calls, lambda: None, 2, Silent(), block=5, samples_per_call=7)
    assert _counts(cut) == {"eager": 7, "compiled": 7}  # the last block is cut to the samples


# The closing wait for the device in each profiled step is annotated, so that the analysis can
# tell the harness's sync from the model's (analysis.blocking leaves it out).


def _names(path: Path) -> list[str]:
    return [str(e.get("name", "")) for e in json.loads(path.read_text())["traceEvents"]]


def test_on_cuda_the_sync_runs_inside_the_mark(tmp_path: Path) -> None:
    """Recorded by a CPU profiler: the wrapping needs no GPU."""
    calls: list[int] = []
    marked = measure._marked_sync(lambda: calls.append(1), torch.device("cuda"))
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        marked()
    prof.export_chrome_trace(str(tmp_path / "t.json"))
    assert calls == [1]
    assert _names(tmp_path / "t.json").count(STEP_SYNC_MARK) == 1


def test_on_cpu_the_trace_stays_unannotated(tmp_path: Path) -> None:
    """On CPU the sync is a no-op: no mark, and the sync still runs once per step."""
    cpu = torch.device("cpu")
    sync = measure.synchronizer(cpu)
    assert measure._marked_sync(sync, cpu) is sync
    synced: list[int] = []
    x = torch.ones(8)
    trace = tmp_path / "cpu.json"
    measure.profile_steps(
        lambda: x.cos(),
        lambda: synced.append(1),
        device=cpu,
        steps=2,
        path=trace,
        reporter=Silent(),
    )
    names = _names(trace)
    assert STEP_SYNC_MARK not in names
    assert any(n.startswith("ProfilerStep#") for n in names)
    assert len(synced) == measure.PROFILER_WAIT + measure.PROFILER_WARMUP + 2


def memory_event(total: int, nbytes: int, device_type: int = 0, device_id: int = -1) -> dict:
    return {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1,
            "ts": 1.0, "args": {"Total Allocated": total, "Bytes": nbytes,
                                "Device Type": device_type, "Device Id": device_id}}  # fmt: skip


def test_profiled_peak_on_cuda_is_the_run_s_gpu_only(tmp_path: Path) -> None:
    events = [
        memory_event(2000, 1000, device_type=1, device_id=1),  # the run's GPU: baseline 1000
        memory_event(9000, 9000, device_type=1, device_id=0),  # another GPU's allocations
        memory_event(2500, 500, device_type=1, device_id=1),
        memory_event(1500, -1000, device_type=1, device_id=1),
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    assert measure.profiled_peak_bytes(path, torch.device("cuda", 1)) == 1500
    assert measure.profiled_peak_bytes(path, torch.device("cuda", 0)) == 9000


def test_profiled_peak_is_above_the_level_before_the_window(tmp_path: Path) -> None:
    events = [
        memory_event(1100, 100),  # baseline 1000
        memory_event(1600, 500),
        memory_event(5000, 4000, device_type=1),  # another device: ignored on CPU
        memory_event(1100, -500),
        {"ph": "X", "name": "aten::add", "cat": "cpu_op", "ts": 0, "dur": 1, "args": {}},
    ]
    path = tmp_path / "t.json.gz"
    with gzip.open(path, "wt") as fh:
        json.dump({"traceEvents": events}, fh)
    assert measure.profiled_peak_bytes(path, torch.device("cpu")) == 600
    plain = tmp_path / "t.json"
    plain.write_text(json.dumps({"traceEvents": events[4:]}))
    assert measure.profiled_peak_bytes(plain, torch.device("cpu")) is None


def test_train_step_needs_an_output_that_requires_grad() -> None:
    from traceviz.errors import UsageError

    step = measure.make_step(lambda x: x * 2, (torch.ones(2),), {}, train=True, module=None)
    with pytest.raises(UsageError, match="none of the model's outputs requires grad"):
        step()


def test_recompile_index_reads_y_of_x_slash_y() -> None:
    assert dynamo._recompile_index("0/0") == 0
    assert dynamo._recompile_index("1/2") == 2
    assert dynamo._recompile_index("[!0/3]") == 3
    assert dynamo._recompile_index("weird") == 0


def test_inductor_settings_are_restored() -> None:
    import torch._inductor.config as config

    before = config.cpp.enable_kernel_profile
    with dynamo.inductor_settings(torch.device("cpu")) as profiled:
        assert profiled and config.cpp.enable_kernel_profile is True
    assert config.cpp.enable_kernel_profile == before


# ---------------------------------------------------------------- display


def render(run: Run) -> str:
    console = Console(file=io.StringIO(), width=120)
    print_run(run, console)
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_compile_failure_is_shown_first_and_loudly(tmp_path: Path) -> None:
    text = render(Run(tmp_path, sample_info()))
    assert text.index("PROBLEM") < text.index("step time")
    assert "compiled model failed during compile: E: boom" in text
    assert "compile: FAILED during compile" in text


def test_mismatch_is_shown_loudly(tmp_path: Path) -> None:
    bad = Correctness(checked=True, passed=False, outputs_compared=1, max_abs_error=0.5,
                      max_rel_error=0.25, rtol=1e-3, atol=1e-4, mismatched=["out"])  # fmt: skip
    info = msgspec.structs.replace(sample_info(), correctness=bad)
    text = render(Run(tmp_path, info))
    assert "compiled outputs differ from eager" in text and "MISMATCH" in text


def test_outputs_of_another_structure_are_a_problem_in_words(tmp_path: Path) -> None:
    x = torch.ones(3)
    differs = compare_outputs((x,), [x])  # no figures: the structures differ
    info = msgspec.structs.replace(sample_info(), correctness=differs)
    problems = Run(tmp_path, info).problems()
    assert "compiled outputs differ from eager: output structures differ" in problems
    assert "MISMATCH" in render(Run(tmp_path, info))


def test_a_mixed_dtype_pass_states_the_bounds_of_each_dtype(tmp_path: Path) -> None:
    x, h = torch.linspace(-2, 2, 64), torch.ones(8, dtype=torch.bfloat16)
    info = msgspec.structs.replace(sample_info(), correctness=compare_outputs((x, h), (x, h)))
    text = " ".join(render(Run(tmp_path, info)).split())
    assert "of each output's dtype (float32: rtol 0.001, atol 0.0001; bfloat16:" in text


def test_timing_table_says_how_the_steps_were_timed(tmp_path: Path) -> None:
    info = sample_info()
    # rich wraps the title and caption to the table's width: compare without line breaks.
    text = " ".join(render(Run(tmp_path, info)).split())
    assert f"{info.timing.eager.iters} timed steps each, outside the profiler" in text
    assert info.timing.method in text  # the caption: how a sample was taken
