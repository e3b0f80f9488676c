"""A small builder of typed run.json objects (:class:`RunInfo`) for tests: a complete,
neutral run (no timing samples, no memory, no Dynamo facts) with the given sections replaced."""

from __future__ import annotations

from typing import Any

import msgspec

from traceviz.runs.runinfo import RunInfo

SKELETON: dict[str, Any] = {
    "schema_version": 1,
    "traceviz_version": "test",
    "created_utc": "2026-01-01T00:00:00Z",
    "model": {
        "name": "test",
        "class_name": "Test",
        "parameters": 0,
        "parameter_bytes": 0,
        "training": False,
        "inputs": [],
    },
    "options": {
        "device": "cpu",
        "mode": "default",
        "backend": "inductor",
        "dtype": None,
        "batch_size": None,
        "train": False,
        "steps": 3,
        "warmup": 1,
        "iters": 0,
    },
    "environment": {
        "device": "cpu",
        "device_name": "test",
        "device_count": 0,
        "cpu_threads": 1,
        "torch": "test",
        "triton": None,
        "cuda": None,
        "python": "3",
        "platform": "test",
        "hostname": "test",
    },
    "profiler": {
        "activities": ["CPU"],
        "wait": 0,
        "warmup": 1,
        "active": 3,
        "record_shapes": False,
        "profile_memory": False,
        "cpp_kernel_profile": False,
    },
    "compile": {"backend": "inductor", "mode": "default", "ok": True},
    "timing": {"method": "test", "eager": None},
    "correctness": {"checked": False},
    "dynamo": {},
    "memory": {"eager": {}},
    "traces": {},
}


def stats(samples: Any = (), **fields: Any) -> dict[str, Any]:
    """A TimingStats dict over ``samples`` (µs); ``fields`` override the computed ones."""
    xs = sorted(float(s) for s in samples)
    mid = xs[len(xs) // 2] if xs else 0.0
    base = {
        "iters": len(xs),
        "median_us": mid,
        "q1_us": xs[len(xs) // 4] if xs else 0.0,
        "q3_us": xs[3 * len(xs) // 4] if xs else 0.0,
        "iqr_us": 0.0,
        "min_us": xs[0] if xs else 0.0,
        "max_us": xs[-1] if xs else 0.0,
        "mean_us": sum(xs) / len(xs) if xs else 0.0,
        "samples_us": [float(s) for s in samples],
    }
    base["iqr_us"] = base["q3_us"] - base["q1_us"]
    return {**base, **fields}


def run_info(**sections: Any) -> RunInfo:
    """A valid RunInfo with ``sections`` (run.json's top-level keys, as dicts) replaced;
    ``compile`` is merged into the skeleton's, timing stats given as dicts are completed by
    :func:`stats` from their ``samples_us``."""
    data = {**SKELETON, **sections}
    data["compile"] = {**SKELETON["compile"], **sections.get("compile", {})}
    timing = dict(sections.get("timing") or {})
    for key in ("eager", "compiled"):
        if isinstance(timing.get(key), dict):
            given = timing[key]
            timing[key] = stats(given.get("samples_us", ()), **given)
    timing.setdefault("eager", stats())
    data["timing"] = {"method": "test", **timing}
    return msgspec.convert(data, type=RunInfo)
