"""What tests over the real traces share: the runs and traces they run on, each trace's raw
events read with a JSON decoder alone, equality to the last bit, the measured kernel time
credits must not exceed."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd
import pytest

from tests.conftest import SAMPLES, corpus_params
from traceviz.schema import ActivityKind, Kernels


def same(got: object, want: object) -> None:
    """Equal to the last bit: frames, arrays, tuples of them, scalars."""
    if isinstance(got, pd.DataFrame):
        pd.testing.assert_frame_equal(got, want, check_exact=True)  # type: ignore[arg-type]
    elif isinstance(got, pd.Series):
        pd.testing.assert_series_equal(got, want, check_exact=True)  # type: ignore[call-overload]
    elif isinstance(got, np.ndarray):
        assert isinstance(want, np.ndarray) and got.dtype == want.dtype
        assert np.array_equal(got, want, equal_nan=got.dtype.kind == "f")
    elif isinstance(got, tuple | list):
        assert isinstance(want, tuple | list) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            same(g, w)
    else:
        assert got == want or (got != got and want != want), (got, want)


# The sample runs (relative to sample_traces/) and the corpus pairs (eager, compiled; relative
# to the corpus) the tests of two paths to one result run on: one run per code path, not all 17
# (the rest repeat these paths). H200 CUDA: a lines trace and provenance (gpt2), CUDA graphs
# (gpt2-reduce-overhead), a graph break, eager kernels without lines and a backward
# (attention-train), layout kernels (conv-bn-relu); CPU: marks in the eager trace and a fused
# C++ kernel (block), the smallest pair (pointwise); ONNX Runtime levels (gpt2-ort).
SAMPLE_RUNS = [
    "h200/gpt2",
    "h200/gpt2-reduce-overhead",
    "h200/graph-break",
    "h200/attention-train",
    "h200/conv-bn-relu",
    "block",
    "pointwise",
    "gpt2-ort",
]


def sample_runs() -> list[Path]:
    """The CPU sample runs at the top of sample_traces/ (each a run directory)."""
    return sorted(p for p in SAMPLES.glob("*") if (p / "run.json").is_file())


def sample_params() -> list[Any]:
    """:func:`sample_runs` as pytest parameters (one skip when there are none)."""
    runs = sample_runs()
    if not runs:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"no sample runs in {SAMPLES}"))]
    return [pytest.param(run, id=run.name) for run in runs]


def sample_run(name: str) -> Path:
    """sample_traces/NAME, a run directory; the test skips when it is not there."""
    path = SAMPLES / name
    if not (path / "run.json").is_file():
        pytest.skip(f"sample run {path} not found")
    return path


def every_trace_file() -> list[object]:
    """pytest params: every corpus trace (each a vendor, format or profiler quirk), then every
    trace file of the :data:`SAMPLE_RUNS` (eager, compiled and, where recorded, eager_lines)."""
    samples = [p for run in SAMPLE_RUNS for p in sorted((SAMPLES / run).glob("*.pt.trace.json.gz"))]
    return [
        *corpus_params(),
        *(pytest.param(p, id=p.relative_to(SAMPLES).as_posix()) for p in samples),
    ]


CORPUS_PAIRS = [
    (
        "nvidia/a100_eager_train_control.json.gz",
        "nvidia/a100_compiled_cudagraph_train_2023.json.gz",
    ),
    (
        "nvidia/v100_resnet50_eager_train_2021.json.gz",
        "nvidia/v100_train_compiledfunction_cudagraph.json.gz",
    ),
    ("amd/mi250_eager_train_rocm62.json.gz", "amd/mi300x_compiled_flux_hipgraph.json.gz"),
]


def measured_kernel_us(kernels: pd.DataFrame) -> float:
    """The kernel time a trace measured, µs: the kernel rows' (not memcpy/memset) exclusive
    duration (Kernels.excl_dur_us, else Kernels.dur_us), summed; what credits must not exceed."""
    rows = kernels[kernels[Kernels.activity] == ActivityKind.KERNEL.value]
    return float(rows[Kernels.excl_dur_us].fillna(rows[Kernels.dur_us]).sum())


def raw_events(path: Path) -> list[dict[str, Any]]:
    """A trace file's events as plain dicts, read with a JSON decoder alone (orjson; the
    standard library where the file has NaN literals): for tests that check traceviz's tables
    against the file itself."""
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        doc = json.loads(data)
    events = doc if isinstance(doc, list) else doc.get("traceEvents", [])
    return [e for e in events if isinstance(e, dict)]
