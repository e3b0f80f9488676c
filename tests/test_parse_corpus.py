"""Every real trace in ../shared/corpus loads, conserves its events, and its summary figures
equal a plain independent count of the JSON. Each trace is parsed once per session
(``load_trace``) and its JSON counted once."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

import traceviz
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
def test_corpus_trace_loads_and_conserves_events(path: Path) -> None:
    trace = load_trace(path)
    stats = trace.stats
    assert stats.events_in == plain_counts(path)["events"]
    assert stats.accounted == stats.events_in, (stats.rows, stats.ignored)


@pytest.mark.parametrize("path", corpus_params())
def test_summary_figures_equal_plain_count(path: Path) -> None:
    expected = plain_counts(path)
    summary = summarize(load_trace(path)).to_json()
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
    assert summary["events_in"] == expected["events"]


@pytest.mark.parametrize("path", corpus_params())
def test_cache_round_trip_keeps_every_table(path: Path, tmp_path: Path) -> None:
    trace = load_trace(path)
    again = traceviz.load(trace.save(tmp_path / "cache"))
    for name, table in trace.tables().items():
        reloaded = again.tables()[name]
        assert list(reloaded.columns) == list(table.columns), name
        assert len(reloaded) == len(table), name
        for column in table.columns:
            assert str(reloaded[column].dtype) == str(table[column].dtype), (name, column)
    assert again.meta == trace.meta
    assert again.stats == trace.stats


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
