"""Memory figures add up, on every corpus and sample trace and on random groups: the measured
bytes are the trace file's memcpy/memset bytes and its allocator events are the file's
``[memory]`` events (a plain pass over the raw JSON), the estimated bytes are the per-kernel
sum, the kinds' rows add up to the per-kernel table, and split_bytes gives each group's total
out in full (ties, NaN, inf, negative and zero durations)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import SAMPLES, corpus_params, load_trace
from tests.real_data import raw_events
from traceviz.analysis.traffic import memory as memory_mod
from traceviz.analysis.traffic.memory import (
    AllocatorUse,
    KernelTraffic,
    TrafficByKind,
    memory_traffic,
    split_bytes,
)

COPY_CATS = {"gpu_memcpy", "gpu_memset", "Memcpy", "Memset"}
TRACES = [
    *corpus_params(),
    *(
        pytest.param(p, id=p.relative_to(SAMPLES).as_posix())
        for p in sorted(SAMPLES.glob("**/*.pt.trace.json.gz"))
    ),
]


def _raw(path: Path) -> tuple[int, int]:
    """The file's memcpy/memset bytes (``args.bytes``) and its ``[memory]`` events."""
    events = raw_events(path)
    copied = sum(
        int((e.get("args") or {}).get("bytes") or 0)
        for e in events
        if e.get("ph") == "X" and e.get("cat") in COPY_CATS
    )
    return copied, sum(1 for e in events if e.get("name") == "[memory]")


@pytest.mark.parametrize("path", TRACES)
def test_memory_figures_add_up_to_the_raw_json(path: Path) -> None:
    trace = load_trace(path)
    got = memory_traffic(trace)
    copied, memory_events = _raw(path)
    assert (got.measured_bytes or 0) == copied
    est = got.per_kernel[KernelTraffic.est_bytes].dropna()
    assert got.total_bytes == (int(est.sum()) if len(est) else None)
    assert (got.measured_bytes or 0) + (got.estimated_bytes or 0) == (got.total_bytes or 0)
    assert int(got.by_kind[TrafficByKind.count].sum()) == len(got.per_kernel)
    assert int(got.by_kind[TrafficByKind.est_bytes].sum()) == (got.total_bytes or 0)
    use = memory_mod.allocator_use(trace)
    assert int(use[AllocatorUse.events].sum()) == len(trace.memory) == memory_events


@pytest.mark.parametrize("seed", range(30))
def test_split_bytes_gives_each_group_its_total(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 60))
    groups = rng.integers(0, max(1, n // 2 + 1), size=n).astype(np.int64)
    totals_by_group = rng.integers(0, 10**12, size=groups.max(initial=0) + 1)
    totals = totals_by_group[groups].astype(np.int64)
    dur = rng.choice([0.0, -1.0, np.nan, 1.5, 3.0, 1e-9, 7.25], size=n)
    dur = np.where(rng.random(n) < 0.5, rng.random(n) * 10, dur)
    got = split_bytes(groups, totals, dur)
    assert got.dtype == np.int64 and (got >= 0).all()
    for g in np.unique(groups):
        mine = groups == g
        assert int(got[mine].sum()) == int(totals_by_group[g])
        known = dur[mine] > 0
        if known.all() and mine.sum() > 1:  # by duration: a longer call never gets less
            order = np.argsort(dur[mine], kind="stable")
            assert (np.diff(got[mine][order]) >= -1).all()


def test_split_bytes_single_rows_and_empty() -> None:
    dur = np.array([np.nan, np.inf, -2.0, 0.0, 4.0])
    groups = np.arange(5, dtype=np.int64)
    totals = np.array([3, 5, 7, 11, 2**40 + 1], dtype=np.int64)
    assert split_bytes(groups, totals, dur).tolist() == totals.tolist()  # one row: all of it
    assert split_bytes(groups[:1], totals[:1], dur[:1]).tolist() == [3]
    assert split_bytes(groups[:0], totals[:0], dur[:0]).size == 0


def test_by_kind_leaves_out_a_row_without_a_kind() -> None:
    rng = np.random.default_rng(7)
    n = 12
    per_kernel = pd.DataFrame(
        {
            KernelTraffic.est_bytes: pd.array(rng.integers(0, 10**6, size=n), dtype="Int64"),
            KernelTraffic.basis: pd.Categorical(["estimated"] * n),
        }
    )
    kinds = pd.Series(pd.Categorical(["gemm", "pointwise", "copy"] * 4))
    kinds.iloc[3] = np.nan
    got = memory_mod._by_kind(per_kernel, kinds, np.ones(n))
    assert int(got[TrafficByKind.count].sum()) == n - 1
    kept = per_kernel[KernelTraffic.est_bytes].drop(index=3)
    assert int(got[TrafficByKind.est_bytes].sum()) == int(kept.sum())
