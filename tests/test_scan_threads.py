"""The C scanner without the GIL: ``Scanner.next`` lets other threads run while it scans, so two
traces load at once on two cores (the two sides of a comparison). What must hold: scanners in
threads give exactly what they give one after another; Python code runs during a scan; a second
``next()`` on a busy scanner is refused and no event is lost or given twice; the slow-path floats
(read by ``strtod`` in the "C" locale, not ``PyOS_string_to_double``, which needs the GIL) are
bit-equal to Python's ``float``.
"""

from __future__ import annotations

import gzip
import random
import struct
import sys
import threading
import time
from pathlib import Path

from tests.conftest import SAMPLES, corpus_files
from tests.test_scan import ARG_KEYS, FLOAT, RAW_KEYS, TOP_KEYS, field, needs_scan, scan_events

try:
    from traceviz.parse import _scan
except ImportError:  # pragma: no cover - depends on the build; needs_scan skips
    _scan = None  # type: ignore[assignment]

pytestmark = needs_scan

Scanned = tuple[list[tuple[int, list[bytes], list[bytes]]], list[str], list[bytes]]


def _document(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def _whole(data: bytes, batch: int) -> Scanned:
    """Every batch of the document (n, kinds, values as bytes), then the strings and raws."""
    scanner = _scan.Scanner(data, TOP_KEYS, ARG_KEYS, RAW_KEYS)
    batches = []
    while (got := scanner.next(batch)) is not None:
        n, kinds, values = got
        batches.append((n, [bytes(k) for k in kinds], [bytes(v) for v in values]))
    return batches, scanner.strings, scanner.raws


def _documents() -> list[bytes]:
    """The sample run traces and the corpus traces under 40 MB (the largest scans run longest,
    so the threads overlap)."""
    paths = sorted(SAMPLES.glob("*/*.pt.trace.json*")) + corpus_files()
    docs = [_document(p) for p in paths if p.stat().st_size < 40_000_000]
    return sorted(docs, key=len, reverse=True)[:12]


def test_scanners_in_threads_equal_one_after_another() -> None:
    docs = _documents()
    assert len(docs) >= 8
    expected = [_whole(d, 4096) for d in docs]
    got: list[Scanned | BaseException | None] = [None] * len(docs)

    def work(i: int) -> None:
        try:
            got[i] = _whole(docs[i], 4096)
        except BaseException as err:  # reported by the assert below
            got[i] = err

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(docs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, (want, have) in enumerate(zip(expected, got, strict=True)):
        assert have == want, f"document {i} ({len(docs[i]):,} bytes) differs in a thread"


def _big_document(events: int = 200_000) -> bytes:
    rows = ",".join(
        f'{{"ph":"X","name":"k{i % 50}","pid":1,"tid":2,"ts":{1000 + i}.125,"dur":1.5}}'
        for i in range(events)
    )
    return f'{{"traceEvents":[{rows}]}}'.encode()


def _ran_during_scan(data: bytes) -> bool:
    """Whether a thread woken just before the scan ran while this thread scanned ``data``.

    With a switch interval of 100 s the interpreter never takes the GIL from the thread that
    holds it, and this thread makes no blocking call between next() calls, so the other thread
    can run only while next() has released the GIL."""
    scanner = _scan.Scanner(data, TOP_KEYS, ARG_KEYS, RAW_KEYS)
    go = threading.Event()
    ran: list[bool] = []

    def other() -> None:
        go.wait()
        ran.append(True)

    old = sys.getswitchinterval()
    sys.setswitchinterval(100.0)  # before the thread waits for the GIL with the old interval
    thread = threading.Thread(target=other)
    try:
        thread.start()
        go.set()
        while scanner.next(20_000) is not None:
            pass
        return bool(ran)
    finally:
        sys.setswitchinterval(old)
        go.set()
        thread.join(timeout=60)


def test_next_lets_python_threads_run_while_it_scans() -> None:
    """Up to five whole scans (on a busy machine the woken thread may not get a core during
    one); a scanner that holds the GIL fails all five."""
    data = _big_document()
    assert any(_ran_during_scan(data) for _ in range(5)), "no thread ran during next()"


def test_a_busy_scanner_refuses_next_from_another_thread_and_loses_nothing() -> None:
    data = _big_document(100_000)
    scanner = _scan.Scanner(data, TOP_KEYS, ARG_KEYS, RAW_KEYS)
    counts: list[int] = []
    errors: list[str] = []
    done = threading.Event()

    def pull(batch: int) -> None:
        while not done.is_set():
            try:
                got = scanner.next(batch)
            except RuntimeError as err:
                errors.append(str(err))
                time.sleep(0.0005)  # give the GIL back: the busy one needs it to finish
                continue
            if got is None:
                done.set()
                return
            counts.append(got[0])

    threads = [threading.Thread(target=pull, args=(b,)) for b in (97, 1000, 5000)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert sum(counts) == 100_000  # every event once
    assert set(errors) <= {"Scanner.next is already running"}
    assert scanner.strings == ["X"] + [f"k{i}" for i in range(50)]


def test_slow_path_floats_equal_python_float() -> None:
    """More than 15 significant digits or a large exponent: strtod in the "C" locale, bit-equal
    to float() (both round correctly) over random texts, e.g. Kineto's 16-digit timestamps."""
    rng = random.Random(14)
    texts = []
    for _ in range(20_000):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(16, 30)))
        point = rng.randint(1, len(digits) - 1)
        exponent = rng.choice(["", f"e{rng.randint(-330, 300)}", f"E+{rng.randint(0, 20)}"])
        sign = rng.choice(["", "-"])
        texts.append(f"{sign}{digits[:point].lstrip('0') or '0'}.{digits[point:]}{exponent}")
    texts = [t for t in texts if abs(float(t)) != float("inf")]
    text = "[" + ",".join(f'{{"ts":{t}}}' for t in texts) + "]"
    got = scan_events(text)[field("ts")]
    assert got == [(FLOAT, struct.pack("=d", float(t))) for t in texts]


def _columns(scanned: Scanned) -> list[tuple[bytes, bytes]]:
    """Per field, the kinds and values of all batches joined."""
    batches = scanned[0]
    return [
        (b"".join(b[1][j] for b in batches), b"".join(b[2][j] for b in batches))
        for j in range(len(batches[0][1]))
    ]


def test_room_grows_with_the_gil_between_stretches() -> None:
    """One batch larger than its first room (FIRST_CAP = 131,072 events) stops scanning to
    grow it with the GIL held, then goes on: the same columns as in small batches."""
    data = _big_document(140_000)
    one = _whole(data, 200_000)
    assert [n for n, _, _ in one[0]] == [140_000]
    small = _whole(data, 9_999)
    assert len(small[0]) == 15
    assert _columns(one) == _columns(small) and one[1:] == small[1:]
