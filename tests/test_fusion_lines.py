"""The fusion map on the compiler's record (#9 §1) and per source line (§2).

GIVEN runs made by the runner (eager traces with Python stacks, the compile log with Inductor's
provenance) WHEN they are compared THEN every Inductor kernel row has basis ``compiler`` and
``fusion.by_line`` names the model's own source lines, with credits that add up to at most
what was measured. A model defined in this file checks the exact line numbers.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import traceviz
from tests.conftest import SAMPLES, op
from tests.real_data import measured_kernel_us
from traceviz import cli
from traceviz.analysis.fusion.fusion_map import FusionKernels, fusion_map
from traceviz.analysis.fusion.lines import (
    ByLine,
    LineRecord,
    compiler_credits,
    lines_table,
)
from traceviz.analysis.fusion.match import Credits
from traceviz.analysis.kernels import classify
from traceviz.parse.compile_log import is_library
from traceviz.pipeline import compare_run
from traceviz.rundir import is_run_dir


def sample_dirs() -> list[Path]:
    if not SAMPLES.is_dir():
        return []
    return sorted(
        p for p in SAMPLES.iterdir() if is_run_dir(p) and (p / "compile_log.jsonl.gz").is_file()
    )


def assert_lines_conserve(comparison: traceviz.Comparison) -> None:
    """by_line credits add up to at most what each side measured."""
    by_line, fusion = comparison.fusion.by_line, comparison.fusion
    assert int(by_line[ByLine.eager_kernels].sum()) <= fusion.eager_kernel_count
    eager_total = measured_kernel_us(comparison.a.trace.kernels)
    assert float(by_line[ByLine.eager_time_us].sum()) <= eager_total * (1 + 1e-9)
    compiled_total = measured_kernel_us(comparison.b.trace.kernels)
    assert float(by_line[ByLine.compiled_time_us].sum()) <= compiled_total * (1 + 1e-9) + 1e-6
    assert not by_line.duplicated([ByLine.file, ByLine.line]).any()


@pytest.mark.parametrize("path", sample_dirs(), ids=lambda p: p.name)
def test_sample_runs_use_the_compilers_record(path: Path) -> None:
    comparison = compare_run(path)
    kernels = comparison.fusion.kernels
    assert not kernels.empty
    # every compiled kernel, Inductor's and the library calls it made, is in the record
    assert set(kernels[FusionKernels.basis]) == {"compiler"}, kernels[[FusionKernels.kernel]]
    credits = comparison.fusion.credits
    assert (credits[Credits.basis] == "compiler").any()
    by_line = comparison.fusion.by_line
    assert not by_line.empty
    # the model's own lines: the text recorded for each line is that line of that file
    for file, line, code in zip(by_line[ByLine.file], by_line[ByLine.line],
                                by_line[ByLine.code], strict=True):  # fmt: skip
        assert not is_library(file)  # model code: the user's, or a model library's (gpt2)
        text = Path(file).read_text().splitlines()[int(line) - 1].strip()
        assert text == code
    assert_lines_conserve(comparison)


# --- lines_table on hand-made credits ------------------------------------------------------


def test_lines_share_a_fused_kernels_time_by_their_eager_time(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    compiled = traceviz.load(
        tmp_trace([op("graph_0_cpp_fused_add_mul_0", 10, 30), op("aten::mm", 50, 60)])
    )
    credits = pd.DataFrame(
        {
            Credits.eager_row: [0, 1, 2],
            Credits.op: ["aten::mul", "aten::add", "aten::mm"],
            Credits.time_us: [10.0, 30.0, 50.0],
            Credits.kernel: ["graph_0_cpp_fused_add_mul_0", "graph_0_cpp_fused_add_mul_0",
                             "aten::mm"],
            Credits.outcome: ["matched"] * 3,
        }
    )  # fmt: skip
    lines = LineRecord(
        eager=pd.DataFrame({"eager_row": [0, 1, 2], "file": ["m.py"] * 3, "line": [3, 4, 5],
                            "code": ["y = x * 2", "z = y + 1", "w = z @ a"]})
    )  # fmt: skip
    table = lines_table(credits, classify(compiled), lines).set_index(ByLine.line)
    assert table.loc[3, ByLine.compiled_time_us] == pytest.approx(30 * 10 / 40)
    assert table.loc[4, ByLine.compiled_time_us] == pytest.approx(30 * 30 / 40)
    assert table.loc[5, ByLine.compiled_time_us] == pytest.approx(60)
    assert table.loc[3, ByLine.fused_with] == "m.py:4" and table.loc[5, ByLine.fused_with] == ""
    assert table.loc[4, ByLine.eager_ops] == "aten::add (1)"
    assert float(table[ByLine.compiled_time_us].sum()) == pytest.approx(90)
    assert list(table.index) == [5, 4, 3]  # by eager time, largest first


# --- the command line --------------------------------------------------------------------


def test_cli_compile_log_gives_by_line_and_compiler_basis(capsys: pytest.CaptureFixture) -> None:
    dirs = sample_dirs()
    if not dirs:
        pytest.skip("no sample run with a compile log")
    run = dirs[0]
    # the run's lines trace as a: two plain traces get lines only from a's own marks
    argv = ["compare", str(run / "eager_lines.pt.trace.json.gz"),
            str(run / "compiled.pt.trace.json.gz"),
            "--compile-log", str(run / "compile_log.jsonl.gz"), "--format", "json"]  # fmt: skip
    assert cli.main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    fusion = doc["fusion"]
    assert fusion["comparable"]["comparable"] is True and fusion["by_line"]
    assert {k["basis"] for k in fusion["kernels"] if k["is_fusion"]} == {"compiler"}


def test_cli_bad_compile_log_is_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    dirs = sample_dirs()
    if not dirs:
        pytest.skip("no sample run")
    bogus = tmp_path / "torch_trace"
    bogus.mkdir()
    run = dirs[0]
    # the run's lines trace as a: two plain traces get lines only from a's own marks
    argv = ["compare", str(run / "eager_lines.pt.trace.json.gz"),
            str(run / "compiled.pt.trace.json.gz"),
            "--compile-log", str(bogus)]  # fmt: skip
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert str(bogus) in err and "Traceback" not in err


def test_cli_force_computes_the_figures(capsys: pytest.CaptureFixture) -> None:
    dirs = sample_dirs()
    if not dirs:
        pytest.skip("no sample run")
    compiled = str(dirs[0] / "compiled.pt.trace.json.gz")
    assert cli.main(["compare", compiled, compiled, "--format", "json"]) == 0
    withheld = json.loads(capsys.readouterr().out)
    assert withheld["fusion"]["kernels"] == [] and withheld["fusion"]["est_bytes_saved"] is None
    assert "traces-not-comparable" in {f["id"] for f in withheld["findings"]}
    assert cli.main(["compare", compiled, compiled, "--format", "json", "--force"]) == 0
    forced = json.loads(capsys.readouterr().out)
    assert forced["fusion"]["kernels"] and forced["fusion"]["comparable"]["forced"] is True


# --- a model defined here: exact lines -----------------------------------------------------

torch = pytest.importorskip("torch")


class TwoLines(torch.nn.Module):  # type: ignore[misc]
    """Two lines of pointwise work, then a line with a GEMM: Inductor fuses the first two."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(64, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.cos(x) * 2.0
        z = torch.relu(y) + 1.0
        return self.fc(z)


