"""The README and docs/ say only what the code does.

- Every ``traceviz ...`` line in a README code block, and every example in a command's
  ``--help``, names a subcommand and options that exist (argparse parsers of
  :func:`traceviz.cli.build_parser`; an abbreviated option does not count) and parses.
- The key tables of docs/compare-json.md and docs/summary-json.md list exactly the keys that
  real JSON output (sample runs in sample_traces/) has, and every key name in that output (and
  in run.json) is named somewhere on its page.

Run as a script (``.venv/bin/python tests/test_docs_in_step.py``) it prints the keys in the
output that the docs do not name, and the keys the docs' tables name that the output lacks.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import shlex
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
SAMPLES = REPO / "sample_traces"
ORT_RUN = SAMPLES / "gpt2-ort"  # a run with ONNX Runtime backends: backends/onnxruntime filled
GPU_RUN = SAMPLES / "h200" / "block"  # a CUDA run: launch delays, blocking calls, idle CPU work
#: compare-json.md's key tables, in order: the top level, then the objects they describe.
COMPARE_TABLES = ("top level", "findings", "fusion.kernels", "fusion.by_line", "backends",
                  "onnxruntime")  # fmt: skip
SUMMARY_TRACES = (
    SAMPLES / "block" / "compiled.pt.trace.json.gz",
    SAMPLES / "h200" / "gpt2" / "compiled.pt.trace.json.gz",
    ORT_RUN / "onnx" / "ort_all.profile.json",
)

# Words that end a command in a shell line: what follows is another program or a file.
SHELL_BREAKS = {"|", ">", ">>", "2>", "&&", ";", "||"}


# ----------------------------------------------------------------------------- commands


def _code_blocks(markdown: str) -> Iterator[str]:
    for match in re.finditer(r"^```[a-z]*\n(.*?)^```", markdown, re.M | re.S):
        yield match.group(1)


def code_commands(page: Path) -> list[str]:
    """Every ``traceviz ...`` line in a page's code blocks, comments and all."""
    return [
        line.strip()
        for block in _code_blocks(page.read_text())
        for line in block.splitlines()
        if line.strip().startswith("traceviz ")
    ]


def readme_commands() -> list[str]:
    return code_commands(REPO / "README.md")


def help_examples() -> list[tuple[str, str]]:
    """(command, line) for every line of the ``examples:`` section of each command's help."""
    from traceviz.cli import COMMANDS, build_parser

    subparsers = _subparsers(build_parser())
    out = []
    for name in COMMANDS:
        description = subparsers[name].description or ""
        _, _, examples = description.partition("examples:\n")
        for line in examples.splitlines():
            if line.strip().startswith("traceviz "):
                out.append((name, line.strip()))
    return out


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("traceviz's parser has no subcommands")


def command_words(line: str) -> list[str]:
    """The words of a shell line that go to traceviz: no comment, no pipe or redirection."""
    words = shlex.split(line, comments=True)
    for i, word in enumerate(words):
        if word in SHELL_BREAKS or word.startswith(">"):
            return words[:i]
    return words


def names_problem(words: list[str]) -> str | None:
    """Why the words of a traceviz command name a subcommand or an option that does not exist
    (an option as written out in full: argparse would take an abbreviation; ``--a/--b`` names
    two); None when all exist."""
    from traceviz.cli import COMMANDS, build_parser

    if len(words) < 2 or words[0] != "traceviz":
        return "not a traceviz command"
    name = words[1]
    if name not in COMMANDS:
        return f"no subcommand {name!r}"
    parser = build_parser(load=[name])
    known = {s for a in _subparsers(parser)[name]._actions for s in a.option_strings}
    for word in words[2:]:
        for option in word.split("=", 1)[0].split("/"):
            if option.startswith("--") and option not in known:
                return f"no option {option} of traceviz {name}"
    return None


def command_problem(line: str) -> str | None:
    """Why ``line`` would not parse as a traceviz command (None when it does)."""
    from traceviz.cli import build_parser

    words = command_words(line)
    problem = names_problem(words)
    if problem is not None:
        return problem
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            build_parser(load=[words[1]]).parse_args(words[1:])
    except SystemExit:
        return stderr.getvalue().strip().splitlines()[-1]
    return None


