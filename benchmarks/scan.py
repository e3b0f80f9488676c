"""Scanner benchmark: the C scanner ``traceviz.parse._scan`` alone against msgspec's split and
decode of the same events (what the Python path runs), on the 10x benchmark trace.

    .venv/bin/python benchmarks/scan.py [--repeat 3] [--batch 65536] [--file PATH]

Every contender runs in this process on the same bytes (read once, page cache warm), best of
``--repeat``; the file is made first when missing (``make_large_trace.py``, see README.md).

* ``scan``: ``Scanner(data, ...)`` and ``next(batch)`` until ``None``: every event's fields as
  kind and value columns, strings and raw texts interned (what ``traceviz.parse.native`` reads);
* ``msgspec split``: ``msgspec.json.decode(data, type=RawTraceDocument)``: the events as raw
  slices, nothing inside them decoded;
* ``msgspec split+decode``: the split, then each batch of slices joined and decoded into
  ``list[Event]`` (``traceviz.parse.read.decode_batches``, the Python path's first stage).

Prints wall and CPU seconds, MB/s of JSON, and each wall time as a multiple of the scanner's,
with the load average (the machine is shared: CPU time is the steadier figure under load;
compare runs at similar load). Exits 0: a measurement.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from make_large_trace import DEFAULT_FACTOR, DEFAULT_SOURCE, make_large_trace  # noqa: E402

from traceviz.parse.events import Args, Event, RawTraceDocument, TraceEvent  # noqa: E402

ARG_FIELDS = msgspec.structs.fields(Args)
TOP_KEYS = tuple(f.encode_name for f in msgspec.structs.fields(TraceEvent))
ARG_KEYS = tuple(f.encode_name for f in ARG_FIELDS)
RAW_KEYS = frozenset(f.encode_name for f in ARG_FIELDS if f.type is msgspec.Raw)
EVENTS = msgspec.json.Decoder(list[Event])


def run_scan(data: bytes, batch: int) -> int:
    """Events scanned by the C scanner, ``batch`` at a time."""
    from traceviz.parse import _scan

    scanner = _scan.Scanner(data, TOP_KEYS, ARG_KEYS, RAW_KEYS)
    n = 0
    while (got := scanner.next(batch)) is not None:
        n += got[0]
    return n


def run_split(data: bytes, batch: int) -> int:
    """Events split into raw slices by msgspec."""
    return len(msgspec.json.decode(data, type=RawTraceDocument).traceEvents)


def run_split_decode(data: bytes, batch: int) -> int:
    """Events split, then decoded into Event structs a batch of slices at a time."""
    raws = msgspec.json.decode(data, type=RawTraceDocument).traceEvents
    n = 0
    for start in range(0, len(raws), batch):
        n += len(EVENTS.decode(b"[" + b",".join(raws[start : start + batch]) + b"]"))
    return n


def best_of(fn: Callable[[bytes, int], int], data: bytes, batch: int, repeat: int) -> Any:
    """(best wall seconds, best CPU seconds, events) of ``repeat`` runs."""
    walls, cpus, n = [], [], 0
    for _ in range(repeat):
        gc.collect()
        start, cpu = time.perf_counter(), time.process_time()
        n = fn(data, batch)
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus), n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--batch", type=int, default=65536, help="events a batch (both sides)")
    parser.add_argument("--file", type=Path, help="the JSON trace (default: the 10x file)")
    args = parser.parse_args(argv)
    try:
        from traceviz.parse import _scan  # noqa: F401
    except ImportError as err:
        print(f"the C scanner is not built ({err}): `python setup.py build_ext --inplace`")
        return 0
    path = Path(args.file or make_large_trace(DEFAULT_SOURCE, DEFAULT_FACTOR).path)
    data = path.read_bytes()
    mb = len(data) / 1e6
    print(f"{path.name}: {mb:.1f} MB, batch {args.batch}, best of {args.repeat}")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    rows = [
        ("scan", run_scan),
        ("msgspec split", run_split),
        ("msgspec split+decode", run_split_decode),
    ]
    base = None
    print(f"| {'contender':<22} | wall s |   MB/s | CPU s | CPU MB/s |  events | x scan |")
    print(f"|{'-' * 24}|--------|--------|-------|----------|---------|--------|")
    for name, fn in rows:
        wall, cpu, n = best_of(fn, data, args.batch, args.repeat)
        base = base or wall
        print(
            f"| {name:<22} | {wall:6.3f} | {mb / wall:6.0f} | {cpu:5.3f} | {mb / cpu:8.0f} "
            f"| {n:7d} | {wall / base:6.2f} |"
        )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
