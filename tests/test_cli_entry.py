"""The ``traceviz`` entry point: its command registry, the help it prints, and that a command
run through the lazy parser gets its full arguments and help text."""

from __future__ import annotations

import importlib

import pytest

from traceviz import cli


@pytest.mark.parametrize("name", list(cli.COMMANDS))
def test_each_summary_is_one_full_sentence(name: str) -> None:
    summary = cli.COMMANDS[name].summary
    assert summary[0].isupper() and summary.endswith("."), summary
    assert summary.count(". ") == 0, f"{name}: one sentence, please: {summary!r}"
    assert len(summary) <= 80, f"{name}: keep `traceviz --help` to one line a command"


@pytest.mark.parametrize("name", list(cli.COMMANDS))
def test_each_registered_module_is_a_command(name: str) -> None:
    module = importlib.import_module(f"traceviz.commands.{cli.COMMANDS[name].module}")
    assert callable(module.add_arguments) and callable(module.run)
    assert (module.__doc__ or "").strip(), f"{name}: the docstring is its --help text"


def test_top_level_help_lists_every_command_with_its_whole_summary(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit:
        cli.main(["--help"])
    assert exit.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps long lines
    for name, command in cli.COMMANDS.items():
        assert f"{name} {command.summary}" in text


@pytest.mark.parametrize("name", list(cli.COMMANDS))
def test_command_help_is_its_module_docstring(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit:
        cli.main([name, "--help"])
    assert exit.value.code == 0
    out = capsys.readouterr().out
    module = importlib.import_module(f"traceviz.commands.{cli.COMMANDS[name].module}")
    first_line = (module.__doc__ or "").strip().splitlines()[0]
    assert first_line in out
    assert ("--max-bytes" in out) is cli.COMMANDS[name].reads_traces


def test_command_is_the_first_word_that_is_not_an_option() -> None:
    assert cli._command_in(["--version", "compare", "a", "b"]) == "compare"
    assert cli._command_in(["summary", "models"]) == "summary"
    assert cli._command_in(["-h"]) is None
    assert cli._command_in(["nonsense", "compare"]) is None


def test_an_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        cli.main(["bogus"])
    assert exit.value.code == 2
    assert "invalid choice: 'bogus'" in capsys.readouterr().err


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([]) == 2
    assert "COMMAND" in capsys.readouterr().out
