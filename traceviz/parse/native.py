"""Parsing through the native scanner: columns straight from the JSON bytes, no event objects.

The optional C extension ``traceviz.parse._scan`` reads ``traceEvents`` a batch at a time and
hands back, per field (the top-level keys of :class:`~traceviz.parse.events.Event`, then the
keys of its ``args``), one kind byte and one 8-byte value per event: absent, null, an int64, a
float64, a code into the scanner's distinct strings, or a code into its distinct raw JSON texts
(``Input Dims``, ``grid``). :class:`NativeSource` turns those columns into the arrays the table
builders want (:class:`~traceviz.parse.source.EventSource`) exactly as the Python path would:
numbers and text of the usual kinds by NumPy, any other mix of kinds in a field by first
making that field's Python values, exactly as msgspec decodes them, and converting those the
Python path's way.

The scanner either gives what msgspec would give or raises ``_scan.Unsupported`` (NaN literals,
``true`` where a number belongs, integers beyond int64, invalid JSON, ...): then
:func:`parse_native` gives ``None`` and :func:`traceviz.parse.load_trace` parses the file the
Python way, whose tables are the same, and whose errors name the file and the problem.
``TRACEVIZ_NATIVE=0`` turns the scanner off.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Generator
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pandas as pd

from traceviz import settings
from traceviz.dense import factorize_in_order
from traceviz.parse import read
from traceviz.parse.build import Collector
from traceviz.parse.columns import _encode, floats, int64s, streamed
from traceviz.parse.events import MISSING_INT, Args, RawTraceDocument, TraceEvent
from traceviz.parse.structs import pairs_encoded, raw_bytes
from traceviz.trace import Trace

__all__ = ["NativeSource", "parse_native", "scan", "scanner_module"]

# Events scanned into columns at a time (kinds and values: 9 bytes a field, 34 fields: about
# 10 MB a batch). A batch's buffers are new memory, whose page faults a fresh process pays once
# per event of batch size; each batch also has a fixed cost (benchmarks/parse.py).
BATCH_EVENTS = 32768
# A document this large is scanned a batch ahead on a worker thread while this thread turns the
# batch before into columns (the scanner releases the GIL while it scans); smaller ones, a few
# batches at most, are not worth a thread.
AHEAD_BYTES = 32 * 2**20

ABSENT, NULL, INT, FLOAT, STR, RAW = range(6)  # the scanner's kind codes
_NONE_KINDS = 1 << ABSENT | 1 << NULL
_NUMBER_KINDS = _NONE_KINDS | 1 << INT | 1 << FLOAT
_INT_KINDS = _NONE_KINDS | 1 << INT
_TEXT_KINDS = _NONE_KINDS | 1 << STR

_ARG_INFO = msgspec.structs.fields(Args)
TOP_KEYS: tuple[str, ...] = tuple(f.encode_name for f in msgspec.structs.fields(TraceEvent))
ARG_KEYS: tuple[str, ...] = tuple(f.encode_name for f in _ARG_INFO)
RAW_KEYS: frozenset[str] = frozenset(f.encode_name for f in _ARG_INFO if f.type is msgspec.Raw)
# Python field name -> (column number j in the scanner's output, value when absent)
FIELDS: dict[str, tuple[int, Any]] = {
    **{f.name: (j, f.default) for j, f in enumerate(msgspec.structs.fields(TraceEvent))},
    **{f.name: (len(TOP_KEYS) + j, f.default) for j, f in enumerate(_ARG_INFO)},
}

Scanned = tuple[Collector, Any]  # the columns of every batch, and the document's header
_log = logging.getLogger(__name__)
_UNSET: Any = object()
_module: Any = _UNSET


def scanner_module() -> Any:
    """The ``_scan`` extension module, or ``None`` when it is not built or
    ``TRACEVIZ_NATIVE=0`` (the current :mod:`traceviz.settings`)."""
    global _module
    if not settings.current().native:
        return None
    if _module is _UNSET:
        try:
            from traceviz.parse import _scan
        except ImportError:
            _module = None
        else:
            _module = _scan
    return _module


def parse_native(path: Path, data: bytes | bytearray, module: Any = None) -> Trace | None:
    """The trace of a Kineto JSON document, scanned by ``module`` (default
    :func:`scanner_module`), or ``None`` when there is no scanner or it found the file unusual
    (the caller then parses it the Python way; the result would be the same)."""
    scanned = scan(path, data, module)
    if scanned is None:
        return None
    collector, header = scanned
    return collector.trace(path, header)


def scan(path: Path, data: bytes | bytearray, module: Any = None) -> Scanned | None:
    """:func:`parse_native` up to the tables: every batch's columns taken and the header
    decoded, so that the caller can drop the JSON bytes before the tables are built."""
    module = module if module is not None else scanner_module()
    if module is None:
        return None
    view, _ = read._document(data)
    try:
        scanner = module.Scanner(view, TOP_KEYS, ARG_KEYS, RAW_KEYS)
        collector = Collector()
        batches = _scan_ahead(scanner) if len(view) >= AHEAD_BYTES else _batches(scanner)
        try:
            for batch in batches:
                collector.add(NativeSource(batch))
                del batch
        finally:
            # stops and joins the scan-ahead worker now, not when the error's traceback
            # (kept by a notebook, a caller's ``except ... as err``) lets the generator go
            batches.close()
        bare, start, end = scanner.bare, scanner.events_start, scanner.events_end
        del scanner
        header = None if bare else _header(path, view, start, end)
    except module.Unsupported as err:
        _log.debug("%s: parsed the Python way (native scanner: %s)", path, err)
        return None
    if header is _UNSET:
        return None
    return collector, header


def _next_batch(scanner: Any) -> _Batch | None:
    """The scanner's next batch with the strings and raws its codes index, or ``None``."""
    got = scanner.next(BATCH_EVENTS)
    if got is None:
        return None
    n, kinds, values = got
    return _Batch(n, kinds, values, scanner.strings, scanner.raws)


