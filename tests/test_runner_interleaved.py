"""Eager and compiled step times are taken interleaved, so that load which comes and goes on a
shared machine weighs on both sides alike (the verdict compares their medians)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from traceviz.runner.measure import interleaved_samples, timing_method
from traceviz.runner.progress import Silent


def test_each_round_runs_every_call_once_in_turn() -> None:
    order: list[str] = []
    synced: list[int] = []
    calls = {"eager": lambda: order.append("eager"), "compiled": lambda: order.append("compiled")}
    samples = interleaved_samples(calls, lambda: synced.append(1), 4, Silent())
    assert order == ["eager", "compiled"] * 4
    assert {name: len(values) for name, values in samples.items()} == {"eager": 4, "compiled": 4}
    assert all(v >= 0 for values in samples.values() for v in values)
    assert len(synced) == 2 * len(order)  # before and after every timed step


def test_drift_weighs_on_both_sides_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine that slows down as the run goes on (a fake clock: each step takes 1 ms more
    than the one before): timed one after the other, the side timed last looks 2.6x slower;
    interleaved, both see the same slowdown."""
    from traceviz.runner import measure

    now = {"t": 0.0, "cost": 0.0}
    monkeypatch.setattr(measure.time, "perf_counter", lambda: now["t"])

    def step() -> None:
        now["cost"] += 1e-3
        now["t"] += now["cost"]

    samples = interleaved_samples({"eager": step, "compiled": step}, lambda: None, 6, Silent())
    eager, compiled = sum(samples["eager"]), sum(samples["compiled"])
    assert compiled / eager == pytest.approx(42 / 36)  # steps 2,4,..,12 ms against 1,3,..,11


def test_blocks_time_each_side_on_its_own_warm_caches() -> None:
    order: list[str] = []
    calls = {"eager": lambda: order.append("e"), "compiled": lambda: order.append("c")}
    samples = interleaved_samples(calls, lambda: None, 2, Silent(), block=3)
    # one untimed step at each switch, then three timed ones
    assert "".join(order) == "eeeecccceeeecccc"
    assert {name: len(values) for name, values in samples.items()} == {"eager": 6, "compiled": 6}


def test_the_last_block_is_cut_to_the_samples_asked_for() -> None:
    calls = {"eager": lambda: None, "compiled": lambda: None}
    samples = interleaved_samples(calls, lambda: None, 2, Silent(), block=5, samples_per_call=7)
    assert {name: len(values) for name, values in samples.items()} == {"eager": 7, "compiled": 7}


def test_the_method_says_so() -> None:
    import torch

    assert "alternate" in timing_method(torch.device("cpu"), interleaved=True)
    assert "alternate" not in timing_method(torch.device("cpu"))
