"""A gzip file's inflated size without inflating it (traceviz.gzip_size): its trailer (ISIZE,
modulo 4 GiB, the last member's only) checked against the head's ratio. No 4 GiB file is
written: the members here are crafted (a head that inflates at deflate's ratio, filler the
probe never reads, the trailer set by hand), or small with the 4 GiB wrap made small."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import traceviz.gzip_size as gz
from tests.conftest import CORPUS, SAMPLES
from traceviz import pipeline
from traceviz.gzip_size import MAX_RATIO, PROBE_BYTES, SLACK, inflated_size, lift_trailer
from traceviz.ranks.detect import json_size

GiB = 2**30
WRAP = 2**32
HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # gzip, deflate, no name, no mtime


def _size_of(path: Path) -> int | None:
    with path.open("rb") as handle:
        return inflated_size(handle)


def _events(n: int, start: int = 0) -> bytes:
    """A Kineto-like JSON text of ``n`` events (compresses about 10:1, evenly)."""
    rows = (
        {"ph": "X", "cat": "kernel", "name": f"k{i % 97}", "ts": 1000 + 3 * i, "dur": i % 13}
        for i in range(start, start + n)
    )
    return ("[" + ",".join(json.dumps(r) for r in rows) + "]").encode()


def _crafted_member(path: Path, *, true_size: int, head: bytes, total_bytes: int) -> None:
    """One gzip member whose first bytes inflate to ``head`` (more than the probe reads),
    padded with filler the probe never reaches to ``total_bytes`` on disk, ending with the
    trailer a member of ``true_size`` inflated bytes has (CRC left 0: nothing reads it)."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    body = deflate.compress(head) + deflate.flush(zlib.Z_FULL_FLUSH)
    filler = total_bytes - len(HEADER) - len(body) - 8
    assert filler >= 0
    trailer = (0).to_bytes(4, "little") + (true_size % WRAP).to_bytes(4, "little")
    path.write_bytes(HEADER + body + b"\x00" * filler + trailer)


# --- the arithmetic ------------------------------------------------------------------------


def test_lift_trailer_on_named_cases() -> None:
    half = GiB // 2
    # 4.5 GiB inflated reads 0.5 GiB; a prediction near 4.5 GiB lifts it back, one 4 GiB step
    assert lift_trailer(half, 450 * 2**20, 4.4 * GiB) == half + WRAP
    assert lift_trailer(half, 450 * 2**20, 3.1 * GiB) == half + WRAP  # 1.5 × 3.1 ≥ 4.5
    # a prediction of 1 GiB: 4.5 GiB is past 1.5 × it, the trailer stands (documented miss)
    assert lift_trailer(half, 450 * 2**20, 1 * GiB) == half
    # under 2**32 / 1032 bytes on disk no wrap is possible, whatever the prediction says
    small = WRAP // MAX_RATIO
    assert lift_trailer(12345, small, 100 * GiB) == 12345
    # deflate's ratio caps the lift: 5 MB can hold at most 5.16 GB
    assert lift_trailer(half, 5 * 10**6, 40 * GiB) == half + WRAP
    # far past 4 GiB, a big prediction errs high by whole steps, never low
    assert lift_trailer(half, 10**9, 12 * GiB) == half + 4 * WRAP
    with pytest.raises(ValueError, match="trailer"):
        lift_trailer(WRAP, 10, 1.0)


