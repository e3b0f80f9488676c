"""Standard output in an encoding that cannot write the report (``PYTHONIOENCODING=ascii``, a
Latin-1 locale): one line on stderr naming the encoding and what to do, exit 2 — on a
rendered-output cache hit as on a miss, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SAMPLES

RUN = SAMPLES / "pointwise"


@pytest.mark.skipif(not (RUN / "run.json").is_file(), reason="sample run missing")
@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_an_ascii_stdout_is_one_error(tmp_path: Path, fmt: str) -> None:
    env = {**os.environ, "COLUMNS": "120", "PYTHONIOENCODING": "ascii"}
    env["TRACEVIZ_CACHE_DIR"] = str(tmp_path / "cache")
    env.pop("TRACEVIZ_NO_CACHE", None)
    for look in ("miss", "hit"):
        proc = subprocess.run(
            [sys.executable, "-m", "traceviz.cli", "compare", str(RUN), "--format", fmt],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            check=False,
        )
        assert proc.returncode == 2, (look, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1, (look, proc.stderr)
        assert "ascii" in lines[0] and "PYTHONIOENCODING=utf-8" in lines[0] and "-o" in lines[0]
