"""``traceviz summary``'s roofline: the peaks used, device time per bound and the top kernels
against the roof, in text and JSON; ``--peaks FILE`` as compare reads it (a bad file is a
one-line error, exit status 2, before any work)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, SAMPLES
from traceviz import cli
from traceviz.pipeline import compare_run
from traceviz.report.roofline_report import roofline_of

RUN = SAMPLES / "h200" / "gpt2"
EAGER = RUN / "eager.pt.trace.json.gz"
H200_TBPS = 4.8


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    assert cli.main(["summary", *args, "--format", "json", "--no-cache"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_roofline_is_the_compare_reports_for_the_same_trace(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The eager trace alone gets the roofline its side of the run's comparison gets."""
    doc = _json(capsys, str(EAGER), "--top", "5")
    roofline = doc["roofline"]
    assert roofline["basis"] == "table" and roofline["peaks"]["hbm_tbps"] == H200_TBPS
    report = compare_run(RUN)
    eager = roofline_of(report, "a")
    assert eager is not None
    assert roofline == json.loads(json.dumps(eager.to_json(top=5)))
    assert len(roofline["kernels"]) == 5
    assert all(k["achieved_tbps"] <= H200_TBPS for k in roofline["kernels"] if k["achieved_tbps"])
    # every kernel, memcpy and memset has one bound: the bounds hold all the device time
    device_us = sum(a["time_us"] for a in doc["activities"])
    assert sum(b["time_us"] for b in roofline["time_by_bound"]) == pytest.approx(device_us)


def test_text_shows_peaks_bounds_and_kernels_within_80_columns() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "traceviz.cli", "summary", str(EAGER), "--no-cache"],
        capture_output=True, text=True, encoding="utf-8", cwd=REPO, check=False,
        env={**{k: v for k, v in os.environ.items() if k != "LINES"}, "COLUMNS": "80"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "Roofline: time by bound" in text and "Roofline: kernels by device time" in text
    assert "NVIDIA H200 SXM (table:" in text.replace("\n", " ")
    assert "% of roof" in text and "TFLOP/s" in text
    assert [line for line in text.splitlines() if len(line) > 80] == []


def test_peaks_file_replaces_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    peaks = tmp_path / "peaks.toml"
    peaks.write_text('name = "my GPU"\nhbm_tbps = 0.5\nfp32_tflops = 5\n')
    roofline = _json(capsys, str(EAGER), "--peaks", str(peaks))["roofline"]
    assert roofline["basis"] == "file" and roofline["peaks"]["name"] == "my GPU"
    assert roofline["peaks"]["source"] == str(peaks)
    # a lower roof: the same kernels reach a larger share of it
    table = _json(capsys, str(EAGER))["roofline"]["kernels"]
    mine = {k["name"]: k["pct_of_roof"] for k in roofline["kernels"]}
    bigger = [mine[k["name"]] > k["pct_of_roof"] for k in table if k["pct_of_roof"]]
    assert bigger and all(bigger)
    assert cli.main(["summary", str(EAGER), "--peaks", str(peaks)]) == 0
    assert "my GPU (file" in capsys.readouterr().out.replace("\n", " ")


@pytest.mark.parametrize(
    ("content", "message"),
    [('{"hbm_tbps": 0}', "positive"), ('{"hbm_tbps": 1, "fp64": 2}', "fp64"), ("{", "")],
)
def test_a_bad_peaks_file_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    peaks = tmp_path / "peaks.json"
    peaks.write_text(content)
    assert cli.main(["summary", str(EAGER), "--peaks", str(peaks)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("traceviz summary: error:") and err.count("\n") == 1
    assert str(peaks) in err and message in err


def test_a_cpu_trace_has_no_roof_but_its_achieved_figures() -> None:
    """A CPU trace without measured peaks: basis no-peak, every bound no-peak, TB/s still
    shown."""
    doc = json.loads(
        subprocess.run(
            [sys.executable, "-m", "traceviz.cli", "summary", "--format", "json", "--no-cache",
             str(SAMPLES / "graph-break" / "compiled.pt.trace.json.gz")],
            capture_output=True, text=True, cwd=REPO, check=True,
        ).stdout
    )  # fmt: skip
    roofline = doc["roofline"]
    assert roofline["basis"] == "no-peak" and roofline["peaks"] is None
    assert [b["bound"] for b in roofline["time_by_bound"]] == ["no-peak"]
    assert any(k["achieved_tbps"] for k in roofline["kernels"])
