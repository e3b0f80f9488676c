"""The provenance op context reads each region's kind and op row once, as arrays (issue 14),
instead of a pandas filter per region kind and ``iterrows``; kept here, the per-kind form it
replaced gives the same arrays and compile ids on every sample and corpus trace."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.conftest import SAMPLES, corpus_files, load_trace
from traceviz.analysis import provenance
from traceviz.schema import RegionKind
from traceviz.schema import Regions as R

TRACES = [*sorted(SAMPLES.glob("**/*.pt.trace.json.gz")), *corpus_files()]


def _nearest_reference(context, regions: pd.DataFrame, kinds: tuple[str, ...]) -> np.ndarray:  # type: ignore[no-untyped-def]
    seed = np.full(len(context.parent), -1, dtype=np.int64)
    marked = regions.loc[regions[R.kind].astype(str).isin(kinds), R.op_row].dropna()
    rows = marked.astype(np.int64).to_numpy()
    seed[rows] = rows
    return provenance.propagate_down(context.parent, context.depth, seed)


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_op_context_equals_the_per_kind_form(path) -> None:  # type: ignore[no-untyped-def]
    trace = load_trace(path)
    regions = trace.regions
    context = provenance._OpContext(trace)
    compiled = (RegionKind.COMPILED_REGION.value,)
    backward = (RegionKind.COMPILED_FUNCTION_BACKWARD.value,)
    np.testing.assert_array_equal(
        context.call, _nearest_reference(context, regions, provenance._CALL_KINDS)
    )
    np.testing.assert_array_equal(context.region, _nearest_reference(context, regions, compiled))
    np.testing.assert_array_equal(context.backward, _nearest_reference(context, regions, backward))
    reference = {
        int(r[R.op_row]): f"{r[R.frame_id]}/{r[R.recompile_id]}"
        for _, r in regions.iterrows()
        if r[R.kind] == RegionKind.COMPILED_REGION.value and pd.notna(r[R.op_row])
    }
    assert context.compile_id == reference


def test_a_compiled_sample_has_compile_ids() -> None:
    context = provenance._OpContext(
        load_trace(SAMPLES / "graph-break" / "compiled.pt.trace.json.gz")
    )
    assert context.compile_id and all("/" in v for v in context.compile_id.values())
    assert (context.region >= 0).any()
