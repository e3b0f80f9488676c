"""Debian's Chromium as the browser tests and ``benchmarks/dashboard.py --browser`` launch it,
through playwright's Python package with ``executable_path`` (``playwright install`` is never
run: no browser download). Standard library only, so the benchmark can import it."""

from __future__ import annotations

from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
