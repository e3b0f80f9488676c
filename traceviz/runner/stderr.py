"""Keep the profiler's own chatter out of the progress display.

Kineto (in libtorch, C++) writes a line to file descriptor 2 each time a trace starts and stops
(``USDT:2026-… SyncActivityProfilerHandler.cpp:52] profiler_start``), straight through the
live progress bars. :func:`without_profiler_chatter` points fd 2 at a temporary file while the
profiler runs, keeps Python's ``sys.stderr`` (and so the progress display) on the real stderr,
and afterwards writes back every captured line except those, so real errors and warnings from
C++ still reach the terminal, only later.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator

#: Kineto's start/stop markers, the only lines dropped.
CHATTER = re.compile(rb"^USDT:.*\] profiler_(?:start|stop)\s*$")


@contextlib.contextmanager
def without_profiler_chatter() -> Iterator[None]:
    """Run the body with fd 2 captured; on exit, replay it to stderr less :data:`CHATTER`.

    Does nothing where stderr has no file descriptor (e.g. a notebook)."""
    try:
        sys.stderr.flush()
        real = os.dup(2)
    except (AttributeError, OSError, ValueError):
        yield
        return
    python_stderr = sys.stderr
    with tempfile.TemporaryFile() as captured, os.fdopen(os.dup(real), "w") as terminal:
        os.dup2(captured.fileno(), 2)
        sys.stderr = terminal  # Python's writes (rich progress, warnings) stay live
        try:
            yield
        finally:
            with contextlib.suppress(OSError, ValueError):
                terminal.flush()
            sys.stderr = python_stderr
            os.dup2(real, 2)
            os.close(real)
            captured.seek(0)
            lines = captured.read().splitlines(keepends=True)
            kept = [line for line in lines if not CHATTER.match(line)]
            if kept:
                with contextlib.suppress(OSError):
                    os.write(2, b"".join(kept))