def line_of(text: str) -> int:
    """The line number in this file of the statement ``text`` in TwoLines.forward."""
    source, start = inspect.getsourcelines(TwoLines.forward)
    found = [start + i for i, line in enumerate(source) if line.strip() == text]
    assert len(found) == 1
    return found[0]


@pytest.mark.slow
def test_a_model_in_this_file_maps_to_its_exact_lines(tmp_path: Path) -> None:
    from traceviz.runner import profile_model

    run = profile_model(TwoLines(), (torch.randn(8, 64),), device="cpu", steps=2, warmup=1,
                        iters=3, out=tmp_path / "two-lines")  # fmt: skip
    assert run.ok
    comparison = compare_run(tmp_path / "two-lines")
    by_line = comparison.fusion.by_line
    mine = by_line[by_line[ByLine.file] == __file__].set_index(ByLine.line)
    first, second = line_of("y = torch.cos(x) * 2.0"), line_of("z = torch.relu(y) + 1.0")
    gemm = line_of("return self.fc(z)")
    assert {first, second, gemm} <= set(mine.index), by_line[[ByLine.file, ByLine.line]]
    assert int(mine[ByLine.eager_kernels].sum()) == int(by_line[ByLine.eager_kernels].sum())
    # the two pointwise lines went into one fused kernel, each says it was fused with the other
    fused = set(mine.loc[first, ByLine.compiled_kernels].split(", "))
    assert fused & set(mine.loc[second, ByLine.compiled_kernels].split(", "))
    assert f"{__file__}:{second}" in mine.loc[first, ByLine.fused_with]
    kernels = comparison.fusion.kernels
    inductor = kernels[kernels[FusionKernels.is_fusion]]
    assert set(inductor[FusionKernels.basis]) == {"compiler"}
    assert_lines_conserve(comparison)
    assert np.isfinite(comparison.fusion.eager_kernels_per_compiled_kernel or np.nan)


