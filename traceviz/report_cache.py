"""The report cache: a comparison built once is read back whole the next time.

The parse cache (:mod:`traceviz.parse.cache`) spares the second look the parse; this one spares
it the analysis, the fusion map and the diagnosis too. :mod:`traceviz.pipeline` asks it for
an entry keyed by everything that determines the :class:`~traceviz.report.bundle.Report`:

- each input as given and resolved, with its size, ``st_mtime_ns`` and inode, and the SHA-256
  of its bytes when it has at most 4 MiB (a directory: every file under it; a run directory:
  every file under it plus each trace run.json names);
- the compile log and the eager lines trace (path, size, mtime), run.json facts passed as a
  dict, the labels and ``force``;
- the traceviz version, a fingerprint of the package's source (name, size, mtime of every
  ``.py`` file the report can depend on: the parser, analyses, rules and renderers alike; not
  the command, dashboard and ranks front ends), the Python, numpy, pandas, pyarrow and msgspec
  versions (read from their ``dist-info`` directories: nothing is imported) and the
  byte cap (``--max-bytes``, ``TRACEVIZ_MAX_BYTES``).

Computing a key imports neither pandas nor NumPy nor the parser (this module loads them only
to read or write a payload), so the rendered-output cache
(:mod:`traceviz.commands.output_cache`), whose key holds this one, answers a second look
without them.

Anything else (a Trace or Side object, a read compile log, a custom loader) is not cached.
The user source files whose lines' text the report shows (the fusion map's by-line ``code``)
are read while it is built, so no part of the key: the entry records their state
(:func:`sources_key`), and a change to one is a miss.

Where: the parse cache's directory (``--cache-dir``, ``$TRACEVIZ_CACHE_DIR``, else
``~/.cache/traceviz``), one ``report-<digest>`` directory per report holding ``entry.json``
(the key) and ``report.pickle``; off with ``--no-cache`` / ``TRACEVIZ_NO_CACHE=1``. The
entries share the parse cache's size bound and least-recently-used eviction.

Format: a pickle of traceviz's own Report (protocol 5: the tables' buffers are copied, not
re-encoded). Unpickling runs code, so an entry is read only when it, its directory and its
payload belong to the current user, are regular files / directories (no symbolic links; the
payload's checks are made on the open file) and are writable by nobody else; it is written
into a private temporary directory (mode 0700) and renamed into place in one step, so
concurrent runs never see half an entry. A damaged or foreign-version entry is a miss, removed
and written again; a directory that cannot be written only means no cache.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import pickle
import stat
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar

from traceviz import settings
from traceviz._version import __version__
from traceviz.cache_paths import ENTRY_FILE, cache_dir, entry_path

if TYPE_CHECKING:
    from traceviz.report.bundle import Report

T = TypeVar("T")

REPORT_FORMAT = 1
ENTRY_PREFIX = "report-"
PAYLOAD_FILE = "report.pickle"
#: A directory input with more files than this is not cached (stat'ing it would cost more).
MAX_TREE_FILES = 2000
#: Files up to this size are keyed by their content too (a sample run hashes in ~1 ms).
HASH_MAX_BYTES = 4 * 2**20

_PACKAGE = Path(__file__).resolve().parent


class _Uncacheable(Exception):
    """An input the key cannot describe: build the report without the cache."""


@dataclasses.dataclass(frozen=True)
class ReportEntry:
    """Where one report's cache entry lives, and the key it must hold."""

    directory: Path
    key: dict[str, Any]

    @classmethod
    def of(cls, inputs: dict[str, Any], root: Path) -> ReportEntry:
        """The entry for ``inputs`` (a JSON-able description of the call) under ``root``."""
        key = {"inputs": inputs, "environment": environment()}
        return cls(entry_path(root, key, ENTRY_PREFIX), key)

    def read(self) -> Report | None:
        """The cached report; ``None`` on a miss (:func:`read_entry`: one that is not safely
        ours is left alone and never unpickled)."""
        return read_entry(self.directory, self.key, self._payload)

    def _payload(self, header: dict[str, Any]) -> Report:
        from traceviz.report.bundle import Report

        # unbuffered: pickle reads the tables' buffers straight into place
        with _open_private(self.directory / PAYLOAD_FILE, header.get("payload_bytes")) as source:
            report = pickle.load(source)
        if not isinstance(report, Report):
            raise TypeError(f"not a Report: {type(report).__name__}")
        return report

    def write(self, report: Report) -> bool:
        """Store ``report``; ``False`` when it cannot be (unwritable directory, an object
        that does not pickle): never an error."""

        payload = {PAYLOAD_FILE: pickle.dumps(report, protocol=5)}
        return publish(self.directory, self.key, payload, sources=sources_key(source_files(report)))


