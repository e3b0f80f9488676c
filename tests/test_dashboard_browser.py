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
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser_support import (
    ARTIFACTS,
    TIMEOUT_MS,
    launched_chromium,
    new_page,
    require_browser,
    served_cleanly,
    tab,
)
from tests.conftest import REPO, SAMPLES

# view -> (plotly figures it shows, HTML tables it shows at least)
VIEWS = {
    "Overview": (4, 1),  # metrics, kinds, step bridge, roofline
    "Kernels": (0, 0),
    "Timeline": (1, 0),
    "Fusion": (1, 1),
    "Launch overhead": (3, 1),
    "Memory": (2, 1),
    "Regions": (1, 0),
}

sync_api = require_browser()

from traceviz.dashboard.tabs.common import tab_class  # noqa: E402


def sample_run(*names: str) -> Path:
    for name in names:
        if (SAMPLES / name / "run.json").is_file():
            return SAMPLES / name
    pytest.skip(f"none of {names} in {SAMPLES} (make them with sample_traces/make.sh)")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    run = sample_run("graph-break", "pointwise")
    with served_cleanly([str(run)], tmp_path_factory.mktemp("dashboard") / "server.log") as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with launched_chromium() as chromium:
        yield chromium


@pytest.fixture(scope="module")
def page(browser: Any, server: str) -> Iterator[Any]:
    """One page for the whole module (one server session): the tests below run in order on it,
    as a person would click through."""
    page = new_page(browser, server)
    tab(page, "Overview").wait_for()
    yield page
    page.context.close()


def upload_input(page: Any, index: int) -> Any:
    """The file input of upload A (0) or B (1), opening the "Load traces" card if closed."""
    zones = page.locator(".filepond--root")
    zones.nth(1).wait_for(state="attached")
    if not zones.nth(index).is_visible():  # the card is collapsed once traces are shown
        page.get_by_text("Load traces").click()
        zones.nth(index).wait_for()
    return page.locator("input[type=file]").nth(index)


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.wait_for_timeout(1000)  # let plotly finish its transitions (the Sankey animates)
    page.screenshot(path=str(ARTIFACTS / f"dashboard-{name}.png"), full_page=True)


def content(page: Any, view: str) -> Any:
    """A view's content (built on first opening: the tab's slot carries a class)."""
    return page.locator(f".{tab_class(view)}")


def open_view(page: Any, view: str) -> None:
    """Click a view's tab and wait until its figures and tables are drawn (the other tabs'
    content is removed: the dashboard's tabs are dynamic). Waits on conditions, polled, up to
    TIMEOUT_MS each."""
    tab(page, view).click()
    figures, tables = VIEWS[view]
    root = content(page, view)
    root.wait_for()
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    drawn = root.locator(".js-plotly-plot .main-svg")
    while drawn.count() < 2 * figures and time.monotonic() < deadline:
        page.wait_for_timeout(100)  # a poll interval, not a guess at how long drawing takes
    if tables:
        root.locator("table").nth(tables - 1).wait_for()
    if view == "Kernels":
        root.locator(".tv-kernels .tabulator-row").first.wait_for()


def test_every_view_renders(page: Any) -> None:
    for view, (figures, _) in VIEWS.items():
        open_view(page, view)
        plots = content(page, view).locator(".js-plotly-plot")
        assert plots.count() == figures, view
        assert page.locator(".js-plotly-plot:visible").count() == figures, view  # one tab shown
        for i in range(figures):  # each figure drew something: marks, bars, links or a note
            marks = plots.nth(i).locator("path, rect.bg, g.annotation, .sankey-node")
            assert marks.count() > 0, f"{view}: figure {i} is empty"
        if view == "Kernels":
            assert page.locator(".tv-kernels .tabulator-row").count() > 0
            assert page.locator(".tv-kernel-diff .tabulator-row").count() > 0
        shot(page, view.lower().replace(" ", "-"))
    assert page.errors == []


def test_kernel_click_explains_it(page: Any) -> None:
    open_view(page, "Kernels")
    page.get_by_placeholder("e.g. fused, gemm, add").fill("fused")
    page.keyboard.press("Enter")
    row = page.locator(".tv-kernels .tabulator-row").filter(has_text="compiled").first
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
    page.get_by_text(f"{other.name} (").first.wait_for()  # the headline names the upload
    assert page.get_by_text("traceviz-upload-").count() == 0  # not the deleted temp copy
    shot(page, "upload-good")
    assert page.errors == []


def test_upload_corrupt_file_shows_message(page: Any, tmp_path: Path) -> None:
    bad = tmp_path / "corrupt.json.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00 this is not a trace" + os.urandom(64))
    upload_input(page, 0).set_input_files(str(bad))
    page.get_by_text("Could not load corrupt.json.gz").wait_for()
    assert tab(page, "Overview").is_visible()  # the old comparison stays
    drop_a = page.locator(".filepond--root:visible").first  # A's: emptied, not "complete"
    drop_a.wait_for()
    sync_api.expect(drop_a).not_to_contain_text("corrupt.json.gz", timeout=TIMEOUT_MS)
    assert "Upload complete" not in drop_a.inner_text()
    page.wait_for_timeout(1000)  # room for a late script error from the old zone to show
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
