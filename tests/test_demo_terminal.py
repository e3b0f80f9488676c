"""First impressions in the terminal: the default model and the stories of `traceviz models`
(held to what `traceviz compare` counts on the sample runs), a user model named after its
file, the next commands after `traceviz run`, the correctness line, and no profiler chatter
in the progress display."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import msgspec
import pytest
from rich.console import Console

from tests.conftest import SAMPLES
from traceviz import cli
from traceviz.analysis.compare import Metric
from traceviz.diagnose.rules.slower import comparison_speed
from traceviz.pipeline import compare_run
from traceviz.runner import BUILTIN_MODELS, DEFAULT_MODEL, load_model, load_run
from traceviz.runner.display import facts_text, next_steps
from traceviz.runner.models import model_name
from traceviz.runner.stderr import without_profiler_chatter
from traceviz.runs.runinfo import Correctness

CLAIMED = [m for m in BUILTIN_MODELS.values() if m.kernels is not None]
COUNT_WORDS = r"\b(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten)\b\s+\w*\s*kernels?"


def _sample(name: str) -> Path:
    run_dir = SAMPLES / name
    if not (run_dir / "run.json").is_file():
        pytest.skip(f"sample run {run_dir} not found")
    return run_dir


@pytest.mark.parametrize("model", CLAIMED, ids=lambda m: m.name)
def test_models_text_states_the_kernel_counts_compare_reports(model) -> None:  # type: ignore[no-untyped-def]
    """The counts `traceviz models` prints are those `traceviz compare` finds on the model's
    sample run, and the story promises no other count."""
    report = compare_run(_sample(model.name))
    per_step = report.metric("kernels_per_step")
    assert (per_step[Metric.a], per_step[Metric.b]) == model.kernels
    assert f"({model.kernels[0]} → {model.kernels[1]} kernels per step on CPU)" in model.line
    assert not re.search(COUNT_WORDS, model.story, flags=re.IGNORECASE), model.story


def test_every_builtin_with_a_sample_run_has_its_counts() -> None:
    for name, model in BUILTIN_MODELS.items():
        if (SAMPLES / name / "run.json").is_file():
            assert model.kernels is not None, name


def test_the_default_model_shows_fusion_on_cpu() -> None:
    """`demo` and `run` default to a model whose compiled trace has fewer kernels than its
    eager one on CPU, with no speed verdict that compiled is slower."""
    assert DEFAULT_MODEL == "block"
    eager, compiled = BUILTIN_MODELS[DEFAULT_MODEL].kernels or (0, 0)
    assert compiled < eager / 2
    report = compare_run(_sample(DEFAULT_MODEL))
    assert report.metric("kernels_per_step")[Metric.b] < report.metric("kernels_per_step")[Metric.a]
    assert "slower" not in comparison_speed(report).verdict
    fused = [str(k) for k in report.fusion.kernels["kernel"] if "cpp_fused" in str(k)]
    assert len(fused) == 2 and any("cos" in k and "gelu" in k for k in fused)
    demo = cli.build_parser().parse_args(["demo"])
    run = cli.build_parser().parse_args(["run"])
    assert demo.model == run.model == DEFAULT_MODEL


FACTORY = """
def build(batch_size: int = 2):
    return (lambda x: x), ((1.0,) * batch_size,)
