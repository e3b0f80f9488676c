"""Getting traces into the dashboard: from paths or a run directory given at start, or from
files uploaded in the page; parsed traces are cached by content so a second look is instant.

No Panel here: these functions are plain and tested without a browser.
"""

from __future__ import annotations

import hashlib
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path

from traceviz.errors import TraceFormatError, UsageError
from traceviz.parse import load_trace
from traceviz.parse.cache import with_source
from traceviz.pipeline import Report, open_report
from traceviz.rundir import file_stem
from traceviz.trace import Trace

UPLOAD_SUFFIXES = (".json", ".json.gz", ".gz")
DEFAULT_MAX_UPLOAD_MB = 512
CACHE_ENTRIES = 6
UPLOADED = " (uploaded)"  # ends the source of an uploaded trace: "eager.json.gz (uploaded)"


class TraceCache:
    """A small thread-safe LRU of parsed traces, keyed by content hash or (path, mtime, size).

    Thread-safe: every read and change of the entries holds one lock (a comparison loads its
    two sides on two threads, and the Panel server serves sessions on several)."""

    def __init__(self, entries: int = CACHE_ENTRIES) -> None:
        self.entries = entries
        self._items: OrderedDict[str, Trace] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> Trace | None:
        with self._lock:
            trace = self._items.get(key)
            if trace is not None:
                self._items.move_to_end(key)
            return trace

    def put(self, key: str, trace: Trace) -> None:
        with self._lock:
            self._items[key] = trace
            self._items.move_to_end(key)
            while len(self._items) > self.entries:
                self._items.popitem(last=False)

    def get_or_load(self, key: str, load: Callable[[], Trace]) -> Trace:
        """The trace kept under ``key``, else ``load()``'s, kept. Two threads missing one key
        at once both load it (the later put wins)."""
        trace = self.get(key)
        if trace is None:
            trace = load()
            self.put(key, trace)
        return trace

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def clear(self) -> None:
        """Forget every trace (the benchmark's cold loads)."""
        with self._lock:
            self._items.clear()


CACHE = TraceCache()


def load_path(path: str | Path, *, cache: TraceCache = CACHE) -> Trace:
    """Parse a trace file or cache directory (cached by path, mtime and size)."""
    source = Path(path)
    try:
        stat = source.stat()
    except OSError as err:
        raise TraceFormatError(source, f"cannot read: {err.strerror or err}") from err
    key = f"path:{source.resolve()}:{stat.st_mtime_ns}:{stat.st_size}"
    return cache.get_or_load(key, lambda: load_trace(source))


def load_upload(
    filename: str,
    data: bytes | str,
    *,
    max_bytes: int = DEFAULT_MAX_UPLOAD_MB * 2**20,
    cache: TraceCache = CACHE,
) -> Trace:
    """Parse an uploaded trace (``.json`` / ``.json.gz``), cached by its SHA-256. Its
    ``meta.source`` is the uploaded file's name and :data:`UPLOADED` (the temporary copy it was
    parsed from is gone, and no file of that name on the server is the upload).

    Raises :class:`TraceFormatError` naming ``filename`` for a wrong suffix, a file over
    ``max_bytes``, or content that is not a profiler trace.
    """
    name = Path(filename).name or "upload.json"
    if not name.lower().endswith(UPLOAD_SUFFIXES):
        raise TraceFormatError(name, "not a trace file: upload a .json or .json.gz trace")
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if len(payload) > max_bytes:
        raise TraceFormatError(
            name, f"{len(payload) / 2**20:.0f} MiB is over the {max_bytes / 2**20:.0f} MiB limit"
        )
    if not payload:
        raise TraceFormatError(name, "the file is empty")

    def parse() -> Trace:
        with tempfile.TemporaryDirectory(prefix="traceviz-upload-") as tmp:
            path = Path(tmp) / name
            path.write_bytes(payload)
            try:
                return with_source(load_trace(path), name + UPLOADED)
            except TraceFormatError as err:
                raise TraceFormatError(name, err.reason) from None

    trace = cache.get_or_load("sha256:" + hashlib.sha256(payload).hexdigest(), parse)
    return with_source(trace, name + UPLOADED)


def upload_label(filename: str, other: str) -> str:
    """The label of an uploaded trace: its file name without ``.pt.trace.json.gz``
    (``eager.pt.trace.json.gz`` → ``eager``), ``… (2)`` when the other side has that label."""
    label = file_stem(Path(filename).name) or "upload"
    return label if label != other else f"{label} (2)"


def comparison_from_args(
    paths: Sequence[str], *, names: tuple[str, str] | None = None
) -> Report | None:
    """The report for the dashboard's command-line arguments: nothing (upload in the page),
    a run directory, or two trace files (parsed through :data:`CACHE`)."""
    if not paths:
        return None
    if len(paths) > 2:
        raise UsageError("give a run directory or two trace files")
    b = paths[1] if len(paths) == 2 else None
    return open_report(paths[0], b, names=names, load=load_path)
