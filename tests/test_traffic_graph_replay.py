"""Memory traffic of CUDA-graph replays (``torch.compile(mode="reduce-overhead")``): the
compiled kernels hang off one ``cudaGraphLaunch`` per step, with no launching op of their own,
so their bytes come from the compile log (basis ``compiler``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

import traceviz
from tests.conftest import SAMPLES
from traceviz.analysis.fusion_lines import read_log
from traceviz.analysis.memory import Basis, KernelTraffic, memory_traffic
from traceviz.analysis.provenance import compiled_kernel_provenance
from traceviz.parse.compile_log import CompileLog
from traceviz.schema import KernelProvenance as KP
from traceviz.schema import Kernels
from traceviz.schema import ProvenanceKernels as P

RO = SAMPLES / "h200" / "gpt2-reduce-overhead"


def _load(run: str) -> tuple[traceviz.Trace, CompileLog]:
    trace = traceviz.load(SAMPLES / "h200" / run / "compiled.pt.trace.json.gz")
    return trace, read_log(SAMPLES / "h200" / run / "compile_log.jsonl.gz")


def _generated_rows(trace: traceviz.Trace, log: CompileLog) -> np.ndarray:
    """Rows of ``trace.kernels`` named like one of the log's generated kernels."""
    names = set(log.kernels.loc[~log.kernels[P.extern], P.kernel].astype(str))
    return np.flatnonzero(trace.kernels[Kernels.name].astype(str).isin(names).to_numpy())


def test_every_replayed_triton_call_finds_its_log_entry() -> None:
    """A kernel called at two sites of the graph (one per GPT-2 layer) is the k-th entry for
    its k-th launch in each replay, not only in the first one."""
    trace, log = _load("gpt2-reduce-overhead")
    rows = _generated_rows(trace, log)
    prov = compiled_kernel_provenance(trace, log)
    matched = prov[prov[KP.kernel_row].isin(rows)]
    assert len(rows) > 0 and sorted(matched[KP.kernel_row]) == sorted(rows.tolist())
    names = trace.kernels[Kernels.name].astype(str).to_numpy()[matched[KP.kernel_row]]
    assert (names == matched[KP.kernel].astype(str).to_numpy()).all()
    # the same call site in every replay: each entry matched once per replay
    replays = trace.kernels[Kernels.launch_row].to_numpy()[matched[KP.kernel_row]]
    per_entry = pd.Series(replays).groupby(matched[KP.prov_kernel].to_numpy()).nunique()
    assert (per_entry == pd.Series(replays).nunique()).all()


def test_replayed_triton_calls_take_the_compilers_bytes() -> None:
    trace, log = _load("gpt2-reduce-overhead")
    traffic = memory_traffic(trace, compile_log=log)
    rows = _generated_rows(trace, log)
    per_kernel = traffic.per_kernel.iloc[rows]
    assert (per_kernel[KernelTraffic.basis] == Basis.COMPILER.value).all()
    entries = log.kernels[~log.kernels[P.extern]].groupby(P.kernel)[P.est_bytes].agg(set)
    for name, nbytes in zip(
        trace.kernels[Kernels.name].iloc[rows], per_kernel[KernelTraffic.est_bytes], strict=True
    ):
        assert nbytes in entries[str(name)]
    assert traffic.compiler_bytes == int(per_kernel[KernelTraffic.est_bytes].sum())


def test_no_traffic_saved_while_the_replayed_library_kernels_have_no_figure() -> None:
    """Every fused kernel has the compiler's bytes now, but the replayed GEMMs and attention
    have none: eager − compiled would count their traffic as saved, so there is no figure."""
    from traceviz.analysis.memory import is_inductor_kernel
    from traceviz.pipeline import compare_run

    report = compare_run(RO)
    compiled = report.b.traffic.per_kernel
    fused = is_inductor_kernel(report.b.trace.kernels[Kernels.name])
    assert fused.any()
    assert not (compiled[KernelTraffic.basis].to_numpy()[fused] == Basis.NONE.value).any()
    library = ~fused & (compiled[KernelTraffic.basis] == Basis.NONE.value).to_numpy()
    assert library.any()
    assert report.fusion.est_bytes_saved is None
    assert np.isnan(report.metric("est_bytes_saved")["b"])
