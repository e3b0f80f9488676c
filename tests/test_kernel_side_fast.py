"""kernel_side takes the few columns it reads on the kernel rows (issue 14: it took every column
of the wide kernels table on those rows first); every field equals the form it replaced, kept
here as the reference, on every sample trace and corpus trace."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests._reference import every_trace_file
from tests.conftest import load_trace
from traceviz.analysis.fusion_match import (
    Coded,
    KernelSide,
    _positions,
    _shapes,
    eager_op_base,
    kernel_side,
)
from traceviz.analysis.kernels import classify, issue_us
from traceviz.schema import ActivityKind, Kernels
from traceviz.trace import Trace


def _reference(trace: Trace, kernels) -> KernelSide:  # type: ignore[no-untyped-def]
    import pandas as pd

    is_kernel = (kernels[Kernels.activity] == ActivityKind.KERNEL.value).to_numpy(dtype=bool)
    rows = np.flatnonzero(is_kernel).astype(np.int64)
    part = kernels.iloc[rows]
    name = Coded.of(part[Kernels.name])
    op = Coded.of(part[Kernels.op_name])
    label_codes = np.where(op.codes >= 0, op.codes, len(op.uniques) + name.codes)
    uniques = np.concatenate([op.uniques, name.uniques]).astype(str).astype(object)
    canon, distinct = pd.factorize(uniques)
    label = Coded(
        canon[label_codes].astype(np.int64) if len(canon) else label_codes,
        np.asarray(distinct, dtype=object),
    )
    op_rows = part[Kernels.op_row].to_numpy(dtype=float, na_value=np.nan)
    time = part[Kernels.excl_dur_us].fillna(part[Kernels.dur_us]).fillna(0.0)
    step, pos = _positions(trace, issue_us(part))
    return KernelSide(
        rows=rows,
        label=label,
        base=label.map(lambda s: eager_op_base(s, strip_inplace=True)),
        name=name,
        names=name.values(),
        shape=_shapes(trace.ops, op_rows),
        step=step,
        pos=pos,
        time=time.to_numpy(dtype=float),
    )


def _equal(a: object, b: object) -> None:
    if isinstance(a, Coded):
        assert isinstance(b, Coded)
        np.testing.assert_array_equal(a.codes, b.codes)
        np.testing.assert_array_equal(a.uniques, b.uniques)
    else:
        np.testing.assert_array_equal(a, b)  # type: ignore[arg-type]


def _check(trace: Trace) -> None:
    for kernels in (trace.kernels, classify(trace)):
        got, expected = kernel_side(trace, kernels), _reference(trace, kernels)
        for field in KernelSide.__dataclass_fields__:
            _equal(getattr(got, field), getattr(expected, field))


@pytest.mark.parametrize("path", every_trace_file())
def test_equal_to_the_reference_on_real_traces(path: Path) -> None:
    _check(load_trace(path))
