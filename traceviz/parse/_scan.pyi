"""Optional C scanner (traceviz/parse/_scan.c): a trace's events as columns, straight from the
JSON bytes. It gives exactly what msgspec's decode into ``traceviz.parse.events.Event`` gives,
or raises :class:`Unsupported` (then parse the Python way).

Kinds, per event and field (``values[j]`` holds, native-endian 8 bytes):
0 ABSENT (key not there, or no "args" for an arg key): 0; 1 NULL: 0; 2 INT: the int64;
3 FLOAT: the float64, as Python's ``float()`` parses the text; 4 STR: code into ``strings``;
5 RAW (raw fields only, any JSON value): code into ``raws``, the value's exact bytes.
"""

from typing_extensions import Buffer

class Unsupported(Exception):
    """The input is outside what the scanner handles exactly; parse it the Python way.
    ``str(err)`` says what and where: "<what> at byte <offset>"."""

class Scanner:
    """Scans ``data`` (a whole JSON trace document, BOM already cut off) up to its first event;
    raises Unsupported when the document's start is not a supported trace. Holds a buffer
    reference until collected. Fields are numbered over ``top_keys`` then ``arg_keys``; a key
    in ``raw_keys`` (arg keys only) is a RAW field. TypeError for bad arguments."""

    bare: bool
    """The document is a bare array of events (else an object with "traceEvents")."""
    events_start: int
    """Offset of the '[' that opens the events array."""
    events_end: int
    """Offset just past the events array's ']'; -1 until the array is exhausted."""
    strings: list[str]
    """Distinct string values of non-raw fields so far, in order of first appearance; code =
    index. A new list at each read: changing it changes nothing in the scanner."""
    raws: list[bytes]
    """Distinct raw texts of raw fields so far, in order of first appearance; code = index.
    A new list at each read, like ``strings``."""

    def __init__(
        self,
        data: Buffer,
        top_keys: tuple[str, ...],
        arg_keys: tuple[str, ...],
        raw_keys: frozenset[str],
    ) -> None: ...
    def next(self, max_events: int) -> tuple[int, list[bytes], list[bytes]] | None:
        """The next 1..max_events events: ``(n, kinds, values)``, ``kinds[j]`` n bytes,
        ``values[j]`` 8*n bytes. None once the array is exhausted; the call that reaches its
        end also validates the rest of the document. Unsupported at the first thing it cannot
        give exactly (later calls raise it again); after a MemoryError later calls raise
        Unsupported (that batch's events are lost). RuntimeError when called while a next() of
        the same scanner runs (from a gc callback, a finalizer or another thread). The GIL is
        released while it scans: other threads run meanwhile (the buffer must not change)."""
