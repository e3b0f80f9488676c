"""The collector comes back on when an import made with it off fails (a missing optional
extra, a broken module), in the console script and in a command's lazy import."""

from __future__ import annotations

import gc
import sys

import pytest

import traceviz.cli as cli
from traceviz.commands import collector


def test_a_failing_import_leaves_the_collector_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gc, "freeze", lambda: None)
    collector.one_command(True)
    try:
        with pytest.raises(ImportError), collector.collector_off():
            assert not gc.isenabled()
            raise ImportError("an optional extra is missing")
        assert gc.isenabled()
    finally:
        collector.one_command(False)
        gc.enable()


def test_a_command_module_that_fails_to_import_leaves_the_collector_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(load: object = None) -> object:
        assert not gc.isenabled()
        raise ImportError("broken command module")

    monkeypatch.setattr(cli, "build_parser", broken)
    monkeypatch.setattr(gc, "freeze", lambda: None)
    monkeypatch.setattr(sys, "argv", ["traceviz", "models"])
    try:
        with pytest.raises(ImportError):
            cli.main()
        assert gc.isenabled()
    finally:
        collector.one_command(False)
        gc.enable()
