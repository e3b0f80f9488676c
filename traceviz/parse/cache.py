"""The automatic parse cache: a trace file parsed once is read back from its tables afterwards.

``traceviz.load(path)`` of a JSON trace looks for an entry keyed by the file's absolute path,
size and ``st_mtime_ns``, the traceviz version, the cache format and a fingerprint of the
parser's own source files (so a changed parser never reads a stale entry). An entry is a
directory written by :meth:`~traceviz.trace.Trace.save` (one uncompressed NumPy ``.npz`` per
table, :mod:`traceviz.table_store`; no pyarrow) plus ``entry.json`` (the key and the
JSON byte count, so ``max_bytes`` is still enforced on a hit).

Where: ``cache=<dir>``, else the current :mod:`traceviz.settings`' (``--cache-dir``,
``$TRACEVIZ_CACHE_DIR``, else ``$XDG_CACHE_HOME/traceviz``, else ``~/.cache/traceviz``). Off:
``cache=False``, ``--no-cache`` or ``TRACEVIZ_NO_CACHE=1`` (an explicit directory still turns
it on). Size: at most ``TRACEVIZ_CACHE_MAX_BYTES`` (default 2 GiB,
:data:`traceviz.settings.DEFAULT_MAX_CACHE_BYTES`); the least recently used entries go first.
Files smaller than :data:`MIN_FILE_BYTES` are not cached: for them a parse costs little more
than a hit.

Safe under concurrent runs: an entry is written into a temporary directory and renamed into
place in one step; an entry that cannot be read (half-deleted, corrupt, another version) is
removed and written again, never an error. A cache directory that cannot be written only
means no cache.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from traceviz import settings
from traceviz._version import __version__

# The cache's directory rule lives in traceviz.cache_paths (the front ends find the cache
# without the parser) and its variables in traceviz.settings.
from traceviz.cache_paths import ENTRY_FILE, CacheOption, cache_dir, entry_path
from traceviz.trace import CACHE_FORMAT_VERSION, Trace, is_cache_dir, load_cache

# Below this file size a parse costs little more than reading the entry's seven tables back.
MIN_FILE_BYTES = 256 * 2**10
ENTRY_FORMAT = 1
STALE_TEMP_S = 3600.0  # a temporary directory older than this belongs to a crashed writer

_PACKAGE = Path(__file__).resolve().parents[1]


@dataclasses.dataclass(frozen=True)
class Entry:
    """Where one trace file's cache entry lives, and the key it must hold."""

    directory: Path
    key: dict[str, Any]

    @classmethod
    def of(cls, source: Path, root: Path) -> Entry | None:
        """The entry for ``source`` in ``root``; ``None`` when the file is not worth caching
        (small, not a regular file) or cannot be stat'ed (the parse will say why)."""
        try:
            path = source.resolve()
            st = path.stat()
        except (OSError, RuntimeError):
            return None
        if not path.is_file() or st.st_size < MIN_FILE_BYTES:
            return None
        key = {
            "path": str(path),
            "size": st.st_size,
            "mtime_ns": st.st_mtime_ns,
            "traceviz": __version__,
            "format": [CACHE_FORMAT_VERSION, ENTRY_FORMAT],
            "parser": _parser_fingerprint(),
        }
        return cls(entry_path(root, key), key)

    def read(self) -> tuple[Trace, int] | None:
        """The cached trace and its JSON byte count; ``None`` on a miss. A damaged entry is
        removed (so the next write replaces it)."""
        marker = self.directory / ENTRY_FILE
        if not marker.is_file():
            return None
        try:
            header = json.loads(marker.read_text())
            if header.get("key") != self.key or not is_cache_dir(self.directory):
                raise ValueError("key mismatch")
            trace = load_cache(self.directory)
            json_bytes = int(header["json_bytes"])
        except Exception:  # any damage at all is a miss, never an error
            discard_entry(self.directory)
            return None
        with contextlib.suppress(OSError):
            os.utime(marker)  # recently used: evicted last
        return trace, json_bytes

    def write(self, trace: Trace, json_bytes: int) -> bool:
        """Store ``trace``; ``False`` when the cache directory cannot be written (no error)."""

        def fill(temp: Path) -> None:
            trace.save(temp)
            header = {"key": self.key, "json_bytes": json_bytes, "source": self.key["path"]}
            (temp / ENTRY_FILE).write_text(json.dumps(header, indent=1))

        return publish_entry(self.directory, fill)


