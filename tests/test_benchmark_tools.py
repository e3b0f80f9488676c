"""The benchmark scripts' own logic, no timing: benchmarks/make_large_trace.py (copies are
exact, shifted in time and in ids) and benchmarks/scaling.py (the exponent fit, the 0.1x cut
and the report's ratios)."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CORPUS, REPO

SOURCE = CORPUS / "nvidia" / "v100_small_plain.json"


def _bench(name: str) -> Any:
    """benchmarks/NAME.py, imported with its folder on the path (scaling imports its siblings)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(REPO / "benchmarks"))


@pytest.fixture(scope="module")
def mlt() -> Any:
    return _bench("make_large_trace")


@pytest.fixture(scope="module")
def scaling() -> Any:
    return _bench("scaling")


@pytest.fixture(scope="module")
def source_events() -> list[dict[str, Any]]:
    if not SOURCE.is_file():
        pytest.skip(f"corpus trace {SOURCE} is absent (corpus not found at {CORPUS})")
    return json.loads(SOURCE.read_text())["traceEvents"]


FACTOR = 3


@pytest.fixture(scope="module")
def big(mlt: Any, source_events: list, tmp_path_factory: pytest.TempPathFactory) -> Any:
    out = tmp_path_factory.mktemp("large") / "small_x3.json"
    return mlt.make_large_trace(SOURCE, FACTOR, out)


def _ids(event: dict[str, Any], id_args: tuple[str, ...]) -> dict[str, int]:
    ids = {"id": event["id"]} if type(event.get("id")) is int else {}
    args = event.get("args") or {}
    ids.update({k: args[k] for k in id_args if type(args.get(k)) is int})
    return ids


def test_event_count_scales_exactly(big: Any, source_events: list) -> None:
    doc = json.loads(Path(big.path).read_text())
    n, n_meta = len(source_events), sum(e.get("ph") == "M" for e in source_events)
    assert n_meta > 0
    assert len(doc["traceEvents"]) == big.events == n_meta + FACTOR * (n - n_meta)
    # Top-level keys other than the events are carried over unchanged.
    source_doc = json.loads(SOURCE.read_text())
    assert list(doc) == list(source_doc)
    assert {k: v for k, v in doc.items() if k != "traceEvents"} == {
        k: v for k, v in source_doc.items() if k != "traceEvents"
    }


def test_copies_are_shifted_in_time_and_ids(mlt: Any, big: Any, source_events: list) -> None:
    out = json.loads(Path(big.path).read_text())["traceEvents"]
    n = len(source_events)
    assert out[:n] == source_events  # copy 0 is the source, unchanged
    body = [e for e in source_events if e.get("ph") != "M"]
    linked = 0
    previous = out[:n]
    for k in range(1, FACTOR):
        copy = out[n + (k - 1) * len(body) : n + k * len(body)]
        previous_end = max(e["ts"] + e.get("dur", 0) for e in previous if e.get("ph") != "M")
        assert min(e["ts"] for e in copy) > previous_end  # appended after the previous copy
        for original, shifted in zip(body, copy, strict=True):
            assert shifted["ts"] == original["ts"] + k * big.period_us
            before, after = _ids(original, mlt.ID_ARGS), _ids(shifted, mlt.ID_ARGS)
            assert after.keys() == before.keys()
            for key, value in before.items():
                assert after[key] == (value + k * big.id_stride if value > 0 else value)
                linked += value > 0
            rest = {k2: v for k2, v in shifted.items() if k2 not in ("ts", "id", "args", "name")}
            assert rest == {
                k2: v for k2, v in original.items() if k2 not in ("ts", "id", "args", "name")
            }
        previous = copy
    assert linked > 0  # the source does carry correlation / External ids


def test_ids_of_copies_never_collide(mlt: Any, big: Any, source_events: list) -> None:
    out = json.loads(Path(big.path).read_text())["traceEvents"]
    n_body = sum(e.get("ph") != "M" for e in source_events)
    n = len(source_events)
    copies = [out[:n]] + [out[n + i * n_body : n + (i + 1) * n_body] for i in range(FACTOR - 1)]
    seen: list[set[int]] = []
    for copy in copies:
        correlations = {
            e["args"]["correlation"] for e in copy if "correlation" in e.get("args", {})
        }
        assert correlations
        assert all(correlations.isdisjoint(other) for other in seen)
        seen.append(correlations)


def test_second_call_reuses_the_file(mlt: Any, big: Any) -> None:
    again = mlt.make_large_trace(SOURCE, FACTOR, big.path)
    assert again.reused and again.sha256 == big.sha256 and again.bytes == big.bytes
    forced = mlt.make_large_trace(SOURCE, FACTOR, big.path, force=True)
    assert not forced.reused and forced.sha256 == big.sha256  # deterministic


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
    if not SOURCE.is_file():
        pytest.skip(f"corpus not found at {CORPUS}")
    monkeypatch.setattr(scaling, "DATA", tmp_path)
    path, kept = scaling.fraction_trace(SOURCE, 0.1)
    events = json.loads(SOURCE.read_text())["traceEvents"]
    meta = sum(1 for e in events if e.get("ph") == "M")
    assert kept == meta + round(0.1 * (len(events) - meta))
    written = json.loads(path.read_text())["traceEvents"]
    assert len(written) == kept
    body = [e for e in written if e.get("ph") != "M"]
    latest = max(e["ts"] for e in body)
    rest = sorted(e["ts"] for e in events if e.get("ph") != "M")[len(body) :]
    assert all(ts >= latest for ts in rest)
