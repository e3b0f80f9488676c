"""The console script turns the collector off while the command's modules are imported, and
back on (after freezing them) before the command runs; main() called from Python leaves the
collector alone."""

from __future__ import annotations

import gc
import sys

import pytest

import traceviz.cli as cli


def test_collector_off_during_imports_on_for_the_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: dict[str, bool] = {}
    build = cli.build_parser

    def spy(load: object = None) -> object:
        seen["while importing"] = gc.isenabled()
        return build(load)  # type: ignore[arg-type]

    monkeypatch.setattr(cli, "build_parser", spy)
    monkeypatch.setattr(gc, "freeze", lambda: seen.setdefault("frozen", gc.isenabled()))
    monkeypatch.setattr(sys, "argv", ["traceviz", "models"])
    assert gc.isenabled()
    try:
        assert cli.main() == 0
        assert seen == {"while importing": False, "frozen": False}
        assert gc.isenabled()  # the command itself runs with the collector on
    finally:
        gc.enable()
    seen.clear()
    assert cli.main(["models"]) == 0  # a program calling main() keeps its collector as it was
    assert seen == {"while importing": True}
    assert gc.isenabled()
    capsys.readouterr()


def test_collector_off_acts_in_one_command_processes_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from traceviz.commands import collector

    frozen: list[bool] = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(gc.isenabled()))
    try:
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
    finally:
        collector.one_command(False)
        gc.enable()
