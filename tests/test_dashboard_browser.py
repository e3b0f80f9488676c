"""The served dashboard in a real browser: Debian's Chromium driven by playwright's Python
package (never ``playwright install``).

GIVEN ``traceviz dashboard <sample run>`` on a free loopback port
WHEN a headless Chromium visits every view, uploads a good trace and a corrupt one
THEN every view renders its figures and tables, the good upload loads, the corrupt one shows
a message in the page, and the browser console has no errors.

A ranks dataset (``traceviz dashboard DATASET``, and two of them) shows its Ranks tab first,
the straggler outlined, and a selected rank's trace.

On a run with ONNX Runtime levels the Backends tab shows its three figures, the fusion table
and its HTML tables; on a plain run it is absent. On a real GPU pair (the corpus' A100 eager
and compiled training steps) at 1600 px the kernel tables keep their numbers in view whatever
the kernel names' length, the full name shows on hover, the memory card says it is partial,
and the time from opening the page to its first drawn chart is measured (written to
``test-artifacts/dashboard-timing.json`` and printed; a measurement, not an assertion).

The first screen (issue 26, "Users"): on a CPU sample run (sample_traces/block) and an H200
one (sample_traces/h200/block) at 1280×800, the verdict sentence and the top findings lie above
the fold, the page does not scroll sideways, and the kind chart's legend lies inside its
figure.

Screenshots of each view go to ``test-artifacts/`` (git-ignored). Skipped, with the reason,
where /usr/bin/chromium or playwright is missing.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import traceviz
from tests.browser_support import (
    ARTIFACTS,
    TIMEOUT_MS,
    dashboard,
    launched_chromium,
    new_page,
    require_browser,
    served_cleanly,
    tab,
    until,
)
from tests.conftest import CORPUS, REPO, SAMPLES
from tests.ranks_fixtures import synthetic_job, write_ranks

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

from traceviz.dashboard.tabs.common import NAME_WIDTH, tab_class  # noqa: E402
from traceviz.report.figures.ranks import STRAGGLER_COLOR  # noqa: E402

GPU_WIDTH = 1600
WIDTH, HEIGHT = 1280, 800  # the first screen
FIRST_SCREEN_RUNS = ("block", "h200/block")
GPU_PAIR = (
    CORPUS / "nvidia" / "a100_eager_train_control.json.gz",
    CORPUS / "nvidia" / "a100_compiled_cudagraph_train_2023.json.gz",
)


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


def _tabs(page: Any) -> list[str]:
    page.wait_for_selector(".bk-tab", timeout=TIMEOUT_MS)
    return [t.strip() for t in page.locator(".bk-tab").all_inner_texts()]


def test_backends_tab_renders_on_an_ort_run_only(browser: Any, tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime", reason="pip install 'traceviz[onnx]'")
    pytest.importorskip("torch")
    from tests import ort_fixtures as fx

    run = fx.make_ort_run(tmp_path / "run", sample=SAMPLES / "linear-add")
    with dashboard([str(run)], tmp_path / "ort.log") as url:
        page = new_page(browser, url, width=1600, height=1200)
        assert "Backends" in _tabs(page)
        tab(page, "Backends").click()
        sync_api.expect(page.locator(".js-plotly-plot")).to_have_count(3, timeout=TIMEOUT_MS)
        page.wait_for_selector(".tabulator-row", timeout=TIMEOUT_MS)
        for text in ("Backends side by side", "ONNX Runtime levels", "ONNX op counts per graph",
                     "Fastest:", "onnxruntime:all"):  # fmt: skip
            sync_api.expect(page.get_by_text(text).first).to_be_visible(timeout=TIMEOUT_MS)
        assert page.errors == []
        page.context.close()
    with dashboard([str(SAMPLES / "linear-add")], tmp_path / "plain.log") as url:
        page = new_page(browser, url)
        assert "Backends" not in _tabs(page)
        page.context.close()


# --- a real GPU pair ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def gpu_page(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    for path in GPU_PAIR:
        if not path.is_file():
            pytest.skip(f"{path} not found (corpus at {CORPUS})")
    log = tmp_path_factory.mktemp("dashboard-gpu") / "server.log"
    with dashboard([str(p) for p in GPU_PAIR], log) as url:
        start = time.monotonic()
        page = new_page(browser, url, width=GPU_WIDTH)
        page.locator(".js-plotly-plot .main-svg").first.wait_for()
        page.first_chart_s = time.monotonic() - start
        yield page
        page.context.close()


def test_first_chart_is_measured(gpu_page: Any) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    record = {
        "trace pair": "A100 eager vs compiled (corpus)",
        "first_chart_s": gpu_page.first_chart_s,
    }
    (ARTIFACTS / "dashboard-timing.json").write_text(json.dumps(record, indent=1))
    print(f"first chart {gpu_page.first_chart_s:.2f} s after opening the page")
    assert gpu_page.errors == []


def test_memory_card_says_partial(gpu_page: Any) -> None:
    card = gpu_page.locator(".tv-card[data-metric=est_bytes]")
    card.wait_for()
    assert "partial" in card.inner_text() and "no ratio" in card.inner_text()


def test_kernel_tables_keep_numbers_in_view(gpu_page: Any) -> None:
    tab(gpu_page, "Kernels").click()
    root = gpu_page.locator(f".{tab_class('Kernels')}")
    tables = ((".tv-kernels", "kernel", "time_us"), (".tv-kernel-diff", "key", "b_time_us"))
    for table, name, field in tables:
        cells = root.locator(f"{table} .tabulator-cell[tabulator-field={field}]")
        cells.first.wait_for()
        # one snapshot of every cell in the browser: asking cell by cell raced Tabulator's
        # re-render under load (a cell detached between two questions gave no box)
        boxes = cells.evaluate_all(
            "els => els.map(e => { const r = e.getBoundingClientRect();"
            " return {x: r.x + window.scrollX, width: r.width}; })"
        )
        assert boxes and all(b["x"] + b["width"] <= GPU_WIDTH for b in boxes), (table, boxes[:3])
        names = root.locator(f"{table} .tabulator-col[tabulator-field={name}]").bounding_box()
        assert names is not None and names["width"] <= NAME_WIDTH + 2
    scroll = gpu_page.evaluate("document.scrollingElement.scrollWidth")
    assert scroll <= GPU_WIDTH  # no horizontal scrolling
    gpu_page.screenshot(path=str(ARTIFACTS / "dashboard-gpu-kernels.png"), full_page=True)


def test_full_kernel_name_on_hover(gpu_page: Any) -> None:
    tab(gpu_page, "Kernels").click()
    cell = gpu_page.locator(".tv-kernels .tabulator-cell[tabulator-field=kernel]").first
    cell.wait_for()
    full = cell.inner_text()
    clipped = cell.evaluate("e => e.scrollWidth > e.clientWidth")
    assert len(full) > 60 and clipped  # a long name, cut on screen
    cell.hover()
    tip = gpu_page.locator(".tabulator-tooltip")
    tip.wait_for()
    assert full in tip.inner_text()
    assert gpu_page.errors == []


# --- the first screen at 1280×800 -------------------------------------------------------


@pytest.fixture(scope="module", params=FIRST_SCREEN_RUNS)
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
    names: list[str] = []  # read in one pass that finds some: a re-render may empty them

    def named() -> bool:
        names[:] = [t for i in range(cells.count()) if (t := cells.nth(i).inner_text().strip())]
        return bool(names)

    until(named)
    name = min(names, key=len)
    box = overview.get_by_placeholder("e.g. fused, gemm, add")
    box.fill(name)  # no Enter, no blur

    polls = itertools.count(1)

    def filtered_as_typed() -> bool:
        # On a busy machine a fill made as the box is drawn can reach the page before the
        # box talks to the server (the box shows the text, the table never hears of it):
        # after 10 s unfiltered, type it again, still without Enter or leaving the box.
        if box.input_value() != name or next(polls) % 50 == 0:
            box.fill("")
            box.fill(name)
        return 0 < rows.count() == rows.filter(has_text=name).count()

    until(filtered_as_typed)
    rows.filter(has_text=name).first.click()
    overview.locator("p b").filter(has_text=name).first.wait_for()
    box.fill("")
    tab(overview, "Overview").click()


# --- a ranks dataset ---------------------------------------------------------------------
# GIVEN a ranks dataset ingested in the test from 4 synthetic ranks (NCCL all-reduces, random
# clock offsets, rank 2 planted as a straggler) WHEN Chromium opens ``traceviz dashboard
# DATASET``, selects a rank and opens its trace tab THEN the Ranks tab comes first with per-rank
# bars, only the straggler's bars outlined and the title naming it; the selected rank's details
# and then its trace's summary show; the console has no errors.

WORLD, STRAGGLER = 4, 2


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("pyarrow", reason="pyarrow not installed (ranks extra)")
    root = tmp_path_factory.mktemp("ranks-browser")
    job = synthetic_job(WORLD, straggler=STRAGGLER, seed=5)
    traceviz.load_ranks(write_ranks(root / "traces", job.docs), root / "job.ds")
    return root / "job.ds"


@pytest.fixture(scope="module")
def ranks_page(
    browser: Any, dataset: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    log = tmp_path_factory.mktemp("dashboard") / "server.log"
    with served_cleanly([str(dataset)], log) as url:
        page = new_page(browser, url)
        tab(page, "Ranks").wait_for()
        yield page
        page.context.close()


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


def test_ranks_tab_comes_first_with_bars_and_the_straggler_outlined(ranks_page: Any) -> None:
    page = ranks_page
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


def test_selecting_a_rank_opens_its_trace(ranks_page: Any) -> None:
    page = ranks_page
    root = page.locator(f".{tab_class('Ranks')}")
    row = root.locator(".tabulator-table").first.locator(".tabulator-row").nth(1)
    row.click()
    root.get_by_text("Rank 1", exact=True).wait_for()
    tab(page, "Rank trace").click()
    trace = page.locator(".tv-rank-trace")
    trace.get_by_text("Rank 1", exact=True).wait_for()
    trace.locator(".tv-card").first.wait_for()
    assert trace.get_by_text("Top 20 kernels by device time (measured)").count() == 1
    shot(page, "ranks-rank-trace")
    assert page.errors == []


@pytest.fixture(scope="module")
def faster(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ranks-browser-b")
    job = synthetic_job(WORLD, straggler=None, seed=6, compute_us=500.0)
    traceviz.load_ranks(write_ranks(root / "traces", job.docs), root / "fast.ds")
    return root / "fast.ds"


def test_two_datasets_open_on_the_comparison(
    dataset: Path, faster: Path, tmp_path: Path, browser: Any
) -> None:
    args = [str(dataset), str(faster), "--names", "slow", "fast"]
    with dashboard(args, tmp_path / "server.log") as url:
        pair = new_page(browser, url)
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
        shot(pair, "ranks-compare")
        assert pair.errors == []
        pair.context.close()


def test_artifacts_are_git_ignored() -> None:
    git = shutil.which("git")
    if git is None:
        pytest.skip("git not found")
    out = subprocess.run(
        [git, "check-ignore", "test-artifacts/x.png"], cwd=REPO, capture_output=True, text=True
    )
    assert out.returncode == 0
