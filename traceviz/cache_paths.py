"""Where the caches live: one rule for the parse cache, the report cache and the
rendered-output cache, and for the front ends that must not import the parser.

The parse cache (:mod:`traceviz.parse.cache`), the report cache (:mod:`traceviz.report_cache`)
and the rendered-output cache (:mod:`traceviz.commands.output_cache`) share one directory,
found by :func:`cache_dir` from the current :mod:`traceviz.settings` (``--cache-dir`` /
``--no-cache``, else ``TRACEVIZ_CACHE_DIR`` / ``TRACEVIZ_NO_CACHE``). This module imports
nothing heavier than :mod:`re` (no pandas, NumPy, msgspec or parser), so a cached output
computes its key without them.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from traceviz import settings
from traceviz.errors import UsageError

#: Every cache entry's key file (a directory without it is not an entry).
ENTRY_FILE = "entry.json"

#: ``traceviz.load``'s ``cache`` argument: on (default place), off, or a directory.
CacheOption = bool | str | os.PathLike[str] | None


def cache_dir(option: CacheOption = True) -> Path | None:
    """The cache directory ``option`` asks for, or ``None`` when caching is off.

    ``True``/``None``: the current settings' (``--cache-dir``, ``$TRACEVIZ_CACHE_DIR`` or
    the XDG default; none with ``--no-cache`` or ``TRACEVIZ_NO_CACHE``); ``False``: off; a
    path: that directory. A path that exists and is not a directory raises
    :class:`~traceviz.errors.UsageError` naming where it came from.
    """
    if option is False:
        return None
    if option is None or option is True:
        chosen = settings.current()
        if chosen.cache_dir is None:
            return None
        base, origin = chosen.cache_dir, chosen.cache_origin
    elif isinstance(option, str | os.PathLike):
        base, origin = Path(option), "cache"
    else:
        raise UsageError(f"cache must be True, False or a directory, not {option!r}")
    base = base.expanduser()
    if base.exists() and not base.is_dir():
        raise UsageError(f"{origin} {base} is not a directory")
    return base


def entry_path(root: Path, key: dict[str, Any], prefix: str = "") -> Path:
    """The directory of the entry that holds ``key`` under ``root``: ``prefix`` and 40 hex
    digits of the SHA-256 of the key's JSON (sorted keys), so one key is one directory."""
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:40]
    return root / f"{prefix}{digest}"
