"""``traceviz dashboard DATASET`` in a real browser (Debian's Chromium, playwright's Python
package; see tests/browser_support.py).

GIVEN a ranks dataset ingested in the test from 4 synthetic ranks (NCCL all-reduces, random
clock offsets, rank 2 planted as a straggler)
WHEN a headless Chromium opens the served dashboard, selects a rank and opens its trace tab
THEN the Ranks tab comes first with per-rank bars, only the straggler's bars outlined and the
title naming it; the selected rank's details and then its trace's summary show; the console
has no errors. Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import traceviz
from tests.browser_support import (
    ARTIFACTS,
    dashboard,
    launched_chromium,
    new_page,
    require_browser,
    served_cleanly,
    tab,
    until,
)
from tests.ranks_fixtures import synthetic_job, write_ranks

require_browser()
pytest.importorskip("pyarrow", reason="pyarrow not installed (ranks extra)")

from traceviz.dashboard.tabs.common import tab_class  # noqa: E402
from traceviz.report.figures.ranks import STRAGGLER_COLOR  # noqa: E402

WORLD, STRAGGLER = 4, 2


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ranks-browser")
    job = synthetic_job(WORLD, straggler=STRAGGLER, seed=5)
    traceviz.load_ranks(write_ranks(root / "traces", job.docs), root / "job.ds")
    return root / "job.ds"


@pytest.fixture(scope="module")
def server(dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with served_cleanly([str(dataset)], tmp_path_factory.mktemp("dashboard") / "server.log") as url:
        yield url


@pytest.fixture(scope="module")
def page(server: str) -> Iterator[Any]:
    with launched_chromium() as browser:
        page = new_page(browser, server)
        tab(page, "Ranks").wait_for()
        yield page
        page.context.close()


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"ranks-{name}.png"), full_page=True)


def at_least(locator: Any, count: int) -> int:
    """Once ``locator`` matches ``count`` elements or more (polled), how many it matches."""
    until(lambda: locator.count() >= count)
    return int(locator.count())


def outlines(page: Any) -> dict[str, str]:
    """Each rank's bar outline colour in the drawn figure (read from plotly's own data)."""
    plot = page.locator(f".{tab_class('Ranks')} .js-plotly-plot").first
    pairs = plot.evaluate(
        "el => el.data.filter(t => t.type === 'bar').flatMap("
        "t => t.x.map((x, i) => [x, t.marker.line.color[i]]))"
    )
    found: dict[str, str] = {}
    for x, color in pairs:
        found[x] = color if found.get(x, color) == color else "mixed"
    return found


def test_ranks_tab_comes_first_with_bars_and_the_straggler_outlined(page: Any) -> None:
    headers = page.locator(".bk-tab")
    assert [headers.nth(i).inner_text() for i in range(headers.count())] == [
        "Ranks",
        "Rank trace",
    ]
    root = page.locator(f".{tab_class('Ranks')}")
    root.wait_for()
    bars = root.locator(".js-plotly-plot .bars path")
    at_least(bars, 3 * WORLD)  # compute, transfer, wait per rank
    colors = outlines(page)
    assert set(colors) == {str(r) for r in range(WORLD)}
    assert {r for r, c in colors.items() if c == STRAGGLER_COLOR} == {str(STRAGGLER)}
    assert f"stragglers: {STRAGGLER}" in root.locator(".gtitle").first.text_content()
    root.get_by_text(f"Rank {STRAGGLER}", exact=True).wait_for()  # its details to start with
    at_least(root.locator(".tabulator-row"), WORLD)
    shot(page, "ranks")
    assert page.errors == []


def test_selecting_a_rank_opens_its_trace(page: Any) -> None:
    root = page.locator(f".{tab_class('Ranks')}")
    row = root.locator(".tabulator-table").first.locator(".tabulator-row").nth(1)
    row.click()
    root.get_by_text("Rank 1", exact=True).wait_for()
    tab(page, "Rank trace").click()
    trace = page.locator(".tv-rank-trace")
    trace.get_by_text("Rank 1", exact=True).wait_for()
    trace.locator(".tv-card").first.wait_for()
    assert trace.get_by_text("Top 20 kernels by device time (measured)").count() == 1
    shot(page, "rank-trace")
    assert page.errors == []


@pytest.fixture(scope="module")
def faster(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ranks-browser-b")
    job = synthetic_job(WORLD, straggler=None, seed=6, compute_us=500.0)
    traceviz.load_ranks(write_ranks(root / "traces", job.docs), root / "fast.ds")
    return root / "fast.ds"


def test_two_datasets_open_on_the_comparison(
    dataset: Path, faster: Path, tmp_path: Path, page: Any
) -> None:
    args = [str(dataset), str(faster), "--names", "slow", "fast"]
    with dashboard(args, tmp_path / "server.log") as url:
        pair = new_page(page.context.browser, url)
        tab(pair, "Compare ranks").wait_for()
        headers = pair.locator(".bk-tab")
        titles = [headers.nth(i).inner_text() for i in range(headers.count())]
        assert titles == ["Compare ranks", "Ranks: slow", "Ranks: fast", "Rank trace"]
        root = pair.locator(f".{tab_class('Compare ranks')}")
        assert at_least(root.locator(".tabulator-row"), WORLD) == WORLD
        root.get_by_text("slow → fast, rank by rank").wait_for()
        tab(pair, "Ranks: fast").click()
        drawn = pair.locator(f".{tab_class('Ranks: fast')} .js-plotly-plot .bars path")
        at_least(drawn, 2 * WORLD)  # no waiting: compute + transfer
        shot(pair, "compare")
        assert pair.errors == []
        pair.context.close()