def docs_commands() -> list[tuple[str, str]]:
    """(page, line) for every ``traceviz ...`` line in the code blocks of docs/*.md."""
    return [(page.name, line) for page in sorted(DOCS.glob("*.md")) for line in code_commands(page)]


def inline_commands() -> list[tuple[str, str]]:
    """(page, text) for every inline `traceviz COMMAND ...` of the README and docs/*.md (not
    `traceviz line ...`, the source-line marks' span name in a trace)."""
    found = []
    for page in [REPO / "README.md", *sorted(DOCS.glob("*.md"))]:
        for text in re.findall(r"(?<!`)`(traceviz [a-z][^`]*)`", page.read_text()):
            if text.split()[1] != "line":
                found.append((page.name, text))
    return found


def test_readme_has_an_example_for_every_command() -> None:
    from traceviz.cli import COMMANDS

    named = {command_words(line)[1] for line in readme_commands()}
    assert set(COMMANDS) <= named, f"README: no example of {sorted(set(COMMANDS) - named)}"


@pytest.mark.parametrize("line", readme_commands())
def test_readme_command_parses(line: str) -> None:
    assert command_problem(line) is None, f"README: {line}: {command_problem(line)}"


@pytest.mark.parametrize(("page", "line"), docs_commands())
def test_docs_command_parses(page: str, line: str) -> None:
    assert command_problem(line) is None, f"docs/{page}: {line}: {command_problem(line)}"


@pytest.mark.parametrize(("page", "text"), inline_commands())
def test_inline_command_names_exist(page: str, text: str) -> None:
    problem = names_problem(shlex.split(text.replace("…", "")))
    assert problem is None, f"{page}: `{text}`: {problem}"


def test_every_command_help_has_examples() -> None:
    from traceviz.cli import COMMANDS

    with_examples = {name for name, _ in help_examples()}
    assert set(COMMANDS) <= with_examples, f"no examples: {sorted(set(COMMANDS) - with_examples)}"


def test_every_command_help_opens_with_one_whole_line() -> None:
    from traceviz.cli import COMMANDS, build_parser

    subparsers = _subparsers(build_parser())
    firsts = {name: (subparsers[name].description or "").split("\n\n")[0] for name in COMMANDS}
    cut = {name: first for name, first in firsts.items() if "\n" in first or first[-1] != "."}
    assert not cut, f"--help opens with more than one whole line: {cut}"


@pytest.mark.parametrize(("name", "line"), help_examples())
def test_help_example_parses(name: str, line: str) -> None:
    assert command_words(line)[1] == name, f"traceviz {name} --help shows {line}"
    assert command_problem(line) is None, f"traceviz {name} --help: {line}: {command_problem(line)}"


@pytest.mark.parametrize(
    "line",
    [
        "traceviz comparee runs/x",  # no such subcommand
        "traceviz compare runs/x --formt json",  # no such option
        "traceviz compare runs/x --form json",  # an abbreviation: works today, not documented
        "traceviz compare runs/x --format yaml",  # no such choice
        "traceviz ingest traces/ --workers",  # option without its value
    ],
)
def test_a_wrong_command_is_caught(line: str) -> None:
    assert command_problem(line) is not None


def test_shell_parts_are_not_taken_for_options() -> None:
    words = command_words("traceviz compare runs/mlp --format json > mlp.json  # documented")
    assert words == ["traceviz", "compare", "runs/mlp", "--format", "json"]
    words = command_words("traceviz export runs/mlp --perfetto -o - | gzip > mlp.json.gz")
    assert words == ["traceviz", "export", "runs/mlp", "--perfetto", "-o", "-"]


def readme_layout() -> str:
    """The Layout code block of docs/architecture.md (the contributors' page): the
    ``traceviz/`` tree."""
    text = (DOCS / "architecture.md").read_text()
    section = text[text.index("## Layout") :]
    return next(block for block in _code_blocks(section) if block.startswith("traceviz/"))


