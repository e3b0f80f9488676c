"""Which rank a trace file is, and the file's identity for incremental ingest, from its first
bytes only (a rank's trace is 100 MB – 2 GB: it is never read whole here).

The rank comes from the trace header's ``distributedInfo.rank`` (Kineto writes the header,
``distributedInfo`` included, before ``traceEvents``), read from the first
:data:`PREFIX_BYTES` bytes of the JSON (gzip is inflated only that far); when the header has
none, from a regular expression on the path (its first group, a decimal number).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from traceviz.errors import UsageError
from traceviz.gzip_size import inflated_size

PREFIX_BYTES = 1 << 20  # JSON bytes searched for distributedInfo (headers are a few KiB)
HEAD_HASH_BYTES = 1 << 16  # file bytes (as stored) hashed into the identity
DEFAULT_RANK_REGEX = r"rank[-_=]?(\d+)"  # matched case-insensitively on the whole path
GZIP_MAGIC = b"\x1f\x8b"
_KEY = b'"distributedInfo"'


class RankBasis:
    """Where a rank number came from (the manifest's ``rank_basis``)."""

    header = "distributedInfo"  # the trace header's distributedInfo.rank
    path = "path"  # the --rank-regex match on the file's path


@dataclass(frozen=True)
class FileIdentity:
    """What says a file is unchanged since its last ingest: size, mtime and a hash of its head.

    ``size`` bytes as stored, ``mtime_ns`` nanoseconds since the epoch, ``head_hash`` the
    BLAKE2b-128 hex digest of its first :data:`HEAD_HASH_BYTES` bytes as stored.
    """

    size: int
    mtime_ns: int
    head_hash: str


@dataclass(frozen=True)
class RankInfo:
    """A trace file's rank (``None`` when neither the header nor the path says), where it
    came from (:class:`RankBasis`), the header's ``world_size`` and host name when given."""

    rank: int | None
    basis: str | None
    world_size: int | None = None
    host: str | None = None


def file_identity(path: Path) -> FileIdentity:
    """Size, mtime and head hash of ``path``; ``OSError`` when it cannot be read."""
    stat = path.stat()
    with path.open("rb") as handle:
        head = handle.read(HEAD_HASH_BYTES)
    digest = hashlib.blake2b(head, digest_size=16).hexdigest()
    return FileIdentity(size=stat.st_size, mtime_ns=stat.st_mtime_ns, head_hash=digest)


def json_size(path: Path) -> int:
    """The JSON bytes the file holds: its size, or a gzip's inflated size
    (:func:`traceviz.gzip_size.inflated_size`: its trailer checked against its head, right
    past 4 GiB and for several members, erring high). For sizing worker memory."""
    with path.open("rb") as handle:
        inflated = inflated_size(handle)
        return os.fstat(handle.fileno()).st_size if inflated is None else inflated


def read_prefix(path: Path, limit: int = PREFIX_BYTES) -> bytes:
    """The first ``limit`` JSON bytes of ``path`` (gzip inflated only that far; a truncated
    gzip gives what could be inflated). ``OSError`` when the file cannot be read."""
    with path.open("rb") as handle:
        raw = handle.read(limit)
        if not raw.startswith(GZIP_MAGIC):
            return raw
        handle.seek(0)
        inflater = zlib.decompressobj(wbits=31)
        out = bytearray()
        while len(out) < limit:
            chunk = handle.read(1 << 16)
            if not chunk:
                break
            try:
                out += inflater.decompress(chunk, limit - len(out))
            except zlib.error:
                break
            if inflater.unconsumed_tail or inflater.eof:
                break
        return bytes(out[:limit])


def header_distributed_info(prefix: bytes) -> dict[str, Any] | None:
    """The ``distributedInfo`` object found in a JSON prefix, or ``None`` (absent, cut off by
    the prefix, or not an object)."""
    at = prefix.find(_KEY)
    if at < 0:
        return None
    colon = prefix.find(b":", at + len(_KEY))
    if colon < 0:
        return None
    text = prefix[colon + 1 :].decode("utf-8", errors="replace").lstrip()
    try:
        value, _ = json.JSONDecoder().raw_decode(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def compile_rank_regex(pattern: str | None) -> re.Pattern[str]:
    """``pattern`` (default :data:`DEFAULT_RANK_REGEX`) compiled case-insensitively; a
    :class:`UsageError` when it is not a regex with a group."""
    text = DEFAULT_RANK_REGEX if pattern is None else pattern
    try:
        compiled = re.compile(text, re.IGNORECASE)
    except re.error as err:
        raise UsageError(f"--rank-regex {text!r} is not a regular expression: {err}") from None
    if compiled.groups < 1:
        raise UsageError(f"--rank-regex {text!r} needs a group that captures the rank number")
    return compiled


def int_or_none(value: Any) -> int | None:
    """An int, or a text of decimal digits, as an int; else None (a bool too)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def detect_rank(path: str | Path, *, rank_regex: str | re.Pattern[str] | None = None) -> RankInfo:
    """The rank of the trace at ``path``: ``distributedInfo.rank`` from its header, else the
    ``rank_regex`` match on its path, else ``RankInfo(None, None)``. ``OSError`` when the file
    cannot be read."""
    source = Path(path)
    regex = rank_regex if isinstance(rank_regex, re.Pattern) else compile_rank_regex(rank_regex)
    info = header_distributed_info(read_prefix(source)) or {}
    world_size = int_or_none(info.get("world_size"))
    host = info.get("host") or info.get("hostname")
    host = str(host) if host else None
    rank = int_or_none(info.get("rank"))
    if rank is not None and rank >= 0:
        return RankInfo(rank, RankBasis.header, world_size, host)
    matches = list(regex.finditer(str(source)))  # the first group of the last match
    group = matches[-1].group(1) if matches else None
    if group is not None and group.isdigit():
        return RankInfo(int(group), RankBasis.path, world_size, host)
    return RankInfo(None, None, world_size, host)


__all__ = [
    "DEFAULT_RANK_REGEX",
    "FileIdentity",
    "RankBasis",
    "RankInfo",
    "compile_rank_regex",
    "detect_rank",
    "file_identity",
    "json_size",
    "read_prefix",
]
