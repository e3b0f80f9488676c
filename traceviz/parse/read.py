"""Bytes in, typed events out: file reading, gzip, JSON decoding, and the errors for each."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any

import msgspec

from traceviz.errors import TraceFormatError
from traceviz.parse.events import Event, TraceDocument

GZIP_MAGIC = b"\x1f\x8b"


def read_bytes(path: Path) -> bytes:
    """The file's JSON bytes, gunzipped when the file is gzip (by content, not by name)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError as err:
        raise TraceFormatError(path, "no such file") from err
    except IsADirectoryError as err:
        raise TraceFormatError(path, "is a directory, not a trace file or trace cache") from err
    except OSError as err:
        raise TraceFormatError(path, f"cannot read: {err.strerror or err}") from err
    if raw[:2] == GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as err:
            raise TraceFormatError(path, f"truncated or corrupt gzip: {err}") from err
    if not raw.strip():
        raise TraceFormatError(path, "empty file")
    return raw


def decode_events(path: Path, data: bytes) -> tuple[list[Event], TraceDocument | None]:
    """Decode a trace document (or the oldest bare event array) into typed events.

    Returns the events and the document (``None`` for a bare array). Python's json module is
    the fallback for files msgspec rejects only because of ``NaN``/``Infinity`` literals.
    """
    bare = data.lstrip()[:1] == b"["
    target: type = list[Event] if bare else TraceDocument
    try:
        decoded: Any = msgspec.json.decode(data, type=target)
    except msgspec.ValidationError as err:
        raise TraceFormatError(path, f"not a profiler trace: {_plain(err)}") from err
    except msgspec.DecodeError as err:
        decoded = _decode_lenient(path, data, target, err)
    if bare:
        return decoded, None
    return decoded.traceEvents, decoded


def _decode_lenient(path: Path, data: bytes, target: type, first: Exception) -> object:
    try:
        plain = json.loads(data)
    except (ValueError, RecursionError):
        raise TraceFormatError(path, f"not valid JSON ({_plain(first)})") from first
    try:
        return msgspec.convert(plain, type=target)
    except msgspec.ValidationError as err:
        raise TraceFormatError(path, f"not a profiler trace: {_plain(err)}") from err


def _plain(err: Exception) -> str:
    text = str(err)
    return text[:1].lower() + text[1:] if text else type(err).__name__
