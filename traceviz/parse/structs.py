"""The Python path's :class:`~traceviz.parse.source.EventSource`: a batch of events decoded by
msgspec into :class:`~traceviz.parse.events.Event` structs, read one attribute at a time
(C-level ``map(attrgetter(...))``, no per-event Python code)."""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter, itemgetter
from typing import Any

import msgspec
import numpy as np

from traceviz.parse.columns import Lazy, _encode, _hashable, floats, int64s, streamed
from traceviz.parse.events import Args, Event, TraceEvent
from traceviz.parse.source import EventSource

TOP_FIELDS: tuple[str, ...] = TraceEvent.__struct_fields__  # ph, cat, name, pid, tid, ts, dur
ARG_FIELDS: tuple[str, ...] = Args.__struct_fields__


class StructSource:
    """Events decoded into :class:`~traceviz.parse.events.Event` structs (the Python path)."""

    __slots__ = ("_args", "events")

    def __init__(self, events: Sequence[Event]) -> None:
        self.events = events
        self._args: list[Args] | None = None

    def __len__(self) -> int:
        return len(self.events)

    def take(self, rows: np.ndarray) -> StructSource:
        if len(rows) == 0:
            return StructSource([])
        if len(rows) == 1:
            return StructSource([self.events[int(rows[0])]])
        return StructSource(list(itemgetter(*rows.tolist())(self.events)))

    def _items(self, field: str) -> Sequence[Any]:
        if field in TOP_FIELDS:
            return self.events
        if self._args is None:
            self._args = list(map(attrgetter("args"), self.events))
        return self._args

    def values(self, field: str) -> Lazy:
        return Lazy(self._items(field), field)

    def floats(self, field: str) -> np.ndarray:
        return streamed(self.values(field), np.float64, floats)

    def ints(self, field: str) -> np.ndarray:
        return streamed(self.values(field), np.int64, int64s)

    def codes(self, numbering: dict[Any, int], field: str) -> np.ndarray:
        return _encode(numbering, self.values(field))

    def raw_codes(self, numbering: dict[Any, int], field: str, fallback: str = "") -> np.ndarray:
        return _encode(numbering, raw_bytes(self, field, fallback))

    def pair_codes(self, numbering: dict[Any, int], first: str, second: str) -> np.ndarray:
        return pairs_encoded(numbering, list(self.values(first)), list(self.values(second)))

    def equals(self, field: str, text: str) -> np.ndarray:
        return np.fromiter((v == text for v in self.values(field)), dtype=bool, count=len(self))


def raw_bytes(source: EventSource, field: str, fallback: str = "") -> list[bytes]:
    """The bytes of a raw-JSON field per event (``b""`` where absent), ``fallback``'s bytes
    where it is absent (the oldest schema's ``Input dims`` for ``Input Dims``)."""
    main: list[msgspec.Raw] = list(source.values(field))
    if not fallback:
        return list(map(bytes, main))
    other: list[msgspec.Raw] = list(source.values(fallback))
    if not any(map(len, other)):  # nothing to merge (every trace but the oldest)
        return list(map(bytes, main))
    return [bytes(d if len(d) else old) for d, old in zip(main, other, strict=True)]


def pairs_encoded(numbering: dict[Any, int], first: list[Any], second: list[Any]) -> np.ndarray:
    """Codes of the (first[i], second[i]) pairs in ``numbering``, streamed (zip reuses its
    tuple between lookups); unhashable values (a list) compared as their text."""
    try:
        pairs = zip(first, second, strict=True)
        return np.fromiter(map(numbering.__getitem__, pairs), dtype=np.int64, count=len(first))
    except TypeError:
        return _encode(numbering, [_hashable(p) for p in zip(first, second, strict=True)])
