"""The cyclic garbage collector off while traces are parsed or the parser is imported, across
threads.

A parse makes millions of short-lived objects and no cycles: the collector would only rescan
them again and again, so :func:`collector_paused` turns it off. Importing the parser (pandas,
numpy, pyarrow: ~60k objects that live as long as the process) is the same: with the collector
on, the import pays for collections that walk what it has made so far again and again
(~40 ms of CPU of a 0.35 s import). A leaf, so that the package that imports pandas can pause
the collector before it does. Two parses may run at once on
two threads (:mod:`traceviz.pipeline` loads a comparison's two sides together): the collector
comes back on when the last of them ends, and only if it was on when the first began (each
turning it back on when it ended would let the other parse run with it on).
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_active = 0  # parses running now
_restore = False  # the collector was on when the first of them began


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The collector off for the ``with`` block (and for as long as another thread's block
    runs); back on after the last one when it was on before the first."""
    global _active, _restore
    with _lock:
        if _active == 0:
            _restore = gc.isenabled()
            gc.disable()
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and _restore:
                gc.enable()
