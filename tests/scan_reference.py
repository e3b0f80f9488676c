"""A pure-Python stand-in for the C scanner ``traceviz.parse._scan`` (same interface), so the
native parse path can be tested whether or not the extension is built.

Built on msgspec with every field decoded as ``msgspec.Raw``: the exact text of each value
tells its kind (null, integer, float, string, anything else), so the kinds and values are
exactly what msgspec's decode into ``Event`` gives, and whatever the scanner may refuse
(``true`` in a number, an integer beyond int64, ``args: null``, NaN literals, invalid JSON)
raises :class:`Unsupported`. Strings are numbered field by field within a batch (the C numbers
them event by event): the Python side must not depend on the order of the codes.

It does not refuse what msgspec itself accepts silently (a key given twice in one object, an
escaped key): the C scanner refuses those too, the stand-in decodes them as msgspec does.
Slow (a Python function call per distinct value); for tests only.
"""

from __future__ import annotations

import math
from operator import attrgetter
from typing import Any

import msgspec
import numpy as np

ABSENT, NULL, INT, FLOAT, STR, RAW = range(6)
_MISSING = msgspec.Raw(b"")
_WHITESPACE = b" \t\n\r"


class Unsupported(Exception):
    """The input is outside what the scanner handles exactly; parse it the Python way."""


def _raw_struct(name: str, keys: tuple[str, ...], extra: tuple[Any, ...] = ()) -> Any:
    fields = [
        (f"f{j}", msgspec.Raw, msgspec.field(default=_MISSING, name=key))
        for j, key in enumerate(keys)
    ]
    return msgspec.defstruct(name, [*fields, *extra], forbid_unknown_fields=False)


def _address(buffer: Any) -> int:
    return int(np.frombuffer(buffer, dtype=np.uint8).__array_interface__["data"][0])


class Scanner:
    """See ``traceviz/parse/_scan.pyi``."""

    def __init__(
        self, data: Any, top_keys: tuple[str, ...], arg_keys: tuple[str, ...], raw_keys: frozenset
    ) -> None:
        view = memoryview(data)
        self.strings: list[str] = []
        self.raws: list[bytes] = []
        self._string_codes: dict[str, int] = {}
        self._raw_codes: dict[bytes, int] = {}
        self._n_top = len(top_keys)
        self._is_raw = [False] * len(top_keys) + [key in raw_keys for key in arg_keys]
        self._args_type = _raw_struct("RawArgs", arg_keys)
        self._event_type = _raw_struct(
            "RawEvent", top_keys, (("args", msgspec.Raw, msgspec.field(default=_MISSING)),)
        )
        text = bytes(view)
        start = len(text) - len(text.lstrip(_WHITESPACE))
        try:
            if text[start : start + 1] == b"[":
                self.bare = True
                msgspec.json.decode(text, type=list[msgspec.Raw])  # the whole document is valid
                array = msgspec.Raw(text[start : len(text.rstrip(_WHITESPACE))])
                self.events_start = start
            elif text[start : start + 1] == b"{":
                self.bare = False
                doc = msgspec.json.decode(text, type=dict[str, msgspec.Raw])
                array = doc.get("traceEvents")
                if array is None or bytes(array)[:1] != b"[":
                    raise Unsupported("no traceEvents array")
                self.events_start = _address(array) - _address(text)
            else:
                raise Unsupported("neither an array nor an object")
            self._events = msgspec.json.decode(array, type=list[msgspec.Raw])
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as err:
            raise Unsupported(str(err)) from None
        self._end = self.events_start + len(array)
        self.events_end = -1
        self._next = 0

    def next(self, max_events: int) -> tuple[int, list[bytes], list[bytes]] | None:
        if self._next >= len(self._events):
            self.events_end = self._end
            return None
        chunk = self._events[self._next : self._next + max_events]
        self._next += len(chunk)
        if any(bytes(raw)[:1] != b"{" for raw in chunk):
            raise Unsupported("an event is not an object")
        try:
            events = msgspec.json.decode(
                b"[" + b",".join(map(bytes, chunk)) + b"]", type=list[self._event_type]
            )
            texts = [bytes(event.args) or b"{}" for event in events]
            if any(text[:1] != b"{" for text in texts):
                raise Unsupported("args is not an object")
            args = msgspec.json.decode(b"[" + b",".join(texts) + b"]", type=list[self._args_type])
        except (msgspec.DecodeError, msgspec.ValidationError) as err:
            raise Unsupported(str(err)) from None
        kinds: list[bytes] = []
        values: list[bytes] = []
        for j, is_raw in enumerate(self._is_raw):
            items = events if j < self._n_top else args
            name = f"f{j if j < self._n_top else j - self._n_top}"
            texts = list(map(bytes, map(attrgetter(name), items)))
            # one kind and value per distinct text, in order of first appearance
            known = {text: self._kind(text, is_raw) for text in dict.fromkeys(texts)}
            kind_of = {text: kind for text, (kind, _) in known.items()}
            value_of = {text: value for text, (_, value) in known.items()}
            n = len(texts)
            kinds.append(np.fromiter(map(kind_of.__getitem__, texts), np.uint8, n).tobytes())
            values.append(np.fromiter(map(value_of.__getitem__, texts), np.int64, n).tobytes())
        return len(events), kinds, values

    def _kind(self, text: bytes, is_raw: bool) -> tuple[int, int]:
        if not text:
            return ABSENT, 0
        if is_raw:
            code = self._raw_codes.setdefault(text, len(self._raw_codes))
            if code == len(self.raws):
                self.raws.append(text)
            return RAW, code
        if text == b"null":
            return NULL, 0
        first = text[:1]
        if first == b'"':
            value = msgspec.json.decode(text, type=str)
            code = self._string_codes.setdefault(value, len(self._string_codes))
            if code == len(self.strings):
                self.strings.append(value)
            return STR, code
        if first in b"-0123456789" and first:
            if any(c in text for c in b".eE"):
                number = float(text)
                if not math.isfinite(number):
                    raise Unsupported(f"{text!r} overflows")
                return FLOAT, int(np.float64(number).view(np.int64))
            integer = int(text)
            if not -(2**63) <= integer < 2**63:
                raise Unsupported(f"{text!r} is beyond int64")
            return INT, integer
        raise Unsupported(f"{text[:20]!r} where a number or string belongs")
