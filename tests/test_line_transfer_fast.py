"""twin_rows on NumPy codes (issue 14: was a DataFrame of string keys, a groupby cumcount and
a five-key merge) equals the pandas form it replaced, kept here as the reference, on every
sample run (measured eager trace against its lines trace, and each trace against itself), the
corpus traces against themselves and hand-made edge cases."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.conftest import CORPUS, SAMPLES, corpus_files, kernel, launch, load_trace, op
from traceviz import schema
from traceviz.analysis.kernels import issue_us
from traceviz.analysis.line_transfer import transfer_lines, twin_rows
from traceviz.analysis.provenance import eager_kernel_lines
from traceviz.analysis.windows import step_windows
from traceviz.rundir import read_run_dir
from traceviz.schema import KernelLines as KL
from traceviz.schema import Kernels as K
from traceviz.trace import Trace

RUNS = sorted(p.parent.relative_to(SAMPLES).as_posix() for p in SAMPLES.glob("**/run.json"))
_KEYS = ["step", "device", "stream", "name", "k"]


def _ints(column: pd.Series) -> np.ndarray:
    return np.asarray(column.astype("Int64").fillna(-1), dtype=np.int64)


def _keys_reference(trace: Trace) -> pd.DataFrame:
    kernels = trace.kernels
    issue = issue_us(kernels)
    windows = step_windows(trace)
    ordinal = np.argsort(np.argsort(windows.start_us, kind="stable"), kind="stable")
    window = windows.index_of(issue) if len(kernels) else np.zeros(0, dtype=np.int64)
    step = np.where(window >= 0, ordinal[np.clip(window, 0, None)], -1)
    keys = pd.DataFrame(
        {
            "step": step.astype(np.int64),
            "device": _ints(kernels[K.device]),
            "stream": _ints(kernels[K.stream]),
            "name": kernels[K.name].astype(str).to_numpy(),
            "issue": issue,
            "ts": kernels[K.ts_us].to_numpy(dtype=float, na_value=np.nan),
        }
    )
    order = np.lexsort((np.arange(len(keys)), keys["ts"].to_numpy(), keys["issue"].to_numpy()))
    ranked = keys.iloc[order]
    k = ranked.groupby(["step", "device", "stream", "name"], sort=False).cumcount()
    keys["k"] = k.sort_index().to_numpy(dtype=np.int64)
    return keys[_KEYS]


def _twin_rows_reference(measured: Trace, marked: Trace) -> np.ndarray:
    mine, theirs = _keys_reference(measured), _keys_reference(marked)
    out = np.full(len(mine), -1, dtype=np.int64)
    if mine.empty or theirs.empty:
        return out
    pairs = mine.reset_index(names="row").merge(
        theirs.reset_index(names="twin"), on=_KEYS, how="inner"
    )
    out[pairs["row"].to_numpy(dtype=np.int64)] = pairs["twin"].to_numpy(dtype=np.int64)
    return out


def _transfer_reference(measured: Trace, marked: Trace) -> pd.DataFrame:
    twins = _twin_rows_reference(measured, marked)
    own = eager_kernel_lines(marked)
    measured_rows = np.flatnonzero(twins != -1)
    if own.empty or not len(measured_rows):
        return schema.empty_table(schema.KERNEL_LINES_DTYPES)
    back = pd.Series(measured_rows, index=twins[measured_rows])  # marked row → measured row
    lines = own[own[KL.kernel_row].isin(back.index)]
    lines = lines.assign(**{KL.kernel_row: back.loc[lines[KL.kernel_row].to_numpy()].to_numpy()})
    lines = lines.sort_values(KL.kernel_row, kind="stable").reset_index(drop=True)
    return schema.conform(lines, schema.KERNEL_LINES_DTYPES)


def _same(a: Trace, b: Trace) -> np.ndarray:
    got = twin_rows(a, b)
    np.testing.assert_array_equal(got, _twin_rows_reference(a, b))
    assert got.dtype == np.int64 and len(got) == len(a.kernels)
    transfer = transfer_lines(a, b)
    pd.testing.assert_frame_equal(transfer.lines, _transfer_reference(a, b), check_exact=True)
    assert transfer.matched == int((got >= 0).sum()) and transfer.located == len(transfer.lines)
    return got


@pytest.mark.parametrize("run", RUNS)
def test_equal_to_the_pandas_form_on_sample_runs(run: str) -> None:
    r = read_run_dir(SAMPLES / run)
    eager, compiled = load_trace(r.eager), load_trace(r.compiled)
    if r.eager_lines:
        marked = load_trace(r.eager_lines)
        twins = _same(eager, marked)
        assert (twins >= 0).any()  # the lines trace is the same steps again: twins exist
        _same(marked, eager)
    mine = _same(eager, eager)  # every kernel is its own twin
    np.testing.assert_array_equal(mine, np.arange(len(eager.kernels)))
    _same(eager, compiled)
    _same(compiled, eager)


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus not found at {CORPUS}")
@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.name)
def test_equal_to_the_pandas_form_on_corpus_traces(path) -> None:  # type: ignore[no-untyped-def]
    trace = load_trace(path)
    _same(trace, trace)


def test_edge_cases(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    import traceviz

    def trace(names: list[str], stream: int = 7) -> Trace:
        events = [op("ProfilerStep#1", ts=0, dur=100, cat="user_annotation")]
        for i, name in enumerate(names):
            events += [
                op("aten::x", ts=10 * i + 1, dur=5),
                launch("cudaLaunchKernel", ts=10 * i + 2, dur=2, correlation=i + 1),
                kernel(name, ts=10 * i + 5, dur=1, correlation=i + 1, stream=stream),
            ]
        return traceviz.load(tmp_trace(events), cache=False)

    a = trace(["k1", "k2", "k1", "k3"])
    b = trace(["k1", "k1", "k2"])
    np.testing.assert_array_equal(_same(a, b), [0, 2, 1, -1])
    _same(b, a)
    _same(a, trace(["k1", "k2"], stream=8))  # another stream: no twins
    _same(a, trace([]))
    _same(trace([]), a)
