"""benchmarks/scaling.py: the exponent fit, the 0.1x cut and the report's ratios (no timing)."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CORPUS

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def scaling() -> Any:
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module("scaling")
    finally:
        sys.path.remove(str(BENCH))


def test_exponent_recovers_the_power(scaling: Any) -> None:
    xs = [1e4, 1e5, 1e6, 3e6]
    assert scaling.exponent([(x, 3e-6 * x) for x in xs]) == pytest.approx(1.0)
    assert scaling.exponent([(x, 2e-9 * x**2) for x in xs]) == pytest.approx(2.0)
    assert scaling.exponent([(1e4, 1.0)]) is None


def _record(size: float, name: str, seconds: float, rss: float) -> dict[str, Any]:
    events = int(size * 100_000)
    return {"size": size, "events": events, "contender": name, "process_s": seconds + 1,
            "seconds": seconds, "cpu_seconds": seconds, "peak_rss_mib": rss + 100,
            "rss_after_import_mib": 100.0}  # fmt: skip


def test_report_ratios_and_exponents(scaling: Any) -> None:
    records = [_record(s, "traceviz", 0.3 * s, 40 * s) for s in (1, 10)]
    records += [_record(s, "hta", 3.0 * s**1.2, 100 * s) for s in (1, 10)]
    records.append({**_record(10, "traceviz", 99.0, 1.0), "seconds": 99.0})  # a slower round
    text = scaling.report(records)
    assert "- 1×: in-process 10.0×" in text
    assert "peak RSS traceviz/HTA 0.70" in text  # (40 + 100) / (100 + 100)
    assert "traceviz (2 sizes): in-process time 1.00" in text
    assert "hta (2 sizes): in-process time 1.20" in text
    assert "peak RSS − imports 1.00" in text


def test_fraction_is_the_first_tenth_of_events(
    scaling: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = CORPUS / "nvidia" / "v100_small_plain.json"
    if not source.is_file():
        pytest.skip(f"corpus not found at {CORPUS}")
    monkeypatch.setattr(scaling, "DATA", tmp_path)
    path, kept = scaling.fraction_trace(source, 0.1)
    events = json.loads(source.read_text())["traceEvents"]
    meta = sum(1 for e in events if e.get("ph") == "M")
    assert kept == meta + round(0.1 * (len(events) - meta))
    written = json.loads(path.read_text())["traceEvents"]
    assert len(written) == kept
    body = [e for e in written if e.get("ph") != "M"]
    latest = max(e["ts"] for e in body)
    rest = sorted(e["ts"] for e in events if e.get("ph") != "M")[len(body) :]
    assert all(ts >= latest for ts in rest)
