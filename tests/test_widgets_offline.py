"""The notebook widgets work offline: the JavaScript and CSS that Panel publishes when the
widgets load come inline, not from a CDN; and the Kernels view keeps its numbers in view."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.conftest import SAMPLES

pytest.importorskip("panel", reason="panel not installed (dashboard extra)")
pytest.importorskip("IPython", reason="pip install ipython")

import panel as pn

import traceviz.widgets as tw

# What Bokeh's autoload script fetches: these lists (a "skip" list of URLs a page already
# has may name the CDN; it fetches nothing).
URL_LISTS = re.compile(r"\b(js_urls|css_urls|js_modules)\s*=\s*(\[[^\]]*\])")
SCRIPT_SRC = re.compile(r"<(?:script|link)[^>]+(?:src|href)=[\"']?https?://", re.I)


def published(monkeypatch: pytest.MonkeyPatch, inline: bool | None = None) -> str:
    """Everything Panel's notebook loader would send to the notebook (with the configured
    ``inline`` unless given), as text."""
    import IPython.display
    from panel.io import notebook

    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(
        IPython.display, "publish_display_data", lambda data, **_: sent.append(data)
    )
    notebook.load_notebook(pn.config.inline if inline is None else inline)
    return "\n".join(str(v) for data in sent for v in data.values())


def test_widgets_load_their_javascript_inline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tw, "_loaded", False)
    tw.extension()
    assert pn.config.inline
    text = published(monkeypatch)
    lists = dict(URL_LISTS.findall(text))
    assert set(lists) == {"js_urls", "css_urls", "js_modules"}, "the loader's lists not found"
    assert {k: re.sub(r"\s", "", v) for k, v in lists.items()} == dict.fromkeys(lists, "[]")
    assert not SCRIPT_SRC.search(text)
    assert "Plotly" in text and "Tabulator" in text  # the libraries themselves are inline


def test_the_check_fails_on_cdn_resources(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test above would catch a CDN load: Panel's default (inline off) uses one."""
    lists = dict(URL_LISTS.findall(published(monkeypatch, inline=False)))
    assert "https://" in lists["js_urls"]


def test_notebook_kernels_view_has_fixed_name_columns() -> None:
    run = SAMPLES / "graph-break"
    if not (run / "run.json").is_file():
        pytest.skip(f"no sample run at {run}")
    from traceviz.dashboard.tabs.common import NAME_WIDTH

    view = tw.view(tw.compare(str(run)).comparison, "Kernels")
    tables = list(view.select(pn.widgets.Tabulator))
    assert tables and all(
        any(t.widths.get(c) == NAME_WIDTH for c in ("kernel", "key")) for t in tables
    )