def source_files(report: Any) -> list[str]:
    """The user source files whose lines' text the report shows (the fusion map's by-line
    table, ``file`` and ``code``: read from the file when the report is built, so no input of
    the key)."""
    table = getattr(getattr(report, "fusion", None), "by_line", None)
    if table is None or "file" not in getattr(table, "columns", ()):
        return []
    return sorted({str(file) for file in table["file"].dropna().unique()})


def sources_key(files: Sequence[str]) -> dict[str, Any]:
    """Each file's state as an input's (size, mtime, inode, SHA-256 of a small file); None
    when it is not a readable regular file (its lines then have no text)."""
    out: dict[str, Any] = {}
    for file in files:
        try:
            st = os.stat(file)
            out[file] = _file_key(file, st) if stat.S_ISREG(st.st_mode) else None
        except OSError:
            out[file] = None
    return out


def sources_unchanged(header: dict[str, Any]) -> bool:
    """The source files an entry's ``sources`` describes are as they were when it was
    written (an entry without them has none)."""
    sources = header.get("sources") or {}
    return isinstance(sources, dict) and sources_key(list(sources)) == sources


def read_entry(
    directory: Path, key: dict[str, Any], payload: Callable[[dict[str, Any]], T]
) -> T | None:
    """What ``payload`` reads from the entry in ``directory`` given its header, when the
    entry holds ``key``, is safely ours (:func:`read_header`) and the user source files it
    shows are unchanged; ``None`` on a miss. A damaged entry, one whose payload raises, or
    one whose source files changed is removed; the one read is marked recently used."""
    header = read_header(directory, key)
    if header is None:
        return None
    if not sources_unchanged(header):
        discard(directory)  # a user's source file edited: its lines' text changed
        return None
    try:
        value = payload(header)
    except Exception:  # any damage at all is a miss, never an error
        discard(directory)
        return None
    touch(directory)
    return value


def read_header(directory: Path, key: dict[str, Any]) -> dict[str, Any] | None:
    """``directory``'s ``entry.json`` when it holds ``key`` and the entry is safely ours;
    ``None`` on a miss. An entry that is not ours (owner, permissions, links) is left alone;
    a damaged one or another key's is removed."""
    marker = directory / ENTRY_FILE
    try:
        if not _private(directory):
            return None  # not ours: neither read nor removed
    except OSError:
        return None  # absent: a plain miss
    try:
        if not _private(marker):
            raise ValueError("entry file missing or writable by others")
        header = json.loads(marker.read_text())
        if not isinstance(header, dict) or header.get("key") != key:
            raise ValueError("key mismatch")
    except Exception:  # any damage at all is a miss, never an error
        discard(directory)
        return None
    return header


def publish(directory: Path, key: dict[str, Any], payloads: dict[str, bytes], **facts: Any) -> bool:
    """Write an entry: each payload file (private, mode 0600), then ``entry.json`` holding
    ``key``, ``facts`` and the payloads' sizes (``payload_bytes`` when there is one payload),
    all at once (:func:`traceviz.parse.cache.publish_entry`: a private temporary directory
    renamed into place, then the shared size bound). ``False``, never an error, when it
    cannot be written."""
    from traceviz.parse.cache import publish_entry

    def fill(temp: Path) -> None:
        for name, data in payloads.items():
            _write_private(temp / name, data)
        header = {"key": key, **facts}
        if len(payloads) == 1:
            header["payload_bytes"] = len(next(iter(payloads.values())))
        _write_private(temp / ENTRY_FILE, json.dumps(header, indent=1).encode())

    return publish_entry(directory, fill)


def discard(directory: Path) -> None:
    """Remove a damaged entry (:func:`traceviz.parse.cache.discard_entry`)."""
    from traceviz.parse.cache import discard_entry

    discard_entry(directory)


def touch(directory: Path) -> None:
    """Mark the entry recently used, so that it is evicted last."""
    with contextlib.suppress(OSError):
        os.utime(directory / ENTRY_FILE)


def cached(entry: ReportEntry | None, build: Callable[[], Report]) -> Report:
    """``entry``'s report when it holds one, else ``build()`` stored in ``entry``."""
    if entry is not None and (hit := entry.read()) is not None:
        return hit
    report = build()
    if entry is not None:
        entry.write(report)
    return report


