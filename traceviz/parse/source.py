"""Where the table builders read a batch of events from, whichever way it was decoded.

An :class:`EventSource` is one batch of events (or a subset of one, :meth:`~EventSource.take`)
that hands out a field's values over all its events, already converted the way the tables
want them. Fields are named by their Python attribute: the top-level ones of
:class:`~traceviz.parse.events.Event` (``ph``, ``cat``, ``name``, ``pid``, ``tid``, ``ts``,
``dur``) and those of :class:`~traceviz.parse.events.Args` (``external_id``, ``grid``,
``label``, ...; the two sets of names do not overlap).

Two implementations: :class:`traceviz.parse.structs.StructSource` (msgspec structs, the
Python path) and :class:`traceviz.parse.native.NativeSource` (columns written by the C
scanner). Both give the
same arrays for the same events, so that every ``add_<table>`` builder is written once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

import numpy as np


class FieldValues(Protocol):
    """A field's Python values over the events: a list, or produced while iterated."""

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Any]: ...


class EventSource(Protocol):
    """One batch of events (or a subset of one), field by field."""

    def __len__(self) -> int: ...

    def take(self, rows: np.ndarray) -> EventSource:
        """The events at positions ``rows`` (int64, increasing), in that order."""
        ...

    def values(self, field: str) -> FieldValues:
        """The field's Python values, exactly as msgspec decodes them into ``Event``."""
        ...

    def floats(self, field: str) -> np.ndarray:
        """float64 per event: what :func:`~traceviz.parse.columns.streamed` with
        :func:`~traceviz.parse.columns.floats` makes of :meth:`values` (NaN where missing)."""
        ...

    def ints(self, field: str) -> np.ndarray:
        """int64 per event, ``MISSING_INT`` where missing or unusable (as
        :func:`~traceviz.parse.columns.int64s`)."""
        ...

    def codes(self, numbering: dict[Any, int], field: str) -> np.ndarray:
        """int64 code per event of its value in ``numbering`` (a column's value → code
        dictionary; new values are numbered in order of first appearance, as
        :meth:`~traceviz.parse.columns.ColumnSet.add_codes` does)."""
        ...

    def raw_codes(self, numbering: dict[Any, int], field: str, fallback: str = "") -> np.ndarray:
        """Codes of a raw-JSON field's ``bytes`` (``b""`` where absent) in ``numbering``; with
        ``fallback``, that field's bytes where ``field`` is absent."""
        ...

    def pair_codes(self, numbering: dict[Any, int], first: str, second: str) -> np.ndarray:
        """Codes of the (``first``, ``second``) value pairs in ``numbering`` (unhashable
        values compared as their text)."""
        ...

    def equals(self, field: str, text: str) -> np.ndarray:
        """Boolean per event: the field's value ``== text``."""
        ...
