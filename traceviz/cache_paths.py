"""Where the caches live, and the size texts the options take: one definition for the parser
and for the front ends that must not import it.

The parse cache (:mod:`traceviz.parse.cache`), the report cache (:mod:`traceviz.report_cache`)
and the rendered-output cache (:mod:`traceviz.commands.output_cache`) share one directory,
found by :func:`cache_dir`; the command line turns ``--cache-dir`` / ``--no-cache`` /
``--max-bytes`` into the environment variables named here. This module imports nothing
heavier than :mod:`re` (no pandas, NumPy, msgspec or parser), so a cached output computes its
key and a ``--max-bytes`` is checked without them.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from traceviz.errors import UsageError

#: The cache directory (``--cache-dir``).
CACHE_DIR_ENV = "TRACEVIZ_CACHE_DIR"
#: Set (to anything but ``0``/``false``/``no``/``off``): no cache at all (``--no-cache``).
NO_CACHE_ENV = "TRACEVIZ_NO_CACHE"
#: The most JSON bytes a trace may hold (``--max-bytes``; a :func:`parse_size` text).
MAX_BYTES_ENV = "TRACEVIZ_MAX_BYTES"
#: Every cache entry's key file (a directory without it is not an entry).
ENTRY_FILE = "entry.json"

#: ``traceviz.load``'s ``cache`` argument: on (default place), off, or a directory.
CacheOption = bool | str | os.PathLike[str] | None

_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*", re.IGNORECASE)


def cache_dir(option: CacheOption = True) -> Path | None:
    """The cache directory ``option`` asks for, or ``None`` when caching is off.

    ``True``/``None``: ``$TRACEVIZ_CACHE_DIR`` or the XDG default, unless ``TRACEVIZ_NO_CACHE``
    is set; ``False``: off; a path: that directory. A path that exists and is not a directory
    raises :class:`~traceviz.errors.UsageError`.
    """
    if option is False:
        return None
    if option is None or option is True:
        if env_flag(NO_CACHE_ENV):
            return None
        env = os.environ.get(CACHE_DIR_ENV)
        base = Path(env) if env else default_dir()
        origin = CACHE_DIR_ENV if env else "the cache directory"
    elif isinstance(option, str | os.PathLike):
        base, origin = Path(option), "cache"
    else:
        raise UsageError(f"cache must be True, False or a directory, not {option!r}")
    base = base.expanduser()
    if base.exists() and not base.is_dir():
        raise UsageError(f"{origin} {base} is not a directory")
    return base


def default_dir() -> Path:
    """``$XDG_CACHE_HOME/traceviz``, else ``~/.cache/traceviz``."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "traceviz"


def env_flag(name: str) -> bool:
    """Whether the environment variable ``name`` is set to something other than empty,
    ``0``, ``false``, ``no`` or ``off`` (any case, blanks ignored)."""
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")


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
