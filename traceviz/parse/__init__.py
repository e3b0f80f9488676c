"""Chrome/Kineto JSON traces → :class:`~traceviz.trace.Trace` (typed tables).

``read`` turns the file into bytes, ``events`` gives those bytes a typed shape for msgspec
(or ``native`` scans them into columns with the optional C scanner; ``source`` gives the
builders one way to read either),
``routing`` sends each event to a table, ``tables`` builds each table's columns, ``nesting``
and ``link`` connect kernels to launches and ops, ``regions`` finds compiled regions and
steps, ``cpu_kernels`` says which CPU ops are kernels on a CPU-only trace, ``meta`` collects
the rest.
"""

from __future__ import annotations

from pathlib import Path

from traceviz.gc_pause import collector_paused

with collector_paused():  # the first import of pandas, numpy and pyarrow (traceviz.gc_pause)
    from traceviz.parse import native, readers
    from traceviz.parse.build import build_trace_batches
    from traceviz.parse.cache import CacheOption, lookup, with_source
    from traceviz.parse.read import check_json_bytes, decode_batches, read_bytes
    from traceviz.trace import Trace, is_cache_dir, load_cache

__all__ = ["load_trace"]


def load_trace(
    path: str | Path, *, max_bytes: int | None = None, cache: CacheOption = True
) -> Trace:
    """Parse a trace file (``.json``, ``.json.gz``, bare array) or a saved cache directory.

    ``max_bytes`` caps the JSON bytes read (after gzip; see :func:`traceviz.parse.read.max_bytes`
    for the default). ``cache``: the automatic parse cache (:mod:`traceviz.parse.cache`):
    ``True`` (default: ``$TRACEVIZ_CACHE_DIR`` or ``~/.cache/traceviz``, off when
    ``TRACEVIZ_NO_CACHE=1``), ``False``, or a directory. Raises
    :class:`~traceviz.errors.TraceFormatError` naming the file and the problem.
    """
    source = Path(path)
    if is_cache_dir(source):
        return load_cache(source)
    entry = lookup(source, cache)
    if entry is not None and (hit := entry.read()) is not None:
        trace, json_bytes = hit
        check_json_bytes(source, json_bytes, limit=max_bytes)
        return with_source(trace, source)
    trace, json_bytes = _parse(source, max_bytes)
    if entry is not None:
        entry.write(trace, json_bytes)
    return trace


def _parse(source: Path, max_bytes: int | None) -> tuple[Trace, int]:
    """The trace parsed from its JSON, and the number of JSON bytes it had."""
    # The parse makes millions of short-lived objects and no cycles: the cyclic collector
    # would only rescan them again and again (off until the last of concurrent parses ends).
    with collector_paused():
        data = read_bytes(source, limit=max_bytes)
        json_bytes = len(data)
        reader = readers.reader_for(source, data)  # parse/readers.py: one per trace format
        if reader is not readers.KINETO:
            return reader.read(source, data), json_bytes
        # Kineto: the native scanner's columns when it is built and the file is usual
        # (parse/native.py), else the Python way, a batch of events at a time: the JSON
        # bytes are freed as soon as the last batch is decoded, before the tables are built.
        scanned = native.scan(source, data)
        if scanned is not None:
            del data  # the JSON bytes go before the tables are built
            collector, header = scanned
            return collector.trace(source, header), json_bytes
        batches, _, doc = decode_batches(source, data)
        del data
        return build_trace_batches(source, batches, doc), json_bytes
