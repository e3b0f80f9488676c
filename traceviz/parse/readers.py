"""Trace formats are readers: each says whether it recognises a file and turns its bytes into a
:class:`~traceviz.trace.Trace`.

:func:`traceviz.parse.load_trace` reads a file's JSON bytes once (gzip inflated, the size cap
applied: :mod:`traceviz.parse.read`), asks :func:`reader_for` which reader recognises them
(:data:`READERS` in order, the first whose ``detect`` says yes), and lets it build the trace.
Chrome/Kineto (:data:`KINETO`) comes last and takes anything the others did not claim, so that
every error about a malformed trace keeps its Kineto wording.

A new format is one new module with a ``detect`` and a ``read`` function, plus one
:class:`Reader` line in :data:`READERS` here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from traceviz.parse import ort_profile
from traceviz.parse.build import build_trace_batches
from traceviz.parse.read import decode_batches
from traceviz.trace import Trace

__all__ = ["HEAD_BYTES", "KINETO", "ORT_PROFILE", "READERS", "Reader", "reader_for"]

#: How many leading bytes of the (inflated) JSON a ``detect`` function is shown.
HEAD_BYTES = 4096


@dataclass(frozen=True)
class Reader:
    """One trace format.

    ``detect(path, head)`` says whether the format recognises a file from its first
    :data:`HEAD_BYTES` bytes of JSON (never raising); ``read(path, data)`` builds the trace from
    the whole JSON, raising :class:`~traceviz.errors.TraceFormatError` naming ``path``.
    """

    name: str
    detect: Callable[[Path, bytes], bool]
    read: Callable[[Path, bytes | bytearray], Trace]


def _kineto_detect(path: Path, head: bytes) -> bool:
    return True  # the fallback: whatever no other reader claims


def _kineto_read(path: Path, data: bytes | bytearray) -> Trace:
    batches, _, doc = decode_batches(path, data)
    return build_trace_batches(path, batches, doc)


KINETO = Reader("chrome-kineto", _kineto_detect, _kineto_read)
ORT_PROFILE = Reader(ort_profile.FORMAT, ort_profile.detect, ort_profile.read_profile)

#: Tried in order; the first reader whose ``detect`` is true reads the file.
READERS: tuple[Reader, ...] = (ORT_PROFILE, KINETO)


def reader_for(path: Path, data: bytes | bytearray) -> Reader:
    """The first reader of :data:`READERS` that recognises ``data`` (the file's JSON bytes)."""
    head = bytes(memoryview(data)[:HEAD_BYTES])
    for reader in READERS:
        if reader.detect(path, head):
            return reader
    return KINETO
