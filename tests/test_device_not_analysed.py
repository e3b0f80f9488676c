"""§3 of issue 10: a device traceviz does not model is "not analysed", never "measured zero".

GIVEN a trace of an accelerator other than a CUDA/ROCm GPU (runtime calls of an unknown vendor,
device events on the device's own process), WHEN it is summarised or compared, THEN its device
metrics are null with basis ``not-analysed`` (text "n/a"), and an info finding
``device-not-analysed`` counts what the trace holds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

import traceviz
from tests.conftest import CORPUS, SAMPLES, op, read_json
from traceviz.analysis.compare import HOST_METRICS, Metric
from traceviz.analysis.device import NOT_ANALYSED, device_activity
from traceviz.analysis.summary import DEVICE_FIGURES, summarize
from traceviz.diagnose import diagnose_trace
from traceviz.report.json_report import comparison_json
from traceviz.report.text import render_comparison, render_summary

MTIA = CORPUS / "other" / "mtia_inference_nongpu_device.json.gz"
RULE = "device-not-analysed"


def _mtia_like(tmp_trace: Any) -> Path:
    """Two CPU ops, three runtime calls of an unknown vendor, four events on device pid 9."""

    def device_event(name: str, ts: float, dur: float, tid: int) -> dict[str, Any]:
        return {"ph": "X", "cat": "acc_events", "name": name, "pid": 9, "tid": tid, "ts": ts,
                "dur": dur, "args": {"stream": tid}}  # fmt: skip

    def runtime(name: str, ts: float, dur: float) -> dict[str, Any]:
        return {"ph": "X", "cat": "acc_runtime", "name": name, "pid": 1, "tid": 1, "ts": ts,
                "dur": dur, "args": {"correlation": int(ts)}}  # fmt: skip

    events = [
        op("aten::mm", 0, 50),
        op("aten::add", 60, 20),
        runtime("runFunction", 10, 5),
        runtime("enqueueCommand memcpyHtoDAsync", 20, 3),
        runtime("synchronizeStream", 62, 10),
        device_event("pe_exe", 15, 30, 100),
        device_event("pe_exe", 25, 30, 101),
        device_event("dma_request", 40, 2, 102),
        device_event("dma_request", 50, 4, 102),
    ]
    return tmp_trace(events, deviceProperties=[{"id": 9, "name": "ACC"}])


def test_synthetic_unknown_device_counts_what_it_holds(tmp_trace: Any) -> None:
    trace = traceviz.load(_mtia_like(tmp_trace))
    held = device_activity(trace)
    assert held is not None
    assert held.runtime_calls == 3
    assert held.runtime_time_us == pytest.approx(18.0)
    assert held.device_events == 4
    assert held.device_event_time_us == pytest.approx(66.0)
    assert held.categories == ("acc_events",)
    assert held.device_names == ("ACC",)


def test_device_events_found_without_device_ids(tmp_trace: Any) -> None:
    """No deviceProperties: the device is the process with neither CPU ops nor runtime calls."""
    path = _mtia_like(tmp_trace)
    doc = json.loads(path.read_text())
    del doc["deviceProperties"]
    path.write_text(json.dumps(doc))
    held = device_activity(traceviz.load(path))
    assert held is not None and held.device_events == 4 and held.device_names == ()


def test_synthetic_summary_is_null_not_zero(tmp_trace: Any) -> None:
    summary = summarize(traceviz.load(_mtia_like(tmp_trace)))
    assert summary.basis == NOT_ANALYSED and not summary.analysed
    data = summary.to_json()
    assert all(data[key] is None for key in DEVICE_FIGURES)
    assert data["device_activity"]["device_events"] == 4
    console = Console(record=True, width=120)
    render_summary(summary, console)
    text = console.export_text()
    assert "n/a (device not analysed)" in text and "all figures measured" not in text


def test_synthetic_finding_and_metrics(tmp_trace: Any) -> None:
    path = _mtia_like(tmp_trace)
    findings = [f for f in diagnose_trace(traceviz.load(path)) if f.id == RULE]
    assert len(findings) == 1 and findings[0].severity.value == "info"
    assert "acc_events" in " ".join(findings[0].evidence_lines())
    comparison = traceviz.compare(path, path, names=("x", "y"))
    _check_metrics(comparison.metrics, both_unanalysed=True)


def _check_metrics(metrics: Any, *, both_unanalysed: bool) -> None:
    for row in metrics.to_dict("records"):
        if row[Metric.name] in HOST_METRICS:
            assert row[Metric.basis] != NOT_ANALYSED, row
            continue
        assert row[Metric.basis] == NOT_ANALYSED, row
        assert row[Metric.a] != row[Metric.a]  # NaN: side a is never analysed here
        if both_unanalysed:
            assert row[Metric.b] != row[Metric.b]


def test_analysed_traces_never_say_not_analysed() -> None:
    """Every modelled trace (CPU samples) keeps measured/estimated metrics and no finding."""
    run = SAMPLES / "pointwise"
    comparison = traceviz.compare(run / "eager.pt.trace.json.gz", run / "compiled.pt.trace.json.gz")
    assert NOT_ANALYSED not in set(comparison.metrics[Metric.basis])
    assert RULE not in {f.id for f in comparison.findings}
    assert comparison.a.summary.analysed and comparison.a.summary.device_activity is None


@pytest.mark.skipif(not MTIA.exists(), reason=f"corpus not found at {CORPUS}")
def test_mtia_corpus_trace_against_cuda(tmp_path: Path) -> None:
    """The real MTIA trace: counts equal an independent pass over its JSON; nothing "0 kernels,
    100% idle, measured"; text shows n/a; JSON nulls launch/memory sections."""
    doc = read_json(MTIA)
    device_ids = {str(d["id"]) for d in doc["deviceProperties"]}
    events = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    on_device = [
        e for e in events
        if str(e.get("pid")) in device_ids and not str(e.get("cat", "")).endswith("_runtime")
    ]  # fmt: skip
    runtime = [e for e in events if str(e.get("cat", "")).endswith("_runtime")]
    cuda = CORPUS / "nvidia" / "v100_small_plain.json"
    comparison = traceviz.compare(MTIA, cuda, names=("mtia", "v100"))
    held = comparison.a.summary.device_activity
    assert held is not None
    assert held.device_events == len(on_device) > 0
    assert held.device_event_time_us == pytest.approx(sum(e["dur"] for e in on_device))
    assert held.runtime_calls == len(runtime) > 0
    assert set(held.categories) == {str(e["cat"]) for e in on_device}
    _check_metrics(comparison.metrics, both_unanalysed=False)
    assert comparison.metric("kernel_count")[Metric.b] == comparison.b.summary.kernel_count
    finding = [f for f in comparison.findings if f.id == RULE]
    assert [f.trace for f in finding] == ["mtia"]
    console = Console(record=True, width=160)
    render_comparison(comparison, console)
    text = console.export_text()
    assert "kernels n/a → " in text and "(not-analysed)" in text
    data = json.loads(json.dumps(comparison_json(comparison)))
    assert data["launch"]["a"] is None and data["memory"]["a"] is None
    assert data["launch"]["b"] is not None
    assert data["traces"]["a"]["basis"] == NOT_ANALYSED
    assert data["traces"]["a"]["device_activity"]["device_events"] == len(on_device)
