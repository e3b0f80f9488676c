"""The rendered-output cache: a second ``traceviz compare`` (or ``traceviz summary``) of
unchanged inputs with the same options writes the bytes the first one wrote, at once.

The report cache (:mod:`traceviz.report_cache`) spares a second look the parse and the
analysis, but reading a report back still needs pandas (0.4 s to import) and the render; this
cache keeps the rendered output itself. Its key holds everything that decides those bytes:

- the report cache's key for the command's inputs (each input's path, size, mtime, inode and,
  up to 4 MiB, SHA-256; a run directory's files; the compile log, ``--names``, ``--force``;
  the versions of Python, NumPy, pandas, pyarrow, msgspec; the byte cap) — for
  ``summary``, the one trace's;
- a fingerprint of every ``.py`` file of traceviz (the commands and the console included) and
  the rich, plotly and orjson versions;
- ``--format`` and ``--top``;
- for the text format, the console the drawing is made for, as rich sees it: width, colour
  system, whether it is a terminal (a dumb one, interactive), ``NO_COLOR``, legacy Windows,
  Jupyter, encoding, and the environment variables rich reads (``NO_COLOR``, ``FORCE_COLOR``,
  ``TTY_COMPATIBLE``, ``TTY_INTERACTIVE``, ``TERM``, ``COLORTERM``, ``COLUMNS``,
  ``JUPYTER_COLUMNS``). The height is left out: nothing in the text report depends on it
  (tables and lines wrap to the width; ``tests/test_render_cache.py`` checks it).

``--fail-on`` needs the findings: an entry also holds the severities they reach, so the exit
code of a hit is the one a full run gives.

Computing the key and reading an entry import neither pandas nor NumPy nor the parser (rich
only for the text format's console). On a miss the drawing is rendered once into a string by
the console it is meant for (rich's capture: the same segments, styles and widths as writing
it), stored, then written; an entry is stored only when that console still matches the key
after the render (a terminal resized meanwhile is not). Not cached: a Jupyter or legacy
Windows console, ``-o`` onto something that is not a regular file, inputs the report cache
cannot describe, ``--ranks``.

Where and how: the report cache's directory and rules (``--cache-dir``, ``--no-cache``,
``TRACEVIZ_NO_CACHE``, the shared size bound and least-recently-used eviction), one
``output-<digest>`` directory per output holding ``entry.json`` (key, byte count, SHA-256 of
the output, severities reached, the state of the user source files whose lines' text it
shows: a change to one is a miss) and ``output.txt`` (UTF-8). Read only when the entry is this
user's and writable by nobody else (an output goes to a terminal as it is); written into a
private temporary directory and renamed into place; a damaged entry is a miss, removed.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import io
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from traceviz import report_cache
from traceviz.cache_paths import cache_dir, entry_path
from traceviz.commands.output import FILE_WIDTH, console, emit

if TYPE_CHECKING:
    from rich.console import Console

    from traceviz.report.formats import Rendered

OUTPUT_FORMAT = 1
ENTRY_PREFIX = "output-"
PAYLOAD_FILE = "output.txt"
#: The severities ``--fail-on`` takes, whose reach an entry records.
SEVERITIES = ("warning", "error")
#: What rich reads from the environment (rich.console.Console: size, colours, terminal).
RICH_ENVIRONMENT = (
    "NO_COLOR",
    "FORCE_COLOR",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
    "TERM",
    "COLORTERM",
    "COLUMNS",
    "JUPYTER_COLUMNS",
)
#: Libraries whose version may change the rendered bytes (the report's own are in its key).
RENDER_LIBRARIES = ("rich", "plotly", "orjson")
#: The formats whose result is a drawing on a console (the others render text).
DRAWN_FORMATS = frozenset({"text"})


@dataclasses.dataclass(frozen=True)
class Output:
    """A command's rendered output and the ``--fail-on`` severities its findings reach."""

    text: str
    reached: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class OutputEntry:
    """Where one output's entry lives, its key, and for a drawing the console it is for."""

    directory: Path
    key: dict[str, Any]
    target: Console | None = None

    def read(self) -> Output | None:
        """The stored output; ``None`` on a miss (:func:`traceviz.report_cache.read_entry`:
        a damaged entry is removed, one that is not safely ours left alone)."""
        return report_cache.read_entry(self.directory, self.key, self._payload)

    def _payload(self, header: dict[str, Any]) -> Output:
        data = report_cache.read_private(self.directory / PAYLOAD_FILE, header.get("payload_bytes"))
        if hashlib.sha256(data).hexdigest() != header.get("sha256"):
            raise ValueError("output does not match its checksum")
        reached = header.get("reached")
        if not isinstance(reached, list) or not set(reached) <= set(SEVERITIES):
            raise ValueError(f"bad severities {reached!r}")
        return Output(data.decode("utf-8", "surrogatepass"), tuple(reached))

    def write(self, output: Output, sources: Sequence[str] = ()) -> bool:
        """Store ``output``, shown with the text of lines of the user's ``sources`` files
        (a later change to them is a miss); ``False`` when it cannot be (never an error)."""
        data = output.text.encode("utf-8", "surrogatepass")
        sha = hashlib.sha256(data).hexdigest()
        facts = {
            "sha256": sha,
            "reached": list(output.reached),
            "sources": report_cache.sources_key(sources),
        }
        return report_cache.publish(self.directory, self.key, {PAYLOAD_FILE: data}, **facts)

    def render(self, rendered: Rendered) -> str:
        """``rendered`` as the text it writes: a drawing drawn on :attr:`target`, captured."""
        if isinstance(rendered, str):
            return rendered
        if self.target is None:
            raise ValueError("a drawing needs the entry's console")
        with self.target.capture() as captured:
            rendered(self.target)
        return captured.get()

    def still_matches(self) -> bool:
        """The target console is still the one the key describes (its width may change while
        a terminal is resized)."""
        render = self.key["render"]
        return self.target is None or describe(self.target) == render["console"]