def test_readme_layout_lists_every_module_and_layer() -> None:
    import tomllib

    listed = {line.split()[0].rstrip("/") for line in readme_layout().splitlines()[1:] if line}
    package = REPO / "traceviz"
    modules = {
        p.name.removesuffix(".py")
        for p in package.iterdir()
        if (p.suffix == ".py" or (p.is_dir() and p.name != "__pycache__"))
    }
    missing = {m for m in modules if m not in listed and f"{m}.py" not in listed}
    assert not missing, f"docs/architecture.md Layout does not list traceviz/{sorted(missing)}"
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = {m.strip() for layer in contracts["contracts"][0]["layers"] for m in layer.split("|")}
    assert layers <= modules, f"layers naming no module: {sorted(layers - modules)}"


def test_readme_names_every_extra() -> None:
    import tomllib

    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    readme = (REPO / "README.md").read_text()
    for extra in extras["optional-dependencies"]:
        assert f"| `{extra}` |" in readme, f"README's Extras table has no row for {extra}"
    assert "TRACEVIZ_CORPUS" in readme


# ----------------------------------------------------------------------------- JSON keys


def _cli_json(*args: str) -> Any:
    from traceviz.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main([*args, "--format", "json"])
    assert code == 0, f"traceviz {' '.join(args)} exited {code}"
    return json.loads(out.getvalue())


@cache
def compare_json(run: Path) -> Any:
    return _cli_json("compare", str(run), "--top", "1000")


@cache
def summary_json(trace: Path) -> Any:
    return _cli_json("summary", str(trace))


