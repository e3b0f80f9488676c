"""traceviz's settings, one frozen value: where the caches live (or no cache), the most JSON a
trace may hold, whether the two sides of a pair load at once, whether the native scanner
parses, and the caches' size bound.

Their defaults are environment variables, read by :meth:`Settings.from_environ`:

========================  ============  ===============================================
variable                  option        field
========================  ============  ===============================================
TRACEVIZ_CACHE_DIR        --cache-dir   ``cache_dir`` (else ``$XDG_CACHE_HOME/traceviz``,
                                        else ``~/.cache/traceviz``)
TRACEVIZ_NO_CACHE=1       --no-cache    ``cache_dir`` ``None``: no cache at all
TRACEVIZ_MAX_BYTES        --max-bytes   ``max_bytes`` (default 4 GiB)
TRACEVIZ_CACHE_MAX_BYTES                ``cache_max_bytes`` (default 2 GiB)
TRACEVIZ_CONCURRENT=0                   ``concurrent`` off: one side after the other
TRACEVIZ_NATIVE=0                       ``native`` off: the Python parser
========================  ============  ===============================================

The command line builds one :class:`Settings` from its options and the environment and runs
the command under :func:`using`; it writes nothing into ``os.environ``. Library code asks
:func:`current`: the value :func:`using` set in this context (:mod:`traceviz.concurrent_sides`
and ``asyncio.to_thread`` carry it to their worker threads), else the environment as it is at
the call, so ``traceviz.load(path)`` needs no settings and a changed variable takes effect.
Child processes (Dask workers) inherit the environment, not this value: what they need of it
is handed to their work (``traceviz ingest`` gives each task its byte cap; workers write no
cache).

Imports nothing heavier than :mod:`re`: the command line reads its settings before it knows
whether the parser will run.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, NamedTuple

from traceviz.errors import UsageError

__all__ = ["Settings", "current", "parse_size", "using"]

#: The cache directory (``--cache-dir``).
CACHE_DIR_ENV = "TRACEVIZ_CACHE_DIR"
#: Set (to anything but ``0``/``false``/``no``/``off``): no cache at all (``--no-cache``).
NO_CACHE_ENV = "TRACEVIZ_NO_CACHE"
#: The most JSON bytes a trace may hold (``--max-bytes``; a :func:`parse_size` text).
MAX_BYTES_ENV = "TRACEVIZ_MAX_BYTES"
#: The size bound of the cache directory (a :func:`parse_size` text).
MAX_CACHE_BYTES_ENV = "TRACEVIZ_CACHE_MAX_BYTES"
#: ``0``: the two sides of a pair one after the other, on the calling thread.
CONCURRENT_ENV = "TRACEVIZ_CONCURRENT"
#: ``0``: the Python parser even where the native scanner is built.
NATIVE_ENV = "TRACEVIZ_NATIVE"

# The most JSON bytes a trace may hold (after gzip). Parsing needs about 5x the JSON size in
# memory (benchmarks/RESULTS.md: 999 MiB peak for 206 MB), and the largest real trace of the
# corpus is 64 MB: 4 GiB is far above any real trace and still fits a large workstation.
DEFAULT_MAX_BYTES = 4 * 2**30
DEFAULT_MAX_CACHE_BYTES = 2 * 2**30
#: Where a cache directory nobody named comes from, as error texts name it.
DEFAULT_CACHE_ORIGIN = "the cache directory"

_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*", re.IGNORECASE)


class Settings(NamedTuple):
    """What the variables and options above decide (a NamedTuple, not a dataclass:
    dataclasses imports inspect, a tenth of the command line's start-up).

    ``cache_dir`` is ``None`` when there is no cache; ``cache_origin`` names where it came
    from (``--cache-dir``, ``TRACEVIZ_CACHE_DIR`` or the default) for the error when it is not
    a directory. ``max_bytes`` and ``cache_max_bytes`` are bytes."""

    cache_dir: Path | None
    cache_origin: str
    max_bytes: int
    cache_max_bytes: int
    concurrent: bool
    native: bool

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None, **given: Any) -> Settings:
        """The settings the environment (default ``os.environ``) asks for; a field named in
        ``given`` takes that value and its variable is not read (an option over its
        variable). A size variable that is not a size raises
        :class:`~traceviz.errors.UsageError` naming it."""
        env = os.environ if environ is None else environ
        fields = {
            "max_bytes": lambda: _size(env, MAX_BYTES_ENV, DEFAULT_MAX_BYTES),
            "cache_max_bytes": lambda: _size(env, MAX_CACHE_BYTES_ENV, DEFAULT_MAX_CACHE_BYTES),
            "concurrent": lambda: env.get(CONCURRENT_ENV, "").strip() != "0",
            "native": lambda: env.get(NATIVE_ENV, "").strip() != "0",
        }
        values: dict[str, Any] = {
            n: given[n] if n in given else read() for n, read in fields.items()
        }
        if "cache_dir" in given:
            directory = given["cache_dir"]
            origin = given.get("cache_origin", DEFAULT_CACHE_ORIGIN)
        else:
            directory, origin = _cache_dir(env)
        return cls(cache_dir=directory, cache_origin=origin, **values)


def _cache_dir(env: Mapping[str, str]) -> tuple[Path | None, str]:
    """The cache directory the environment names, and which variable named it."""
    if env.get(NO_CACHE_ENV, "").strip().lower() not in ("", "0", "false", "no", "off"):
        return None, NO_CACHE_ENV
    if named := env.get(CACHE_DIR_ENV):
        return Path(named).expanduser(), CACHE_DIR_ENV
    xdg = env.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "traceviz", DEFAULT_CACHE_ORIGIN


def _size(env: Mapping[str, str], name: str, default: int) -> int:
    text = env.get(name)
    if not text:
        return default
    try:
        return parse_size(text)
    except UsageError as err:
        raise UsageError(f"{name}: {err}") from None


def parse_size(text: str) -> int:
    """Bytes from ``"4GiB"``, ``"512M"``, ``"1.5G"``, ``"100000"`` (k/M/G/T are powers of
    1024). Raises :class:`~traceviz.errors.UsageError` for anything else."""
    match = _SIZE.fullmatch(text)
    if not match:
        raise UsageError(f"{text!r} is not a size (examples: 500000000, 512M, 4GiB)")
    number, unit = float(match.group(1)), match.group(2).lower()
    size = int(number * 1024 ** "_kmgt".index(unit or "_"))
    if size <= 0:
        raise UsageError(f"{text!r}: the size limit must be more than 0 bytes")
    return size


_CURRENT: ContextVar[Settings | None] = ContextVar("traceviz_settings", default=None)


def current() -> Settings:
    """The settings :func:`using` set in this context, else the environment's now."""
    settings = _CURRENT.get()
    return Settings.from_environ() if settings is None else settings


@contextmanager
def using(settings: Settings) -> Iterator[Settings]:
    """``settings`` are :func:`current` inside the ``with`` (and in the worker threads it
    starts with this context), the previous ones again after it."""
    token = _CURRENT.set(settings)
    try:
        yield settings
    finally:
        _CURRENT.reset(token)
