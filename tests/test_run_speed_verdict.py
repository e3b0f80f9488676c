"""``traceviz run``'s timing table gives a speedup (eager median / compiled median); under it
the statistical verdict on the same timed samples says whether that ratio is more than noise.
On sample_traces/h200/block the table says 1.08× while the samples cannot tell eager and
compiled apart (95% interval 0.86–1.02× for compiled/eager); a user
who reads the speedup alone acts on noise.

GIVEN a real run directory's run.json, WHEN ``traceviz run`` prints its result, THEN the line
under the table carries :func:`traceviz.analysis.timing.speed.compare_samples`'s verdict on
run.json's samples, as ``traceviz compare`` does.
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import pytest
from rich.console import Console

from traceviz.analysis.timing.speed import SAME, compare_samples, ratio_words
from traceviz.commands import output
from traceviz.commands import run as run_command
from traceviz.commands.speed_line import speed_line
from traceviz.rundir import read_run_dir
from traceviz.runs.run import Run

SAMPLES = Path(__file__).resolve().parent.parent / "sample_traces"
RUNS = sorted(p.parent for p in SAMPLES.rglob("run.json"))


def _printed(directory: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    run = Run(directory, read_run_dir(directory).info)
    console = Console(file=io.StringIO(), width=200)
    monkeypatch.setattr(run_command, "profile_from_args", lambda args: run)
    monkeypatch.setattr(output, "console", lambda: console)
    run_command.run(argparse.Namespace())
    return console.file.getvalue()  # type: ignore[attr-defined]


@pytest.mark.parametrize("directory", RUNS, ids=[str(p.relative_to(SAMPLES)) for p in RUNS])
def test_run_prints_the_verdict_of_its_timed_samples(
    directory: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    timing = read_run_dir(directory).info.timing
    assert timing.compiled is not None
    verdict = compare_samples(timing.eager.samples_us, timing.compiled.samples_us)
    text = _printed(directory, monkeypatch)
    said = "no significant difference" if verdict.verdict == SAME else verdict.verdict
    line = next(x for x in text.splitlines() if x.startswith("speed verdict:"))
    assert said in line
    assert ratio_words(verdict.ratio) in line  # one way round: "1.28× faster", never 0.78×
    assert verdict.interval_text() in line
    assert text.index("speed verdict:") > text.index("step time,")


def test_a_speedup_within_the_noise_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    directory = SAMPLES / "h200" / "block"
    info = read_run_dir(directory).info
    assert info.timing.speedup is not None and info.timing.speedup > 1.05
    text = _printed(directory, monkeypatch)
    assert "speed verdict: no significant difference" in text


def test_no_compiled_timing_no_verdict() -> None:
    info = read_run_dir(SAMPLES / "block").info
    failed = type(info.timing)(**{**_fields(info.timing), "compiled": None, "speedup": None})
    assert speed_line(type(info)(**{**_fields(info), "timing": failed})) is None


def _fields(value: object) -> dict[str, object]:
    return {name: getattr(value, name) for name in value.__struct_fields__}  # type: ignore[attr-defined]
