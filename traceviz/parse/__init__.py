"""Chrome/Kineto JSON traces → :class:`~traceviz.trace.Trace` (typed tables).

``read`` turns the file into bytes, ``events`` gives those bytes a typed shape for msgspec,
``routing`` sends each event to a table, ``tables`` builds each table's columns, ``nesting``
and ``link`` connect kernels to launches and ops, ``regions`` finds compiled regions and
steps, ``cpu_kernels`` says which CPU ops are kernels on a CPU-only trace, ``meta`` collects
the rest.
"""

from __future__ import annotations

import gc
from pathlib import Path

from traceviz.parse import readers
from traceviz.parse.build import build_trace
from traceviz.parse.read import decode_events, read_bytes
from traceviz.trace import Trace, is_cache_dir, load_cache

__all__ = ["load_trace"]


def load_trace(path: str | Path, *, max_bytes: int | None = None) -> Trace:
    """Parse a trace file (``.json``, ``.json.gz``, bare array) or a saved cache directory.

    ``max_bytes`` caps the JSON bytes read (after gzip; see :func:`traceviz.parse.read.max_bytes`
    for the default). Raises :class:`~traceviz.errors.TraceFormatError` naming the file and the
    problem.
    """
    source = Path(path)
    if is_cache_dir(source):
        return load_cache(source)
    # The parse makes millions of short-lived objects and no cycles: the cyclic collector
    # would only rescan them again and again.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        data = read_bytes(source, limit=max_bytes)
        reader = readers.reader_for(source, data)  # parse/readers.py: one per trace format
        if reader is not readers.KINETO:
            return reader.read(source, data)
        # Kineto inline, so that its JSON bytes are freed before the tables are built.
        events, doc = decode_events(source, data)
        del data
        return build_trace(source, events, doc)
    finally:
        if was_enabled:
            gc.enable()
