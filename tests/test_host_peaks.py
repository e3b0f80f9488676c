"""The CPU's measured peaks (traceviz.runner.host_peaks, run.json ``host_peaks``) and the CPU
roofline drawn against them (basis ``measured``).

GIVEN a CPU sample run copied into a temporary directory, its run.json given host peaks
WHEN it is compared THEN both sides' rooflines use them (basis ``measured``) and a kernel's %
of roof is its achieved rate over those figures; the same traces given bare, or the committed
run.json without the field, stay ``no-peak``; ``--peaks`` still wins. The measurement itself
(torch; skipped without it) gives positive finite figures on small sizes.
"""

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
from tests.conftest import SAMPLES
from traceviz.analysis.roofline.peaks import DevicePeaks, PeakBasis
from traceviz.analysis.roofline.per_kernel import RooflineColumns
from traceviz.report.roofline_report import roofline_json, roofline_of, roofline_views
from traceviz.runs.runinfo import (
    COMPILED_TRACE,
    EAGER_TRACE,
    RUN_JSON,
    HostPeaks,
    RunInfo,
    decode,
    encode,
)

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


def test_host_peaks_survive_a_run_json_round_trip(tmp_path: Path) -> None:
    run = run_with_host_peaks(tmp_path, "mlp")
    info = traceviz.load_run(run).info
    assert isinstance(info, RunInfo) and info.host_peaks == HOST


# --- the roofline against them -----------------------------------------------------------


def test_a_cpu_run_with_host_peaks_gets_basis_measured(tmp_path: Path) -> None:
    report = traceviz.compare(run_with_host_peaks(tmp_path, "mlp"))
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


def test_a_peaks_file_wins_over_the_measured_figures(tmp_path: Path) -> None:
    mine = DevicePeaks("mine", 0.5, 1.0, None, None, None, None, "my file")
    report = traceviz.compare(run_with_host_peaks(tmp_path, "mlp"))
    roofline = roofline_of(dataclasses.replace(report, peaks=mine), "a")
    assert roofline is not None and roofline.peaks.basis is PeakBasis.FILE
    assert roofline.peaks.peaks == mine


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
