"""Checks that a piece of traceviz leaves heavy or optional packages unimported (the light
import of DESIGN.md and the optional extras), shared by the tests of each feature."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable


def assert_imports_none(code: str, modules: Iterable[str]) -> None:
    """Run ``code`` (Python statements) in a fresh interpreter; fail when it fails or leaves any
    of ``modules`` in ``sys.modules``, naming them (or showing its stderr)."""
    check = (
        "\nimport sys as _sys\n"
        f"_imported = [m for m in {tuple(modules)!r} if m in _sys.modules]\n"
        "_sys.exit(f'imported {_imported}' if _imported else 0)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code + check], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
