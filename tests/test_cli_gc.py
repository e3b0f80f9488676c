"""The collector around the console script's imports: off while the command's modules are
imported, frozen and back on before the command runs, back on when such an import fails;
main() called from Python (and collector_off outside one-command processes) leaves it alone."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator

import pytest

import traceviz.cli as cli
from traceviz.commands import collector


@pytest.fixture(autouse=True)
def collector_restored() -> Iterator[None]:
    yield
    collector.one_command(False)
    gc.enable()


def test_collector_off_during_imports_on_for_the_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: dict[str, bool] = {}
    frozen: list[bool] = []
    build = cli.build_parser

    def spy(load: object = None) -> object:
        seen["while importing"] = gc.isenabled()
        return build(load)  # type: ignore[arg-type]

    monkeypatch.setattr(cli, "build_parser", spy)
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(gc.isenabled()))
    monkeypatch.setattr(sys, "argv", ["traceviz", "models"])
    assert gc.isenabled()
    assert cli.main() == 0  # the console script: one command per process
    assert seen == {"while importing": False} and frozen == [False]  # frozen once, while off
    assert gc.isenabled()  # the command itself runs with the collector on
    seen.clear()
    assert cli.main(["models"]) == 0  # a program calling main() keeps its collector as it was
    assert seen == {"while importing": True} and frozen == [False]
    assert gc.isenabled()
    capsys.readouterr()


def test_collector_off_acts_in_one_command_processes_only(monkeypatch: pytest.MonkeyPatch) -> None:
    frozen: list[bool] = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(gc.isenabled()))
    collector.one_command(False)
    with collector.collector_off():
        assert gc.isenabled()
    assert frozen == []
    collector.one_command(True)
    with collector.collector_off():  # a heavy lazy import would run here
        assert not gc.isenabled()
    assert frozen == [False] and gc.isenabled()
    gc.disable()  # a collector someone turned off stays off, and nothing is frozen
    with collector.collector_off():
        assert not gc.isenabled()
    assert frozen == [False] and not gc.isenabled()


def test_a_failing_import_leaves_the_collector_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """A missing optional extra in a command's lazy import, or a broken command module."""
    monkeypatch.setattr(gc, "freeze", lambda: None)
    collector.one_command(True)
    with pytest.raises(ImportError), collector.collector_off():
        assert not gc.isenabled()
        raise ImportError("an optional extra is missing")
    assert gc.isenabled()

    def broken(load: object = None) -> object:
        assert not gc.isenabled()
        raise ImportError("broken command module")

    monkeypatch.setattr(cli, "build_parser", broken)
    monkeypatch.setattr(sys, "argv", ["traceviz", "models"])
    with pytest.raises(ImportError):
        cli.main()
    assert gc.isenabled()
