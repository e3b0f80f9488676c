"""Issue 14, PERF6 (BIG): analysis and diagnosis pieces made faster for the dashboard on two
1M-event traces, against the plain code they replaced, kept here as references: every result
must be equal to the last bit, on every corpus and sample trace, and on hand-made edge cases."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd
import pytest

from tests.conftest import SAMPLES, corpus_params, load_trace
from traceviz.analysis import chains as chains_mod
from traceviz.analysis.chains import OPTIMIZER
from traceviz.schema import OpCategory, Ops

SAMPLE_TRACES = sorted(SAMPLES.glob("*/*.pt.trace.json.gz")) + sorted(
    SAMPLES.glob("h200/*/*.pt.trace.json.gz")
)


def _traces() -> list[object]:
    return [
        *corpus_params(),
        *(pytest.param(p, id=str(p.relative_to(SAMPLES))) for p in SAMPLE_TRACES),
    ]


def _same(got: object, want: object) -> None:
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
            _same(g, w)
    else:
        assert got == want or (got != got and want != want), (got, want)


# --- chains._op_context ---------------------------------------------------------------------


def _op_context_reference(
    ops: pd.DataFrame,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """chains._op_context before PERF6: integer columns through float, the category by isin,
    one pass over every op per depth level."""
    n = len(ops)
    names = ops[Ops.name].astype("category")
    codes = names.cat.codes.to_numpy()
    distinct = [str(c) for c in names.cat.categories]
    is_aten = np.array([c.startswith("aten::") for c in distinct] + [False], dtype=bool)
    in_optimizer = np.array([bool(OPTIMIZER.search(c)) for c in distinct] + [False], dtype=bool)
    parent = ops[Ops.parent_row].to_numpy(dtype=float, na_value=-1.0).astype(np.int64)
    parent = np.where((parent >= 0) & (parent < n), parent, -1)
    depth = ops[Ops.depth].to_numpy(dtype=float, na_value=0.0).astype(np.int64)
    aten = is_aten[codes]
    optimizer = in_optimizer[codes].copy()
    rows = np.arange(n, dtype=np.int64)
    python = ops[Ops.category].isin([OpCategory.PYTHON_FUNCTION.value]).to_numpy(dtype=bool)
    transparent = aten | python
    holder = np.where(transparent, -1, rows)
    top = rows.copy()
    for level in np.unique(depth[parent >= 0]):
        at = rows[(depth == level) & (parent >= 0)]
        up = parent[at]
        optimizer[at] |= optimizer[up]
        holder[at] = np.where(transparent[at], holder[up], at)
        top[at] = np.where(aten[at] & aten[up], top[up], at)
    context = np.where(parent >= 0, holder[np.maximum(parent, 0)], -1)
    return context, top, optimizer


@pytest.mark.parametrize("path", _traces())
def test_op_context_equals_reference_on_real_traces(path: Path) -> None:
    ops = load_trace(path).ops
    _same(chains_mod._op_context(ops), _op_context_reference(ops))


def test_op_context_equals_reference_on_odd_columns() -> None:
    """Missing parents and depths, an out-of-range parent, a category without
    python_function, and the same columns as plain (non-nullable, non-categorical) dtypes."""
    ops = pd.DataFrame(
        {
            Ops.name: pd.Categorical(
                ["ProfilerStep#1", "aten::add", "aten::copy_", "Optimizer.step#SGD", None, "x"]
            ),
            Ops.parent_row: pd.array([None, 0, 1, 0, 3, 99], dtype="Int64"),
            Ops.depth: pd.array([0, 1, 2, 1, None, 1], dtype="Int32"),
            Ops.category: pd.Categorical(["user_annotation", "cpu_op", "cpu_op", "x", None, "y"]),
        }
    )
    _same(chains_mod._op_context(ops), _op_context_reference(ops))
    plain = ops.assign(
        **{
            Ops.parent_row: ops[Ops.parent_row].to_numpy(dtype=float, na_value=np.nan),
            Ops.depth: ops[Ops.depth].to_numpy(dtype=float, na_value=np.nan),
            Ops.category: ops[Ops.category].astype(object),
        }
    )
    _same(chains_mod._op_context(plain), _op_context_reference(plain))
    with_python = ops.assign(
        **{Ops.category: pd.Categorical(["python_function"] * 3 + ["cpu_op"] * 3)}
    )
    _same(chains_mod._op_context(with_python), _op_context_reference(with_python))
    _same(chains_mod._op_context(ops.iloc[:0]), _op_context_reference(ops.iloc[:0]))
