"""Device peaks (traceviz.analysis.roofline.peaks): the table, the lookup by device properties on
real traces, and the --peaks file (``traceviz compare --peaks FILE``: every side's roofline
against the file's figures, JSON and text; a bad file is a one-line error, exit status 2,
before any work).

The CPU's measured peaks (traceviz.runner.host_peaks, run.json ``host_peaks``): GIVEN a CPU
sample run copied into a temporary directory, its run.json given host peaks WHEN it is compared
THEN both sides' rooflines use them (basis ``measured``) and a kernel's % of roof is its
achieved rate over those figures; the same traces given bare, or the committed run.json without
the field, stay ``no-peak``; ``--peaks`` still wins. The measurement itself (torch; skipped
without it) gives positive finite figures on small sizes."""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
from pathlib import Path

import msgspec
import pandas as pd
import pytest

import traceviz
from tests.conftest import CORPUS, SAMPLES
from traceviz import UsageError, cli, load
from traceviz.analysis.roofline.peaks import (
    PEAK_TABLE,
    PRECISIONS,
    DevicePeaks,
    PeakBasis,
    PeakLookup,
    device_peaks,
    match_device,
    read_peaks_file,
)
from traceviz.analysis.roofline.per_kernel import RooflineColumns
from traceviz.pipeline import compare_run
from traceviz.report.roofline_report import (
    kernels_view,
    peaks_note,
    roofline_json,
    roofline_of,
    roofline_views,
)
from traceviz.runs.runinfo import (
    COMPILED_TRACE,
    EAGER_TRACE,
    RUN_JSON,
    HostPeaks,
    RunInfo,
    decode,
    encode,
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


def test_a_json_or_toml_peaks_file_overrides_the_table(tmp_path: Path) -> None:
    path = tmp_path / "peaks.json"
    path.write_text(json.dumps({"name": "my H200", "hbm_tbps": 4.0, "fp32_tflops": 60}))
    peaks = read_peaks_file(path)
    assert peaks.hbm_tbps == 4.0 and peaks.tflops("fp32") == 60.0 and peaks.tflops("bf16") is None
    assert peaks.source == str(path)
    trace = load(SAMPLES / "mlp" / "eager.pt.trace.json.gz")  # even a CPU trace takes it
    found = device_peaks(trace, override=peaks)
    assert found.basis is PeakBasis.FILE and found.peaks == peaks
    toml = tmp_path / "peaks.toml"
    toml.write_text('name = "box"\nhbm_tbps = 1.5\nbf16_tflops = 100.0\n')
    peaks = read_peaks_file(toml)
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
        (None, "cannot read"),  # no file
    ],
)
def test_bad_peaks_files_name_the_file_and_the_problem(
    tmp_path: Path, text: str | None, problem: str
) -> None:
    path = tmp_path / "peaks.json"
    if text is not None:
        path.write_text(text)
    with pytest.raises(UsageError) as err:
        read_peaks_file(path)
    assert str(path) in str(err.value) and problem in str(err.value)


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


C = RooflineColumns
# figures of the order of one core of the VM the samples were made on (its runs: 1 thread)
HOST = HostPeaks(
    cpu="AMD EPYC",
    threads=1,
    memory_tbps=0.02,
    copy_bytes=256 * 2**20,
    fp32_tflops=0.075,
    bf16_tflops=None,
    gemm_size=2048,
    repeats=3,
    method="copy_ of 256 MiB (bytes read + written), torch.mm of 2048×2048 matrices",
)


def run_with_host_peaks(tmp_path: Path, sample: str, host: HostPeaks = HOST) -> Path:
    """A copy of ``sample_traces/<sample>`` whose run.json carries ``host``."""
    run = shutil.copytree(SAMPLES / sample, tmp_path / sample)
    path = run / RUN_JSON
    info = decode(path.read_bytes(), source=path)
    path.write_bytes(encode(msgspec.structs.replace(info, host_peaks=host)))
    return run


