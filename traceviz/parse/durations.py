"""Complete events whose duration cannot be a measurement, counted and left out.

A duration below zero or infinite (``-500``, ``Infinity``) is not something a profiler measured:
kept, it would turn summed kernel time negative and idle shares above 100%. Such an event
carries no row and is counted under ``ignored["bad_duration"]`` (conservation still holds). A
missing or ``NaN`` duration is kept: the row exists, its duration is unknown (``NaN``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import numpy as np

from traceviz.parse.routing import KERNELS, LAUNCHES, OPS, SPANS
from traceviz.parse.source import EventSource

BAD_DURATION = "bad_duration"
TIMED_TABLES = (KERNELS, OPS, LAUNCHES, SPANS)  # the tables of complete ("X") events


def impossible(events: EventSource) -> np.ndarray:
    """Boolean mask: the events whose ``dur`` is negative or ±infinite."""
    durs = events.floats("dur")
    return (durs < 0) | np.isinf(durs)


def drop_impossible(
    parts: dict[str, EventSource], labels: Iterable[str], ignored: Counter[str]
) -> None:
    """Remove the events of impossible duration from ``parts[label]`` for each label (in
    place) and count them in ``ignored[BAD_DURATION]``."""
    for label in labels:
        events = parts[label]
        if not len(events):
            continue
        bad = impossible(events)
        if bad.any():
            parts[label] = events.take(np.flatnonzero(~bad))
            ignored[BAD_DURATION] += int(bad.sum())
