"""The design promise: parsing, comparing and the text/JSON outputs never import torch,
plotly or panel (so they run, and start fast, on any machine); JSON and Markdown outputs never
import rich (only the text format draws on a console); the text report of a comparison never
imports the HTML machinery."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SAMPLES
from tests.light_import_fixtures import assert_imports_none

HEAVY = ("torch", "plotly", "panel", "bokeh")
POINTWISE = SAMPLES / "pointwise"


def _cli(*argv: list[str], setup: str = "") -> str:
    """Code that runs ``traceviz.cli.main`` on each ``argv`` (exit 0) with stdout captured."""
    return (
        f"import io, contextlib\n{setup}from traceviz.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        + "".join(f"    assert main({a!r}) == 0\n" for a in argv)
        + "assert out.getvalue()\n"
    )


def test_load_compare_and_summary_stay_light() -> None:
    run = SAMPLES / "mlp"
    code = (
        "import traceviz;"
        "from traceviz.cli import main;"
        f"c = traceviz.compare({str(run / 'eager.pt.trace.json.gz')!r},"
        f" {str(run / 'compiled.pt.trace.json.gz')!r});"
        f"main(['summary', {str(run / 'compiled.pt.trace.json.gz')!r}, '--format', 'json'])"
    )
    assert_imports_none(code, HEAVY)


# What `traceviz --help` must not import: every command module, and the libraries they pull in.
HELP_MUST_NOT_IMPORT = ("pandas", "numpy", "pyarrow", "rich", "msgspec", *HEAVY)


def _modules_after(argv: list[str]) -> tuple[int, list[str], str]:
    """Run ``traceviz.cli.main(argv)`` in a fresh interpreter; its exit code, the traceviz.* and
    heavy modules it imported, and its stdout."""
    code = (
        "import sys, json\n"
        "from traceviz.cli import main\n"
        "try:\n"
        f"    rc = main({argv!r})\n"
        "except SystemExit as exit:\n"
        "    rc = exit.code\n"
        "names = [m for m in sys.modules if m.startswith('traceviz.commands.')\n"
        f"         or m.split('.')[0] in {HELP_MUST_NOT_IMPORT!r}]\n"
        "print('\\nMODULES=' + json.dumps(names))\n"
        "sys.exit(rc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    out, _, modules = done.stdout.rpartition("\nMODULES=")
    assert modules, done.stderr[-2000:]
    return done.returncode, json.loads(modules), out


@pytest.mark.parametrize("argv", [["--help"], ["--version"], []])
def test_help_and_version_import_no_command_module(argv: list[str]) -> None:
    code, modules, out = _modules_after(argv)
    assert modules == [], f"traceviz {' '.join(argv)} imported {modules}"
    assert code == (2 if not argv else 0)
    assert ("traceviz " if argv == ["--version"] else "usage: traceviz") in out


def test_a_command_imports_only_its_own_module() -> None:
    code, modules, out = _modules_after(["models"])
    assert code == 0 and "pointwise" in out
    commands = {m for m in modules if m.startswith("traceviz.commands.")}
    assert commands == {"traceviz.commands.models"}


# The ONNX extras (traceviz[onnx]) load only where a graph is read or evaluated.
ONNX_EXTRAS = ("onnx", "onnxruntime", "onnxscript")


def test_reading_an_ort_profile_imports_no_onnx_package() -> None:
    profile = SAMPLES.parent / "tests" / "data" / "ort_all.profile.json"
    code = (
        "import traceviz;"
        "import traceviz.runner.onnx_reference;"
        f"t = traceviz.load({str(profile)!r}, max_bytes=None);"
        "assert len(t.kernels) > 0"
    )
    assert_imports_none(code, ONNX_EXTRAS + HEAVY)


# The distributed extra (traceviz[distributed]) loads only where ranks run on Dask.
DASK_EXTRAS = ("dask", "distributed")


def test_ranks_serially_import_no_dask(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow", reason="pyarrow not installed (ranks extra)")
    for rank in (0, 1):  # ranks from the file names (the sample has no distributedInfo)
        shutil.copy(SAMPLES / "mlp" / "eager.pt.trace.json.gz", tmp_path / f"rank{rank}.json.gz")
    code = (
        "import traceviz;"
        f"r = traceviz.load_ranks({str(tmp_path)!r}, {str(tmp_path / 'ds')!r});"
        "assert r.ranks == [0, 1] and len(r.summary) == 2, r.manifest;"
        f"t = traceviz.load({str(tmp_path / 'ds')!r}, rank=1)"
    )
    assert_imports_none(code, DASK_EXTRAS + HEAVY)


@pytest.mark.parametrize("fmt", ["json", "markdown"])
def test_compare_json_and_markdown_and_summary_json_import_no_rich(
    fmt: str, tmp_path: Path
) -> None:
    """Both through the output cache (a miss, then a hit) and without it, to stdout and -o."""
    base = ["compare", str(POINTWISE), "--format", fmt]
    extras = ([], [], ["--no-cache"], ["-o", f"{tmp_path}/r.{fmt}"])
    summary = ["summary", str(POINTWISE / "compiled.pt.trace.json.gz"), "--format", fmt]
    argvs = [[*base, *e] for e in extras] + ([[*summary, "--no-cache"]] if fmt == "json" else [])
    setup = f"import os\nos.environ['TRACEVIZ_CACHE_DIR'] = {str(tmp_path)!r}\n"
    assert_imports_none(_cli(*argvs, setup=setup), ("rich",))


def test_compare_text_draws_with_rich_and_imports_no_html() -> None:
    code = _cli(["compare", str(POINTWISE), "--no-cache"])
    assert_imports_none(code, ("html", "html.entities", "jinja2", "plotly"))
    with pytest.raises(AssertionError, match="imported \\['rich'\\]"):  # the check can fail
        assert_imports_none(code, ("rich",))


def test_the_html_snippet_still_escapes() -> None:
    from traceviz.report.snippet import view_html
    from traceviz.report.views import View

    view = View(title="a<b", columns=["x&y"], rows=[["<td>"]])
    assert view_html(view) == (
        "<h3>a&lt;b</h3><table><thead><tr><th>x&amp;y</th></tr></thead>"
        "<tbody><tr><td>&lt;td&gt;</td></tr></tbody></table>"
    )
