"""The console script freezes the collector's view of the imports; calls from Python do not."""

from __future__ import annotations

import gc
import sys

import pytest

from traceviz.cli import main


def test_only_the_console_script_freezes_the_imports(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
    assert main(["models"]) == 0  # a program calling main() keeps its own collector as it was
    assert calls == []
    monkeypatch.setattr(sys, "argv", ["traceviz", "models"])
    assert main() == 0  # the console script: one command per process
    assert calls == ["freeze"]
    capsys.readouterr()
