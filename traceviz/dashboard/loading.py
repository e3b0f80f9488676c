"""Getting traces into the dashboard: from paths or a run directory given at start, or from
files uploaded in the page; parsed traces are cached by content so a second look is instant.

No Panel here: these functions are plain and tested without a browser.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import logging
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from traceviz.analysis.compare import Comparison, Side, analyze, compare_sides
from traceviz.analysis.fusion_lines import read_log
from traceviz.errors import TraceFormatError, UsageError
from traceviz.rundir import default_names, is_run_dir, read_run_dir
from traceviz.trace import Trace

UPLOAD_SUFFIXES = (".json", ".json.gz", ".gz")
DEFAULT_MAX_UPLOAD_MB = 512
CACHE_ENTRIES = 6
log = logging.getLogger(__name__)


class TraceCache:
    """A small thread-safe LRU of parsed traces, keyed by content hash or (path, mtime, size)."""

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

    def __len__(self) -> int:
        return len(self._items)


CACHE = TraceCache()


def load_path(path: str | Path, *, cache: TraceCache = CACHE) -> Trace:
    """Parse a trace file or cache directory (cached by path, mtime and size)."""
    from traceviz import load

    source = Path(path)
    try:
        stat = source.stat()
    except OSError as err:
        raise TraceFormatError(source, f"cannot read: {err.strerror or err}") from err
    key = f"path:{source.resolve()}:{stat.st_mtime_ns}:{stat.st_size}"
    trace = cache.get(key)
    if trace is None:
        trace = load(source)
        cache.put(key, trace)
    return trace


def load_upload(
    filename: str,
    data: bytes | str,
    *,
    max_bytes: int = DEFAULT_MAX_UPLOAD_MB * 2**20,
    cache: TraceCache = CACHE,
) -> Trace:
    """Parse an uploaded trace (``.json`` / ``.json.gz``), cached by its SHA-256.

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
    key = "sha256:" + hashlib.sha256(payload).hexdigest()
    trace = cache.get(key)
    if trace is not None:
        return trace
    from traceviz import load

    with tempfile.TemporaryDirectory(prefix="traceviz-upload-") as tmp:
        path = Path(tmp) / name
        path.write_bytes(payload)
        try:
            trace = load(path)
        except TraceFormatError as err:
            raise TraceFormatError(name, err.reason) from None
    cache.put(key, trace)
    return trace


def with_findings(comparison: Comparison) -> Comparison:
    """The comparison with diagnosis findings attached (when ``traceviz.diagnose`` offers a
    ``diagnose(comparison)`` function and the comparison has none yet)."""
    if comparison.findings:
        return comparison
    try:
        module = importlib.import_module("traceviz.diagnose")
    except ImportError:
        return comparison
    diagnose = getattr(module, "diagnose", None)
    if not callable(diagnose):
        return comparison
    try:
        findings = list(diagnose(comparison))
    except Exception as err:  # a broken rule must not hide the comparison: say so instead
        log.exception("traceviz: diagnosis failed")
        findings = [DiagnosisFailed(f"diagnosis failed: {type(err).__name__}: {err}")]
    return dataclasses.replace(comparison, findings=findings)


@dataclass(frozen=True)
class DiagnosisFailed:
    """Stands in for the findings when the diagnosis itself raised (shown, never hidden)."""

    title: str
    severity: str = "error"

    def to_json(self) -> dict[str, Any]:
        return {"id": "diagnosis-failed", "severity": self.severity, "title": self.title}

    def __str__(self) -> str:
        return f"[{self.severity}] {self.title}"


def compare_traces(
    a: Trace | Side,
    b: Trace | Side,
    *,
    names: tuple[str, str],
    run_info: dict[str, Any] | None,
    compile_log: Path | None = None,
) -> Comparison:
    """Analyse (unless already analysed) and compare two traces, findings included;
    ``compile_log`` is b's structured compile log (a run directory's), when there is one."""
    dynamo = (run_info or {}).get("dynamo") or None
    log = read_log(compile_log)
    side_a = a if isinstance(a, Side) else analyze(a, name=names[0])
    side_b = b if isinstance(b, Side) else analyze(b, name=names[1], dynamo=dynamo, compile_log=log)
    if (side_a.name, side_b.name) != names:
        side_a = dataclasses.replace(side_a, name=names[0])
        side_b = dataclasses.replace(side_b, name=names[1])
    return with_findings(compare_sides(side_a, side_b, run_info=run_info, compile_log=log))


def comparison_from_args(
    paths: Sequence[str], *, names: tuple[str, str] | None = None
) -> Comparison | None:
    """The comparison for the dashboard's command-line arguments: nothing (upload in the page),
    a run directory, or two trace files."""
    if not paths:
        return None
    if len(paths) == 1:
        if not is_run_dir(Path(paths[0])):
            raise UsageError(
                f"{paths[0]}: give two traces, or a run directory made by `traceviz run`"
            )
        run = read_run_dir(Path(paths[0]))
        return compare_traces(
            load_path(run.eager),
            load_path(run.compiled),
            names=names or ("eager", "compiled"),
            run_info=run.info,
            compile_log=run.compile_log,
        )
    if len(paths) != 2:
        raise UsageError("give a run directory or two trace files")
    return compare_traces(
        load_path(paths[0]),
        load_path(paths[1]),
        names=names or default_names(paths[0], paths[1]),
        run_info=None,
    )
