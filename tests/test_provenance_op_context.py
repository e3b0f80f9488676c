"""The provenance op context (analysis.provenance._OpContext): per op, its innermost graph
call, compiled region and backward marker are the nearest op, itself or an enclosing one (by
the ops' parent rows), that the trace names so: ``## Call CompiledFxGraph … ##`` /
``CompiledFunction`` / ``CompiledFunctionBackward``, ``Torch-Compiled Region: F/R``, and each
compiled region's compile id is the ``F/R`` of its name. On compiled CUDA runs (regions, graph
breaks, CUDA graphs), the corpus' compiled CUDA and ROCm traces (forward and backward) and an
eager trace (none of them)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import CORPUS, SAMPLES, load_trace
from traceviz.analysis import provenance
from traceviz.schema import Ops

REGION = "Torch-Compiled Region: "
TRACES = [
    SAMPLES / "h200" / "graph-break" / "compiled.pt.trace.json.gz",
    SAMPLES / "h200" / "gpt2-reduce-overhead" / "compiled.pt.trace.json.gz",
    SAMPLES / "graph-break" / "compiled.pt.trace.json.gz",
    SAMPLES / "h200" / "gpt2" / "eager.pt.trace.json.gz",
    CORPUS / "nvidia" / "v100_train_compiledfunction_cudagraph.json.gz",
    CORPUS / "nvidia" / "a100_compiled_cudagraph_train_2023.json.gz",
    CORPUS / "amd" / "mi300x_compiled_flux_hipgraph.json.gz",
]


def _nearest(parents: list[int], names: list[str], named: Callable[[str], bool]) -> list[int]:
    """Per op, the first op named so on its way up the parent rows (itself first), else -1."""
    out = []
    for row in range(len(names)):
        at = row
        while at >= 0 and not named(names[at]):
            at = parents[at]
        out.append(at)
    return out


def _is_call(name: str) -> bool:
    return name.startswith("## Call CompiledFxGraph") or name.startswith("CompiledFunction")


@pytest.mark.parametrize("path", TRACES, ids=lambda p: "/".join(p.parts[-2:]))
def test_op_context_is_the_nearest_named_op(path: Path) -> None:
    if not path.is_file():
        pytest.skip(f"{path} not found")
    trace = load_trace(path)
    context = provenance._OpContext(trace)
    names = trace.ops[Ops.name].astype(str).tolist()
    parents = trace.ops[Ops.parent_row].astype("Int64").fillna(-1).astype(int).tolist()
    assert context.region.tolist() == _nearest(parents, names, lambda n: n.startswith(REGION))
    backward = _nearest(parents, names, lambda n: n == "CompiledFunctionBackward")
    assert context.backward.tolist() == backward
    assert context.call.tolist() == _nearest(parents, names, _is_call)
    regions = {row: name.removeprefix(REGION) for row, name in enumerate(names)
               if name.startswith(REGION)}  # fmt: skip
    assert context.compile_id == regions


def test_a_compiled_sample_has_compile_ids() -> None:
    context = provenance._OpContext(
        load_trace(SAMPLES / "graph-break" / "compiled.pt.trace.json.gz")
    )
    assert context.compile_id and all("/" in v for v in context.compile_id.values())
    assert (context.region >= 0).any()
    assert isinstance(context.region, np.ndarray)
