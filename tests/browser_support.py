"""What the browser tests share: Debian's Chromium driven by playwright's Python package
(never ``playwright install``), a ``traceviz dashboard`` served on a free loopback port, and
waits on conditions with generous limits (the tests must pass on a loaded 2-core machine:
no short per-request deadline, no fixed sleeps deciding an outcome)."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.chromium import CHROMIUM
from tests.chromium import CHROMIUM_ARGS as CHROMIUM_ARGS  # for the browser tests
from tests.conftest import REPO

ARTIFACTS = REPO / "test-artifacts"
#: Per wait in the page (ms): a loaded machine may take a long time to parse or lay out.
TIMEOUT_MS = 120_000
#: Until the server answers (s): parsing the traces happens before it listens.
READY_S = 300
#: One HTTP request while polling for readiness (s): long, a busy server answers late.
REQUEST_S = 60


def require_browser() -> Any:
    """Called by a browser test module as it is imported: skips the whole module, with the
    reason, where Chromium, playwright or panel is missing; else playwright's ``sync_api``."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} not found: apt-get install -y chromium", allow_module_level=True)
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
    pytest.importorskip("panel", reason="panel not installed (dashboard extra)")
    return sync_api


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerError(RuntimeError):
    """The dashboard exited or never answered; the message holds its log."""


@contextmanager
def dashboard(args: list[str], log: Path) -> Iterator[str]:
    """``traceviz dashboard ARGS`` on a free port until the block ends (stopped with SIGINT,
    as Ctrl-C would); yields its URL once it answers HTTP 200."""
    port = free_port()
    cmd = [sys.executable, "-m", "traceviz.cli", "dashboard", *args, "--port", str(port)]
    with log.open("w") as out:
        proc = subprocess.Popen([*cmd, "--no-show"], cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_until_served(proc, url, log)
        yield url
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        if code != 0:
            raise ServerError(f"dashboard exited with {code}:\n{log.read_text()}")


@contextmanager
def served_cleanly(args: list[str], log: Path) -> Iterator[str]:
    """:func:`dashboard`; once it has stopped, asserts that its log holds no traceback from
    traceviz's own code (tornado's "websocket closed" noise when a browser page goes away is
    not ours)."""
    with dashboard(args, log) as url:
        yield url
    text = log.read_text()
    assert f'File "{REPO / "traceviz"}' not in text, text


def wait_until_served(proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + READY_S
    while True:
        if proc.poll() is not None:
            raise ServerError(f"dashboard exited with {proc.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(url, timeout=REQUEST_S) as response:
                if response.status == 200:
                    return
        except (OSError, urllib.error.URLError):
            pass
        if time.monotonic() > deadline:
            raise ServerError(
                f"dashboard did not answer on {url} in {READY_S} s:\n{log.read_text()}"
            )
        time.sleep(0.5)


@contextmanager
def launched_chromium() -> Iterator[Any]:
    """Debian's Chromium, driven by playwright with :data:`CHROMIUM_ARGS`; closed on exit."""
    sync_api = require_browser()
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def new_page(browser: Any, url: str, *, width: int = 1400, height: int = 1000) -> Any:
    """A page on ``url`` that records console errors, page errors and failed requests in
    ``page.errors``."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.errors = []
    page.on("console", lambda m: m.type == "error" and page.errors.append(m.text))
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.on("requestfailed", lambda r: page.errors.append(f"request failed: {r.url}"))
    page.goto(url, timeout=TIMEOUT_MS)
    return page


def tab(page: Any, view: str) -> Any:
    """The tab header of a view (Bokeh's tabs have no ARIA role)."""
    return page.locator(".bk-tab").filter(has_text=re.compile(rf"^{re.escape(view)}$"))


def until(condition: Callable[[], bool]) -> None:
    """Polls ``condition`` until it holds; fails after :data:`TIMEOUT_MS`."""
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while not condition():
        assert time.monotonic() < deadline, "condition never held"
        time.sleep(0.2)
