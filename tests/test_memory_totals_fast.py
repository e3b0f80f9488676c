"""memory.split_bytes (groups of one row without pandas) and memory._sum_or_none (on the
arrays) made faster for issue 14 (PERF-SMALL2), against the pandas forms they replaced, kept
here as references: equal to the last bit on every corpus and sample trace, and on random
groups with ties, NaN, inf, negative and zero durations."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd
import pytest

from tests.conftest import SAMPLES, corpus_params, load_trace
from traceviz.analysis import memory as memory_mod
from traceviz.analysis.memory import (
    AllocatorUse,
    Basis,
    KernelTraffic,
    TrafficByKind,
    memory_traffic,
    split_bytes,
)
from traceviz.schema import Memory

SAMPLE_TRACES = sorted(SAMPLES.glob("*/*.pt.trace.json.gz")) + sorted(
    SAMPLES.glob("h200/*/*.pt.trace.json.gz")
)


def _traces() -> list[object]:
    return [
        *corpus_params(),
        *(pytest.param(p, id=str(p.relative_to(SAMPLES))) for p in SAMPLE_TRACES),
    ]


def _split_bytes_pandas(
    groups: npt.NDArray[np.int64], totals: npt.NDArray[np.int64], dur: npt.NDArray[np.float64]
) -> npt.NDArray[np.int64]:
    """The replaced split_bytes: every group through pandas' groupby."""
    d = np.where(dur >= 0, dur, np.nan)
    frame = pd.DataFrame({"g": groups, "d": d, "unknown": np.isnan(d)})
    by = frame.groupby("g", sort=False)
    n = by["d"].transform("size").to_numpy(dtype=float)
    dsum = by["d"].transform("sum").to_numpy(dtype=float)
    even = by["unknown"].transform("max").to_numpy(dtype=bool) | ~(dsum > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        weight = np.where(even, 1.0 / n, d / dsum)
    position = by.cumcount().to_numpy()
    cum = pd.Series(weight).groupby(groups, sort=False).cumsum().to_numpy(dtype=float, copy=True)
    cum[position == n - 1] = 1.0
    before = np.where(position == 0, 0.0, cum - weight)
    totals_f = totals.astype(float)
    return (np.rint(totals_f * cum) - np.rint(totals_f * before)).astype(np.int64)


def _sum_or_none_pandas(per_kernel: pd.DataFrame, *bases: Basis | None) -> int | None:
    """The replaced _sum_or_none: isin, dropna and sum on the Series."""
    est = per_kernel[KernelTraffic.est_bytes]
    if bases != (None,):
        est = est[per_kernel[KernelTraffic.basis].isin([b.value for b in bases if b])]
    est = est.dropna()
    return int(est.sum()) if len(est) else None


def _totals(traffic: memory_mod.MemoryTraffic) -> tuple[int | None, ...]:
    return (
        traffic.total_bytes,
        traffic.measured_bytes,
        traffic.estimated_bytes,
        traffic.compiler_bytes,
    )


@pytest.mark.parametrize("path", _traces())
def test_memory_traffic_matches_the_pandas_forms_on_real_traces(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = load_trace(path)
    got = memory_traffic(trace)
    with monkeypatch.context() as m:
        m.setattr(memory_mod, "split_bytes", _split_bytes_pandas)
        m.setattr(memory_mod, "_sum_or_none", _sum_or_none_pandas)
        want = memory_traffic(trace)
    pd.testing.assert_frame_equal(got.per_kernel, want.per_kernel, check_exact=True)
    pd.testing.assert_frame_equal(got.by_kind, want.by_kind, check_exact=True)
    assert _totals(got) == _totals(want)
    for bases in [(None,), (Basis.MEASURED,), (Basis.ESTIMATED, Basis.COMPILER), (Basis.NONE,)]:
        assert memory_mod._sum_or_none(got.per_kernel, *bases) == _sum_or_none_pandas(
            got.per_kernel, *bases
        )
    # credits add up to at most what was measured: the estimated bytes are the per-kernel sum
    est = got.per_kernel[KernelTraffic.est_bytes].dropna()
    assert got.total_bytes == (int(est.sum()) if len(est) else None)
    assert (got.measured_bytes or 0) + (got.estimated_bytes or 0) == (got.total_bytes or 0)


@pytest.mark.parametrize("seed", range(30))
def test_split_bytes_matches_the_pandas_form_on_random_groups(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 60))
    groups = rng.integers(0, max(1, n // 2 + 1), size=n).astype(np.int64)
    totals_by_group = rng.integers(0, 10**12, size=groups.max(initial=0) + 1)
    totals = totals_by_group[groups].astype(np.int64)
    dur = rng.choice([0.0, -1.0, np.nan, np.inf, 1.5, 3.0, 1e-9, 7.25], size=n)
    dur = np.where(rng.random(n) < 0.5, rng.random(n) * 10, dur)
    got = split_bytes(groups, totals, dur)
    want = _split_bytes_pandas(groups, totals, dur)
    assert got.dtype == want.dtype and np.array_equal(got, want)
    for g in np.unique(groups):  # each group's shares add up to its total (an inf duration
        if np.isinf(dur[groups == g]).any() and (groups == g).sum() > 1:  # breaks it: as before
            continue
        assert int(got[groups == g].sum()) == int(totals_by_group[g])


def test_split_bytes_single_rows_and_empty() -> None:
    dur = np.array([np.nan, np.inf, -2.0, 0.0, 4.0])
    groups = np.arange(5, dtype=np.int64)
    totals = np.array([3, 5, 7, 11, 2**53 + 1], dtype=np.int64)
    got = split_bytes(groups, totals, dur)
    assert np.array_equal(got, _split_bytes_pandas(groups, totals, dur))
    assert split_bytes(groups[:1], totals[:1], dur[:1]).tolist() == [3]
    assert split_bytes(groups[:0], totals[:0], dur[:0]).size == 0


def _by_device_grouped(memory: pd.DataFrame) -> list[tuple[tuple[object, object], pd.DataFrame]]:
    """The replaced grouping: always pandas' groupby."""
    keys = [Memory.device_type, Memory.device]
    return list(memory.groupby(keys, observed=True, dropna=False))


@pytest.mark.parametrize("path", _traces())
def test_allocator_use_matches_the_groupby_form_on_real_traces(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = load_trace(path)
    got = memory_mod.allocator_use(trace)
    with monkeypatch.context() as m:
        m.setattr(memory_mod, "_by_device", _by_device_grouped)
        want = memory_mod.allocator_use(trace)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    # the devices' events add up to the trace's memory events
    assert int(got[AllocatorUse.events].sum()) == len(trace.memory)


def _memory(device_type: list[object], device: list[object]) -> pd.DataFrame:
    n = len(device)
    return pd.DataFrame(
        {
            Memory.ts_us: np.arange(n, dtype=float),
            Memory.device_type: pd.Categorical(device_type, categories=["cpu", "cuda"]),
            Memory.device: pd.array(device, dtype="Int32"),
            Memory.bytes: pd.array([5, -3, None, 7][:n], dtype="Int64"),
            Memory.total_allocated_bytes: pd.array([5, 2, None, 9][:n], dtype="Int64"),
        }
    )


@pytest.mark.parametrize(
    ("device_type", "device"),
    [
        (["cuda"] * 4, [0, 0, 0, 0]),
        (["cuda", "cuda", "cpu", "cuda"], [0, 0, -1, 0]),
        (["cuda"] * 4, [0, 1, 0, 1]),
        (["cuda"] * 4, [0, None, 0, 0]),
        (["cuda", None, "cuda", "cuda"], [0, 0, 0, 0]),
        ([None] * 4, [0, 0, 0, 0]),
        (["cpu"], [-1]),
    ],
)
def test_by_device_matches_groupby_on_mixed_and_missing_devices(
    device_type: list[object], device: list[object]
) -> None:
    memory = _memory(device_type, device)
    got = memory_mod._by_device(memory)
    want = _by_device_grouped(memory)
    assert len(got) == len(want)
    for (gk, gf), (wk, wf) in zip(got, want, strict=True):
        assert gk == wk
        pd.testing.assert_frame_equal(gf, wf, check_exact=True)


@pytest.mark.parametrize("path", _traces())
def test_by_kind_matches_the_groupby_form_on_real_traces(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = load_trace(path)
    got = memory_traffic(trace)
    with monkeypatch.context() as m:
        m.setattr(memory_mod, "_by_kind", memory_mod._by_kind_grouped)
        want = memory_traffic(trace)
    pd.testing.assert_frame_equal(got.by_kind, want.by_kind, check_exact=True)
    # the kinds' counts and bytes add up to the per-kernel table's
    assert int(got.by_kind[TrafficByKind.count].sum()) == len(got.per_kernel)
    assert int(got.by_kind[TrafficByKind.est_bytes].sum()) == (got.total_bytes or 0)


def _per_kernel(rng: np.random.Generator, n: int) -> tuple[pd.DataFrame, pd.Series, np.ndarray]:
    est = pd.array(rng.integers(0, 10**15, size=n), dtype="Int64")
    est[rng.random(n) < 0.3] = pd.NA
    bases = [b.value for b in Basis]
    per_kernel = pd.DataFrame(
        {
            KernelTraffic.est_bytes: est,
            KernelTraffic.basis: pd.Categorical.from_codes(
                rng.integers(0, len(bases), size=n), categories=pd.Index(bases)
            ),
        }
    )
    names = ["gemm", "pointwise", "reduction", "copy", "other"]
    kinds = pd.Series(pd.Categorical.from_codes(rng.integers(0, 5, size=n), categories=names))
    dur = rng.choice([0.0, 1.0, 2.5, np.nan, 1e-7, 3.0], size=n)
    return per_kernel, kinds, np.where(rng.random(n) < 0.5, rng.random(n) * 100, dur)


@pytest.mark.parametrize("seed", range(30))
def test_by_kind_matches_the_groupby_form_on_random_kernels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    per_kernel, kinds, dur = _per_kernel(rng, int(rng.integers(1, 80)))
    got = memory_mod._by_kind(per_kernel, kinds, dur)
    want = memory_mod._by_kind_grouped(per_kernel, kinds, dur)
    pd.testing.assert_frame_equal(got, want, check_exact=True)


def test_by_kind_ties_all_nan_times_and_missing_kinds() -> None:
    rng = np.random.default_rng(7)
    per_kernel, kinds, _ = _per_kernel(rng, 12)
    for dur in [np.ones(12), np.full(12, np.nan), np.zeros(12)]:  # every kind tied
        got = memory_mod._by_kind(per_kernel, kinds, dur)
        pd.testing.assert_frame_equal(
            got, memory_mod._by_kind_grouped(per_kernel, kinds, dur), check_exact=True
        )
    missing = kinds.copy()
    missing.iloc[3] = np.nan  # the groupby form, which leaves the row out
    got = memory_mod._by_kind(per_kernel, missing, np.ones(12))
    assert int(got[TrafficByKind.count].sum()) == 11
