"""The one exception family traceviz raises for bad input.

The CLI maps every :class:`TraceVizError` to a one-line message and exit code 2.
"""

from __future__ import annotations

from pathlib import Path


class TraceVizError(Exception):
    """Base class: a user-facing problem with one clear message."""


class TraceFormatError(TraceVizError):
    """A file that cannot be read as a profiler trace.

    ``path`` names the file and ``reason`` says what is wrong with it, so that
    ``str(err)`` reads ``"<path>: <reason>"``.
    """

    def __init__(self, path: str | Path, reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


class UsageError(TraceVizError):
    """A command line or API call that asks for something impossible (unknown model, bad option)."""
