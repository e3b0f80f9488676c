"""Smoke test of benchmarks/make_large_trace.py: copies are exact, shifted in time and in ids."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CORPUS, REPO

SOURCE = CORPUS / "nvidia" / "v100_small_plain.json"


@pytest.fixture(scope="module")
def mlt() -> Any:
    """benchmarks/make_large_trace.py, imported from its file."""
    spec = importlib.util.spec_from_file_location(
        "make_large_trace", REPO / "benchmarks" / "make_large_trace.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


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