def kernel_table(run: Path) -> pd.DataFrame:
    """The eager side's per-kernel roofline of the run directory ``run``."""
    roofline = roofline_of(traceviz.compare(run), "a")
    assert roofline is not None
    return roofline.per_kernel


# --- run.json ----------------------------------------------------------------------------


def test_a_run_json_without_host_peaks_loads_with_none() -> None:
    path = SAMPLES / "mlp" / RUN_JSON
    assert "host_peaks" not in json.loads(path.read_text())  # written before the field
    assert decode(path.read_bytes(), source=path).host_peaks is None


# --- the roofline against them -----------------------------------------------------------


def test_a_cpu_run_with_host_peaks_gets_basis_measured_unless_a_peaks_file_wins(
    tmp_path: Path,
) -> None:
    run = run_with_host_peaks(tmp_path, "mlp")
    info = traceviz.load_run(run).info  # the figures survive run.json's round trip
    assert isinstance(info, RunInfo) and info.host_peaks == HOST
    report = traceviz.compare(run)
    for which in ("a", "b"):
        roofline = roofline_of(report, which)
        assert roofline is not None and roofline.peaks.basis is PeakBasis.MEASURED
        peaks = roofline.peaks.peaks
        assert peaks is not None and peaks.hbm_tbps == HOST.memory_tbps
        assert (peaks.fp32_tflops, peaks.bf16_tflops, peaks.tf32_tflops) == (0.075, None, None)
        assert HOST.method in peaks.source and "AMD EPYC" in peaks.name
        assert (roofline.per_kernel[C.bound] != "no-peak").all()
    assert roofline_json(report, top=3)["a"]["basis"] == "measured"
    note = next(v.note for v in roofline_views(report) if v.title.startswith("Roofline"))
    assert "(measured: run.json host_peaks" in note
    mine = DevicePeaks("mine", 0.5, 1.0, None, None, None, None, "my file")
    roofline = roofline_of(dataclasses.replace(report, peaks=mine), "a")
    assert roofline is not None and roofline.peaks.basis is PeakBasis.FILE
    assert roofline.peaks.peaks == mine


def test_pct_of_roof_is_against_the_measured_figures(tmp_path: Path) -> None:
    """One memory kernel and one GEMM of eager mlp, worked by hand from bytes and time."""
    table = kernel_table(run_with_host_peaks(tmp_path, "mlp"))
    gelu = table[table[C.name] == "aten::gelu"].iloc[0]
    tbps = gelu[C.bytes] / (gelu[C.dur_us] * 1e-6) / 1e12  # bytes per second, in TB/s
    assert gelu[C.pct_of_roof] == pytest.approx(100 * tbps / HOST.memory_tbps)
    gemm = table[table[C.name] == "aten::addmm"].iloc[0]
    assert gemm[C.precision] == "fp32" and gemm[C.flops] > 0
    tflops = gemm[C.flops] / (gemm[C.dur_us] * 1e-6) / 1e12
    roof = min(HOST.fp32_tflops, gemm[C.flops] / gemm[C.bytes] * HOST.memory_tbps)
    assert gemm[C.roof_tflops] == pytest.approx(roof)
    assert gemm[C.pct_of_roof] == pytest.approx(100 * tflops / roof)


def test_a_cpu_float32_convolution_is_fp32_against_the_measured_peaks(tmp_path: Path) -> None:
    table = kernel_table(run_with_host_peaks(tmp_path, "conv-bn-relu"))
    conv = table[table[C.name] == "aten::mkldnn_convolution"]
    assert len(conv) > 0 and (conv[C.precision] == "fp32").all()  # not cuDNN's TF32
    assert (conv[C.peak_tflops] == HOST.fp32_tflops).all()


