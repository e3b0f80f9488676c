"""The served dashboard in a real browser: Debian's Chromium driven by playwright's Python
package (never ``playwright install``).

GIVEN ``traceviz dashboard <sample run>`` on a free loopback port
WHEN a headless Chromium visits every view, uploads a good trace and a corrupt one
THEN every view renders its figures and tables, the good upload loads, the corrupt one shows
a message in the page, and the browser console has no errors.

Screenshots of each view go to ``test-artifacts/`` (git-ignored). Skipped, with the reason,
where /usr/bin/chromium or playwright is missing.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, SAMPLES

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
ARTIFACTS = REPO / "test-artifacts"
# view -> (plotly figures it shows, HTML tables it shows at least)
VIEWS = {
    "Overview": (2, 1),
    "Kernels": (0, 0),
    "Timeline": (1, 0),
    "Fusion": (1, 1),
    "Launch overhead": (3, 1),
    "Memory": (2, 1),
    "Regions": (1, 0),
}
TIMEOUT_MS = 30_000

if not CHROMIUM.exists():
    pytest.skip(f"{CHROMIUM} not found: apt-get install -y chromium", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
pytest.importorskip("panel", reason="panel not installed (dashboard extra)")


def sample_run(*names: str) -> Path:
    for name in names:
        if (SAMPLES / name / "run.json").is_file():
            return SAMPLES / name
    pytest.skip(f"none of {names} in {SAMPLES} (make them with sample_traces/make.sh)")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    run = sample_run("graph-break", "pointwise")
    port = free_port()
    log = tmp_path_factory.mktemp("dashboard") / "server.log"
    cmd = [
        sys.executable,
        "-m",
        "traceviz.cli",
        "dashboard",
        str(run),
        "--port",
        str(port),
        "--no-show",
    ]
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail(f"dashboard exited with {proc.returncode}:\n{log.read_text()}")
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"dashboard did not answer on {url}:\n{log.read_text()}")
            time.sleep(0.3)
        yield url
    finally:
        proc.send_signal(signal.SIGINT)  # what Ctrl-C does
        try:
            assert proc.wait(timeout=20) == 0, log.read_text()
        finally:
            if proc.poll() is None:
                proc.kill()
    # no traceback from traceviz's own code (tornado's "websocket closed" noise when a browser
    # page goes away is not ours)
    assert f'File "{REPO / "traceviz"}' not in log.read_text(), log.read_text()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def page(browser: Any, server: str) -> Iterator[Any]:
    """One page for the whole module (one server session): the tests below run in order on it,
    as a person would click through."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.errors = []  # type: ignore[attr-defined]
    page.on("console", lambda m: m.type == "error" and page.errors.append(m.text))
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.on("requestfailed", lambda r: page.errors.append(f"request failed: {r.url}"))
    page.goto(server)
    tab(page, "Overview").wait_for()
    yield page
    context.close()


def tab(page: Any, view: str) -> Any:
    """The tab header of a view (Bokeh's tabs have no ARIA role)."""
    return page.locator(".bk-tab").filter(has_text=re.compile(rf"^{re.escape(view)}$"))


def upload_input(page: Any, index: int) -> Any:
    """The file input of upload A (0) or B (1), opening the "Load traces" card if closed."""
    inputs = page.locator("input[type=file]")
    if inputs.count() < 2:
        page.get_by_text("Load traces").click()
    return inputs.nth(index)


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.wait_for_timeout(1000)  # let plotly finish its transitions (the Sankey animates)
    page.screenshot(path=str(ARTIFACTS / f"dashboard-{name}.png"), full_page=True)


def open_view(page: Any, view: str) -> None:
    """Click a view's tab and wait until its figures and tables are drawn (the other tabs'
    content is removed: the dashboard's tabs are dynamic)."""
    tab(page, view).click()
    figures, tables = VIEWS[view]
    plots = page.locator(".js-plotly-plot:visible")
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while plots.count() != figures and time.monotonic() < deadline:
        page.wait_for_timeout(100)
    if figures:
        page.locator(".js-plotly-plot:visible .main-svg").nth(2 * figures - 1).wait_for()
    if tables:
        page.locator("table:visible").nth(tables - 1).wait_for()


def test_every_view_renders(page: Any) -> None:
    for view, (figures, _) in VIEWS.items():
        open_view(page, view)
        plots = page.locator(".js-plotly-plot:visible")
        assert plots.count() == figures, view
        for i in range(figures):  # each figure drew something: marks, bars, links or a note
            marks = plots.nth(i).locator("path, rect.bg, g.annotation, .sankey-node")
            assert marks.count() > 0, f"{view}: figure {i} is empty"
        if view == "Kernels":
            page.locator(".tabulator-row").first.wait_for()
            assert page.locator(".tabulator-row").count() > 0
        shot(page, view.lower().replace(" ", "-"))
    assert page.errors == []


def test_kernel_click_explains_it(page: Any) -> None:
    open_view(page, "Kernels")
    page.get_by_placeholder("e.g. fused, gemm, add").fill("fused")
    page.keyboard.press("Enter")
    row = page.locator(".tabulator-row").filter(has_text="compiled").first
    row.wait_for()
    row.click()
    page.get_by_text("ops it replaced").wait_for()
    shot(page, "kernels-selected")
    assert page.errors == []


def test_upload_good_trace(page: Any) -> None:
    other = sample_run("pointwise", "linear-add") / "compiled.pt.trace.json.gz"
    upload_input(page, 1).set_input_files(str(other))
    page.get_by_text(f"Loaded {other.name}.").wait_for()
    open_view(page, "Overview")
    page.get_by_text("traceviz-upload-").first.wait_for()  # the headline names the upload
    shot(page, "upload-good")
    assert page.errors == []


def test_upload_corrupt_file_shows_message(page: Any, tmp_path: Path) -> None:
    bad = tmp_path / "corrupt.json.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00 this is not a trace" + os.urandom(64))
    upload_input(page, 0).set_input_files(str(bad))
    page.get_by_text("Could not load corrupt.json.gz").wait_for()
    assert tab(page, "Overview").is_visible()  # the old comparison stays
    shot(page, "upload-corrupt")
    assert page.errors == []


def test_artifacts_are_git_ignored() -> None:
    git = shutil.which("git")
    if git is None:
        pytest.skip("git not found")
    out = subprocess.run(
        [git, "check-ignore", "test-artifacts/x.png"], cwd=REPO, capture_output=True, text=True
    )
    assert out.returncode == 0
