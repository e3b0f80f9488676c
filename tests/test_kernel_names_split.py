"""A by-line row's compiled kernels are read back whole: a library kernel's demangled name has
commas of its own (template arguments, parameters), which used to cut it into pieces in the
Perfetto overlay, the ONNX cross-fusion's line lookup and the dashboard's line explanation."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import SAMPLES, corpus_files, load_trace
from traceviz.analysis.fusion.lines import ByLine, split_kernel_names
from traceviz.analysis.onnx.fusion import _line_kernels
from traceviz.pipeline import compare_run
from traceviz.report.perfetto import _lines_of_kernels
from traceviz.rundir import is_run_dir
from traceviz.schema import Kernels

RUNS_WITH_COMMA_NAMES = ["attention-train", "gpt2", "gpt2-reduce-overhead"]


def _traces() -> list[Path]:
    samples = sorted(SAMPLES.rglob("*.json")) + sorted(SAMPLES.rglob("*.json.gz"))
    return [p for p in samples if "trace" in p.name] + corpus_files()


@pytest.mark.parametrize("path", _traces(), ids=lambda p: p.name)
def test_every_real_kernel_name_survives_a_join(path: Path) -> None:
    names = sorted(set(load_trace(path).kernels[Kernels.name].astype(str)))
    names = [n.strip() for n in names if n.strip()]
    assert split_kernel_names(", ".join(names)) == names


def test_commas_inside_brackets_do_not_part_names() -> None:
    joined = "triton_poi_fused_add_0, void k<4, F<float>, A<char*, 1> >(int, F<float>), mm"
    assert split_kernel_names(joined) == [
        "triton_poi_fused_add_0",
        "void k<4, F<float>, A<char*, 1> >(int, F<float>)",
        "mm",
    ]
    assert split_kernel_names("") == split_kernel_names(None) == []
    assert split_kernel_names(float("nan")) == []


@pytest.mark.parametrize("run", RUNS_WITH_COMMA_NAMES)
def test_line_lookups_keep_library_kernel_names_whole(run: str) -> None:
    path = SAMPLES / "h200" / run
    if not is_run_dir(path):
        pytest.skip(f"{path} not found")
    comparison = compare_run(path).comparison
    by_line: pd.DataFrame = comparison.fusion.by_line
    compiled = set(comparison.b.trace.kernels[Kernels.name].astype(str))
    named = {k for cell in by_line[ByLine.compiled_kernels] for k in split_kernel_names(cell)}
    assert any("," in name for name in named)  # the case this test is about
    assert named <= compiled  # every name read back is a kernel of the compiled trace
    assert set(_lines_of_kernels(by_line)) == named  # the Perfetto overlay
    assert set().union(*_line_kernels(by_line).values()) == named  # ONNX cross-fusion


def test_dashboard_line_explanation_lists_whole_names() -> None:
    import html

    pytest.importorskip("panel", reason="panel not installed (dashboard extra)")
    from traceviz.dashboard.tabs.fusion import explain_line

    path = SAMPLES / "h200" / "gpt2"
    if not is_run_dir(path):
        pytest.skip(f"{path} not found")
    comparison = compare_run(path).comparison
    by_line = comparison.fusion.by_line
    rows = [r for _, r in by_line.iterrows() if "," in str(r[ByLine.compiled_kernels])]
    for row in rows:
        shown = explain_line(comparison, row)
        for name in split_kernel_names(row[ByLine.compiled_kernels]):
            assert f"<li>{html.escape(name)}" in shown
