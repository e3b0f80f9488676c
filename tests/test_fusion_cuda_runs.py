"""The fusion map on real CUDA runs (sample_traces/h200: the runner on an NVIDIA H200).

These runs hold what the CPU samples cannot: Triton kernels, library GEMMs that launch two
kernels (cuBLAS split-K), one fused kernel called at several places of a graph (one per GPT-2
layer), and a model whose every torch call comes from a single user line (the built-in gpt2
wraps Hugging Face code, which counts as library code)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import SAMPLES
from traceviz.analysis.fusion.match import Credits, Outcome
from traceviz.analysis.inductor_names import TritonSubkind, fused_kernel_ops
from traceviz.analysis.provenance import compiled_kernel_provenance
from traceviz.parse.compile_log import read_compile_log
from traceviz.pipeline import compare_run
from traceviz.runner import load_run

H200 = SAMPLES / "h200"
RUNS = sorted(p for p in H200.glob("*") if (p / "run.json").is_file())
GELU = "triton_poi_fused_add_addmm_mul_pow_tanh_view_4"


@pytest.fixture(scope="module")
def gpt2() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(credits, eager kernels, compiled kernels) of the H200 gpt2 run."""
    report = compare_run(H200 / "gpt2")
    run = load_run(H200 / "gpt2")
    return report.fusion.credits, run.load_eager().kernels, run.load_compiled().kernels


def test_a_kernel_called_at_two_places_of_a_graph_matches_each_call_site() -> None:
    run = load_run(H200 / "gpt2")
    compiled = run.load_compiled()
    log = read_compile_log(run.compile_log)
    prov = compiled_kernel_provenance(compiled, log)
    launches = compiled.kernels.index[compiled.kernels["name"] == GELU]
    assert len(launches) == 10  # 2 layers x 5 steps
    mine = prov[prov["kernel_row"].isin(launches)].sort_values("kernel_row")
    assert len(mine) == len(launches)  # every launch explained, none left out as ambiguous
    sites = log.kernels[log.kernels["kernel"] == GELU].sort_values("handle")["prov_kernel"]
    assert len(sites) == 2
    # per step, the first launch is the first layer's call site, the second the second's
    assert mine["prov_kernel"].tolist() == sites.tolist() * 5


def test_gemm_work_is_credited_to_gemm_kernels_not_to_their_fused_epilogue(gpt2) -> None:
    credits, _, _ = gpt2
    matched = credits[credits[Credits.outcome] == Outcome.MATCHED.value]
    gemms = matched[matched[Credits.op].isin(["aten::addmm", "aten::mm"])]
    assert len(gemms) >= 50
    for kernel in gemms[Credits.kernel].unique():
        decoded = fused_kernel_ops(kernel)
        assert decoded is None or decoded.subkind is TritonSubkind.TEMPLATE, kernel


def test_gelu_pieces_are_credited_to_the_fused_gelu_kernel(gpt2) -> None:
    credits, _, _ = gpt2
    for op in ("aten::pow", "aten::tanh"):
        rows = credits[credits[Credits.op] == op]
        assert len(rows) == 10
        assert set(rows[Credits.kernel]) == {GELU}, op


def test_no_library_kernel_gets_ops_it_cannot_run(gpt2) -> None:
    credits, _, _ = gpt2
    for op in ("aten::all", "aten::gather", "aten::pow", "aten::tanh"):
        kernels = credits.loc[credits[Credits.op] == op, Credits.kernel].dropna()
        assert all(fused_kernel_ops(k) is not None for k in kernels), (op, set(kernels))


@pytest.mark.parametrize("run", RUNS, ids=[p.name for p in RUNS])
def test_credits_add_up_to_at_most_what_was_measured(run: Path) -> None:
    report = compare_run(run)
    credits = report.fusion.credits
    eager = load_run(run).load_eager().kernels
    assert credits[Credits.eager_row].is_unique
    assert len(credits) <= len(eager)
    measured = float(eager["excl_dur_us"].sum())
    assert float(credits[Credits.time_us].sum()) <= measured * (1 + 1e-9)
    assert report.fusion.kernels is not None
