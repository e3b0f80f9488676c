"""The README's "Profiling your own model" snippet, run for real (torch.compile on CPU).

Run as the README says (``TORCH_TRACE=torch_trace python profile_me.py``), it writes an eager
and a compiled trace and a TORCH_TRACE log, and its fusion map reads the compiler's record
(basis ``compiler``). Run again without its two Inductor settings, as a user who skipped them
would, the compiled CPU trace has no Inductor kernel and the log no provenance, and the
report says both (``inductor-kernels-not-recorded``, ``compile-log-without-provenance``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytest.importorskip("torch")

import traceviz
from traceviz.diagnose.rules.inductor_kernels import (
    NO_PROVENANCE_ID,
    NOT_RECORDED_ID,
)

SETTINGS = ("inductor_config.cpp.enable_kernel_profile", "inductor_config.trace.provenance")


def readme_snippet() -> str:
    """The Python block of the README's "Profiling your own model" section."""
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Profiling your own model") :]
    section = section[: section.index("\n## ", 1)]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "no python block in README 'Profiling your own model'"
    return match.group(1)


def run_snippet(folder: Path, code: str) -> subprocess.CompletedProcess[str]:
    folder.mkdir()
    (folder / "profile_me.py").write_text(code)
    env = {**os.environ, "TORCH_TRACE": "torch_trace", "OMP_NUM_THREADS": "1",
           "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"}  # fmt: skip
    result = subprocess.run(
        [sys.executable, "profile_me.py"], cwd=folder, env=env, capture_output=True,
        text=True, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return result


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("snippet")
    code = readme_snippet()
    lines = code.splitlines()
    without = "\n".join(line for line in lines if not line.startswith(SETTINGS))
    assert len(without.splitlines()) == len(lines) - 2  # both settings lines taken out
    run_snippet(base / "as-documented", code)
    run_snippet(base / "without-settings", without)
    return {"as-documented": base / "as-documented", "without": base / "without-settings"}


def _report(folder: Path) -> traceviz.Report:
    return traceviz.compare(folder / "eager.pt.trace.json.gz",
                            folder / "compiled.pt.trace.json.gz",
                            names=("eager", "compiled"), compile_log=folder / "torch_trace",
                            load=lambda p: traceviz.load(p, cache=False))  # fmt: skip


@pytest.mark.slow
def test_snippet_as_documented_reads_the_compiler(runs: dict[str, Path]) -> None:
    report = _report(runs["as-documented"])
    kernels = report.fusion.kernels
    fused = kernels[kernels["is_fusion"]]
    assert len(fused) and set(fused["basis"].astype(str)) == {"compiler"}
    ids = {f.id for f in report.findings}
    assert not {NOT_RECORDED_ID, NO_PROVENANCE_ID} & ids


@pytest.mark.slow
def test_snippet_without_the_settings_says_what_is_missing(runs: dict[str, Path]) -> None:
    report = _report(runs["without"])
    ids = {f.id for f in report.findings}
    assert {NOT_RECORDED_ID, NO_PROVENANCE_ID} <= ids
    assert report.fusion.unrecorded is not None
    basis = set(report.fusion.kernels["basis"].astype(str))
    assert basis == {"name-match (no Inductor kernels recorded)"}