def test_the_committed_runs_and_bare_traces_stay_no_peak(tmp_path: Path) -> None:
    run = run_with_host_peaks(tmp_path, "mlp")
    reports = [
        traceviz.compare(SAMPLES / "mlp"),  # run.json without host_peaks
        traceviz.compare(run / EAGER_TRACE, run / COMPILED_TRACE),  # no run.json at all
    ]
    for report in reports:
        for which in ("a", "b"):
            roofline = roofline_of(report, which)
            assert roofline is not None and roofline.peaks.basis is PeakBasis.NO_PEAK
            assert (roofline.per_kernel[C.bound] == "no-peak").all()


# --- the measurement (torch) -------------------------------------------------------------


def test_the_measurement_gives_positive_finite_figures_and_says_how() -> None:
    torch = pytest.importorskip("torch")
    from traceviz.runner.host_peaks import measure_host_peaks

    before = torch.get_num_threads()
    host = measure_host_peaks(threads=1, copy_bytes=2**20, gemm_size=64, repeats=2)
    assert torch.get_num_threads() == before  # the run's own count is restored
    figures = [host.memory_tbps, host.fp32_tflops]
    figures += [host.bf16_tflops] if host.bf16_tflops is not None else []
    assert all(math.isfinite(f) and f > 0 for f in figures)
    assert (host.threads, host.copy_bytes, host.gemm_size, host.repeats) == (1, 2**20, 64, 2)
    assert host.cpu and "1 MiB" in host.method and "64×64" in host.method
    assert "best of 2" in host.method and "1 threads" in host.method


def test_bf16_is_measured_only_where_the_cpu_has_bf16_instructions(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from traceviz.runner.host_peaks import _has_bf16

    x86 = tmp_path / "x86"
    x86.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx512f avx512_bf16\n")
    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nFeatures\t: fp asimd bf16 i8mm\n")
    old = tmp_path / "old"
    old.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f\n")
    assert _has_bf16(x86) and _has_bf16(arm)
    assert not _has_bf16(old) and not _has_bf16(tmp_path / "missing")


def test_a_gpu_run_measures_nothing() -> None:
    torch = pytest.importorskip("torch")
    from traceviz.runner.host_peaks import run_host_peaks
    from traceviz.runner.progress import Silent

    assert run_host_peaks(torch.device("cuda"), threads=1, reporter=Silent()) is None


@pytest.mark.slow
def test_a_cpu_run_records_its_peaks_and_its_roofline_uses_them(tmp_path: Path) -> None:
    """``profile_model`` end to end (backend ``eager``: no compile time)."""
    pytest.importorskip("torch")
    from traceviz.runner import profile_model

    run = profile_model(
        "pointwise", out=tmp_path / "run", device="cpu", steps=1, warmup=1, iters=2,
        backend="eager",
    )  # fmt: skip
    host = run.info.host_peaks
    assert host is not None and host.threads == run.info.environment.cpu_threads
    assert host.memory_tbps > 0 and host.fp32_tflops > 0
    roofline = roofline_of(traceviz.compare(run.directory), "a")
    assert roofline is not None and roofline.peaks.basis is PeakBasis.MEASURED


def test_summary_of_a_trace_in_a_run_directory_uses_its_measured_peaks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``traceviz summary RUN/compiled.pt.trace.json.gz``: the run's measured CPU peaks, not
    no-peak; the stored output is not reused once run.json changes (its key holds run.json)."""
    run = shutil.copytree(SAMPLES / "mlp", tmp_path / "mlp")
    trace = str(run / COMPILED_TRACE)

    def summary_basis() -> str:
        assert cli.main(["summary", trace, "--format", "json"]) == 0
        return json.loads(capsys.readouterr().out)["roofline"]["basis"]

    assert summary_basis() == "no-peak"  # run.json without host_peaks
    info = decode((run / RUN_JSON).read_bytes(), source=run / RUN_JSON)
    (run / RUN_JSON).write_bytes(encode(msgspec.structs.replace(info, host_peaks=HOST)))
    assert summary_basis() == "measured"
    (run / RUN_JSON).write_text("{")
    assert cli.main(["summary", trace]) == 2
    assert "run.json" in capsys.readouterr().err
