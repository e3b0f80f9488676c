"""Latency of every backend, measured round-robin at one thread count.

Each round calls every backend once, in turn (eager, compile, then each ORT level), so slow
drift (clock frequency, other load on a shared machine) hits all of them alike; ``rounds``
samples per backend after ``warmup`` untimed rounds. Times are microseconds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from traceviz.runner.measure import interleaved_samples, timing_stats
from traceviz.runner.progress import Reporter
from traceviz.runs.runinfo_backends import Latency, LatencyRow


def round_robin(
    calls: dict[str, Callable[[], Any]],
    *,
    rounds: int,
    warmup: int,
    threads: int,
    sync: Callable[[], None],
    reporter: Reporter,
) -> Latency:
    """Time ``calls`` (backend name → one step; ``"eager"`` first) round-robin."""
    for _ in range(warmup):
        for call in calls.values():
            call()
    sync()
    samples = interleaved_samples(calls, sync, rounds, reporter)
    stats = {name: timing_stats(values) for name, values in samples.items()}
    eager = stats["eager"].median_us
    rows = [
        LatencyRow(
            backend=name,
            median_us=s.median_us,
            iqr_us=s.iqr_us,
            samples_us=s.samples_us,
            ratio_to_eager=s.median_us / eager if eager > 0 else float("nan"),
        )
        for name, s in stats.items()
    ]
    return Latency(method="round-robin", threads=threads, rows=rows)
