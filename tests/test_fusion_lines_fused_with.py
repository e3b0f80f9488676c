"""``fusion.by_line.fused_with`` names only lines fused into one kernel.

On the attention sample the fc1/fc2 line (``return self.fc2(self.act(self.fc1(x)))``) was
"fused with" the q/k/v projection and the output projection lines only because all three call
the library ``aten::addmm`` (and ``aten::copy_``): extern calls are grouped by name, one row
for every call, so sharing that name is no fusion. Only Inductor-generated kernels fuse lines.
"""

from __future__ import annotations

import pytest

import traceviz
from tests.conftest import SAMPLES
from traceviz.analysis.inductor_names import fused_kernel_ops
from traceviz.pipeline import compare
from traceviz.rundir import read_run_dir

RUNS = sorted(p.name for p in SAMPLES.iterdir() if (p / "run.json").exists())


def _by_line(run: str):  # type: ignore[no-untyped-def]
    rundir = read_run_dir(SAMPLES / run)
    comparison = compare(
        traceviz.load(rundir.eager), traceviz.load(rundir.compiled),
        names=("eager", "compiled"), run_info=rundir.info, compile_log=rundir.compile_log,
        eager_lines=rundir.eager_lines,  # the run's lines trace: its eager trace has no marks
    )  # fmt: skip
    return comparison.fusion.by_line


def _kernels(text: str) -> set[str]:
    return {k for k in str(text).split(", ") if k}


@pytest.mark.parametrize("run", RUNS)
def test_fused_with_lines_share_a_generated_kernel(run: str) -> None:
    table = _by_line(run)
    kernels = {
        f"{f}:{n}": _kernels(k)
        for f, n, k in zip(table["file"], table["line"], table["compiled_kernels"], strict=True)
    }
    for spot, others in zip(kernels, table["fused_with"], strict=True):
        for other in _kernels(others):
            shared = kernels[spot] & kernels.get(other, set())
            assert any(fused_kernel_ops(k) is not None for k in shared), (run, spot, other)


def test_attention_projection_lines_are_not_fused_with_the_mlp_line() -> None:
    table = _by_line("attention")
    qkv = table[table["code"].str.contains("self.qkv(x)", regex=False)]
    assert len(qkv) == 1
    assert "aten::addmm" in qkv["compiled_kernels"].iloc[0]  # it shares addmm with other lines
    mlp_line = table[table["code"].str.contains("self.fc2(", regex=False)]
    spot = f"{mlp_line['file'].iloc[0]}:{int(mlp_line['line'].iloc[0])}"
    assert spot not in qkv["fused_with"].iloc[0]
