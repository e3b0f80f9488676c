"""Every real trace in ../shared/corpus loads, conserves its events, and its summary figures
equal a plain independent count of the JSON (that its tables survive the cache is
test_table_store's). Each trace is parsed once per session (``load_trace``)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from tests.conftest import (
    CORPUS,
    KERNEL_CATS,
    LAUNCH_NAMES,
    MEMCPY_CATS,
    corpus_params,
    load_trace,
    read_json,
)
from traceviz.analysis.summary import summarize
from traceviz.schema import DeviceKind


@cache
def plain_counts(path: Path) -> dict[str, float]:
    """The MANIFEST's independent pass over the JSON."""
    doc = read_json(path)
    events = doc if isinstance(doc, list) else doc["traceEvents"]
    complete = [e for e in events if e.get("ph") == "X"]
    kernels = [e for e in complete if e.get("cat") in KERNEL_CATS]
    memcpys = [e for e in complete if e.get("cat") in MEMCPY_CATS]
    return {
        "events": len(events),
        "kernel_count": len(kernels),
        "kernel_time_us": sum(float(e.get("dur", 0)) for e in kernels),
        "memcpy_count": len(memcpys),
        "memcpy_bytes": sum(int(e.get("args", {}).get("bytes", 0)) for e in memcpys),
        "launch_count": sum(1 for e in complete if e.get("name") in LAUNCH_NAMES),
    }


@pytest.mark.parametrize("path", corpus_params())
def test_loads_and_conserves_events_and_summary_equals_plain_count(path: Path) -> None:
    expected = plain_counts(path)
    trace = load_trace(path)
    assert trace.stats.events_in == expected["events"]
    assert trace.stats.accounted == trace.stats.events_in, (trace.stats.rows, trace.stats.ignored)
    summary = summarize(trace).to_json()
    assert summary["events_in"] == expected["events"]
    if summary["device"] == DeviceKind.OTHER.value:  # not analysed: device figures are null
        assert summary["basis"] == "not-analysed"
        device = ("kernel_count", "kernel_time_us", "memcpy_count", "memcpy_bytes", "launch_count")
        assert all(summary[name] is None for name in device), summary
        return
    if summary["device"] != DeviceKind.CPU.value:
        assert summary["kernel_count"] == expected["kernel_count"]
        assert summary["kernel_time_us"] == pytest.approx(expected["kernel_time_us"])
    assert summary["memcpy_count"] == expected["memcpy_count"]
    assert summary["memcpy_bytes"] == expected["memcpy_bytes"]
    assert summary["launch_count"] == expected["launch_count"]


EXPECTED_DEVICE = {
    "amd/mi250_eager_train_rocm62.json.gz": DeviceKind.ROCM,
    "amd/mi300x_vllm_full_graph_replay.json.gz": DeviceKind.ROCM,
    "nvidia/a100_compiled_triton_tiny.json.gz": DeviceKind.CUDA,
    "nvidia/resnet50_eager_legacy_bare_array.json.gz": DeviceKind.CUDA,
    "cpu/cpu_only_rank.json.gz": DeviceKind.CPU,
    "other/mtia_inference_nongpu_device.json.gz": DeviceKind.OTHER,
}


@pytest.mark.parametrize("name,kind", EXPECTED_DEVICE.items())
def test_device_kind(name: str, kind: DeviceKind) -> None:
    if not (CORPUS / name).exists():
        pytest.skip(f"corpus not found at {CORPUS}")
    assert load_trace(CORPUS / name).device_kind is kind
