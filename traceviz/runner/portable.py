"""A run directory that can be moved: the source paths it stores are relative to it.

Dynamo, Inductor and the profiler record the model's source files by absolute path
(``/home/ann/proj/model.py``) in run.json, the compile log and the traces. Once the run
directory is copied to another machine, or the project is cloned elsewhere, those name
nothing. :func:`make_portable` rewrites every path under the project folder (the folder
``traceviz run`` was started in) as a path relative to the run directory
(``../../model.py``), in each file of the run directory that holds text: run.json, the
compile log and the traces. Readers resolve them again with
:func:`traceviz.source_files.locate`.

Paths outside the project folder (the Python installation's packages, a built-in model's
source in the installed traceviz, Inductor's cache in the temporary folder) are made relative
to the run directory too, where they name a folder of this machine: a run directory stores no
absolute path (a user's home and folder layout stay on their machine). Read elsewhere, a
library's source is still found by its package path under ``site-packages``.
"""

from __future__ import annotations

import gzip
import os
import re
from pathlib import Path

#: The run directory's files that hold source paths (gzip when they end in ``.gz``).
TEXT_PATTERNS = ("run.json", "*.jsonl.gz", "*.pt.trace.json", "*.pt.trace.json.gz")


def make_portable(directory: Path, project: Path) -> int:
    """Rewrite ``project``'s absolute paths in ``directory``'s files as relative to
    ``directory``; the number of files changed. A run directory outside ``project`` is left
    as it is only where no relative path can be written (another drive)."""
    directory, project = Path(directory).absolute(), Path(project).absolute()
    try:
        relative = os.path.relpath(project, directory)
    except ValueError:  # another drive (Windows): no relative path exists
        return 0
    pattern = project_paths(project)
    replacement = (relative.replace(os.sep, "/") + "/").encode().replace(b"\\", b"\\\\")
    changed = 0
    for path in (p for name in TEXT_PATTERNS for p in sorted(directory.glob(name))):
        raw = path.read_bytes()
        packed = path.suffix == ".gz"
        text = gzip.decompress(raw) if packed else raw
        new = _relative_folders(pattern.sub(replacement, text), directory)
        if new != text:
            path.write_bytes(gzip.compress(new, compresslevel=6, mtime=0) if packed else new)
            changed += 1
    return changed


def project_paths(project: Path) -> re.Pattern[bytes]:
    """The bytes that start an absolute path into ``project`` (``/home/ann/proj/``), not
    where they continue a longer path (``/x/home/ann/proj/``)."""
    prefix = str(project).rstrip("/\\") + os.sep
    return re.compile(rb"(?<![\w./\\-])" + re.escape(prefix.encode()))


#: An absolute POSIX folder path (``/usr/lib/python3/``), not where it continues a longer
#: path or a URL (``https://host/docs/``).
ABSOLUTE_FOLDER = re.compile(rb"(?<![\w./\\:-])/(?:[\w.+@~-]+/)+")


def _relative_folders(text: bytes, directory: Path) -> bytes:
    """``text`` with each absolute folder path that names a folder of this machine written
    relative to ``directory``; other matches are left as they are (not a path here)."""
    if os.name != "posix":
        return text
    rewritten: dict[bytes, bytes] = {}

    def relative(match: re.Match[bytes]) -> bytes:
        folder = match.group(0)
        if folder not in rewritten:
            name = folder.decode(errors="surrogateescape")
            rewritten[folder] = (
                (os.path.relpath(name, directory) + "/").encode(errors="surrogateescape")
                if os.path.isdir(name)
                else folder
            )
        return rewritten[folder]

    return ABSOLUTE_FOLDER.sub(relative, text)
