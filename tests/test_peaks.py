"""Device peaks (traceviz.analysis.roofline.peaks): the table, the lookup by device properties on
real traces, and the --peaks file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import CORPUS, SAMPLES
from traceviz import UsageError, load
from traceviz.analysis.roofline.peaks import (
    PEAK_TABLE,
    PRECISIONS,
    PeakBasis,
    device_peaks,
    match_device,
    read_peaks_file,
)

GIB = 2**30
NAMES = ("A100", "H100", "H200", "B200", "L4", "V100", "MI210", "MI250", "MI300X", "MI325X")


def test_every_device_of_the_brief_has_a_row_with_a_source() -> None:
    text = " ".join(row.name for row in PEAK_TABLE)
    for name in NAMES:
        assert name in text, name
    for row in PEAK_TABLE:
        assert row.hbm_tbps > 0 and row.source and "datasheet" in row.source
        for p in PRECISIONS:
            value = row.tflops(p)
            assert value is None or value > 0


def test_dense_figures_are_ordered_as_the_hardware_is() -> None:
    """fp8 ≥ bf16 ≥ tf32 ≥ fp32 wherever the row has them: a sparse figure copied as dense
    would show as an fp32 peak above the Tensor Core one, or fp8 below bf16."""
    for row in PEAK_TABLE:
        chain = [row.tflops(p) for p in ("fp32", "tf32", "bf16", "fp8")]
        known = [v for v in chain if v is not None]
        assert known == sorted(known), row.name


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({"name": "NVIDIA H200", "totalGlobalMem": 150109880320, "numSms": 132}, "H200 SXM"),
        ({"name": "NVIDIA H100 80GB HBM3", "numSms": 132}, "H100 SXM5"),
        ({"name": "NVIDIA H100 PCIe"}, "H100 PCIe"),
        ({"name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 84990623744}, "A100 SXM4 80GB"),
        ({"name": "NVIDIA A100-PG509-200", "totalGlobalMem": 42297524224}, "A100 40GB"),
        ({"name": "Tesla V100-SXM2-16GB"}, "V100 SXM2"),
        ({"name": "NVIDIA L4"}, "L4"),
        ({"name": "NVIDIA B200"}, "B200"),
        ({"name": "AMD Instinct MI300X"}, "MI300X"),
        ({"name": "AMD Instinct MI325X"}, "MI325X"),
        (  # blank name: gfx942 with 304 CUs and 192 GiB
            {"name": "", "computeMajor": 9, "computeMinor": 4, "numSms": 304,
             "totalGlobalMem": 192 * GIB}, "MI300X"),
        (  # gfx90a, 104 CUs, 64 GiB: one MI250 GCD (or an MI210: the same figures)
            {"name": "AMD Radeon Graphics", "computeMajor": 9, "computeMinor": 0,
             "numSms": 104, "totalGlobalMem": 64 * GIB}, "MI250 GCD"),
    ],
)  # fmt: skip
def test_devices_are_found_by_name_and_properties(props: dict, expected: str) -> None:
    row = match_device(props)
    assert row is not None and expected in row.name


@pytest.mark.parametrize(
    "props",
    [
        {"name": "Quadro GP100"},
        {"name": "ARTEMIS"},
        {"name": "NVIDIA H100 NVL"},
        {"name": ""},
        {"name": "AMD Radeon Graphics", "numSms": 60, "totalGlobalMem": 16 * GIB},
    ],
)
def test_unknown_devices_have_no_peak(props: dict) -> None:
    assert match_device(props) is None


def test_the_h200_samples_find_the_h200_row() -> None:
    trace = load(SAMPLES / "h200" / "block" / "eager.pt.trace.json.gz")
    found = device_peaks(trace)
    assert found.basis is PeakBasis.TABLE
    assert found.peaks is not None and found.peaks.name == "NVIDIA H200 SXM"
    assert found.device_name == "NVIDIA H200"


def test_cpu_traces_have_no_peak() -> None:
    trace = load(SAMPLES / "mlp" / "eager.pt.trace.json.gz")
    found = device_peaks(trace)
    assert found.basis is PeakBasis.NO_PEAK and found.peaks is None


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus not found at {CORPUS}")
@pytest.mark.parametrize(
    ("name", "basis", "row"),
    [
        ("amd/mi300x_vllm_full_graph_replay.json.gz", "table", "AMD Instinct MI300X"),
        ("amd/mi250_eager_train_rocm62.json.gz", "table", "MI250 GCD"),
        ("nvidia/v100_resnet50_eager_train_2021.json.gz", "table", "V100 SXM2"),
        ("nvidia/gp100_gpu_user_annotation.json.gz", "no-peak", None),
        ("other/mtia_inference_nongpu_device.json.gz", "no-peak", None),
    ],
)
def test_real_traces(name: str, basis: str, row: str | None) -> None:
    found = device_peaks(load(CORPUS / name))
    assert found.basis.value == basis
    assert (found.peaks.name if found.peaks else None) == row or (
        row is not None and found.peaks is not None and row in found.peaks.name
    )


def test_a_peaks_file_overrides_the_table(tmp_path: Path) -> None:
    path = tmp_path / "peaks.json"
    path.write_text(json.dumps({"name": "my H200", "hbm_tbps": 4.0, "fp32_tflops": 60}))
    peaks = read_peaks_file(path)
    assert peaks.hbm_tbps == 4.0 and peaks.tflops("fp32") == 60.0 and peaks.tflops("bf16") is None
    assert peaks.source == str(path)
    trace = load(SAMPLES / "mlp" / "eager.pt.trace.json.gz")  # even a CPU trace takes it
    found = device_peaks(trace, override=peaks)
    assert found.basis is PeakBasis.FILE and found.peaks == peaks


def test_a_toml_peaks_file(tmp_path: Path) -> None:
    path = tmp_path / "peaks.toml"
    path.write_text('name = "box"\nhbm_tbps = 1.5\nbf16_tflops = 100.0\n')
    peaks = read_peaks_file(path)
    assert peaks.name == "box" and peaks.tflops("bf16") == 100.0


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[1, 2]", "one object"),
        ('{"fp32_tflops": 10}', "hbm_tbps"),
        ('{"hbm_tbps": -1}', "positive"),
        ('{"hbm_tbps": "fast"}', "positive"),
        ('{"hbm_tbps": 1, "fp64_tflops": 3}', "unknown key"),
        ("{not json", "not valid JSON"),
    ],
)
def test_bad_peaks_files_name_the_file_and_the_problem(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = tmp_path / "peaks.json"
    path.write_text(text)
    with pytest.raises(UsageError) as err:
        read_peaks_file(path)
    assert str(path) in str(err.value) and problem in str(err.value)


def test_a_missing_peaks_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read"):
        read_peaks_file(tmp_path / "absent.json")


def test_docs_roofline_lists_the_table_as_it_is() -> None:
    """docs/roofline.md's peak table: one row per PEAK_TABLE row, same figures and sources."""
    from tests.conftest import REPO

    text = (REPO / "docs" / "roofline.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ") and "datasheet" in line]
    assert len(rows) == len(PEAK_TABLE)
    for line, row in zip(rows, PEAK_TABLE, strict=True):
        cells = [c.strip() for c in line.strip("|").split("|")]
        figures = [row.hbm_tbps, *(row.tflops(p) for p in PRECISIONS)]
        assert cells[0] == row.name and cells[-1] == row.source
        assert cells[1:7] == ["–" if v is None else f"{v:g}" for v in figures]
