"""How many bytes a gzip file inflates to, without inflating it all: its trailer, checked.

A gzip member ends with ISIZE, its inflated size modulo 2**32 (RFC 1952). The trailer alone is
wrong in two cases, and both happen with traces:

- **4 GiB or more**: the trailer has wrapped (a 4.5 GiB trace reads 0.5 GiB);
- **several members** (``cat a.gz b.gz``, bgzip's 64 KiB blocks, some parallel compressors):
  the last 4 bytes are the *last member's* size only.

So :func:`inflated_size` inflates a bounded head of the file (:data:`PROBE_BYTES` of output,
member after member): a file that ends within it has its exact size. Otherwise the head's
compression ratio predicts the whole (``file size × inflated / consumed``), and the trailer is
lifted by the largest multiple of 4 GiB that stays within :data:`SLACK` × that prediction and
deflate's largest ratio (:func:`lift_trailer`). For one member that is never below the truth
while the whole compresses at most :data:`SLACK` times better than its head; it is exact
unless 4 GiB more also fits under :data:`SLACK` × the prediction (never for files under
2**32 / :data:`MAX_RATIO` bytes, about 4 MB; for a prediction near the truth, not below
8 GiB), and errs high by 4 GiB steps where it does. A file of several members that goes on
past the head is the prediction itself, an estimate either way (the trailer says nothing of
the other members).

For sizing work (whether two traces load at once, a worker's memory), never for limits: the
parser counts the bytes it inflates (:mod:`traceviz.parse.read`). A leaf: imports no traceviz.
"""

from __future__ import annotations

import math
import os
import zlib
from typing import BinaryIO

__all__ = ["GZIP_MAGIC", "MAX_RATIO", "PROBE_BYTES", "SLACK", "inflated_size", "lift_trailer"]

GZIP_MAGIC = b"\x1f\x8b"
#: Deflate's largest compression ratio (258-byte matches in 2 bits: 1032:1, zlib's tech notes).
MAX_RATIO = 1032
#: Inflated bytes of the file's head read to measure its ratio (about 0.5 ms of zlib).
PROBE_BYTES = 1 << 18
#: How much better than its head the whole file may compress before :func:`lift_trailer` can
#: read it low (the corpus's and samples' 149 gzip traces: the whole inflates to 0.67–1.25×
#: what the first 256 KiB's ratio predicts).
SLACK = 1.5
_WRAP = 1 << 32  # ISIZE counts modulo this
_READ = 1 << 16  # compressed bytes fed to zlib at a time


def lift_trailer(trailer: int, compressed: int, predicted: float, *, slack: float = SLACK) -> int:
    """The largest inflated size ``trailer + k × 2**32`` (``k ≥ 0``) of a one-member gzip of
    ``compressed`` bytes that is at most ``slack × predicted`` bytes and within deflate's
    largest ratio (at most ``MAX_RATIO × compressed``); ``trailer`` when even that is above.
    Never below the true size while that is at most ``slack × predicted``."""
    if not 0 <= trailer < _WRAP:
        raise ValueError(f"a gzip trailer is 0 ≤ ISIZE < 2**32, not {trailer}")
    limit = min(slack * predicted, MAX_RATIO * compressed)
    return trailer + max(0, math.floor((limit - trailer) / _WRAP)) * _WRAP


def inflated_size(handle: BinaryIO) -> int | None:
    """The bytes the gzip file open in ``handle`` inflates to (the module docstring says how
    and how far it is exact), at least the file's own size unless it inflates whole within
    the probe; None when it is not a gzip file. Reads from the start and leaves the position
    anywhere; ``OSError`` when the file cannot be read."""
    handle.seek(0)
    if handle.read(2) != GZIP_MAGIC:
        return None
    size = os.fstat(handle.fileno()).st_size
    handle.seek(max(size - 4, 0))
    trailer = int.from_bytes(handle.read(4).rjust(4, b"\0"), "little")
    handle.seek(0)
    out, used, members, done = _probe(handle)
    if done:
        return out  # the whole file inflated within the probe: exact
    predicted = size * out / used if used else float(size)
    if members > 1:
        return max(size, round(predicted))
    return max(size, lift_trailer(trailer, size, predicted, slack=SLACK))


def _probe(handle: BinaryIO) -> tuple[int, int, int, bool]:
    """Inflate the file's head, member after member, until :data:`PROBE_BYTES` are out or the
    file ends: (bytes out, compressed bytes consumed, members begun, whether the file ended
    there after a whole member; NUL padding after the last member is allowed, as gzip and
    Python allow it). A corrupt or truncated stream ends the probe, not done."""
    inflater = zlib.decompressobj(wbits=31)
    out = used = 0
    members = 1
    data = b""
    while True:
        if not data and not (data := handle.read(_READ)):
            return out, used, members, inflater.eof
        if inflater.eof:  # one member ended and bytes follow: padding or the next member
            rest = data.lstrip(b"\0")
            used, data = used + len(data) - len(rest), rest
            if not data:
                continue
            inflater = zlib.decompressobj(wbits=31)
            members += 1
        if out >= PROBE_BYTES:
            return out, used, members, False
        try:
            chunk = inflater.decompress(data, PROBE_BYTES - out)
        except zlib.error:
            return out, used, members, False
        out += len(chunk)
        rest = inflater.unused_data if inflater.eof else inflater.unconsumed_tail
        used += len(data) - len(rest)
        data = rest