def test_fusion_map_without_lines_has_no_by_line(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    trace = traceviz.load(tmp_trace([op("aten::sin", 10, 5)]))
    assert fusion_map(trace, trace).by_line.empty


def test_layout_kernel_on_the_convs_line_gets_no_conv_from_the_compiler_stage() -> None:
    path = SAMPLES / "conv-bn-relu"
    if not (path / "compile_log.jsonl.gz").is_file():
        pytest.skip("conv-bn-relu sample with a compile log not found")
    comparison = compare_run(path)
    kernels = comparison.fusion.kernels.set_index(FusionKernels.kernel)
    layout = kernels[kernels[FusionKernels.is_layout]]
    assert len(layout) and (layout[FusionKernels.eager_kernels] == 0).all()
    assert set(layout[FusionKernels.basis]) == {"compiler"}  # explained, just credited nothing
    convs = comparison.fusion.credits
    convs = convs[convs[Credits.op].str.contains("convolution")]
    assert len(convs) and not convs[Credits.kernel].isin(layout.index).any()


def test_bias_add_goes_to_the_gemm_that_fused_it() -> None:
    path = SAMPLES / "linear-add"
    if not (path / "compile_log.jsonl.gz").is_file():
        pytest.skip("linear-add sample with a compile log not found")
    credits = compare_run(path).fusion.credits
    adds = credits[credits[Credits.op] == "aten::add"]
    assert len(adds) and set(adds[Credits.kernel]) == {"aten::addmm"}
    assert (adds[Credits.confidence] == 1.0).all()


def test_function_level_eager_lines_meet_the_log_by_function_and_path_tail(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    # a with_stack frame names the function's first line and may hold a relative path
    eager = traceviz.load(tmp_trace([op("aten::cos", 10, 5), op("aten::mm", 30, 9)]))
    compiled = traceviz.load(tmp_trace([op("graph_0_cpp_fused_cos_0", 10, 2),
                                        op("aten::mm", 20, 8)]))  # fmt: skip
    lines = LineRecord(
        eager=pd.DataFrame({"eager_row": [0, 1], "file": ["pkg/model.py"] * 2, "line": [20, 20],
                            "code": ["def forward(self, x):"] * 2, "function": ["forward"] * 2,
                            "exact": [False, False]}),
        compiled=pd.DataFrame({"kernel": ["graph_0_cpp_fused_cos_0", "aten::mm"],
                               "file": ["/src/pkg/model.py"] * 2, "line": [21, 22],
                               "code": ["y = x.cos()", "return y @ w"],
                               "function": ["forward", "forward"]}),
    )  # fmt: skip
    credits = compiler_credits(eager, compiled, lines).set_index("eager_row")["kernel"]
    assert credits.to_dict() == {0: "graph_0_cpp_fused_cos_0", 1: "aten::mm"}
    exact = LineRecord(eager=lines.eager.assign(exact=True), compiled=lines.compiled)
    assert compiler_credits(eager, compiled, exact).empty  # line 20 holds no kernel
