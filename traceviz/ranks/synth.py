"""Many ranks made from one real trace, for tests and benchmarks: each copy gets its own
``distributedInfo`` (rank, world_size, host) and clock offset, and one rank can be planted as
a straggler.

A planted straggler computes slower (its non-collective kernels last ``slow`` times longer)
and arrives last at every collective: the other ranks' collective kernels start up to
``late_us`` earlier (never before the previous kernel on their stream ends) and end as
recorded, so they wait for it while its own collectives are as recorded. Offsets shift every
timestamp of a rank by a seeded random number of µs, as unsynchronised host clocks do.
"""

from __future__ import annotations

import gzip
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from traceviz.errors import TraceFormatError
from traceviz.parse.read import read_bytes

COLLECTIVE_PREFIXES = ("nccl", "rccl", "msccl")
DEVICE_CATS = {"kernel", "Kernel"}


@dataclass(frozen=True)
class SynthRank:
    """One written rank: its ``path``, ``rank``, clock ``offset_us`` and whether it is the
    planted ``straggler``."""

    path: Path
    rank: int
    offset_us: float
    straggler: bool


def read_document(path: Path) -> dict[str, Any]:
    """A trace file as a JSON object (a bare array becomes ``{"traceEvents": [...]}``)."""
    doc = json.loads(read_bytes(path))  # gunzipped when gzip
    if isinstance(doc, list):
        return {"traceEvents": doc}
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise TraceFormatError(path, "not a trace document with traceEvents")
    return doc


def _is_collective(event: dict[str, Any]) -> bool:
    name = str(event.get("name", "")).lower()
    return event.get("cat") in DEVICE_CATS and (
        name.startswith(COLLECTIVE_PREFIXES) or "ncclkernel" in name or "nccldevkernel" in name
    )


def make_rank_doc(
    base: dict[str, Any],
    rank: int,
    world_size: int,
    *,
    offset_us: float = 0.0,
    straggler: bool = False,
    waits: bool = False,
    slow: float = 1.3,
    late_us: float = 10_000.0,
    host: str | None = None,
) -> dict[str, Any]:
    """Trace document ``base`` made rank ``rank`` of ``world_size`` (see module): the
    ``straggler``'s compute is slower; a rank that ``waits`` starts its collectives early.
    Its events are changed in place."""
    doc = {k: v for k, v in base.items() if k != "traceEvents"}
    info = dict(doc.get("distributedInfo") or {})
    info.update(rank=rank, world_size=world_size)
    if host:
        info["host"] = host
    header = {k: v for k, v in doc.items() if k != "distributedInfo"}
    events = base["traceEvents"]
    if waits:
        _start_collectives_early(events, late_us)
    for event in events:
        if not isinstance(event, dict) or not isinstance(event.get("ts"), int | float):
            continue
        slower = straggler and event.get("cat") in DEVICE_CATS and not _is_collective(event)
        if slower and isinstance(event.get("dur"), int | float):
            event["dur"] *= slow
        event["ts"] += offset_us
    # distributedInfo before traceEvents, where Kineto writes it.
    return {**header, "distributedInfo": info, "traceEvents": events}


def _start_collectives_early(events: list[Any], late_us: float) -> None:
    """Each collective kernel starts up to ``late_us`` earlier, not before the previous
    device event of its stream (pid, tid) ends; its end stays."""
    lanes: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for event in events:
        if (
            isinstance(event, dict)
            and event.get("ph") == "X"
            and isinstance(event.get("ts"), int | float)
            and isinstance(event.get("dur"), int | float)
            and str(event.get("cat", "")).lower().startswith(("kernel", "gpu_mem"))
        ):
            lanes.setdefault((event.get("pid"), event.get("tid")), []).append(event)
    for lane in lanes.values():
        lane.sort(key=lambda e: e["ts"])
        previous_end = float("-inf")
        for event in lane:
            end = event["ts"] + event["dur"]
            if _is_collective(event):
                start = max(event["ts"] - late_us, previous_end)
                if start < event["ts"]:
                    event["dur"] += event["ts"] - start
                    event["ts"] = start
            previous_end = max(previous_end, end)


def make_ranks(
    base: Path,
    out: Path,
    world_size: int,
    *,
    straggler: int | None = None,
    seed: int = 0,
    max_offset_us: float = 50_000.0,
    name: str = "rank{rank}.pt.trace.json.gz",
    hosts: int = 1,
    gzip_level: int = 1,
) -> list[SynthRank]:
    """Write ``world_size`` ranks made from the trace ``base`` into ``out`` (file names from
    ``name``), rank ``straggler`` planted; ranks spread over ``hosts`` nodes (``node0``, ...)
    in blocks."""
    doc = read_document(base)
    text = json.dumps(doc)  # each rank decodes its own copy: faster than copy.deepcopy
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    per_host = -(-world_size // max(hosts, 1))
    written = []
    for rank in range(world_size):
        offset = round(rng.uniform(0, max_offset_us), 3) if rank else 0.0
        ranked = make_rank_doc(
            json.loads(text),
            rank,
            world_size,
            offset_us=offset,
            straggler=rank == straggler,
            waits=straggler is not None and rank != straggler,
            host=f"node{rank // per_host}" if hosts > 1 else None,
        )
        path = out / name.format(rank=rank)
        data = json.dumps(ranked).encode()
        if path.name.endswith(".gz"):
            data = gzip.compress(data, compresslevel=gzip_level)
        path.write_bytes(data)
        written.append(SynthRank(path, rank, offset, rank == straggler))
    return written
