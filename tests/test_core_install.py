"""A core install (``pip install traceviz``, no extras) parses, compares and summarises; what
needs an extra says which one.

GIVEN a process where pyarrow cannot be imported (``sys.modules["pyarrow"] = None`` before
traceviz is imported, as on a machine without it), WHEN ``traceviz compare`` and ``traceviz
summary`` run, THEN they succeed and print byte for byte what a process with pyarrow prints,
and pyarrow is never imported; WHEN a ranks dataset is ingested, summarised, compared or
opened in the dashboard, THEN the command exits 2 with one line naming ``traceviz[ranks]``
before any work (no traceback, no dataset directory made). ``make unit-core`` runs the whole
suite in ``.venv-core`` (TRACEVIZ_CORE_INSTALL=1), where the first test checks that no extra
is installed, so that the suite's skips are those of a core install.

The test harness itself: the corpus is found through TRACEVIZ_CORPUS, its absence skips the
real-trace tests with the place looked at, and real traces are parsed once per session.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import CORPUS, REPO, SAMPLES, load_trace, write_trace

RANKS_HINT = "pip install 'traceviz[ranks]'"
DASHBOARD_HINT = "pip install 'traceviz[dashboard]'"
RUN = SAMPLES / "graph-break"
CORPUS_TRACE = CORPUS / "nvidia" / "a100_compiled_cudagraph_train_2023.json.gz"
# The packages of the extras (runner, dashboard, ranks, distributed, onnx, gpt2).
EXTRA_PACKAGES = (
    "torch",
    "panel",
    "plotly",
    "pyarrow",
    "dask",
    "distributed",
    "onnx",
    "onnxruntime",
    "transformers",
)
CORE_ENV = "TRACEVIZ_CORE_INSTALL"


def test_the_core_install_has_no_extra() -> None:
    """In ``make unit-core``'s venv none of the extras' packages is installed (else the suite
    there would not show that a core install works)."""
    if os.environ.get(CORE_ENV) != "1":
        pytest.skip(f"not the core install ({CORE_ENV}=1 in make unit-core)")
    installed = [name for name in EXTRA_PACKAGES if importlib.util.find_spec(name) is not None]
    assert installed == []
    for name in ("numpy", "pandas", "msgspec", "rich", "orjson"):  # the core dependencies
        assert importlib.util.find_spec(name) is not None, name


def _cli(argv: list[str], *, without: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """``traceviz.cli.main(argv)`` in a fresh interpreter where the packages ``without`` cannot
    be imported; its stdout ends with a line ``IMPORTED=[...]``: which of them were imported
    (a blocked package stays None in sys.modules, so only a real import is listed)."""
    code = textwrap.dedent(
        f"""
        import json, sys
        for name in {without!r}:
            sys.modules[name] = None
        from traceviz.cli import main
        try:
            rc = main({argv!r})
        except SystemExit as exit:
            rc = exit.code
        sys.stdout.flush()
        seen = [m for m in {without!r} if sys.modules.get(m) is not None]
        print("\\nIMPORTED=" + json.dumps(seen))
        sys.exit(rc)
        """
    )
    return _python(code)


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -c code`` in the repository, caches off, ``env`` added to the environment."""
    env = {**os.environ, "TRACEVIZ_NO_CACHE": "1", **env}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True
    )


def _output(done: subprocess.CompletedProcess[str]) -> tuple[str, list[str]]:
    out, _, imported = done.stdout.rpartition("\nIMPORTED=")
    assert imported, done.stderr[-3000:]
    return out, json.loads(imported)


def _same_without_pyarrow(argv: list[str]) -> str:
    """``argv``'s output without pyarrow: exit 0, equal to its output with pyarrow (where it is
    installed), and no pyarrow imported."""
    bare = _cli(argv, without=("pyarrow",))
    assert bare.returncode == 0, bare.stderr[-3000:]
    out, imported = _output(bare)
    assert imported == []
    usual = _cli(argv)
    assert usual.returncode == 0, usual.stderr[-3000:]
    assert out == _output(usual)[0]
    return out


