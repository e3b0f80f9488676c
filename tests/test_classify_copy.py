"""``classify`` returns a table of its own: an in-place edit of a side's kernels never changes
the trace's. Under copy-on-write (pandas 3, or pandas 2 with the option on) a shallow copy does
that; without it (pandas 2's default) the columns are copied."""

from __future__ import annotations

import numpy as np
import pytest

import traceviz
from tests.conftest import SAMPLES
from traceviz.analysis import kernels as kernels_mod
from traceviz.schema import Kernels

TRACE = SAMPLES / "pointwise" / "compiled.pt.trace.json.gz"


@pytest.mark.parametrize("cow", [True, False])
def test_an_edit_of_the_classified_table_never_reaches_the_trace(
    cow: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kernels_mod, "copies_on_write", lambda: cow)
    trace = traceviz.load(TRACE, cache=False)
    before = trace.kernels[Kernels.dur_us].to_numpy().copy()
    out = kernels_mod.classify(trace)
    shared = np.shares_memory(
        out[Kernels.dur_us].to_numpy(), trace.kernels[Kernels.dur_us].to_numpy()
    )
    assert shared is cow  # shallow only where pandas copies on write
    out.loc[out.index[0], Kernels.dur_us] = -1.0
    np.testing.assert_array_equal(trace.kernels[Kernels.dur_us].to_numpy(), before)


def test_pandas_3_copies_on_write() -> None:
    import pandas as pd

    if int(pd.__version__.split(".")[0]) >= 3:
        assert kernels_mod.copies_on_write()
