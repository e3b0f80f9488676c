"""The design promise: parsing, comparing and the text/JSON outputs never import torch,
plotly or panel (so they run, and start fast, on any machine)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import SAMPLES

HEAVY = ("torch", "plotly", "panel", "bokeh")


def test_load_compare_and_summary_stay_light() -> None:
    run = SAMPLES / "mlp"
    code = (
        "import sys, traceviz;"
        "from traceviz.cli import main;"
        f"c = traceviz.compare({str(run / 'eager.pt.trace.json.gz')!r},"
        f" {str(run / 'compiled.pt.trace.json.gz')!r});"
        f"main(['summary', {str(run / 'compiled.pt.trace.json.gz')!r}, '--format', 'json']);"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules];"
        "sys.exit(f'imported {heavy}' if heavy else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
