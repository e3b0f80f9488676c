"""Progress of a run: the runner reports phases, a reporter shows them (or not).

The runner calls ``phase(label, total)`` when a phase starts (``total=None`` for one without
steps, such as compilation), ``advance()`` per iteration, and ``done()`` at the end.
:class:`RichProgress` draws a live rich display; :class:`Silent` draws nothing.
"""

from __future__ import annotations

from typing import Protocol

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)


class Reporter(Protocol):
    def phase(self, label: str, total: int | None = None) -> None: ...

    def advance(self, steps: int = 1) -> None: ...

    def done(self) -> None: ...


class Silent:
    """A reporter that shows nothing (the Python API's default)."""

    def phase(self, label: str, total: int | None = None) -> None:
        pass

    def advance(self, steps: int = 1) -> None:
        pass

    def done(self) -> None:
        pass


class RichProgress:
    """One line per phase with a bar (or a spinner for compilation) and the elapsed time."""

    def __init__(self, console: Console | None = None) -> None:
        self._progress = Progress(
            SpinnerColumn(finished_text="[green]✓[/]"),
            TextColumn("{task.description:<28}"),
            BarColumn(bar_width=30),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console or Console(stderr=True),
            transient=False,
        )
        self._task: TaskID | None = None
        self._started = False

    def phase(self, label: str, total: int | None = None) -> None:
        if not self._started:
            self._progress.start()
            self._started = True
        self._finish_task()
        self._task = self._progress.add_task(label, total=total)

    def advance(self, steps: int = 1) -> None:
        if self._task is not None:
            self._progress.advance(self._task, steps)

    def done(self) -> None:
        self._finish_task()
        if self._started:
            self._progress.stop()
            self._started = False

    def _finish_task(self) -> None:
        if self._task is None:
            return
        task = self._progress.tasks[-1]
        total = task.total if task.total is not None else 1
        self._progress.update(self._task, total=total, completed=total)
        self._task = None