def test_compare_without_pyarrow_prints_what_it_prints_with_it() -> None:
    """A run directory, JSON and text: the same output, pyarrow never imported."""
    out = _same_without_pyarrow(["compare", str(RUN), "--format", "json", "--no-cache"])
    assert json.loads(out)["findings"]
    out = _same_without_pyarrow(["compare", str(RUN), "--no-cache"])
    assert "Findings" in out or "findings" in out


def test_summary_without_pyarrow_prints_what_it_prints_with_it() -> None:
    """A real A100 trace (the corpus; else the sample's compiled trace), as JSON."""
    trace = CORPUS_TRACE if CORPUS_TRACE.is_file() else RUN / "compiled.pt.trace.json.gz"
    out = _same_without_pyarrow(["summary", str(trace), "--format", "json", "--no-cache"])
    assert json.loads(out)["kernel_count"] > 0


def _fail_names_the_extra(
    argv: list[str], command: str, hint: str, *, without: tuple[str, ...]
) -> None:
    done = _cli(argv, without=without)
    assert done.returncode == 2, (done.stdout[-2000:], done.stderr[-3000:])
    errors = [line for line in done.stderr.splitlines() if ": error: " in line]
    assert len(errors) == 1 and errors[0].startswith(f"traceviz {command}: error: "), errors
    assert hint in errors[0] and "Traceback" not in done.stderr
    assert _output(done)[1] == []


def _bare_dataset(path: Path) -> Path:
    """A ranks dataset directory as `traceviz ingest` starts one (its marker only)."""
    path.mkdir()
    (path / "_dataset.json").write_text(json.dumps({"format_version": 1}))
    return path


def test_ingest_without_pyarrow_names_the_ranks_extra_before_any_work(tmp_path: Path) -> None:
    target = tmp_path / "job.ds"
    argv = ["ingest", str(RUN / "eager.pt.trace.json.gz"), "--cache", str(target), "--quiet"]
    _fail_names_the_extra(argv, "ingest", RANKS_HINT, without=("pyarrow",))
    assert not target.exists()  # refused before the dataset was made
    done = _cli(["ingest", "--help"], without=("pyarrow",))  # its help needs no pyarrow
    assert done.returncode == 0 and RANKS_HINT in done.stdout, done.stderr[-3000:]


def test_reading_a_dataset_without_pyarrow_names_the_ranks_extra(tmp_path: Path) -> None:
    """summary --ranks and compare --ranks; the dashboard too where Panel is installed (without
    it, the dashboard extra is named first)."""
    dataset = _bare_dataset(tmp_path / "job.ds")
    _fail_names_the_extra(
        ["summary", str(dataset), "--ranks"], "summary", RANKS_HINT, without=("pyarrow",)
    )
    argv = ["compare", str(dataset), str(dataset), "--ranks"]
    _fail_names_the_extra(argv, "compare", RANKS_HINT, without=("pyarrow",))
    argv = ["dashboard", str(dataset), "--no-show"]
    panel = all(importlib.util.find_spec(name) for name in ("panel", "plotly"))
    hint = RANKS_HINT if panel else DASHBOARD_HINT
    # without pyarrow the ranks extra is named before Panel is imported
    _fail_names_the_extra(argv, "dashboard", hint, without=("pyarrow", "panel.io"))


