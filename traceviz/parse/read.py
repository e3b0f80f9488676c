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
from pathlib import Path
from typing import Any

import msgspec

from traceviz.errors import TraceFormatError, UsageError
from traceviz.parse.events import Event, TraceDocument

GZIP_MAGIC = b"\x1f\x8b"
UTF8_BOM = b"\xef\xbb\xbf"
READ_CHUNK = 16 * 2**20  # bytes of inflated JSON per read while streaming a gzip

# The most JSON bytes a trace may hold (after gzip). Parsing needs about 5x the JSON size in
# memory (benchmarks/RESULTS.md: 999 MiB peak for 206 MB), and the largest real trace of the
# corpus is 64 MB: 4 GiB is far above any real trace and still fits a large workstation.
DEFAULT_MAX_BYTES = 4 * 2**30
MAX_BYTES_ENV = "TRACEVIZ_MAX_BYTES"
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*", re.IGNORECASE)
_FIRST_TOKEN = re.compile(rb"\s*")


def parse_size(text: str) -> int:
    """Bytes from ``"4GiB"``, ``"512M"``, ``"1.5G"``, ``"100000"`` (k/M/G/T are powers of
    1024). Raises :class:`~traceviz.errors.UsageError` for anything else."""
    match = _SIZE.fullmatch(text)
    if not match:
        raise UsageError(f"{text!r} is not a size (examples: 500000000, 512M, 4GiB)")
    number, unit = float(match.group(1)), match.group(2).lower()
    size = int(number * 1024 ** "_kmgt".index(unit or "_"))
    if size <= 0:
        raise UsageError(f"{text!r}: the size limit must be more than 0 bytes")
    return size


def max_bytes(explicit: int | None = None) -> int:
    """The cap on a trace's JSON bytes: ``explicit`` when given, else the ``TRACEVIZ_MAX_BYTES``
    environment variable (a :func:`parse_size` text), else :data:`DEFAULT_MAX_BYTES`."""
    if explicit is not None:
        if isinstance(explicit, bool) or not isinstance(explicit, int) or explicit <= 0:
            raise UsageError(f"max_bytes must be a positive number of bytes, not {explicit!r}")
        return explicit
    env = os.environ.get(MAX_BYTES_ENV)
    if env:
        try:
            return parse_size(env)
        except UsageError as err:
            raise UsageError(f"{MAX_BYTES_ENV}: {err}") from None
    return DEFAULT_MAX_BYTES


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
    data: bytes = handle.read(cap + 1)
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
    view = memoryview(data)
    if data[:3] == UTF8_BOM:
        view = view[3:]  # no copy of the document
    start = _FIRST_TOKEN.match(view).end()  # type: ignore[union-attr]
    bare = view[start : start + 1] == b"["
    target: type = list[Event] if bare else TraceDocument
    try:
        decoded: Any = msgspec.json.decode(view, type=target)
    except msgspec.ValidationError as err:
        raise TraceFormatError(path, f"not a profiler trace: {_plain(err)}") from err
    except RecursionError as err:
        raise TraceFormatError(path, _too_deep()) from err
    except msgspec.DecodeError as err:
        decoded = _decode_lenient(path, view, target, err)
    if bare:
        return decoded, None
    return decoded.traceEvents, decoded


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


def _plain(err: Exception) -> str:
    """The decoder's message, to follow a colon: first letter lowered unless it starts an
    acronym ("JSON is malformed" stays as it is)."""
    text = str(err)
    if not text:
        return type(err).__name__
    if text[1:2].isupper():
        return text
    return text[:1].lower() + text[1:]
