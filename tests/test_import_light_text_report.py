"""The text report of a comparison imports no HTML machinery (issue 14: ``html`` and its
entity table were imported by every compare through report.snippet, ~2 ms of start-up)."""

from __future__ import annotations

from tests.conftest import SAMPLES
from tests.light_import_fixtures import assert_imports_none


def test_compare_text_imports_no_html() -> None:
    run = SAMPLES / "pointwise"
    code = (
        "import io, contextlib\n"
        "from traceviz.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['compare', {str(run)!r}, '--no-cache']) == 0\n"
    )
    assert_imports_none(code, ("html", "html.entities", "jinja2", "plotly"))


def test_the_html_snippet_still_escapes() -> None:
    from traceviz.report.snippet import view_html
    from traceviz.report.views import View

    view = View(title="a<b", columns=["x&y"], rows=[["<td>"]])
    assert view_html(view) == (
        "<h3>a&lt;b</h3><table><thead><tr><th>x&amp;y</th></tr></thead>"
        "<tbody><tr><td>&lt;td&gt;</td></tr></tbody></table>"
    )
