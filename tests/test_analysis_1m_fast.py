"""Issue 14 (dashboard target, ANALYSIS): the analysis after the load of the 1M-event pair,
each replaced form kept here as the reference and the new one proved equal to the last bit
on every corpus and sample trace (tests/_reference.py), and on tiny made tables for the
edges (missing names, non-categorical columns, CPU traces)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests._reference import real_traces, same
from tests.conftest import load_trace
from traceviz.analysis import comparable
from traceviz.analysis import timeline as timeline_mod
from traceviz.analysis.fusion_match import HEAVY_KEYS
from traceviz.analysis.kernels import Classified, classify
from traceviz.analysis.op_keys import op_key
from traceviz.analysis.timeline import Lane, timeline
from traceviz.diagnose.facts import facts_of_trace, kernel_steps
from traceviz.schema import Kernels, Ops
from traceviz.trace import Trace

# --- timeline: the text columns (kind, source, label) ---------------------------------------


def _texts_reference(column: pd.Series, order: np.ndarray) -> np.ndarray:
    """The replaced form: every row's value as an object, pandas infers the text column."""
    return column.astype(object).to_numpy()[order]


def _labels_reference(trace: object, kernels: pd.DataFrame, order: np.ndarray) -> np.ndarray:
    return timeline_mod._labels(trace, kernels)[order]  # type: ignore[arg-type]


def _timeline_reference(
    trace: object, kernels: pd.DataFrame, steps: np.ndarray, mp: pytest.MonkeyPatch
) -> pd.DataFrame:
    with mp.context() as m:
        m.setattr(timeline_mod, "_texts", _texts_reference)
        m.setattr(timeline_mod, "_ordered_labels", _labels_reference)
        return timeline(trace, kernels, steps, keys=False)  # type: ignore[arg-type]


@pytest.mark.parametrize("path", real_traces())
def test_timeline_text_columns_match_the_object_form(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = load_trace(path)
    kernels = classify(trace)
    steps = kernel_steps(facts_of_trace(trace))
    got = timeline(trace, kernels, steps, keys=False)
    want = _timeline_reference(trace, kernels, steps, monkeypatch)
    same(got, want)
    for column in (Lane.kind, Lane.source, Lane.label):
        assert got[column].dtype == want[column].dtype


def _edited(kernels: pd.DataFrame, **columns: object) -> pd.DataFrame:
    return kernels.assign(**columns)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "edit",
    ["missing-name", "missing-op", "all-missing", "object-columns", "non-text", "empty"],
)
def test_timeline_text_columns_on_made_edges(edit: str, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = load_trace(
        Path(__file__).parent.parent / "sample_traces/h200/block/eager.pt.trace.json.gz"
    )
    kernels = classify(trace)
    n = len(kernels)
    names = kernels[Kernels.name].astype(object).to_numpy().copy()
    ops = kernels[Kernels.op_name].astype(object).to_numpy().copy()
    if edit == "missing-name":
        names[::3] = None
        kernels = _edited(kernels, **{Kernels.name: pd.Categorical(names)})
    elif edit == "missing-op":
        ops[::2] = None
        kernels = _edited(kernels, **{Kernels.op_name: pd.Categorical(ops)})
    elif edit == "all-missing":
        none = pd.Categorical([None] * n, categories=["x"])
        kernels = _edited(kernels, **{Kernels.name: none, Kernels.op_name: none})
    elif edit == "object-columns":
        kernels = _edited(
            kernels,
            **{
                Kernels.name: names,
                Kernels.op_name: ops,
                Classified.kind: kernels[Classified.kind].astype(object),
            },
        )
    elif edit == "non-text":
        kernels = _edited(kernels, **{Kernels.name: pd.Categorical(np.arange(n) % 3)})
    else:
        kernels = kernels.iloc[:0]
    steps = np.zeros(len(kernels), dtype=np.int64)
    got = timeline(trace, kernels, steps, keys=False)
    want = _timeline_reference(trace, kernels, steps, monkeypatch)
    same(got, want)
    assert list(got.dtypes) == list(want.dtypes)


# --- comparable._heavy_signatures: by codes -------------------------------------------------


def _heavy_signatures_reference(
    trace: Trace, kernels: pd.DataFrame, *, inductor: bool
) -> tuple[set[comparable.Signature], int]:
    """The replaced form: the label and every op's Input Dims as objects, pairs de-duplicated
    by pandas."""
    frame = kernels
    if inductor:
        frame = frame[~frame[Kernels.name].astype(object).isin(comparable._inductor_names(kernels))]
    label = frame[Kernels.op_name].astype(object).fillna(frame[Kernels.name].astype(object))
    codes, uniques = pd.factorize(label)
    key_of = np.array([op_key(str(u)) for u in uniques] + [None], dtype=object)
    keys = key_of[codes]
    heavy = np.isin(keys, list(HEAVY_KEYS))
    op_rows = frame[Kernels.op_row].to_numpy(dtype=float, na_value=np.nan)[heavy]
    has_op = ~np.isnan(op_rows)
    dims = np.full(len(op_rows), None, dtype=object)
    if len(trace.ops) and has_op.any():
        all_dims = trace.ops[Ops.input_dims].astype(object).to_numpy()
        dims[has_op] = all_dims[op_rows[has_op].astype(np.int64)]
    pairs = pd.DataFrame({"key": keys[heavy], "dims": dims}).drop_duplicates()
    sigs = {
        (str(key), comparable._matrix_dims(text))
        for key, text in zip(pairs["key"], pairs["dims"], strict=True)
    }
    return sigs, int(heavy.sum())


@pytest.mark.parametrize("path", real_traces())
@pytest.mark.parametrize("inductor", [False, True])
def test_heavy_signatures_match_the_object_form(path: Path, inductor: bool) -> None:
    trace = load_trace(path)
    kernels = comparable._kernel_rows(trace)
    got = comparable._heavy_signatures(trace, kernels, inductor=inductor)
    assert got == _heavy_signatures_reference(trace, kernels, inductor=inductor)


@pytest.mark.parametrize("inductor", [False, True])
def test_heavy_signatures_on_made_kernels(inductor: bool) -> None:
    """Missing op names fall back to the kernel name, missing both is no label, an op without
    shapes is None, plain object columns work as categoricals do."""
    trace = load_trace(
        Path(__file__).parent.parent / "sample_traces/h200/block/eager.pt.trace.json.gz"
    )
    n_ops = len(trace.ops)
    kernels = pd.DataFrame(
        {
            Kernels.name: ["ampere_sgemm_128x64_nn", "triton_poi_fused_add_0", None, "k", "k"],
            Kernels.op_name: [None, "aten::mm", None, "aten::addmm", "aten::conv2d"],
            Kernels.op_row: pd.array([None, 0, 1, n_ops - 1, 2], dtype="Int64"),
        }
    )
    for frame in (kernels, kernels.astype({Kernels.name: "category", Kernels.op_name: "category"})):
        got = comparable._heavy_signatures(trace, frame, inductor=inductor)
        assert got == _heavy_signatures_reference(trace, frame, inductor=inductor)
        assert got[1] == (2 if inductor else 3)  # mm/addmm/conv2d; the Inductor kernel left out
