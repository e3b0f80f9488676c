"""Where a command's report goes: stdout or ``-o FILE``, with one-line errors for bad paths.

:func:`console` is a rich console that lets a closed pipe (``traceviz compare … | head``) reach
:func:`traceviz.cli.main` as :class:`BrokenPipeError` (rich would exit 1 itself, the
``--fail-on`` code); the CLI then exits quietly with code 141. In a file or a pipe its lines
carry no trailing blanks.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from traceviz.errors import UsageError
from traceviz.report.formats import Rendered

if TYPE_CHECKING:
    from rich.console import Console
    from rich.segment import Segment

#: The width of a drawing written to a file (-o FILE).
FILE_WIDTH = 140


@functools.cache
def _pipe_console() -> type[Console]:
    """The console class, made at the first drawing: rich is imported only by the formats
    that draw (text), not by JSON or Markdown (start-up time)."""
    from rich.console import Console

    class _PipeConsole(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError

        def _render_buffer(self, buffer: Iterable[Segment]) -> str:
            """Lines without the blanks rich pads them with, when they go to a file or pipe."""
            text = super()._render_buffer(buffer)
            if self.is_terminal:
                return text
            return "\n".join(line.rstrip() for line in text.split("\n"))

    return _PipeConsole


def console(**kwargs: Any) -> Console:
    """A rich console (``Console(**kwargs)``) whose closed pipe raises :class:`BrokenPipeError`."""
    return _pipe_console()(**kwargs)


#: The format ``-o FILE`` implies by its suffix when ``--format`` is not given.
SUFFIX_FORMATS = {".html": "html", ".htm": "html", ".md": "markdown", ".markdown": "markdown",
                  ".json": "json", ".txt": "text"}  # fmt: skip


def output_format(given: str | None, path: str | None, choices: Iterable[str]) -> str:
    """The format to render: ``--format`` when given, else the one ``-o FILE``'s suffix names
    (``r.html`` → html, ``r.md`` → markdown, ``r.json`` → json), else text. A suffix naming a
    format this command does not render falls back to text too."""
    if given is not None:
        return given
    implied = SUFFIX_FORMATS.get(Path(path).suffix.lower()) if path else None
    return implied if implied in set(choices) else "text"


def check_output(path: str | None) -> None:
    """Fail before any work when ``-o path`` cannot be written: its folder is missing or not a
    folder, or ``path`` is a directory. ``None`` is stdout: fine unless it is closed."""
    if path is None:
        _check_stdout()
        return
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"-o {path}: is a directory; give a file name")
    parent = target.parent
    if not parent.exists():
        raise UsageError(f"-o {path}: no such directory {str(parent)!r}; create it first")
    if not parent.is_dir():
        raise UsageError(f"-o {path}: {str(parent)!r} is not a directory")


def _check_stdout() -> None:
    """A process started with its standard output closed (``>&-``) has no ``sys.stdout``:
    one :class:`UsageError` instead of a traceback (rich would print into nothing)."""
    if sys.stdout is None:
        raise UsageError("standard output is closed: nowhere to write; give -o FILE")


def open_output(path: str) -> IO[str]:
    """``path`` opened for writing text; an unwritable path is one :class:`UsageError`."""
    check_output(path)
    try:
        return open(path, "w", encoding="utf-8")  # the caller closes it
    except OSError as err:
        raise UsageError(f"-o {path}: cannot write: {err.strerror or err}") from err


def write_output(path: str, text: str) -> None:
    """Write ``text`` to ``path``; an unwritable path is one :class:`UsageError`."""
    with open_output(path) as handle:
        handle.write(text)


def emit(rendered: Rendered, path: str | None) -> None:
    """Write a renderer's result (:mod:`traceviz.report.formats`) to ``path`` or stdout: text
    as it is, a drawing on a console (140 columns in a file, the terminal's width on stdout)."""
    if not path:
        _check_stdout()
    if isinstance(rendered, str):
        if path:
            write_output(path, rendered)
        else:
            sys.stdout.write(rendered)
    elif path:
        with open_output(path) as handle:
            rendered(console(file=handle, width=FILE_WIDTH))
    else:
        rendered(console())
