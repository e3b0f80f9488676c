"""The garbage collector around a command's heavy imports, in the console script.

A ``traceviz`` process runs one command. What its imports make (pandas, numpy, the analysis
modules) is never garbage, yet with the collector on each import pays for collections that
walk it again and again, and so does every later collection. :func:`collector_off` runs
imports with the collector off, then freezes what they made (:func:`gc.freeze`: later
collections skip it) and turns it back on.

It does so only when :func:`one_command` has said that this process runs one command (the
console script's :func:`traceviz.cli.main` says so; a call with arguments says not): a program
that calls ``main()`` or a command from Python keeps its collector as it was. Use it around
every heavy import a command makes after parsing its arguments (a lazy import that a cached
output skips, for one).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_one_command = False


def one_command(flag: bool = True) -> None:
    """Whether this process runs one command and then exits (:func:`collector_off` acts only
    then); :func:`traceviz.cli.main` says so on every call."""
    global _one_command
    _one_command = flag


@contextmanager
def collector_off() -> Iterator[None]:
    """Within: the collector off (one-command processes only); after: what was made inside
    frozen, the collector back on. Nothing changes when the collector was already off."""
    if not (_one_command and gc.isenabled()):
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
