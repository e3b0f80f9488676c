"""Bytes in, typed events out: file reading, gzip, JSON decoding, and the errors for each.

Hostile input is answered with one :class:`~traceviz.errors.TraceFormatError` naming the file:
more JSON than :func:`max_bytes` allows (gzip is inflated in a stream and stopped at the cap,
never inflated whole first), nesting deeper than the decoder's recursion limit, ``NaN`` /
``Infinity`` literals (accepted, as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``,
which the column builders read as numbers), a UTF-8 byte-order mark (skipped).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from traceviz import settings
from traceviz.errors import TraceFormatError, UsageError
from traceviz.parse.events import Event, RawTraceDocument, TraceDocument, TraceHeader

# The cap's variable and size texts live in traceviz.settings (the command line
# checks --max-bytes without the parser); still importable from here.
from traceviz.settings import MAX_BYTES_ENV

GZIP_MAGIC = b"\x1f\x8b"
UTF8_BOM = b"\xef\xbb\xbf"
READ_CHUNK = 16 * 2**20  # bytes of inflated JSON per read while streaming a gzip
# Events decoded into structs at a time: their columns are taken before the next batch, so
# only one batch of structs is ever alive (about 40 MB), and its objects are still in cache.
BATCH_EVENTS = 32768
_FIRST_TOKEN = re.compile(rb"\s*")


def max_bytes(explicit: int | None = None) -> int:
    """The cap on a trace's JSON bytes: ``explicit`` when given, else the current settings'
    (``--max-bytes``, ``TRACEVIZ_MAX_BYTES``, else
    :data:`traceviz.settings.DEFAULT_MAX_BYTES`)."""
    if explicit is not None:
        if isinstance(explicit, bool) or not isinstance(explicit, int) or explicit <= 0:
            raise UsageError(f"max_bytes must be a positive number of bytes, not {explicit!r}")
        return explicit
    return settings.current().max_bytes


def read_bytes(path: Path, *, limit: int | None = None) -> bytes | bytearray:
    """The file's JSON bytes, gunzipped when the file is gzip (by content, not by name).

    At most :func:`max_bytes` (``limit``) bytes: a larger file, or a gzip that inflates to more,
    raises a :class:`~traceviz.errors.TraceFormatError` naming the limit, after reading at most
    one byte past the limit (memory: the limit, plus what the buffer's growth needs).
    """
    cap = max_bytes(limit)
    try:
        with path.open("rb") as handle:
            gzipped = handle.read(2) == GZIP_MAGIC
            handle.seek(0)
            raw = _inflate(path, handle, cap) if gzipped else _read_plain(path, handle, cap)
    except FileNotFoundError as err:
        raise TraceFormatError(path, "no such file") from err
    except IsADirectoryError as err:
        raise TraceFormatError(path, "is a directory, not a trace file or trace cache") from err
    except OSError as err:
        raise TraceFormatError(path, f"cannot read: {err.strerror or err}") from err
    if not raw or raw.isspace():
        raise TraceFormatError(path, "empty file")
    return raw


def check_json_bytes(path: Path, json_bytes: int, *, limit: int | None = None) -> None:
    """Refuse, as :func:`read_bytes` would, a trace of ``json_bytes`` bytes of JSON over the
    cap (for a trace read back from the parse cache)."""
    cap = max_bytes(limit)
    if json_bytes > cap:
        raise TraceFormatError(path, _too_big(f"holds {json_bytes:,} bytes of JSON, more", cap))


def _read_plain(path: Path, handle: Any, cap: int) -> bytes:
    size = os.fstat(handle.fileno()).st_size
    if size > cap:
        raise TraceFormatError(path, _too_big(f"is {size:,} bytes, more", cap))
    # Ask for the size fstat gave (plus one byte, to notice growth): asking for the cap would
    # have Python allocate cap + 1 bytes and shrink the buffer after, 3-4x slower for 20 MB.
    data: bytes = handle.read(size + 1)
    if len(data) > size:  # grew since fstat: the rest too, still bounded by the cap
        data += handle.read(cap + 1 - len(data))
    if len(data) > cap:  # grew while we read it
        raise TraceFormatError(path, _too_big("grew while read to more", cap))
    return data


def _inflate(path: Path, handle: Any, cap: int) -> bytearray:
    """Stream the gzip into one buffer, stopping as soon as it passes ``cap``."""
    out = bytearray()
    try:
        with gzip.GzipFile(fileobj=handle, mode="rb") as stream:
            while chunk := stream.read(min(READ_CHUNK, cap + 1 - len(out))):
                out += chunk
                if len(out) > cap:
                    raise TraceFormatError(path, _too_big("inflates to more", cap))
    except (EOFError, zlib.error, gzip.BadGzipFile) as err:
        raise TraceFormatError(path, f"truncated or corrupt gzip: {err}") from err
    return out


def _too_big(what: str, cap: int) -> str:
    return (
        f"{what} than the limit of {cap:,} bytes of JSON; if the trace is real, raise the limit "
        f"with --max-bytes, {MAX_BYTES_ENV} or traceviz.load(..., max_bytes=)"
    )


def decode_events(path: Path, data: bytes | bytearray) -> tuple[list[Event], TraceDocument | None]:
    """Decode a trace document (or the oldest bare event array) into typed events.

    Returns the events and the document (``None`` for a bare array). A UTF-8 byte-order mark
    is skipped. Files msgspec rejects only because of ``NaN``/``Infinity`` literals are decoded
    a second, slower way (:func:`_decode_lenient`).
    """
    view, bare = _document(data)
    target = _full(bare)
    try:
        decoded = _decode_strict(path, view, target)
    except msgspec.DecodeError as err:
        decoded = _decode_lenient(path, view, target, err)
    if bare:
        return decoded, None
    return decoded.traceEvents, decoded


def decode_batches(
    path: Path, data: bytes | bytearray
) -> tuple[Iterator[list[Event]], int, TraceHeader | None]:
    """Like :func:`decode_events`, but the events come in batches of :data:`BATCH_EVENTS`.

    ``traceEvents`` is first split into raw JSON slices (no objects built for their insides),
    then each batch of slices is decoded into typed events when the iterator reaches it; the
    slices of a batch are dropped once decoded. Returns the batches, the number of events, and
    the document's header (``None`` for a bare array). Errors name the event by its index in
    the whole file, as :func:`decode_events` does.
    """
    view, bare = _document(data)
    try:
        decoded = _decode_strict(path, view, list[msgspec.Raw] if bare else RawTraceDocument)
    except msgspec.DecodeError as err:
        events, doc = _split(_decode_lenient(path, view, _full(bare), err), bare)
        if doc is not None:
            doc.traceEvents = []
        return _slices(events), len(events), doc
    raws, doc = _split(decoded, bare)
    if doc is not None:
        doc.traceEvents = []  # the header alone; the slices live in ``raws``
    return _typed_batches(path, raws, view, bare), len(raws), doc


def _document(data: bytes | bytearray) -> tuple[memoryview, bool]:
    """The JSON document in ``data`` without a UTF-8 byte-order mark (a view: no copy), and
    whether it is a bare event array rather than an object."""
    view = memoryview(data)
    if data[:3] == UTF8_BOM:
        view = view[3:]
    start = _FIRST_TOKEN.match(view).end()  # type: ignore[union-attr]
    return view, view[start : start + 1] == b"["


def _decode_strict(path: Path, view: memoryview, target: type) -> Any:
    """``view`` decoded as ``target`` by msgspec. A document of the wrong shape or nested too
    deep raises :class:`~traceviz.errors.TraceFormatError` naming ``path``; JSON msgspec
    cannot read (such as ``NaN`` literals) raises ``msgspec.DecodeError`` for the caller's
    lenient decode."""
    try:
        return msgspec.json.decode(view, type=target)
    except msgspec.ValidationError as err:
        raise TraceFormatError(path, f"not a profiler trace: {_plain(err)}") from err
    except RecursionError as err:
        raise TraceFormatError(path, _too_deep()) from err


def _full(bare: bool) -> type:
    return list[Event] if bare else TraceDocument


def _split(decoded: Any, bare: bool) -> tuple[list[Any], Any]:
    return (decoded, None) if bare else (decoded.traceEvents, decoded)


def _slices(events: list[Event]) -> Iterator[list[Event]]:
    for start in range(0, len(events), BATCH_EVENTS):
        yield events[start : start + BATCH_EVENTS]


_BATCH_DECODER = msgspec.json.Decoder(list[Event])
_AT_INDEX = re.compile(r"`\$\[(\d+)\]")


def _typed_batches(
    path: Path, raws: list[msgspec.Raw], view: memoryview, bare: bool
) -> Iterator[list[Event]]:
    """Decode ``raws`` a batch at a time; each batch's slices are released once decoded.

    The split into slices does not check everything (UTF-8 inside strings): a batch the
    decoder rejects sends the rest of the file down the lenient path, as the whole-document
    decode would have.
    """
    where = "$" if bare else "$.traceEvents"
    for start in range(0, len(raws), BATCH_EVENTS):
        stop = min(start + BATCH_EVENTS, len(raws))
        text = b"[" + b",".join(raws[start:stop]) + b"]"
        try:
            events = _BATCH_DECODER.decode(text)
        except msgspec.ValidationError as err:
            raise TraceFormatError(path, f"not a profiler trace: {_at(err, where, start)}") from err
        except msgspec.DecodeError as err:
            events_all, _ = _split(_decode_lenient(path, view, _full(bare), err), bare)
            yield from _slices(events_all[start:])
            return
        raws[start:stop] = [None] * (stop - start)  # type: ignore[list-item]
        del text
        yield events
    raws.clear()


def _at(err: Exception, where: str, offset: int) -> str:
    """The decoder's message with a batch's event index made the index in the file."""

    def shift(match: re.Match[str]) -> str:
        return f"`{where}[{int(match.group(1)) + offset}]"

    return _plain(_AT_INDEX.sub(shift, str(err)))


def _decode_lenient(path: Path, view: memoryview, target: type, first: Exception) -> object:
    """Python's json module reads ``NaN``/``Infinity``; each literal is kept as its text and the
    document is encoded again for msgspec, so that raw-text fields (``grid``, ``Input Dims``)
    are decoded exactly as on the fast path."""
    try:
        plain = json.loads(view.tobytes(), parse_constant=str)
    except RecursionError as err:
        raise TraceFormatError(path, _too_deep()) from err
    except ValueError:
        raise TraceFormatError(path, f"not valid JSON ({_plain(first)})") from first
    try:
        return msgspec.json.decode(msgspec.json.encode(plain), type=target)
    except msgspec.ValidationError as err:
        raise TraceFormatError(path, f"not a profiler trace: {_plain(err)}") from err


def _too_deep() -> str:
    return (
        f"JSON nested more than about {sys.getrecursionlimit():,} levels deep (arrays and objects "
        "inside each other); no profiler writes that"
    )


def _plain(err: Exception | str) -> str:
    """The decoder's message, to follow a colon: first letter lowered unless it starts an
    acronym ("JSON is malformed" stays as it is)."""
    text = str(err)
    if not text:
        return type(err).__name__
    if text[1:2].isupper():
        return text
    return text[:1].lower() + text[1:]