"""


def test_a_user_model_is_named_after_its_file(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "user_net.py"
    path.write_text(FACTORY)
    assert load_model(f"{path}:build").name == "user_net"
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "user_net", raising=False)
    assert load_model("user_net:build").name == "user_net"
    monkeypatch.delitem(sys.modules, "user_net")
    assert model_name("models/my_model.py:build") == "my_model"
    assert model_name("pkg.nets:build") == "nets"
    assert model_name("pointwise") == "pointwise"


def test_run_ends_with_the_next_commands(monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """`traceviz run` prints the run, then what to type next on its directory."""
    from traceviz.commands import run as run_command

    sample = load_run(_sample("pointwise"))
    monkeypatch.setattr(run_command, "profile_from_args", lambda args: sample)
    monkeypatch.setenv("COLUMNS", "250")  # the sample's absolute path: one line per command
    assert cli.main(["run", "pointwise"]) == 0
    lines = capsys.readouterr().out.rstrip().splitlines()
    directory = str(sample.directory)
    assert lines[-3].split() == ["next:", "traceviz", "compare", directory]
    assert lines[-2].split() == ["traceviz", "dashboard", directory]
    assert "--format html" in lines[-1]


def test_next_steps_quote_a_directory_with_spaces(tmp_path: Path) -> None:
    sample = load_run(_sample("pointwise"))
    moved = type(sample)(directory=tmp_path / "my runs", info=sample.info)
    text = next_steps(moved).plain
    assert f"traceviz compare '{tmp_path / 'my runs'}'" in text


def _facts(correctness: Correctness) -> str:
    sample = load_run(_sample("block"))
    info = msgspec.structs.replace(sample.info, correctness=correctness)
    buffer = io.StringIO()
    Console(file=buffer, width=300, color_system=None).print(facts_text(info))
    return next(line for line in buffer.getvalue().splitlines() if line.startswith("correct"))


BASE = {"checked": True, "outputs_compared": 1, "max_abs_error": 1.4e-6, "rtol": 1e-3,
        "atol": 1e-4, "elements_compared": 262_144}  # fmt: skip


def test_correctness_line_says_which_elements_exceed_rtol_and_that_allclose_passed() -> None:
    line = _facts(
        Correctness(
            **BASE, passed=True, max_rel_error=0.00145, over_rtol=3, worst="out[5, 7]: e, c"
        )
    )
    assert "PASS" in line and "allclose passed" in line and "all 262,144 elements" in line
    assert "3 of them exceed rtol alone" in line and "at out[5, 7]" in line
    assert "atol 0.0001 + rtol 0.001·|eager|" in line
    plain = _facts(Correctness(**BASE, passed=True, max_rel_error=0.0005))
    assert "exceed" not in plain and "allclose passed" in plain


def test_correctness_line_of_a_mismatch_counts_the_failed_elements() -> None:
    line = _facts(
        Correctness(
            **BASE,
            passed=False,
            max_rel_error=2.0,
            over_rtol=30,
            failed_elements=12,
            mismatched=["out"],
        )
    )
    assert "MISMATCH" in line and "12 of 262,144 elements outside" in line and "(in out)" in line


def test_compare_outputs_counts_elements() -> None:
    torch = pytest.importorskip("torch")
    from traceviz.runner.compare import compare_outputs

    eager = torch.linspace(-1, 1, 1000).reshape(10, 100)
    eager[5, 0] = 1e-3
    compiled = eager.clone()
    compiled[5, 0] += 5e-5  # near 0: relative error 5% (above rtol), within atol
    compiled[9, 99] += 1e-2  # outside atol + rtol·|eager|
    found = compare_outputs((eager, eager[0]), (compiled, eager[0]))
    assert found.elements_compared == 1100 and not found.passed
    assert found.failed_elements == 1 and found.mismatched == ["out[0]"]
    assert found.over_rtol == 2
    assert found.worst is not None and found.worst.startswith("out[0][5, 0]:")


CHATTER = (
    b"USDT:2026-11-30 16:16:04 10947:10947 SyncActivityProfilerHandler.cpp:52] profiler_start\n"
)


def test_profiler_chatter_is_dropped_and_real_errors_kept(capfd) -> None:  # type: ignore[no-untyped-def]
    with without_profiler_chatter():
        os.write(2, CHATTER + b"a real C++ error\n")
        print("python progress", file=sys.stderr, flush=True)
    err = capfd.readouterr().err
    assert "a real C++ error" in err and "python progress" in err
    assert "USDT" not in err and "profiler_start" not in err
    assert err.index("python progress") < err.index("a real C++ error")  # live, then replayed


PROFILE = textwrap.dedent(
    """
    import sys, torch
    from traceviz.runner.stderr import without_profiler_chatter
    def run():
        with torch.profiler.profile() as prof:
            torch.ones(4) + 1
        prof.export_chrome_trace(sys.argv[1])
    if sys.argv[2] == "filtered":
        with without_profiler_chatter():
            run()
    else:
        run()
    """
)


@pytest.mark.parametrize("mode", ["raw", "filtered"])
def test_a_real_profiler_run_prints_no_usdt_lines(mode: str, tmp_path: Path) -> None:
    """Kineto's USDT start/stop lines appear without the filter (so the test can fail) and not
    with it."""
    pytest.importorskip("torch")
    done = subprocess.run(
        [sys.executable, "-c", PROFILE, str(tmp_path / "t.json"), mode],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    if mode == "raw":
        if "USDT" not in done.stderr:
            pytest.skip("this torch build prints no USDT lines")
        assert "profiler_start" in done.stderr
    else:
        assert "USDT" not in done.stderr
