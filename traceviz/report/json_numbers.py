"""Counts as JSON integers: ``"calls": 3``, not ``3.0``.

pandas keeps whole counts in float columns whenever a table mixes units or holds a gap (metric
rows, region rows of two sides), so the JSON forms pass through :func:`whole_counts` last.
Only values that mean a count are changed, and only when they are whole: a count, id, byte size
by its key, or the ``a``/``b``/``delta``/``value`` of a row whose ``unit`` is ``count`` or
``bytes``. Times, ratios and shares stay numbers with a fraction even when whole.
"""

from __future__ import annotations

from typing import Any

COUNT_UNITS = frozenset({"count", "bytes"})
UNIT_VALUE_KEYS = frozenset({"a", "b", "delta", "value"})
COUNT_KEYS = frozenset(
    {"calls", "count", "bytes", "steps", "frame_id", "recompile_id", "events_in"}
)
COUNT_SUFFIXES = ("_count", "_calls", "_bytes", "_events", "_kernels", "_launches")


def is_count_key(key: str) -> bool:
    """Whether a key names a count, an id or a size in bytes (never a time or a ratio)."""
    return key in COUNT_KEYS or key.endswith(COUNT_SUFFIXES)


def whole_counts(data: Any) -> Any:
    """``data`` (JSON-ready dicts, lists, values) with whole floats that mean counts as ints."""
    if isinstance(data, list):
        return [whole_counts(item) for item in data]
    if not isinstance(data, dict):
        return data
    counted_unit = data.get("unit") in COUNT_UNITS
    return {
        key: _integral(value)
        if (is_count_key(str(key)) or (counted_unit and key in UNIT_VALUE_KEYS))
        else whole_counts(value)
        for key, value in data.items()
    }


def _integral(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return whole_counts(value)
