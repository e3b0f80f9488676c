"""The import layers (README "Layout"): lower layers never import higher ones, no package has
an import cycle, every top-level module sits in a layer, and the runner stays torch-free and
facade-free where it reads a run directory. ``lint-imports`` (``make lint``) checks the same
contracts; this test keeps them in the suite."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytest.importorskip("importlinter", reason="import-linter not installed (dev extra)")
tomllib = pytest.importorskip("tomllib", reason="Python 3.11+ reads pyproject.toml")


def _config() -> dict:  # type: ignore[type-arg]
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]


def test_contracts_are_kept() -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    code = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports())"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    kept = [c["name"] for c in _config()["contracts"]]
    assert all(f"{name} KEPT" in done.stdout for name in kept), done.stdout


def test_every_top_level_module_is_in_a_layer() -> None:
    (layers,) = [c["layers"] for c in _config()["contracts"] if c["type"] == "layers"]
    named = {part.strip() for layer in layers for part in layer.replace(":", "|").split("|")}
    package = REPO / "traceviz"
    present = {p.stem for p in package.glob("*.py") if p.stem != "__init__"}
    present |= {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}
    assert present == named, f"not in a layer: {present - named}; gone: {named - present}"


def test_reading_a_run_needs_neither_torch_nor_the_facade() -> None:
    code = (
        "import sys; import traceviz.rundir, traceviz.runs.run; "
        "print('torch' in sys.modules, 'traceviz.pipeline' in sys.modules, "
        "'traceviz.analysis' in sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["False", "False", "False"]
