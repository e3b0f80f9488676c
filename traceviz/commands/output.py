"""Where a command's report goes: stdout or ``-o FILE``, with one-line errors for bad paths.

:func:`console` is a rich console that lets a closed pipe (``traceviz compare … | head``) reach
:func:`traceviz.cli.main` as :class:`BrokenPipeError` (rich would exit 1 itself, the
``--fail-on`` code); the CLI then exits quietly with code 141. In a file or a pipe its lines
carry no trailing blanks and only ASCII: glyphs are spelled out before rich lays the text out
(``→`` as ``->``, :data:`ASCII_SPELLING`) and box drawing is drawn in ``-``, ``|`` and ``+``, so
a byte-counting tool (mawk's ``length``, ``cut -b``) or a log that is not UTF-8 reads the width
the lines have.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import itertools
import sys
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from traceviz.errors import UsageError
from traceviz.report.formats import Rendered
from traceviz.units import ASCII_SPELLING, ascii_text

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType
    from rich.segment import Segment
    from rich.text import Text

#: The width of a drawing written to a file (-o FILE).
FILE_WIDTH = 140


def _box_glyph(code: int) -> str:
    """The ASCII stand-in of a box-drawing character: ``-`` for a horizontal line, ``|`` for a
    vertical one, ``+`` for a corner or junction."""
    name = unicodedata.name(chr(code), "")
    arms = {arm for arm in ("UP", "DOWN", "LEFT", "RIGHT", "VERTICAL", "HORIZONTAL") if arm in name}
    if arms == {"HORIZONTAL"}:
        return "-"
    return "|" if arms == {"VERTICAL"} else "+"


#: One ASCII character for one glyph in the finished lines: rich's box drawing, and a spelled
#: glyph that reached the lines without passing :func:`spelled` (its first character).
ASCII_GLYPHS: dict[int, str] = {
    **{code: _box_glyph(code) for code in range(0x2500, 0x2580)},
    **{ord(glyph): ascii[0] for glyph, ascii in ASCII_SPELLING.items()},
}


def spelled(text: Text) -> Text:
    """``text`` with :data:`ASCII_SPELLING`'s glyphs spelled out, its styles kept on the
    same characters."""
    from rich.text import Span

    plain = text.plain
    if plain.isascii():
        return text
    # at[i]: where old character i starts in the new text
    at = [0, *itertools.accumulate(len(ASCII_SPELLING.get(char, char)) for char in plain)]
    new = text.copy()
    new.plain = ascii_text(plain)
    new.spans = [Span(at[span.start], at[span.end], span.style) for span in text.spans]
    return new


def _spelled_renderable(renderable: RenderableType) -> RenderableType:
    """A text, or a padding or table of texts, :func:`spelled` before rich measures it (a table
    sizes its columns, a padding its width, by the texts it holds)."""
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    if isinstance(renderable, Text):
        return spelled(renderable)
    if isinstance(renderable, Padding):
        padding = copy.copy(renderable)
        padding.renderable = _spelled_renderable(renderable.renderable)
        return padding
    if isinstance(renderable, Table):
        table = copy.copy(renderable)
        table.columns = [
            dataclasses.replace(column, header=_spelled_renderable(column.header),
                                _cells=[_spelled_renderable(cell) for cell in column.cells])
            for column in renderable.columns
        ]  # fmt: skip
        return table
    return renderable


@functools.cache
def _pipe_console() -> type[Console]:
    """The console class, made at the first drawing: rich is imported only by the formats
    that draw (text), not by JSON or Markdown (start-up time)."""
    from rich.console import Console

    class _PipeConsole(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError

        def render(
            self, renderable: RenderableType, options: ConsoleOptions | None = None
        ) -> Iterable[Segment]:
            if not self.is_terminal:
                renderable = _spelled_renderable(renderable)
            return super().render(renderable, options)

        def render_str(self, text: str, **kwargs: Any) -> Text:
            drawn = super().render_str(text, **kwargs)
            return drawn if self.is_terminal else spelled(drawn)

        def _render_buffer(self, buffer: Iterable[Segment]) -> str:
            """Lines without the blanks rich pads them with, in ASCII glyphs, when they go to
            a file or pipe."""
            text = super()._render_buffer(buffer)
            if self.is_terminal:
                return text
            return "\n".join(line.rstrip() for line in text.split("\n")).translate(ASCII_GLYPHS)

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
