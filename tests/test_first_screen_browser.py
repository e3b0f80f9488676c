"""The dashboard's first screen in a real browser at 1280×800 (issue 26, "Users").

GIVEN ``traceviz dashboard`` on a CPU sample run (sample_traces/block) and on an H200 one
(sample_traces/h200/block)
WHEN Chromium opens the Overview in a 1280×800 window
THEN the verdict sentence and the top findings lie above the fold (800 px), the page does not
scroll sideways (scrollWidth ≤ 1280), and the kind chart's legend lies inside its figure (it
was drawn above the figure, behind the metrics chart).

Screenshots go to ``test-artifacts/first-screen-*.png`` (git-ignored). Skipped, with the
reason, where /usr/bin/chromium, playwright or a sample run is missing.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
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
from tests.conftest import SAMPLES

sync_api = require_browser()

WIDTH, HEIGHT = 1280, 800
RUNS = ("block", "h200/block")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with launched_chromium() as chromium:
        yield chromium


@pytest.fixture(scope="module", params=RUNS)
def overview(
    request: pytest.FixtureRequest, browser: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """The Overview of one sample run at 1280×800, its figures drawn."""
    run = SAMPLES / request.param
    if not (run / "run.json").is_file():
        pytest.skip(f"{run} not found (make it with sample_traces/make.sh)")
    log = tmp_path_factory.mktemp("first-screen") / "server.log"
    with served_cleanly([str(run)], log) as url:
        page = new_page(browser, url, width=WIDTH, height=HEIGHT)
        tab(page, "Overview").wait_for()
        page.locator(".tv-verdict").wait_for()
        page.locator(".js-plotly-plot .legend").first.wait_for()
        ARTIFACTS.mkdir(exist_ok=True)
        name = request.param.replace("/", "-")
        page.screenshot(path=str(ARTIFACTS / f"first-screen-{name}.png"))
        yield page
        assert page.errors == []
        page.context.close()


def _box(locator: Any) -> dict[str, float]:
    box = locator.bounding_box()
    assert box is not None, locator
    return dict(box)


def test_verdict_and_top_findings_above_the_fold(overview: Any) -> None:
    verdict = overview.locator(".tv-verdict")
    box = _box(verdict)
    assert box["y"] + box["height"] <= HEIGHT, box
    text = verdict.inner_text()
    assert any(word in text for word in ("faster", "slower", "difference", "within", "verdict"))
    top = overview.locator(".tv-top details.finding")
    assert top.count() >= 1
    last = _box(top.nth(top.count() - 1))
    assert last["y"] + last["height"] <= HEIGHT, last


def test_no_sideways_scrolling(overview: Any) -> None:
    width = overview.evaluate("document.documentElement.scrollWidth")
    assert width <= WIDTH, width


def test_kind_legend_inside_its_figure(overview: Any) -> None:
    figure = overview.locator(".js-plotly-plot").filter(has_text="Device time by kernel kind")
    legend = _box(figure.locator(".legend"))
    plot = _box(figure.locator(".main-svg").first)
    assert plot["y"] <= legend["y"] and legend["y"] + legend["height"] <= plot["y"] + plot["height"]
    assert legend["x"] + legend["width"] <= WIDTH


def test_kernel_diff_ratios_read_one_way(overview: Any) -> None:
    """The Kernels tab's "B vs A" column: "1.03× less", "none left", never a 0.97."""
    tab(overview, "Kernels").click()
    cells = overview.locator(".tv-kernel-diff .tabulator-cell[tabulator-field=ratio]")
    cells.first.wait_for()
    texts = [cells.nth(i).inner_text().strip() for i in range(cells.count())]
    assert texts and all(re.fullmatch(r"\d+\.\d\d× (less|more)|none left|same|–", t) for t in texts)
    tab(overview, "Overview").click()


def test_kernel_click_right_after_typing_a_search_explains_it(overview: Any) -> None:
    """Typed in the search box (no Enter), then a click on a row: the row is explained (the
    box filtered only when it lost focus, so the click landed on a table being re-filtered
    and explained nothing)."""
    tab(overview, "Kernels").click()
    rows = overview.locator(".tv-kernels .tabulator-row")
    rows.first.wait_for()
    cells = overview.locator(".tv-kernels .tabulator-cell[tabulator-field=kernel]")
    cells.first.wait_for()  # rows can be drawn before their cells on a busy machine
    _until(lambda: any(cells.nth(i).inner_text().strip() for i in range(cells.count())))
    names = [cells.nth(i).inner_text().strip() for i in range(cells.count())]
    name = min((n for n in names if n), key=len)
    overview.get_by_placeholder("e.g. fused, gemm, add").fill(name)  # no Enter, no blur
    _until(lambda: 0 < rows.count() == rows.filter(has_text=name).count())  # filtered as typed
    rows.filter(has_text=name).first.click()
    overview.locator("p b").filter(has_text=name).first.wait_for()
    overview.get_by_placeholder("e.g. fused, gemm, add").fill("")
    tab(overview, "Overview").click()


def _until(condition: Callable[[], bool]) -> None:
    """Polls ``condition`` until it holds; fails after :data:`TIMEOUT_MS`."""
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while not condition():
        assert time.monotonic() < deadline, "condition never held"
        time.sleep(0.2)
