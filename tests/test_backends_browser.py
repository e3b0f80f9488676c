"""The Backends tab in a real browser (Debian's Chromium through playwright, as
tests/test_dashboard_browser.py): on a run with ONNX Runtime levels it shows its three figures,
the fusion table and its HTML tables with no console error; on a plain run it is absent.
Skipped where Chromium, playwright or panel is missing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests import ort_fixtures as fx
from tests.browser_support import CHROMIUM, CHROMIUM_ARGS, TIMEOUT_MS, dashboard, new_page, tab
from tests.conftest import SAMPLES

if not CHROMIUM.exists():
    pytest.skip(f"{CHROMIUM} not found: apt-get install -y chromium", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
pytest.importorskip("panel", reason="panel not installed (dashboard extra)")
pytest.importorskip("onnxruntime", reason="pip install 'traceviz[onnx]'")
pytest.importorskip("torch")


def _tabs(page: Any) -> list[str]:
    page.wait_for_selector(".bk-tab", timeout=TIMEOUT_MS)
    return [t.strip() for t in page.locator(".bk-tab").all_inner_texts()]


def test_backends_tab_renders_on_an_ort_run_only(tmp_path: Path) -> None:
    run = fx.make_ort_run(tmp_path / "run", sample=SAMPLES / "linear-add")
    errors: list[str] = []
    with dashboard([str(run)], tmp_path / "ort.log") as url, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = new_page(browser, url, width=1600, height=1200)
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        assert "Backends" in _tabs(page)
        tab(page, "Backends").click()
        sync_api.expect(page.locator(".js-plotly-plot")).to_have_count(3, timeout=TIMEOUT_MS)
        page.wait_for_selector(".tabulator-row", timeout=TIMEOUT_MS)
        for text in ("Backends side by side", "ONNX Runtime levels", "ONNX op counts per graph",
                     "Fastest:", "onnxruntime:all"):  # fmt: skip
            sync_api.expect(page.get_by_text(text).first).to_be_visible(timeout=TIMEOUT_MS)
        browser.close()
    assert errors == []
    plain = SAMPLES / "linear-add"
    with dashboard([str(plain)], tmp_path / "plain.log") as url, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        assert "Backends" not in _tabs(new_page(browser, url))
        browser.close()
