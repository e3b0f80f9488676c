"""What the reference tests share (the tests that keep a replaced implementation and prove the
new one equal to it): the real traces to run them on, and equality to the last bit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.conftest import SAMPLES, corpus_params

SAMPLE_TRACES = sorted(SAMPLES.glob("*/*.pt.trace.json.gz")) + sorted(
    SAMPLES.glob("h200/*/*.pt.trace.json.gz")
)


def real_traces() -> list[object]:
    """pytest params: every corpus trace, then every sample trace (H200 runs included)."""
    return [
        *corpus_params(),
        *(pytest.param(p, id=str(p.relative_to(SAMPLES))) for p in SAMPLE_TRACES),
    ]


def same(got: object, want: object) -> None:
    """Equal to the last bit: frames, arrays, tuples of them, scalars."""
    if isinstance(got, pd.DataFrame):
        pd.testing.assert_frame_equal(got, want, check_exact=True)  # type: ignore[arg-type]
    elif isinstance(got, pd.Series):
        pd.testing.assert_series_equal(got, want, check_exact=True)  # type: ignore[arg-type]
    elif isinstance(got, np.ndarray):
        assert isinstance(want, np.ndarray) and got.dtype == want.dtype
        assert np.array_equal(got, want, equal_nan=got.dtype.kind == "f")
    elif isinstance(got, tuple | list):
        assert isinstance(want, tuple | list) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            same(g, w)
    else:
        assert got == want or (got != got and want != want), (got, want)
