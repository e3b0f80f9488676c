"""Find a source file that a trace, a compile log or run.json recorded, on this machine.

A run directory stores the model's source files relative to itself (``traceviz run`` writes
``../../model.py``, see :mod:`traceviz.runner.portable`), and older runs or traces made
elsewhere hold absolute paths of the machine that made them (``/home/ann/proj/model.py``).
:func:`locate` finds either here:

1. the path as it is, when it names a file (relative paths against the run directories read
   in this process, then the working directory);
2. else the same file under another root: the longest tail of the path (two components at
   least, e.g. ``traceviz/runner/zoo.py``) that names a file under the working directory,
   a run directory read in this process or one of its parents, or the folder holding the
   traceviz package; a library's source (a path through ``site-packages``) by its package
   path under this Python's ``sys.path``. A clone or a copied run directory finds its
   sources so.

None when nothing matches: callers then show no source text (never a guess).
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path, PurePath

#: Run directories read in this process (:func:`remember`), newest last.
_RUN_DIRS: list[Path] = []
#: How many parents of a run directory are tried as roots of a moved source tree.
PARENT_LEVELS = 4
#: The fewest trailing components that must match when a path is re-rooted.
MIN_TAIL = 2
#: The folders a library's sources are installed under.
LIBRARY_DIRS = ("site-packages", "dist-packages")


def remember(run_dir: Path) -> None:
    """Note a run directory whose records are being read: relative paths are relative to it."""
    directory = Path(run_dir).absolute()
    if directory not in _RUN_DIRS:
        _RUN_DIRS.append(directory)
        _locate.cache_clear()


def locate(file: str) -> Path | None:
    """The file ``file`` names, on this machine (module docstring); None when absent."""
    if not file:
        return None
    return _locate(file, Path.cwd())


def shown(file: str) -> str:
    """``file`` as a user should read it: where it is on this machine (relative to the working
    directory when under it), else as recorded."""
    found = locate(file)
    if found is None:
        return file
    try:
        return str(found.relative_to(Path.cwd()))
    except ValueError:
        return str(found)


@functools.lru_cache(maxsize=4096)
def _locate(file: str, cwd: Path) -> Path | None:
    path = PurePath(file.replace("\\", "/"))
    if path.is_absolute():
        if os.path.isfile(path):
            return Path(path)
    else:
        for base in [*reversed(_RUN_DIRS), cwd]:
            candidate = Path(os.path.normpath(base / path))
            if candidate.is_file():
                return candidate
    return _rerooted(path, cwd)


def _rerooted(path: PurePath, cwd: Path) -> Path | None:
    """The longest tail of ``path`` found under one of :func:`_roots`; a library file (a
    path through ``site-packages``) only as its package path under this Python's
    ``sys.path`` (``transformers/models/gpt2/modeling_gpt2.py``), never a shorter tail there."""
    parts = [p for p in path.parts if p not in ("/", "..", ".") and not p.endswith(":\\")]
    roots = _roots(cwd)
    for size in range(len(parts), MIN_TAIL - 1, -1):
        tail = Path(*parts[-size:])
        for root in roots:
            candidate = root / tail
            if candidate.is_file():
                return candidate
    package = _package_path(parts)
    if package is not None:
        for root in _library_roots():
            if (root / package).is_file():
                return root / package
    return None


def _package_path(parts: list[str]) -> Path | None:
    """What follows the last ``site-packages`` / ``dist-packages`` of a path, or None."""
    marks = [i for i, part in enumerate(parts) if part in LIBRARY_DIRS]
    return Path(*parts[marks[-1] + 1 :]) if marks and marks[-1] + 1 < len(parts) else None


def _library_roots() -> list[Path]:
    """This Python's package folders (``sys.path``), where a library's sources are here."""
    return [Path(p) for p in sys.path if p and Path(p).is_dir()]


def _roots(cwd: Path) -> list[Path]:
    roots = [cwd]
    for run_dir in reversed(_RUN_DIRS):
        roots.extend([run_dir, *list(run_dir.parents)[:PARENT_LEVELS]])
    roots.append(Path(__file__).resolve().parent.parent)  # the folder holding traceviz/
    return list(dict.fromkeys(roots))
