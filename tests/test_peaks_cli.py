"""``traceviz compare --peaks FILE``: the roofline of every side against the file's figures
(JSON and text), and a bad file is a one-line error with exit status 2 before any work."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tests.conftest import SAMPLES
from traceviz import cli
from traceviz.analysis.roofline.peaks import DevicePeaks, PeakBasis, PeakLookup
from traceviz.pipeline import compare_run
from traceviz.report.roofline_report import kernels_view, peaks_note, roofline_of

RUN = SAMPLES / "h200" / "pointwise"


def test_compare_json_has_the_roofline_and_the_bridge(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["compare", str(RUN), "--format", "json", "--no-cache"]) == 0
    doc = json.loads(capsys.readouterr().out)
    for side in ("a", "b"):
        roofline = doc["roofline"][side]
        assert roofline["basis"] == "table"
        assert roofline["peaks"]["name"] == "NVIDIA H200 SXM"
        assert roofline["kernels"] and all(k["achieved_tbps"] <= 4.8 for k in roofline["kernels"])
    bridge = doc["bridge"]
    assert bridge["basis"] == "timed medians"
    total = sum(p["delta_us"] for p in bridge["parts"]) + bridge["remainder_us"]
    assert total == pytest.approx(bridge["difference_us"])
    (fused,) = doc["fusion_ledger"]["kernels"]  # the pointwise chain's one Triton kernel
    assert fused["kernel"].startswith("triton_poi_fused") and fused["saved_us"] > 0
    assert 0 < fused["roof_us"] < fused["fused_time_us"]
    (line,) = doc["fusion_ledger"]["by_line"]  # its eager kernels come from one source line
    assert line["kernels"] == fused["kernel"] and line["line"] > 0
    assert line["eager_kernels"] == fused["eager_kernels"]
    assert line["fused_time_us"] == pytest.approx(fused["fused_time_us"])


def test_a_peaks_file_replaces_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    peaks = tmp_path / "peaks.json"
    peaks.write_text(json.dumps({"name": "my GPU", "hbm_tbps": 0.5, "fp32_tflops": 5}))
    args = ["compare", str(RUN), "--format", "json", "--peaks", str(peaks)]
    assert cli.main(args) == 0
    roofline = json.loads(capsys.readouterr().out)["roofline"]["b"]
    assert roofline["basis"] == "file" and roofline["peaks"]["name"] == "my GPU"
    assert roofline["peaks"]["source"] == str(peaks)
    assert cli.main(["compare", str(RUN), "--peaks", str(peaks), "--no-cache"]) == 0
    assert "my GPU (file" in capsys.readouterr().out.replace("\n", " ")


def test_a_bad_peaks_file_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    peaks = tmp_path / "peaks.json"
    peaks.write_text('{"hbm_tbps": 0}')
    assert cli.main(["compare", str(RUN), "--peaks", str(peaks)]) == 2
    err = capsys.readouterr().err
    assert str(peaks) in err and "positive" in err


def test_the_peaks_note_names_each_side_only_when_their_peaks_differ() -> None:
    """Two sides on one device: one note for both; different peaks: one note per side."""
    report = compare_run(RUN)
    a, b = roofline_of(report, "a"), roofline_of(report, "b")
    assert a is not None and b is not None
    same = kernels_view([("eager", a), ("compiled", b)], top=3)
    assert same is not None
    assert same.note == f"both sides: {peaks_note(None, a)}"
    assert "NVIDIA H200 SXM (table: " in same.note
    other = DevicePeaks("my GPU", 1.0, 10.0, None, None, None, None, "a test")
    b_other = dataclasses.replace(b, peaks=PeakLookup(other, PeakBasis.FILE, "my GPU"))
    differ = kernels_view([("eager", a), ("compiled", b_other)], top=3)
    assert differ is not None
    assert differ.note == f"{peaks_note('eager', a)}; compiled: my GPU (file: a test)"
