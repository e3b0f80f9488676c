"""One diagnosis result: :class:`Finding`, its :class:`Severity` and its :class:`Evidence`.

A finding says what is wrong (or could be better), shows the numbers that say so, estimates
what fixing it would gain where that can be done honestly, and names the next step with a link
to the PyTorch documentation. Findings are plain frozen values: every renderer (text, JSON,
Markdown, HTML) formats the same object.

Units of :attr:`Evidence.unit` (see :class:`Unit`): ``us`` (microseconds), ``bytes``,
``count``, ``ratio`` (a fraction, 1.0 = 100%), ``x`` (a speed or size factor), ``""`` (text).

Evidence text is short by construction, for every rule: a string (or an :class:`Evidence`
label or text value) longer than :data:`MAX_EVIDENCE_CHARS` is cut at the last list separator
that fits and ends in ``"… N more"`` (N list items, or characters when it is no list).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Any

from traceviz.units import fmt_bytes, fmt_us

__all__ = [
    "MAX_EVIDENCE_CHARS",
    "Evidence",
    "Finding",
    "Severity",
    "Unit",
    "format_value",
    "shorten",
]

#: The longest evidence string (before its "… N more" tail), characters.
MAX_EVIDENCE_CHARS = 200
#: List separators an over-long evidence string is cut at, most specific first.
_SEPARATORS = (" → ", "; ", ", ")

_SEVERITY_ORDER = ("info", "warning", "error")


class Severity(str, Enum):
    """How much a finding matters; ordered ``info < warning < error``."""

    INFO = "info"  # an opportunity or a fact worth knowing
    WARNING = "warning"  # costs time or makes the numbers doubtful
    ERROR = "error"  # the comparison is wrong or the compiled model is clearly worse

    @property
    def rank(self) -> int:
        """0 for info, 1 for warning, 2 for error."""
        return _SEVERITY_ORDER.index(self.value)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Severity):
            return NotImplemented
        return self.rank < other.rank

    def __le__(self, other: object) -> bool:
        if not isinstance(other, Severity):
            return NotImplemented
        return self.rank <= other.rank

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, Severity):
            return NotImplemented
        return self.rank > other.rank

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, Severity):
            return NotImplemented
        return self.rank >= other.rank


class Unit:
    """Values of :attr:`Evidence.unit`."""

    US = "us"  # microseconds
    BYTES = "bytes"
    COUNT = "count"
    RATIO = "ratio"  # a fraction: 0.25 is shown as 25%
    FACTOR = "x"  # a factor: 1.8 is shown as 1.80×
    TEXT = ""


@dataclass(frozen=True)
class Evidence:
    """One number (or name) behind a finding.

    ``share`` is the value's fraction of the mean step time (0.25 = a quarter of the step),
    given for times that are per step; None when it does not apply.
    """

    label: str
    value: float | int | str
    unit: str = Unit.TEXT
    share: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "label", shorten(self.label))
        if isinstance(self.value, str):
            object.__setattr__(self, "value", shorten(self.value))

    def text(self) -> str:
        """``"label: value (share of the mean profiled step)"`` for people: the share is of
        the profiled step, which a run's timed step need not equal."""
        out = f"{self.label}: {format_value(self.value, self.unit)}"
        if self.share is not None and math.isfinite(self.share):
            out += f" ({100.0 * self.share:.1f}% of profiled step)"
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "value": _plain(self.value),
            "unit": self.unit,
            "share": _plain(self.share),
        }


