"""What tests over the real traces share: the traces as pytest params (corpus and sample
runs), equality to the last bit, the measured kernel time credits must not exceed."""

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

SAMPLE_TRACES = sorted(SAMPLES.glob("*/*.pt.trace.json.gz")) + sorted(
    SAMPLES.glob("h200/*/*.pt.trace.json.gz")
)


def real_traces() -> list[object]:
    """pytest params: every corpus trace, then every sample trace (H200 runs included)."""
    return [
        *corpus_params(),
        *(pytest.param(p, id=str(p.relative_to(SAMPLES))) for p in SAMPLE_TRACES),
    ]


def every_trace_file() -> list[object]:
    """pytest params: every corpus trace, then every trace file under sample_traces/ (the
    eager_lines traces and the runs' single traces included)."""
    return [
        *corpus_params(),
        *(
            pytest.param(p, id=p.relative_to(SAMPLES).as_posix())
            for p in sorted(SAMPLES.glob("**/*.pt.trace.json.gz"))
        ),
    ]


def kernel_intervals(kernels: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row of a kernels table, µs: its start (Kernels.ts_us), its end (start plus
    Kernels.dur_us, a missing duration as 0) and the end of its launch call
    (Kernels.launch_ts_us + Kernels.launch_dur_us): what idle_split and launch start from."""
    starts = kernels[Kernels.ts_us].to_numpy(dtype=float)
    ends = starts + np.nan_to_num(kernels[Kernels.dur_us].to_numpy(dtype=float))
    issued = kernels[Kernels.launch_ts_us].to_numpy(dtype=float) + kernels[
        Kernels.launch_dur_us
    ].to_numpy(dtype=float)
    return starts, ends, issued


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


# The sample runs (folders with a run.json, relative to sample_traces/) and the corpus pairs
# (eager, compiled; relative to the corpus) the fusion-map reference tests compare on.
SAMPLE_RUNS = sorted(p.parent.relative_to(SAMPLES).as_posix() for p in SAMPLES.glob("**/run.json"))
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