def test_the_ranks_python_api_without_pyarrow_raises_usage_error(tmp_path: Path) -> None:
    """pyarrow is needed where a dataset's Parquet file is read or written, not to import the
    ranks modules or the commands that read datasets."""
    dataset = _bare_dataset(tmp_path / "job.ds")
    code = textwrap.dedent(
        f"""
        import sys
        sys.modules["pyarrow"] = None
        import traceviz, traceviz.ranks.dataset, traceviz.ranks.load, traceviz.commands.compare
        import traceviz.commands.ingest, traceviz.commands.ranks, traceviz.commands.dashboard
        from traceviz.ranks.ingestion import ingest
        calls = [
            lambda: traceviz.load_ranks({str(dataset)!r}),
            lambda: ingest([{str(RUN / "eager.pt.trace.json.gz")!r}],
                                          {str(tmp_path / "new.ds")!r}),
            lambda: traceviz.load({str(dataset)!r}, rank=0),
        ]
        for call in calls:
            try:
                call()
            except traceviz.UsageError as err:
                print(err)
            else:
                print("no error")
        """
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 3 and all(RANKS_HINT in line for line in lines), lines
    assert not (tmp_path / "new.ds").exists()


def test_dashboard_load_without_pyarrow_imports_what_is_installed() -> None:
    """The dashboard's shared imports (pyarrow's, for the load beside Panel) are skipped when
    pyarrow is missing: the load is prepared and reads a run directory."""
    code = textwrap.dedent(
        f"""
        import sys
        sys.modules["pyarrow"] = None
        from traceviz.commands import dashboard
        load = dashboard.prepare_load()
        report = load([{str(RUN)!r}])
        print(len(report.findings), sorted(m for m in sys.modules if m.startswith("pyarrow")))
        """
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr[-3000:]
    findings, modules = done.stdout.split(" ", 1)
    assert int(findings) > 0 and modules.strip() == "['pyarrow']"  # the blocked None only


def test_html_without_plotly_names_the_dashboard_extra() -> None:
    argv = ["compare", str(RUN), "--format", "html", "--no-cache"]
    _fail_names_the_extra(argv, "compare", DASHBOARD_HINT, without=("plotly",))


@pytest.mark.parametrize("command", ["run", "demo"])
def test_profiling_without_torch_names_the_runner_extra(command: str) -> None:
    argv = [command, "pointwise", "--device", "cpu"] if command == "run" else [command]
    _fail_names_the_extra(argv, command, "pip install 'traceviz[runner]'", without=("torch",))


def test_make_installs_every_extra_and_test_runs_the_core_suite() -> None:
    """``make demo``/``make test`` install every extra of pyproject.toml (ranks included) into
    .venv; ``make test`` also runs ``unit-core``, whose venv gets traceviz with none."""
    import re

    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    makefile = (REPO / "Makefile").read_text()
    installed = re.findall(r"pip install .*-e '\.\[([a-z0-9_,]+)\]'", makefile)
    assert len(installed) == 1 and set(installed[0].split(",")) == set(
        project["optional-dependencies"]
    )
    assert re.search(r"^test:.* unit-core$", makefile, re.M)
    core = re.findall(r"\$\(CORE_VENV\)/bin/python -m pip install \S* ?-e (\S+)", makefile)
    assert core == ["."]  # no extra
    assert not [d for d in project["dependencies"] if d.startswith("pyarrow")]


# --- the harness: the corpus, and real traces parsed once -----------------------------------------


def test_the_corpus_is_where_traceviz_corpus_says(tmp_path: Path) -> None:
    (tmp_path / "vendor").mkdir()
    write_trace(tmp_path / "vendor" / "one.json", [])
    (tmp_path / "notes.md").write_text("not a trace")
    code = "from tests.conftest import corpus_files; print(corpus_files())"
    done = _python(code, TRACEVIZ_CORPUS=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str([tmp_path / "vendor" / "one.json"])


def test_without_the_corpus_real_trace_tests_skip_saying_where(tmp_path: Path) -> None:
    missing = tmp_path / "no-corpus-here"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
         "tests/test_parse_corpus.py", "-k", "loads_and_conserves"],
        cwd=REPO, env={**os.environ, "TRACEVIZ_CORPUS": str(missing)},
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:]
    assert "1 skipped" in done.stdout and "passed" not in done.stdout
    assert f"corpus not found at {missing}" in done.stdout


def test_a_real_trace_is_parsed_once_per_session() -> None:
    path = SAMPLES / "pointwise" / "eager.pt.trace.json.gz"
    assert load_trace(path) is load_trace(path)