def key_tables(markdown: str) -> list[list[str]]:
    """The first-column keys of each ``| key | ...`` table of a doc, in order: every
    backticked name of the cell (a cell may name several, `a`, `b`)."""
    tables: list[list[str]] = []
    current: list[str] | None = None
    for line in markdown.splitlines():
        if re.match(r"^\| (key|field) \|", line):
            current = []
            tables.append(current)
        elif current is not None and line.startswith("|"):
            first = line.split("|")[1]
            current.extend(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", first))
        else:
            current = None
    return tables


def documented_names(markdown: str) -> set[str]:
    """Every name a doc shows as code: `name`, and the names in `{a, b, c}` lists."""
    names = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", markdown))
    for code in re.findall(r"`([^`]*)`", markdown):
        names.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", code))
    return names


def row_keys(rows: Any) -> set[str]:
    """The keys of a JSON object, or of all the objects of a list."""
    if isinstance(rows, dict):
        return set(rows)
    return {key for row in rows or [] if isinstance(row, dict) for key in row}


def all_keys(value: Any, skip: tuple[str, ...] = ()) -> set[str]:
    """Every object key at any depth (keys in ``skip`` are counted, not entered)."""
    found: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            found.add(key)
            if key not in skip:
                found |= all_keys(item, skip)
    elif isinstance(value, list):
        for item in value:
            found |= all_keys(item, skip)
    return found


def compare_tables() -> dict[str, tuple[list[str], set[str]]]:
    """compare-json.md's key tables, each with the keys the real output has there."""
    tables = key_tables((DOCS / "compare-json.md").read_text())
    ort, gpu = compare_json(ORT_RUN), compare_json(GPU_RUN)
    actual = [
        set(ort) | set(gpu),
        row_keys(ort["findings"]) | row_keys(gpu["findings"]),
        row_keys(ort["fusion"]["kernels"]) | row_keys(gpu["fusion"]["kernels"]),
        row_keys(ort["fusion"]["by_line"]) | row_keys(gpu["fusion"]["by_line"]),
        row_keys(ort["backends"]),
        row_keys(ort["onnxruntime"]),
    ]
    assert len(tables) == len(actual), f"compare-json.md has {len(tables)} key tables"
    return dict(zip(COMPARE_TABLES, zip(tables, actual, strict=True), strict=True))


def key_gaps() -> list[str]:
    """What the script prints: per doc and table, keys missing on either side."""
    lines = []
    for name, (documented, keys) in compare_tables().items():
        for key in sorted(keys - set(documented)):
            lines.append(f"compare-json.md {name}: `{key}` in the output, not in the table")
        for key in sorted(set(documented) - keys):
            lines.append(f"compare-json.md {name}: `{key}` in the table, not in the output")
    # Not entered: run.json (its own page), findings (compare-json.md's), and objects whose
    # keys are data (torch's counters and config, the ignored events' reasons).
    free_form = ("inductor_config", "mode_options", "counters")
    runs = [compare_json(ORT_RUN), compare_json(GPU_RUN)]
    pages = {
        "compare-json.md": set().union(*(all_keys(c, skip=("run",)) for c in runs)),
        "run-json.md": set().union(*(all_keys(c["run"], skip=free_form) for c in runs)),
        "summary-json.md": set().union(
            *(all_keys(summary_json(t), skip=("findings", "ignored")) for t in SUMMARY_TRACES)
        ),
    }
    for page, keys in pages.items():
        named = documented_names((DOCS / page).read_text())
        for key in sorted(keys - named):
            lines.append(f"{page}: `{key}` in the output, named nowhere on the page")
    summary_table = key_tables((DOCS / "summary-json.md").read_text())[0]
    summary_keys = set().union(*(set(summary_json(t)) for t in SUMMARY_TRACES))
    for key in sorted(summary_keys ^ set(summary_table)):
        side = "output" if key in summary_keys else "table"
        lines.append(f"summary-json.md top level: `{key}` only in the {side}")
    return lines


@pytest.mark.parametrize(
    "where",
    [
        *(f"compare-json.md {table}" for table in COMPARE_TABLES),
        "summary-json.md top level",
        "compare-json.md",
        "run-json.md",
        "summary-json.md",
    ],
)
def test_docs_and_json_output_agree(where: str) -> None:
    """Each key table lists exactly the keys of the output there; each page names every key
    of its output somewhere."""
    gaps = [line for line in key_gaps() if line.startswith(f"{where}: ")]
    assert not gaps, "\n".join(gaps)


def test_key_table_reader() -> None:
    doc = "| key | meaning |\n|---|---|\n| `a`, `b` | x `c` |\n| `d` | y |\n\ntext `e`\n"
    assert key_tables(doc) == [["a", "b", "d"]]
    assert {"a", "b", "c", "d", "e", "f", "g"} <= documented_names(doc + "`{f, g}`")


def test_docs_index_lists_every_doc() -> None:
    index = (DOCS / "README.md").read_text()
    for page in sorted(DOCS.glob("*.md")):
        if page.name != "README.md":
            assert f"({page.name})" in index, f"docs/README.md does not link {page.name}"


if __name__ == "__main__":
    import os

    os.environ["TRACEVIZ_NO_CACHE"] = "1"  # a script run leaves no cache behind
    gaps = key_gaps()
    print("\n".join(gaps) or "docs and JSON output agree")
    sys.exit(1 if gaps else 0)


# ----------------------------------------------------------------------------- README size


def test_readme_is_short_and_its_sample_output_is_real() -> None:
    """The README stays a user's page (120 lines at most; internals live in docs/), and the
    output it shows is what ``traceviz compare sample_traces/block`` prints on a terminal 90
    columns wide (a pipe would get ASCII: ``x`` for ``×``)."""
    import os
    import re
    import subprocess

    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 120
    section = text[text.index("## What it says") :]
    shown = next(b for b in _code_blocks(section) if b.lstrip().startswith("Compiled is"))
    lines = [line for line in shown.splitlines() if not line.startswith("…")]
    printed = subprocess.run(
        [sys.executable, "-m", "traceviz.cli", "compare", "sample_traces/block", "--no-cache"],
        capture_output=True, text=True, encoding="utf-8", cwd=REPO, check=True,
        env={**os.environ, "COLUMNS": "90", "FORCE_COLOR": "1"},  # rich: a terminal
    ).stdout  # fmt: skip
    plain = [line.rstrip() for line in re.sub(r"\x1b\[[0-9;]*m", "", printed).splitlines()]
    assert plain[: len(lines)] == lines