@dataclass(frozen=True)
class Finding:
    """A diagnosis: what, how sure, the evidence, the gain, and what to do next.

    - ``id``: stable rule id (``"graph-break"``); several findings may share one (one per trace);
    - ``trace``: the label of the trace it is about (``"compiled"``), ``""`` for the pair;
    - ``evidence``: :class:`Evidence` values and short strings (names of kernels, ops, reasons);
    - ``est_gain_us``: estimated step-time saving per step, µs, when one can be estimated
      honestly; ``gain_basis`` says how (``"upper bound: ..."``, ``"measured: ..."``);
    - ``next_step``: the setting, flag or code change to try; ``docs_url``: where it is documented.
    """

    id: str
    severity: Severity
    title: str
    evidence: tuple[Evidence | str, ...] = ()
    est_gain_us: float | None = None
    gain_basis: str = ""
    next_step: str = ""
    docs_url: str = ""
    trace: str = ""

    def __post_init__(self) -> None:
        short = tuple(e if isinstance(e, Evidence) else shorten(str(e)) for e in self.evidence)
        object.__setattr__(self, "evidence", short)

    def sort_key(self) -> tuple[int, float, str, str]:
        """Most severe first, then largest estimated gain (unknown last), then id and trace."""
        gain = self.est_gain_us if self.est_gain_us is not None else -1.0
        return (-self.severity.rank, -gain, self.id, self.trace)

    def evidence_lines(self) -> list[str]:
        """Each piece of evidence as one line of text."""
        return [e.text() if isinstance(e, Evidence) else str(e) for e in self.evidence]

    def gain_text(self) -> str:
        """``"≈ 120 µs per step (upper bound: ...)"``, or ``""`` without an estimate."""
        if self.est_gain_us is None:
            return ""
        text = f"≈ {format_value(self.est_gain_us, Unit.US)} per step"
        return f"{text} ({self.gain_basis})" if self.gain_basis else text

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict: ``id``, ``severity`` (``"info"``/``"warning"``/``"error"``),
        ``title``, ``trace``, ``evidence`` (``{label, value, unit, share}`` objects or strings),
        ``est_gain_us`` (µs per step or null), ``gain_basis``, ``next_step``, ``docs_url``."""
        return {
            "id": self.id,
            "severity": self.severity.value,
            "title": self.title,
            "trace": self.trace,
            "evidence": [e.to_json() if isinstance(e, Evidence) else e for e in self.evidence],
            "est_gain_us": _plain(self.est_gain_us),
            "gain_basis": self.gain_basis,
            "next_step": self.next_step,
            "docs_url": self.docs_url,
        }

    def to_markdown(self) -> str:
        """A Markdown list item with nested evidence, gain and next step."""
        lines = [f"- **{self.severity.value.upper()}** {_md(self.title)} (`{self.id}`)"]
        lines += [f"  - {_md(line)}" for line in self.evidence_lines()]
        if self.est_gain_us is not None:
            lines.append(f"  - Estimated gain: {_md(self.gain_text())}")
        if self.next_step:
            link = f" ([docs]({self.docs_url}))" if self.docs_url else ""
            lines.append(f"  - Next step: {_md(self.next_step)}{link}")
        return "\n".join(lines)

    def __str__(self) -> str:
        lines = [f"[{self.severity.value}] {self.title} ({self.id})"]
        lines += [f"  - {line}" for line in self.evidence_lines()]
        if self.est_gain_us is not None:
            lines.append(f"  estimated gain: {self.gain_text()}")
        if self.next_step:
            lines.append(f"  next step: {self.next_step}")
        if self.docs_url:
            lines.append(f"  docs: {self.docs_url}")
        return "\n".join(lines)


def format_value(value: float | int | str | None, unit: str) -> str:
    """A value in its unit for people: ``"1.2 ms"``, ``"3.5 MiB"``, ``"25.0%"``, ``"1.80×"``."""
    if value is None:
        return "–"
    if isinstance(value, str):
        return value
    number = float(value)
    if not math.isfinite(number):
        return "–"
    if unit == Unit.US:
        return fmt_us(number)
    if unit == Unit.BYTES:
        return fmt_bytes(number)
    if unit == Unit.RATIO:
        return f"{100.0 * number:.1f}%"
    if unit == Unit.FACTOR:
        return f"{number:.2f}×"
    if unit == Unit.COUNT:
        return f"{number:,.0f}" if number == round(number) else f"{number:,.1f}"
    return f"{number:.4g}"


def shorten(text: str, limit: int = MAX_EVIDENCE_CHARS) -> str:
    """``text`` when it fits in ``limit`` characters; else its start, cut after the last list
    separator (``" → "``, ``"; "``, ``", "``) that fits, then ``"… N more"`` (N items left
    out), or cut at ``limit`` with ``"… N more characters"`` when it is no list."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    for sep in _SEPARATORS:
        cut = head.rfind(sep)
        if cut > 0:
            rest = text[cut + len(sep) :]
            return f"{text[:cut]}{sep.rstrip()} … {rest.count(sep) + 1} more"
    return f"{head} … {len(text) - limit} more characters"


def _plain(value: Any) -> Any:
    """A JSON-ready scalar: numpy numbers as Python ones, NaN/inf as None."""
    if hasattr(value, "item") and not isinstance(value, str):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _md(text: str) -> str:
    """Text safe inside a Markdown list item (no line breaks, no stray table pipes)."""
    return text.replace("\n", " ").replace("|", "\\|")