def pair_entry(
    a: Any,
    b: Any,
    *,
    names: Sequence[str],
    run_info: Any,
    compile_log: Any,
    force: bool,
    eager_lines: Any,
) -> ReportEntry | None:
    """The entry of :func:`traceviz.pipeline.compare` on these arguments; ``None`` when the
    cache is off or an argument is not a path (or run.json dict) the key can describe."""
    return _entry(
        lambda: {
            "kind": "pair",
            "a": _input_key(a),
            "b": _input_key(b),
            "names": list(names),
            "run_info": _run_info_key(run_info),
            "compile_log": _optional_key(compile_log),
            "force": bool(force),
            "eager_lines": _optional_key(eager_lines),
        }
    )


def run_entry(
    directory: Path, *, names: Sequence[str] | None, compile_log: Any, force: bool
) -> ReportEntry | None:
    """The entry of :func:`traceviz.pipeline.compare_run` on this run directory; ``None`` when
    the cache is off or the directory cannot be described."""
    return _entry(
        lambda: {
            "kind": "run",
            "run": _input_key(directory),
            "named": _named_traces(directory),
            "names": list(names) if names else None,
            "compile_log": _optional_key(compile_log),
            "force": bool(force),
        }
    )


def _entry(inputs: Callable[[], dict[str, Any]]) -> ReportEntry | None:
    """The entry keyed by ``inputs()``; ``None`` when the cache is off or an input cannot be
    described (:class:`_Uncacheable`)."""
    root = cache_dir()
    if root is None:
        return None
    try:
        return ReportEntry.of(inputs(), root)
    except _Uncacheable:
        return None


def input_key(value: Any) -> list[Any] | None:
    """The key of one input path as :func:`pair_entry` describes it (resolved path, size,
    mtime, inode, SHA-256 of a small file; a directory's files), or ``None`` when it cannot
    be described (missing, odd, a directory of too many files)."""
    try:
        return _input_key(value)
    except _Uncacheable:
        return None


def _input_key(value: Any) -> list[Any]:
    """A path as given and as it is now: resolved path, size and mtime of the file or of
    every file under the directory."""
    if not isinstance(value, str | os.PathLike):
        raise _Uncacheable(type(value).__name__)
    try:
        path = Path(value).resolve()
        st = path.stat()
        if stat.S_ISREG(st.st_mode):
            return [os.fspath(value), str(path), *_file_key(path, st)]
        if stat.S_ISDIR(st.st_mode):
            return [os.fspath(value), str(path), _tree(path)]
    except (OSError, RuntimeError):
        pass
    raise _Uncacheable(os.fspath(value))  # missing or odd: the build says what is wrong


def _file_key(path: str | Path, st: os.stat_result) -> list[Any]:
    """Size, mtime and inode; for a file of at most :data:`HASH_MAX_BYTES` also its SHA-256:
    file times tick in milliseconds on many file systems, and a small trace rewritten at once
    with as many bytes (a test, a script) must not read back the old report."""
    key: list[Any] = [st.st_size, st.st_mtime_ns, st.st_ino]
    if st.st_size <= HASH_MAX_BYTES:
        with open(path, "rb") as source:
            key.append(hashlib.sha256(source.read()).hexdigest())
    return key


def _optional_key(value: Any) -> list[Any] | None:
    return None if value is None else _input_key(value)


def _tree(directory: Path) -> list[list[Any]]:
    """Every file under ``directory``: relative path, size, mtime (sorted)."""
    rows: list[list[Any]] = []
    for folder, subdirs, files in os.walk(directory):
        subdirs.sort()
        for name in sorted(files):
            file = os.path.join(folder, name)
            rows.append([os.path.relpath(file, directory), *_file_key(file, os.stat(file))])
            if len(rows) > MAX_TREE_FILES:
                raise _Uncacheable(str(directory))
    return rows


def _named_traces(directory: Path) -> list[Any]:
    """The files run.json names (they may lie outside the directory)."""
    try:
        info = json.loads((Path(directory) / "run.json").read_text())
        traces = info.get("traces") or {}
    except (OSError, ValueError, AttributeError):
        raise _Uncacheable(str(directory)) from None
    if not isinstance(traces, dict):
        raise _Uncacheable(str(directory))
    named: list[Any] = []
    for field, name in sorted(traces.items()):
        if isinstance(name, str) and name:
            path = Path(directory) / name
            named.append([field, _input_key(path) if path.exists() else None])
    return named


def _run_info_key(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, dict):
        try:
            return json.loads(json.dumps(value, sort_keys=True))
        except (TypeError, ValueError):
            raise _Uncacheable("run_info") from None
    raise _Uncacheable(type(value).__name__)  # a RunInfo object: no file to key on


def environment() -> dict[str, Any]:
    """The environment part of every report key (a new dict each call: callers may extend
    it): what else shapes a report or its pickle: versions, the source, the size cap, and
    the working directory (a finding shows a user's source file relative to it)."""
    return {
        "cwd": os.getcwd(),
        "format": REPORT_FORMAT,
        "traceviz": __version__,
        "source": _source_fingerprint(),
        "python": list(sys.version_info[:3]),
        "versions": package_versions(("numpy", "pandas", "pyarrow", "msgspec")),
        "max_bytes": settings.current().max_bytes,
    }


