"""Two pieces of work at once: one on the calling thread, the other on a worker thread.

:func:`side_by_side` is how :mod:`traceviz.pipeline` loads and analyses the two sides of a
comparison together: side b (its load, then its analysis) on a worker while the caller does
side a. What overlaps is what releases the GIL: reading and inflating the files, the native
scanner's scan, and NumPy/pandas/pyarrow kernels; the rest takes turns.

Rules:

- The caller's result comes first: when the caller's work raises, that error propagates at
  once (the worker's outcome, even an error, is dropped), as when the two ran one after the
  other and the first failed.
- When only the worker's work raises, its exception object is raised again on the calling
  thread (its traceback keeps the worker's frames).
- The worker runs in a copy of the caller's :mod:`contextvars` context.
- Ctrl-C: the calling thread waits for the worker in short, interruptible waits, so a
  ``KeyboardInterrupt`` stops it promptly. The worker is a daemon thread: it cannot be
  stopped, it finishes (or is dropped at interpreter exit) in the background, and its result
  is discarded. It never holds up the interpreter's exit.

No traceviz imports: a leaf of the import layers.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["side_by_side"]

T = TypeVar("T")
U = TypeVar("U")

#: seconds between the calling thread's checks for Ctrl-C while it waits for the worker
POLL_S = 0.2


class _Worker(Generic[U]):
    """``work`` running on a daemon thread; :meth:`result` waits for it."""

    def __init__(self, work: Callable[[], U], name: str) -> None:
        self._done = threading.Event()
        self._value: U | None = None
        self._error: BaseException | None = None
        context = contextvars.copy_context()
        self._thread = threading.Thread(
            target=self._run, args=(context, work), name=name, daemon=True
        )
        self._thread.start()

    def _run(self, context: contextvars.Context, work: Callable[[], U]) -> None:
        try:
            self._value = context.run(work)
        except BaseException as err:  # handed to the calling thread, raised there
            self._error = err
        finally:
            self._done.set()

    def result(self) -> U:
        """The worker's value, or its exception raised here (waits in :data:`POLL_S` steps,
        so that a signal handler, Ctrl-C, runs meanwhile)."""
        while not self._done.wait(POLL_S):
            pass
        error, self._error = self._error, None
        if error is not None:
            try:
                raise error
            finally:
                del error  # no cycle through this frame
        return self._value  # type: ignore[return-value]  # set when no error


def side_by_side(
    here: Callable[[], T], beside: Callable[[], U], *, name: str = "traceviz-side"
) -> tuple[T, U]:
    """``(here(), beside())``, ``beside`` run on a worker thread named ``name`` while the
    calling thread runs ``here`` (errors, Ctrl-C and contexts: the module doc)."""
    worker = _Worker(beside, name)
    first = here()
    return first, worker.result()
