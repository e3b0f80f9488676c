"""The compiled-slower attribution's median step per kind (diagnose/rules/slower.py
``_median_step_times``): computed once per side's facts, by a groupby of the kinds'
categorical codes; equal to the last bit to the pivot table of the kinds' texts it replaced
(kept here) on every real trace and on made edge cases."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import traceviz
from tests._reference import real_traces, same
from tests.conftest import kernel, launch, op
from traceviz.diagnose.facts import TraceFacts, facts_of_trace, kernel_times
from traceviz.diagnose.rules import slower
from traceviz.schema import Kernels, Steps


def pivot_median_step_times(facts: TraceFacts) -> pd.Series | None:
    """The replaced form: a pivot table of every kernel's kind text (before e2 of PERF8)."""
    steps = facts.trace.steps
    if len(steps) < slower.MEDIAN_STEPS:
        return None
    starts = steps[Steps.ts_us].to_numpy(dtype=float)
    ends = starts + steps[Steps.dur_us].to_numpy(dtype=float)
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    kernels = facts.kernels
    ts = kernels[Kernels.ts_us].to_numpy(dtype=float, na_value=np.nan)
    step = np.searchsorted(starts, ts, side="right") - 1
    inside = (step >= 0) & (ts < ends[np.clip(step, 0, None)])
    frame = pd.DataFrame({
        "kind": kernels["kind"].astype(object).to_numpy()[inside],
        "step": step[inside],
        "time": kernel_times(kernels)[inside],
    })  # fmt: skip
    table = frame.pivot_table(index="kind", columns="step", values="time", aggfunc="sum")
    table = table.reindex(columns=range(len(starts))).fillna(0.0)
    return table.median(axis=1)


def _agree(facts: TraceFacts) -> Any:
    got, want = slower._median_steps(facts), pivot_median_step_times(facts)
    if want is None:
        assert got is None
        return None
    assert got is not None
    same(got, want)
    assert got.index.name == want.index.name and list(got.index) == list(want.index)
    return got


@pytest.mark.parametrize("path", real_traces())
def test_median_steps_equal_the_pivot_table(path: Path | None) -> None:
    trace = traceviz.load(path)
    _agree(facts_of_trace(trace))


def _steps_trace(
    tmp_trace: Callable[..., Path], kernels_in: list[int], n_steps: int = 4
) -> traceviz.Trace:
    """``n_steps`` steps; step i holds ``kernels_in[i]`` kernels (add, mul, add, …) of
    growing durations; one kernel outside every step."""
    events: list[dict[str, Any]] = []
    corr = 0
    for i in range(n_steps):
        t0 = i * 1000.0
        events.append(op(f"ProfilerStep#{i}", t0, 900.0))
        for k in range(kernels_in[i] if i < len(kernels_in) else 0):
            corr += 1
            name = ("aten::add", "aten::mm")[k % 2]
            start = t0 + 10 + k * 100
            events.append(op(name, start, 50.0))
            events.append(launch("cudaLaunchKernel", start + 5, 10.0, corr))
            events.append(kernel(f"{name[6:]}_kernel_{k}", start + 30, 7.0 + k + i, corr))
    corr += 1
    events.append(launch("cudaLaunchKernel", n_steps * 1000.0 + 5, 10.0, corr))
    events.append(kernel("outside_kernel", n_steps * 1000.0 + 30, 3.0, corr))
    return traceviz.load(tmp_trace(events), cache=False)


@pytest.mark.parametrize(
    "kernels_in",
    [[3, 2, 4, 1], [0, 0, 5, 0], [2], [0, 0, 0, 0], [1, 1, 1, 1]],
    ids=["uneven", "one-step", "first-only", "none-inside", "one-each"],
)
def test_median_steps_made_traces(tmp_trace: Callable[..., Path], kernels_in: list[int]) -> None:
    _agree(facts_of_trace(_steps_trace(tmp_trace, kernels_in)))


def test_under_three_steps_none(tmp_trace: Callable[..., Path]) -> None:
    facts = facts_of_trace(_steps_trace(tmp_trace, [2, 2], n_steps=2))
    assert slower._median_step_times(facts) is None is pivot_median_step_times(facts)


def test_computed_once_per_facts(tmp_trace: Callable[..., Path]) -> None:
    facts = facts_of_trace(_steps_trace(tmp_trace, [3, 2, 4, 1]))
    first = slower._median_step_times(facts)
    assert first is not None and not first.empty
    assert slower._median_step_times(facts) is first