def package_versions(names: Sequence[str]) -> dict[str, str | None]:
    """The installed version of each distribution in ``names`` (``None``: not installed),
    as ``importlib.metadata.version`` finds it: the first ``NAME-VERSION.dist-info`` on
    ``sys.path``. Read from the directory names (~1 ms), falling back to importlib.metadata
    (~25 ms to import) for anything not installed that way; nothing is imported."""
    wanted = {_dist_name(name): name for name in names}
    found: dict[str, str | None] = {}
    for folder in sys.path:
        for dist, version in _dist_infos(folder or "."):
            name = wanted.get(dist)
            if name is not None and name not in found:
                found[name] = version
        if len(found) == len(wanted):
            break
    for name in names:
        if name not in found:
            found[name] = _metadata_version(name)
    return {name: found[name] for name in names}


def _dist_name(name: str) -> str:
    """A distribution's name as a dist-info directory spells it (PEP 503 normalised, ``_``)."""
    return "_".join(part for part in name.lower().replace("-", "_").replace(".", "_").split("_"))


@functools.cache
def _dist_infos(folder: str) -> tuple[tuple[str, str], ...]:
    """(normalised name, version) of every ``*.dist-info`` directory in ``folder``, in the
    directory's order."""
    try:
        names = os.listdir(folder)
    except OSError:
        return ()
    found = []
    for entry in names:
        if entry.endswith(".dist-info"):
            dist, _, version = entry[: -len(".dist-info")].partition("-")
            if version:
                found.append((_dist_name(dist), version))
    return tuple(found)


def _metadata_version(name: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


#: Subpackages no report is made by (front ends above the pipeline): left out of the fingerprint.
_NOT_IN_REPORT = frozenset({"commands", "dashboard", "ranks"})


def _source_fingerprint() -> str:
    """Names, sizes and mtimes of the package's ``.py`` files (all but the front ends in
    :data:`_NOT_IN_REPORT`): a changed parser, analysis, rule or renderer (a new release or a
    working copy) makes every entry a miss."""
    return _fingerprints()[0]


def package_fingerprint() -> str:
    """The same over every ``.py`` file of the package, the front ends included (the
    rendered-output cache: a changed command or console changes the bytes too)."""
    return _fingerprints()[1]


@functools.cache
def _fingerprints() -> tuple[str, str]:
    """(the report's fingerprint, the whole package's), from one walk of the package."""
    report: list[str] = []
    everything: list[str] = []
    for folder, subdirs, files in os.walk(_PACKAGE):
        subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
        rel_folder = os.path.relpath(folder, _PACKAGE)
        in_report = rel_folder.split(os.sep)[0] not in _NOT_IN_REPORT
        for name in sorted(f for f in files if f.endswith(".py")):
            with contextlib.suppress(OSError):
                st = os.stat(os.path.join(folder, name))
                rel = os.path.normpath(os.path.join(rel_folder, name))
                part = f"{rel}:{st.st_size}:{st.st_mtime_ns}"
                everything.append(part)
                if in_report:
                    report.append(part)
    return tuple(  # type: ignore[return-value]
        hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16] for parts in (report, everything)
    )


def _private(path: Path) -> bool:
    """``path`` is a real file or directory (not a link) of this user that nobody else may
    write: safe to unpickle from. Raises OSError when it does not exist."""
    st = os.lstat(path)
    return (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)) and _ours(st)


def _ours(st: os.stat_result) -> bool:
    """This user's, and writable by nobody else (on Windows the user's profile is private)."""
    geteuid = getattr(os, "geteuid", None)
    others_write = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    return not others_write and (geteuid is None or st.st_uid == geteuid())


def read_private(path: Path, size: Any) -> bytes:
    """The bytes of ``path``, checked as a report's pickle is (:func:`_open_private`)."""
    with _open_private(path, size) as source:
        return source.read()


@contextlib.contextmanager
def _open_private(path: Path, size: Any) -> Iterator[BinaryIO]:
    """``path`` opened unbuffered, once the open file is known to be this user's regular
    file of ``size`` bytes that nobody else may write (no link followed)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb", buffering=0) as source:
        st = os.fstat(fd)
        if not (stat.S_ISREG(st.st_mode) and _ours(st)):
            raise ValueError(f"{path} is not a private file")
        if st.st_size != size:
            raise ValueError(f"{path} has {st.st_size} bytes, not {size}")
        yield source


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