def compare_entry(args: argparse.Namespace) -> OutputEntry | None:
    """The entry of ``traceviz compare``'s arguments (A and B, or a run directory A; --names,
    --compile-log, --force, --format, --top, -o); ``None`` when the cache is off or the inputs
    cannot be described (the command then reports what is wrong with them)."""
    names = list(args.names) if args.names else []  # the default names follow from A and B
    if args.b is None:
        report = report_cache.run_entry(
            Path(args.a), names=names, compile_log=args.compile_log, force=args.force
        )
    else:
        report = report_cache.pair_entry(
            args.a, args.b, names=names, run_info=None, compile_log=args.compile_log,
            force=args.force, eager_lines=None,
        )  # fmt: skip
    if report is None:
        return None
    return _entry("compare", report.key, args.format, args.top, args.output)


def summary_entry(args: argparse.Namespace) -> OutputEntry | None:
    """The entry of ``traceviz summary TRACE``'s arguments (--format, --top); ``None`` when
    the cache is off or TRACE cannot be described."""
    if cache_dir() is None:
        return None
    trace = report_cache.input_key(args.trace)
    if trace is None:
        return None
    # the run.json beside the trace: its measured CPU peaks feed the roofline (the name is
    # spelled here: importing traceviz.runs.runinfo would load msgspec on a cache hit)
    run_json = report_cache.input_key(str(Path(args.trace).parent / "run.json"))
    inputs = {"kind": "summary", "trace": trace, "run_json": run_json}
    key = {"inputs": inputs, "environment": report_cache.environment()}
    return _entry("summary", key, args.format, args.top, None)


def _entry(
    command: str, inputs: dict[str, Any], fmt: str, top: int, path: str | None
) -> OutputEntry | None:
    root = cache_dir()
    if root is None:
        return None
    target = None
    if fmt in DRAWN_FORMATS:
        target = _target(path)
        if target is None or target.is_jupyter or target.legacy_windows:
            return None
    elif path is not None and not _plain_file(path):
        return None
    key = {
        "format": OUTPUT_FORMAT,
        "command": command,
        "report": inputs,
        "package": report_cache.package_fingerprint(),
        "versions": report_cache.package_versions(RENDER_LIBRARIES),
        "render": {
            "format": fmt,
            "top": top,
            "console": None if target is None else describe(target),
        },
    }
    return OutputEntry(entry_path(root, key, ENTRY_PREFIX), key, target)


def _target(path: str | None) -> Console | None:
    """The console a drawing is made on, as :func:`~traceviz.commands.output.emit` makes it:
    stdout's, or for ``-o FILE`` one of :data:`FILE_WIDTH` columns writing into a file opened
    as UTF-8 text (a stand-in buffer: a regular file is no terminal and its encoding is
    UTF-8 either way). ``None`` when ``-o`` names something that is not a regular file."""
    if path is None:
        return console()
    if not _plain_file(path):
        return None
    return console(file=io.StringIO(), width=FILE_WIDTH)


def _plain_file(path: str) -> bool:
    """``path`` is a regular file or does not exist yet (not a terminal, pipe or device)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return True  # not there yet: created as a regular file (or the write says why not)


def describe(target: Console) -> dict[str, Any]:
    """What of ``target`` decides the bytes of a drawing on it (see the module docstring)."""
    return {
        "width": target.width,
        "color_system": target.color_system,
        "is_terminal": target.is_terminal,
        "is_dumb_terminal": target.is_dumb_terminal,
        "is_interactive": target.is_interactive,
        "no_color": bool(target.no_color),
        "legacy_windows": target.legacy_windows,
        "is_jupyter": target.is_jupyter,
        "encoding": target.encoding,
        "environment": {name: os.environ.get(name) for name in RICH_ENVIRONMENT},
    }


def write(output: Output, path: str | None) -> None:
    """Write a stored output to ``path`` (``-o``) or stdout, as :func:`emit` writes text."""
    emit(output.text, path)


def emit_cached(
    rendered: Rendered,
    path: str | None,
    entry: OutputEntry | None,
    reached: Sequence[str] = (),
    sources: Sequence[str] = (),
) -> None:
    """Write ``rendered`` to ``path`` or stdout as :func:`emit` does; with an ``entry``, the
    output is first rendered into a string and stored there (with the severities
    ``reached`` and the state of the user ``sources`` files whose lines it shows) so that
    the next run with the same key only writes it."""
    if entry is None:
        emit(rendered, path)
        return
    text = entry.render(rendered)
    if entry.still_matches():
        reach = tuple(level for level in SEVERITIES if level in reached)
        entry.write(Output(text, reach), sources)
    emit(text, path)


def exit_code(reached: Sequence[str], fail_on: str | None) -> int:
    """``--fail-on``'s exit code: 1 when the findings reach that severity, else 0."""
    return 1 if fail_on is not None and fail_on in reached else 0