def publish_entry(directory: Path, fill: Callable[[Path], None]) -> bool:
    """Write a cache entry into ``directory`` all at once: ``fill`` writes the entry's files
    (``entry.json`` last) into a private temporary directory (mode 0700) next to it, which is
    then renamed into place in one step, so concurrent readers never see half an entry; the
    cache is then evicted down to its bound (never this entry). ``False``, never an error, when
    the cache directory cannot be written or ``fill`` fails; an entry another run wrote
    meanwhile is kept, a damaged one in the way is replaced."""
    root = directory.parent
    try:
        root.mkdir(parents=True, exist_ok=True)
        temp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=root))  # mode 0700
    except OSError:
        return False
    try:
        fill(temp)
        try:
            os.rename(temp, directory)  # atomic; fails if another run got there first
        except OSError:
            if not (directory / ENTRY_FILE).is_file():
                discard_entry(directory)  # a damaged entry in the way: replace it
                os.rename(temp, directory)
    except Exception:
        discard_entry(temp)
        return False
    finally:
        if temp.exists():
            discard_entry(temp)
    evict(root, keep=directory)
    return True


def lookup(source: Path, option: CacheOption) -> Entry | None:
    """The cache entry ``source`` would use under ``option`` (``None``: no caching)."""
    root = cache_dir(option)
    if root is None:
        return None
    return Entry.of(source, root)


def with_source(trace: Trace, source: str | Path) -> Trace:
    """``trace`` with ``meta.source`` ``source`` (the same tables, not copied): a cache entry
    may have been written from another spelling of the same path."""
    if trace.meta.source == str(source):
        return trace
    return dataclasses.replace(trace, meta=dataclasses.replace(trace.meta, source=str(source)))


def evict(root: Path, *, keep: Path | None = None, limit: int | None = None) -> list[Path]:
    """Remove the least recently used entries until ``root`` holds at most ``limit`` bytes
    (default: the current settings', ``$TRACEVIZ_CACHE_MAX_BYTES``, else 2 GiB), never
    ``keep``; also temporary directories left by crashed writers. Returns the removed entries."""
    bound = settings.current().cache_max_bytes if limit is None else limit
    now = time.time()
    entries: list[tuple[float, int, Path]] = []
    try:
        children = list(root.iterdir())
    except OSError:
        return []
    for child in children:
        try:
            if child.name.startswith(".tmp-"):
                if now - child.stat().st_mtime > STALE_TEMP_S:
                    discard_entry(child)
                continue
            marker = child / ENTRY_FILE
            if not child.is_dir() or not marker.is_file():
                continue
            size = sum(f.stat().st_size for f in child.iterdir())
            entries.append((marker.stat().st_mtime, size, child))
        except OSError:  # removed by another run meanwhile
            continue
    total = sum(size for _, size, _ in entries)
    removed: list[Path] = []
    for _, size, child in sorted(entries, key=lambda e: e[0]):
        if total <= bound:
            break
        if keep is not None and child == keep:
            continue
        discard_entry(child)
        removed.append(child)
        total -= size
    return removed


def discard_entry(directory: Path) -> None:
    """Delete the cache entry (or temporary directory) ``directory`` so that no reader sees it
    half-deleted: rename it aside first; one already gone is no error."""
    # pid, thread and clock: two threads of one process (the two sides of a comparison) never
    # pick the same name (renaming onto another thread's empty aside would replace it)
    aside = directory.with_name(
        f".tmp-gone-{os.getpid()}-{threading.get_ident()}-{time.monotonic_ns()}"
    )
    try:
        os.rename(directory, aside)
    except OSError:
        aside = directory
    shutil.rmtree(aside, ignore_errors=True)


@functools.cache
def _parser_fingerprint() -> str:
    """Names, sizes and mtimes of the source files the parse runs: a changed parser (a new
    release or a working copy) makes every old entry a miss."""
    parts: list[str] = []
    for folder in (_PACKAGE, _PACKAGE / "parse"):
        try:
            files = sorted(folder.glob("*.py"))
        except OSError:
            continue
        for file in files:
            with contextlib.suppress(OSError):
                st = file.stat()
                parts.append(f"{file.relative_to(_PACKAGE)}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
