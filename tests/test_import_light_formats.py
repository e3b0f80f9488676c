"""JSON and Markdown outputs start without rich (issue 14, start-up time): only the text format
draws on a console. The documents stay as they were (tests/test_formats.py, the snapshots)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SAMPLES
from tests.light_import_fixtures import assert_imports_none


@pytest.mark.parametrize("fmt", ["json", "markdown"])
def test_compare_json_and_markdown_import_no_rich(fmt: str, tmp_path: Path) -> None:
    """Both through the output cache (a miss, then a hit) and without it, to stdout and -o."""
    run = SAMPLES / "pointwise"
    code = (
        "import io, contextlib, os\n"
        f"os.environ['TRACEVIZ_CACHE_DIR'] = {str(tmp_path)!r}\n"
        "from traceviz.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    for extra in ([], [], ['--no-cache'], ['-o', {str(tmp_path)!r} + '/r.{fmt}']):\n"
        f"        assert main(['compare', {str(run)!r}, '--format', {fmt!r}, *extra]) == 0\n"
        "assert out.getvalue()\n"
    )
    assert_imports_none(code, ("rich",))


def test_summary_json_imports_no_rich() -> None:
    trace = SAMPLES / "pointwise" / "compiled.pt.trace.json.gz"
    code = (
        "import io, contextlib\n"
        "from traceviz.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['summary', {str(trace)!r}, '--format', 'json', '--no-cache']) == 0\n"
    )
    assert_imports_none(code, ("rich",))


def test_the_text_format_still_draws_with_rich() -> None:
    """The check above can fail: the default format does import rich."""
    run = SAMPLES / "pointwise"
    code = (
        "import io, contextlib\n"
        "from traceviz.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['compare', {str(run)!r}, '--no-cache']) == 0\n"
    )
    with pytest.raises(AssertionError, match="imported \\['rich'\\]"):
        assert_imports_none(code, ("rich",))