def _batches(scanner: Any) -> Generator[_Batch, None, None]:
    """Every batch of the scanner, scanned when asked for."""
    while (batch := _next_batch(scanner)) is not None:
        yield batch


def _scan_ahead(scanner: Any) -> Generator[_Batch, None, None]:
    """Every batch of the scanner, the next one scanned on a worker thread meanwhile.

    The worker's error (``Unsupported``, ``MemoryError``) is raised here in its turn; when the
    caller stops early (its own error, Ctrl-C) the worker stops after the batch it is on."""
    handoff: queue.Queue[_Batch | BaseException | None] = queue.Queue(maxsize=1)
    stop = threading.Event()

    def hand(item: _Batch | BaseException | None) -> bool:
        while not stop.is_set():
            try:
                handoff.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def scan_all() -> None:
        try:
            while (batch := _next_batch(scanner)) is not None:
                if not hand(batch):
                    return
            hand(None)
        except BaseException as err:  # raised again on the caller's thread
            hand(err)

    worker = threading.Thread(target=scan_all, name="traceviz-scan", daemon=True)
    worker.start()
    try:
        while (item := handoff.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item
            del item
    finally:
        stop.set()
        worker.join()


def _header(path: Path, view: memoryview, start: int, end: int) -> Any:
    """The document's top-level keys, decoded as the Python path decodes them, from the
    document with its events array cut out (``_UNSET`` when msgspec cannot read it)."""
    text = b"".join((view[:start], b"[]", view[end:]))
    try:
        doc = read._decode_strict(path, memoryview(text), RawTraceDocument)
    except msgspec.DecodeError:
        return _UNSET
    doc.traceEvents = []
    return doc


class _Batch:
    """One batch of the scanner's output: per field, kinds (uint8) and values (int64 bits)."""

    __slots__ = ("_arrays", "kinds", "n", "raws", "strings", "values")

    def __init__(
        self, n: int, kinds: list[bytes], values: list[bytes], strings: list[str], raws: list[bytes]
    ) -> None:
        self.n, self.kinds, self.values = n, kinds, values
        self.strings, self.raws = strings, raws
        self._arrays: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def column(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        arrays = self._arrays.get(j)
        if arrays is None:
            kinds = np.frombuffer(self.kinds[j], dtype=np.uint8)
            values = np.frombuffer(self.values[j], dtype=np.int64)
            arrays = self._arrays[j] = (kinds, values)
        return arrays


class NativeSource:
    """A batch of scanned events (or the rows ``rows`` of one), as an
    :class:`~traceviz.parse.source.EventSource`."""

    __slots__ = ("_batch", "_cache", "_rows")

    def __init__(self, batch: _Batch, rows: np.ndarray | None = None) -> None:
        self._batch, self._rows = batch, rows
        self._cache: dict[str, tuple[np.ndarray, np.ndarray, int]] = {}

    def __len__(self) -> int:
        return self._batch.n if self._rows is None else len(self._rows)

    def take(self, rows: np.ndarray) -> NativeSource:
        return NativeSource(self._batch, rows if self._rows is None else self._rows[rows])

    def _column(self, field: str) -> tuple[np.ndarray, np.ndarray, int, Any]:
        """Kinds, values, the kinds present (a bit set: bit k for kind k) and the value when
        absent of one field over these events."""
        arrays = self._cache.get(field)
        if arrays is None:
            kinds, values = self._batch.column(FIELDS[field][0])
            if self._rows is not None:
                kinds, values = kinds[self._rows], values[self._rows]
            arrays = self._cache[field] = (kinds, values, _present(kinds))
        return (*arrays, FIELDS[field][1])

    def values(self, field: str) -> list[Any]:
        kinds, values, _, default = self._column(field)
        ids, python, _ = self._atoms(kinds, values, default)
        return list(map(python.__getitem__, ids.tolist()))

    def floats(self, field: str) -> np.ndarray:
        kinds, values, present, default = self._column(field)
        if present & ~_NUMBER_KINDS or (present & 1 << ABSENT and default is not None):
            return streamed(self.values(field), np.float64, floats)
        out = values.view(np.float64).copy()
        if present & 1 << INT:
            is_int = kinds == INT
            out[is_int] = values[is_int].astype(np.float64)
        if present & _NONE_KINDS:
            out[kinds <= NULL] = np.nan
        return out

    def ints(self, field: str) -> np.ndarray:
        kinds, values, present, default = self._column(field)
        absent_ok = default is None or default == MISSING_INT
        if present & ~_INT_KINDS or (present & 1 << ABSENT and not absent_ok):
            return streamed(self.values(field), np.int64, int64s)
        out = values.copy()
        if present & _NONE_KINDS:
            out[kinds <= NULL] = MISSING_INT
        return out

    def codes(self, numbering: dict[Any, int], field: str) -> np.ndarray:
        kinds, values, present, default = self._column(field)
        if present & ~_TEXT_KINDS or default is not None:
            return _encode(numbering, self.values(field))
        return _renumber(numbering, *self._atoms(kinds, values, default))

    def raw_codes(self, numbering: dict[Any, int], field: str, fallback: str = "") -> np.ndarray:
        kinds, values, _, _ = self._column(field)
        if fallback:
            other_kinds, other_values, _, _ = self._column(fallback)
            absent = kinds == ABSENT
            kinds = np.where(absent, other_kinds, kinds)
            values = np.where(absent, other_values, values)
        if _present(kinds) & ~(1 << ABSENT | 1 << RAW):
            return _encode(numbering, raw_bytes(self, field, fallback))
        return _renumber(numbering, *self._atoms(kinds, values, b"", as_bytes=True))

    def pair_codes(self, numbering: dict[Any, int], first: str, second: str) -> np.ndarray:
        kinds_a, values_a, present_a, default_a = self._column(first)
        kinds_b, values_b, present_b, default_b = self._column(second)
        if not (_plain_key(present_a, default_a) and _plain_key(present_b, default_b)):
            return pairs_encoded(numbering, self.values(first), self.values(second))
        ids_a, python_a, _ = self._atoms(kinds_a, values_a, default_a)
        ids_b, python_b, _ = self._atoms(kinds_b, values_b, default_b)
        width = len(python_b)
        inverse, pairs, _ = _factorize(ids_a * width + ids_b, False)  # in order of appearance
        lookup = np.empty(len(pairs), dtype=np.int64)
        for i, pair in enumerate(pairs.tolist()):
            a, b = divmod(pair, width)
            lookup[i] = numbering[(python_a[a], python_b[b])]
        return lookup[inverse]

    def equals(self, field: str, text: str) -> np.ndarray:
        kinds, values, _, default = self._column(field)
        ids, python, _ = self._atoms(kinds, values, default)
        same = np.array([value == text for value in python], dtype=bool)
        return same[ids] if len(ids) else np.zeros(0, dtype=bool)

    def _atoms(
        self, kinds: np.ndarray, values: np.ndarray, default: Any, *, as_bytes: bool = False
    ) -> tuple[np.ndarray, list[Any], np.ndarray]:
        """The distinct (kind, value) pairs of a field: per event the number of its pair, per
        pair its Python value (as msgspec decodes it; raw texts as ``bytes`` with
        ``as_bytes``), and a key that sorts the pairs in order of first appearance (the first
        event that has each; simply 0, 1, ... when the field holds one kind)."""
        n = len(kinds)
        ids = np.empty(n, dtype=np.int64)
        python: list[Any] = []
        firsts: list[np.ndarray] = []
        present = _present(kinds)
        if present >> (RAW + 1):
            raise ValueError(f"the native scanner gave an unknown kind of value ({present:#x})")
        for kind in range(RAW + 1):
            if not present & 1 << kind:
                continue
            single = present == 1 << kind
            rows = None if single else np.flatnonzero(kinds == kind)
            if kind in (ABSENT, NULL):
                target = rows if rows is not None else slice(None)
                ids[target] = len(python)
                python.append(None if kind == NULL else default)
                firsts.append(np.array([0 if rows is None else rows[0]]))
                continue
            inverse, distinct, first = _factorize(
                values if rows is None else values[rows], not single
            )
            ids[slice(None) if rows is None else rows] = inverse + len(python)
            firsts.append(first if rows is None else rows[first])
            python.extend(self._python(kind, distinct, as_bytes))
        first_rows = np.concatenate(firsts) if firsts else np.empty(0, dtype=np.int64)
        return ids, python, first_rows

    def _python(self, kind: int, distinct: np.ndarray, as_bytes: bool) -> list[Any]:
        """The Python values of distinct values of one kind."""
        if kind == INT:
            return distinct.tolist()
        if kind == FLOAT:
            return distinct.view(np.float64).tolist()
        if kind == STR:
            return list(map(self._batch.strings.__getitem__, distinct.tolist()))
        texts = list(map(self._batch.raws.__getitem__, distinct.tolist()))
        return texts if as_bytes else list(map(msgspec.Raw, texts))


def _factorize(
    values: np.ndarray, firsts: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per value the number of its distinct value, the distinct values in order of first
    appearance (a hash table, no sort; :func:`traceviz.dense.factorize_in_order`'s tables for
    values in a small range, such as codes into the scanner's strings), and the position where
    each first
    appears (with ``firsts``; else 0, 1, ..., which sorts them the same way)."""
    small = factorize_in_order(values, firsts)
    if small is not None:
        return small
    codes, distinct = pd.factorize(values)
    if not firsts:
        where = np.arange(len(distinct), dtype=np.int64)
    else:
        running = np.maximum.accumulate(codes) if len(codes) else codes
        where = np.flatnonzero(np.diff(running, prepend=-1) > 0)  # where a new code appears
    return codes.astype(np.int64, copy=False), np.asarray(distinct), where


def _present(kinds: np.ndarray) -> int:
    """The kinds present in ``kinds`` (uint8), as a bit set (bit k for kind k).

    Two reductions over the bytes: their least and greatest (most fields hold one kind: done),
    else the OR of ``1 << kind`` in uint8, exact for kinds 0..7 (a kind beyond, which the
    scanner never gives, is counted the slow way). No intp copy of the column, as a bincount
    would make."""
    if not len(kinds):
        return 0
    low, high = int(kinds.min()), int(kinds.max())
    if low == high:
        return 1 << low
    if high > 7:
        counts = np.bincount(kinds)
        return sum(1 << k for k in np.flatnonzero(counts).tolist())
    return int(np.bitwise_or.reduce(np.left_shift(np.uint8(1), kinds)))


def _plain_key(present: int, default: Any) -> bool:
    """Whether a field holds one kind of value (ints, or strings), or nothing, throughout
    (``present``: its kinds, as a bit set)."""
    if present & 1 << ABSENT and default is not None:
        return False
    return not present & ~_INT_KINDS or not present & ~_TEXT_KINDS


def _renumber(
    numbering: dict[Any, int], ids: np.ndarray, python: list[Any], first_rows: np.ndarray
) -> np.ndarray:
    """Codes in ``numbering`` of the events whose distinct values are ``python[ids]``: new
    values numbered in order of first appearance (``first_rows``), as looking each event's
    value up in turn would number them."""
    lookup = np.empty(len(python), dtype=np.int64)
    for atom in np.argsort(first_rows, kind="stable").tolist():
        lookup[atom] = numbering[python[atom]]
    return lookup[ids]
