"""Human-readable numbers for every renderer: durations, bytes, counts, ratios."""

from __future__ import annotations

import math


def fmt_us(value: float | None) -> str:
    """A duration given in µs, in the unit that reads best (``"12.3 µs"``, ``"4.56 ms"``)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    magnitude = abs(value)
    if magnitude >= 1e6:
        return f"{value / 1e6:.3g} s"
    if magnitude >= 1e3:
        return f"{value / 1e3:.3g} ms"
    return f"{value:.3g} µs"


def fmt_bytes(value: float | None) -> str:
    """Bytes with a binary prefix (``"1.5 MiB"``)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    magnitude = abs(float(value))
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if magnitude >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{int(value)} B"


def fmt_count(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{int(value):,}"


def fmt_pct(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.1f}%"


def fmt_name(name: str, width: int = 60) -> str:
    """A long kernel name cut to ``width`` characters, keeping its start."""
    return name if len(name) <= width else name[: width - 1] + "…"


#: The glyphs the renderers use and their ASCII spelling, for text bound for a pipe or a file
#: (:mod:`traceviz.commands.output`): spelled before the text is laid out, so that its lines
#: wrap at their ASCII width.
ASCII_SPELLING: dict[str, str] = {
    "→": "->", "≥": ">=", "≤": "<=", "≈": "~", "×": "x", "µ": "u", "–": "-", "—": "-",
    "−": "-", "•": "*", "·": "*", "…": "...", "Δ": "diff", "↔": "<->", "÷": "/", "±": "+/-",
    "³": "^3", "✓": "ok",
}  # fmt: skip
_SPELLING = str.maketrans(ASCII_SPELLING)


def ascii_text(text: str) -> str:
    """``text`` with :data:`ASCII_SPELLING`'s glyphs spelled out."""
    return text.translate(_SPELLING)
