"""Split one profiler session that alternated eager and compiled steps into one trace per side.

Kineto records one session at a time, so eager and compiled are profiled *interleaved* in one
session (:func:`traceviz.runner.measure.profile_interleaved`): each ``ProfilerStep#N`` runs
one side, following a *plan* (one ``(side, kept)`` entry per profiler step, its index the
step number ``N``). :func:`split_trace` writes each side's kept steps to that side's file, in
the format a session of its own would have written: the same top-level keys, the metadata
events, and its kept steps renumbered ``ProfilerStep#2``, ``#3``, … in the order they ran
(as after the schedule's wait and warm-up steps). The profiler's own span (``PyTorch Profiler
(0)``) and iteration mark are kept in both, moved to the side's first step.

Each event goes to the step that began last at or before its start (``ts``): CPU events lie
inside their step's span, and a device event of a step starts after its launch and before
the step's closing sync returns, so before the next step begins. Events of steps not kept
(the profiler's wait and warm-up steps, each block's first step after the other side ran) and
before the first step are dropped. Standard library only (the trace is plain JSON).
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: The name of a step span, CPU (``user_annotation``) and device (``gpu_user_annotation``).
STEP_NAME = re.compile(r"^ProfilerStep#(\d+)$")
#: The first step number of a trace (the schedule's wait and warm-up steps come before).
FIRST_STEP = 2
_PROFILER_SPAN_CATEGORY = "Trace"  # "PyTorch Profiler (0)": the whole session's span

Plan = Sequence[tuple[str, bool]]


def split_trace(raw: Path, plan: Plan, outputs: dict[str, Path]) -> None:
    """Write each side's kept steps of the session trace ``raw`` to ``outputs[side]`` (gzip
    when the name ends in ``.gz``). ``plan[N]`` is ``(side, kept)`` for ``ProfilerStep#N``.
    Raises ``ValueError`` when a side in ``outputs`` has no kept step in the trace."""
    with (gzip.open if raw.suffix == ".gz" else open)(raw, "rt", encoding="utf-8") as fh:
        doc = json.load(fh)
    if not isinstance(doc, dict):
        raise ValueError(f"{raw}: not a Chrome trace object")
    events: list[dict[str, Any]] = doc.get("traceEvents", [])
    starts, owners = _step_starts(events, plan)
    for side, path in outputs.items():
        side_events = _side_events(events, starts, owners, plan, side)
        _write(path, {**doc, "traceEvents": side_events, "traceName": str(path)})


def _step_starts(events: list[dict[str, Any]], plan: Plan) -> tuple[list[float], list[int]]:
    """The CPU step spans' starts (µs, sorted) and their step numbers."""
    spans = sorted(
        (float(e["ts"]), int(m.group(1)))
        for e in events
        if e.get("ph") == "X"
        and e.get("cat") != "gpu_user_annotation"
        and (m := STEP_NAME.match(str(e.get("name", ""))))
        and int(m.group(1)) < len(plan)
    )
    return [ts for ts, _ in spans], [step for _, step in spans]


def _side_events(
    events: list[dict[str, Any]], starts: list[float], owners: list[int], plan: Plan, side: str
) -> list[dict[str, Any]]:
    """``side``'s events: metadata, the profiler's own marks, and its kept steps' events."""
    import bisect

    kept = [step for step in owners if plan[step] == (side, True)]
    if not kept:
        raise ValueError(f"the profiled session has no step of {side}")
    renumber = {step: FIRST_STEP + i for i, step in enumerate(kept)}
    first = starts[owners.index(kept[0])]
    last_step = owners.index(kept[-1])
    end = starts[last_step + 1] if last_step + 1 < len(starts) else float("inf")
    out = []
    for event in events:
        ts = event.get("ts")
        if event.get("ph") == "M" or ts is None:
            out.append(event)
            continue
        if event.get("cat") == _PROFILER_SPAN_CATEGORY or (
            event.get("ph") == "i" and event.get("cat") is None
        ):
            out.append(_moved(event, first, end))
            continue
        at = bisect.bisect_right(starts, float(ts)) - 1
        if at < 0 or owners[at] not in renumber:
            continue
        match = STEP_NAME.match(str(event.get("name", "")))  # a step span: its new number
        if match is not None and int(match.group(1)) in renumber:
            event = {**event, "name": f"ProfilerStep#{renumber[int(match.group(1))]}"}
        out.append(event)
    return out


def _moved(event: dict[str, Any], first: float, end: float) -> dict[str, Any]:
    """A session-wide mark moved to the side's first step (a span: up to its last)."""
    moved = {**event, "ts": first}
    if "dur" in event:
        last = float(event["ts"]) + float(event["dur"])
        moved["dur"] = max(0.0, min(end, last) - first)
    return moved


def _write(path: Path, doc: dict[str, Any]) -> None:
    data = json.dumps(doc).encode("utf-8")
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