@given(
    true_size=st.integers(0, 2**44),
    ratio=st.floats(1.0, float(MAX_RATIO)),
    misprediction=st.floats(1 / SLACK * (1 + 1e-12), 4.0),
)
def test_lift_trailer_never_reads_a_member_low(
    true_size: int, ratio: float, misprediction: float
) -> None:
    """Whenever the truth is within SLACK × the prediction and deflate's ratio, the lifted
    trailer is at least the truth, agrees with the trailer modulo 2**32, and is the truth
    itself when no further 4 GiB step fits under SLACK × the prediction."""
    compressed = max(1, -(-true_size // MAX_RATIO), int(true_size / ratio))
    predicted = true_size * misprediction
    lifted = lift_trailer(true_size % WRAP, compressed, predicted)
    assert lifted % WRAP == true_size % WRAP
    assert lifted >= true_size
    if true_size + WRAP > min(SLACK * predicted, MAX_RATIO * compressed):
        assert lifted == true_size
    else:
        assert lifted <= SLACK * predicted


# --- files -------------------------------------------------------------------------------


def test_a_crafted_member_past_4_gib_reads_its_true_size(tmp_path: Path) -> None:
    """A member of 4.5 GiB (its trailer says 0.5 GiB): the head inflates at deflate's ratio
    (zeros), the file is as long as such a member would be; pipeline and ranks agree."""
    true_size = 4 * GiB + GiB // 2
    head = b"\x00" * (2 * PROBE_BYTES)
    ratio = len(head) / len(zlib.compress(head, 9))
    path = tmp_path / "big.json.gz"
    _crafted_member(path, true_size=true_size, head=head, total_bytes=int(true_size / ratio))
    assert path.read_bytes()[-4:] == (GiB // 2).to_bytes(4, "little")  # what was read before
    assert _size_of(path) == true_size
    assert pipeline._json_bytes(path) == true_size
    assert json_size(path) == true_size


def test_a_wrap_made_small_is_undone_on_a_real_deflate_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the wrap at 1 MiB (the probe at 64 KiB, the slack at 1.25: in proportion to a
    4 GiB step), a real gzip of 3.5 MiB of events, its trailer taken modulo 1 MiB, reads its
    true size: the whole arithmetic on a real stream whose head and rest compress alike."""
    monkeypatch.setattr(gz, "_WRAP", 2**20)
    monkeypatch.setattr(gz, "PROBE_BYTES", 2**16)
    monkeypatch.setattr(gz, "SLACK", 1.25)
    text = _events(52_000)
    raw = bytearray(gzip.compress(text, mtime=0))
    raw[-4:] = (len(text) % 2**20).to_bytes(4, "little")
    path = tmp_path / "wrapped.json.gz"
    path.write_bytes(bytes(raw))
    assert len(text) > 3 * 2**20
    assert _size_of(path) == len(text)


def test_several_members(tmp_path: Path) -> None:
    """bgzip-like members: within the probe the sum is exact; past it the head's prediction
    (the last member's trailer alone would say 32 KiB)."""
    small = [_events(300, 300 * i) for i in range(3)]
    path = tmp_path / "few.json.gz"
    path.write_bytes(b"".join(gzip.compress(p, mtime=0) for p in small))
    assert _size_of(path) == sum(len(p) for p in small)
    parts = [_events(600, 600 * i) for i in range(200)]
    path = tmp_path / "many.json.gz"
    path.write_bytes(b"".join(gzip.compress(p, mtime=0) for p in parts))
    total = sum(len(p) for p in parts)
    assert total > 4 * PROBE_BYTES
    got = _size_of(path)
    assert got is not None and abs(got - total) < 0.1 * total
    assert int.from_bytes(path.read_bytes()[-4:], "little") == len(parts[-1])  # the old reading


def test_padding_truncation_and_plain_files(tmp_path: Path) -> None:
    text = _events(2000)
    padded = tmp_path / "padded.json.gz"
    padded.write_bytes(gzip.compress(text, mtime=0) + b"\x00" * 1000)
    assert _size_of(padded) == len(text)
    whole = gzip.compress(_events(60_000), mtime=0)
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(whole[: len(whole) // 2])  # the trailer is gone: bytes of the stream
    assert _size_of(cut) >= cut.stat().st_size  # at least the file, no exception
    corrupt = tmp_path / "corrupt.json.gz"
    corrupt.write_bytes(HEADER + b"\xff" * 100)
    assert _size_of(corrupt) >= corrupt.stat().st_size
    plain = tmp_path / "plain.json"
    plain.write_bytes(text)
    assert _size_of(plain) is None
    assert pipeline._json_bytes(plain) == json_size(plain) == len(text)
    assert pipeline._json_bytes(tmp_path / "missing.json.gz") == 0


@pytest.mark.parametrize(
    "path",
    sorted(CORPUS.glob("*/*.json.gz")) + sorted(SAMPLES.glob("h200/*/*.json.gz")),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_every_real_gzip_trace_reads_its_exact_size(path: Path) -> None:
    """The corpus's and the H200 samples' traces (the largest 63 MB inflated): exact, as the
    trailer was for them; pipeline and ranks read the same."""
    with gzip.open(path, "rb") as stream:
        true_size = len(stream.read())
    assert _size_of(path) == pipeline._json_bytes(path) == json_size(path) == true_size
