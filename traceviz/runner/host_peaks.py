"""The CPU's peaks, measured: a STREAM-like copy and a dense GEMM, with torch, on the run's threads.

A GPU's peaks come from its datasheet (:data:`traceviz.analysis.roofline.peaks.PEAK_TABLE`); a CPU's
depend on the part, its memory channels and how many threads the run uses, so the runner
measures them once per CPU run and stores them in run.json (:class:`~traceviz.runs.runinfo.
HostPeaks`). A peak is the best seen, so each figure is the best of a few timed calls:

- **memory bandwidth**: ``dst.copy_(src)`` of a :data:`COPY_BYTES` buffer, far larger than a
  last-level cache (32 MiB on the machine the samples were made on), counted as STREAM counts
  its copy: the bytes read plus the bytes written (the write-allocate reads are not counted);
- **dense compute**: ``torch.mm`` of two :data:`GEMM_SIZE` square float32 matrices, 2·n³ FLOPs
  per call; bfloat16 too where the CPU has bfloat16 instructions (``avx512_bf16``,
  ``amx_bf16``, Arm ``bf16``) and the bfloat16 GEMM is at least as fast as the float32 one
  (slower means it is converted on the way: not a bfloat16 roof, left out).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path

import torch

from traceviz.runner.environment import cpu_name
from traceviz.runner.measure import pinned_threads
from traceviz.runner.progress import Reporter
from traceviz.runs.runinfo import HostPeaks

__all__ = ["COPY_BYTES", "GEMM_SIZE", "REPEATS", "measure_host_peaks", "run_host_peaks"]

COPY_BYTES = 256 * 2**20  # the copied buffer: 8x the sample machine's 32 MiB L3
GEMM_SIZE = 2048  # n of the square GEMMs: large enough for the BLAS to reach its peak
REPEATS = 3  # timed calls per figure, after one untimed warm-up call

#: /proc/cpuinfo flags (x86 ``flags``, Arm ``Features``) that say the CPU computes bfloat16.
_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16", "bf16"})


def measure_host_peaks(
    *,
    threads: int,
    copy_bytes: int = COPY_BYTES,
    gemm_size: int = GEMM_SIZE,
    repeats: int = REPEATS,
) -> HostPeaks:
    """The CPU's memory bandwidth and GEMM throughput on ``threads`` intra-op threads (the
    count the run's steps use), each the best of ``repeats`` timed calls (module docstring)."""
    if copy_bytes < 1 or gemm_size < 1 or repeats < 1 or threads < 1:
        raise ValueError("threads, copy_bytes, gemm_size and repeats must be positive")
    with pinned_threads(threads), torch.inference_mode():
        copy_s = _copy_seconds(copy_bytes, repeats)
        fp32_s = _gemm_seconds(gemm_size, torch.float32, repeats)
        bf16_s = _gemm_seconds(gemm_size, torch.bfloat16, repeats) if _has_bf16() else math.inf
    flops = 2.0 * gemm_size**3
    return HostPeaks(
        cpu=cpu_name(),
        threads=threads,
        memory_tbps=2.0 * copy_bytes / copy_s * 1e-12,
        copy_bytes=copy_bytes,
        fp32_tflops=flops / fp32_s * 1e-12,
        bf16_tflops=flops / bf16_s * 1e-12 if bf16_s <= fp32_s else None,
        gemm_size=gemm_size,
        repeats=repeats,
        method=(
            f"copy_ of {copy_bytes / 2**20:g} MiB (bytes read + written), torch.mm of "
            f"{gemm_size}×{gemm_size} matrices (2n³ FLOPs); best of {repeats} timed calls, "
            f"{threads} threads, torch {torch.__version__}"
        ),
    )


def _copy_seconds(nbytes: int, repeats: int) -> float:
    """Best time of ``dst.copy_(src)`` over ``nbytes`` uint8 elements (pages touched first)."""
    src = torch.ones(nbytes, dtype=torch.uint8)
    dst = torch.empty_like(src)
    return _best_seconds(lambda: dst.copy_(src), repeats)


def _gemm_seconds(n: int, dtype: torch.dtype, repeats: int) -> float:
    """Best time of ``torch.mm`` of two n×n ``dtype`` matrices into a preallocated output."""
    a = torch.ones(n, n, dtype=dtype)
    b = torch.ones(n, n, dtype=dtype)
    out = torch.empty(n, n, dtype=dtype)
    return _best_seconds(lambda: torch.mm(a, b, out=out), repeats)


def _best_seconds(call: Callable[[], object], repeats: int) -> float:
    call()  # warm-up: first touch of the output pages, the BLAS's own set-up
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return max(best, 1e-9)  # a clock that did not tick is not an infinite rate


def _has_bf16(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether the CPU has bfloat16 instructions (Linux only: elsewhere, no bf16 figure)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return False
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return not _BF16_FLAGS.isdisjoint(value.split())
    return False


def run_host_peaks(device: torch.device, *, threads: int, reporter: Reporter) -> HostPeaks | None:
    """:func:`measure_host_peaks` for a CPU run; None on any other device (a GPU's peaks come
    from the table) or where the buffers do not fit in memory (no peaks: ``no-peak``)."""
    if device.type != "cpu":
        return None
    reporter.phase("cpu: measuring peaks (copy, GEMM)")
    try:
        return measure_host_peaks(threads=threads)
    except (RuntimeError, MemoryError):  # torch's out-of-memory is a RuntimeError
        return None
