"""Bad input: one TraceFormatError naming the file and the problem; the CLI prints one line
and exits 2; mutated real traces never raise anything else and never hang."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import traceviz
from tests.conftest import CORPUS
from tests.mutation_fixtures import (
    HOSTILE_SETTINGS,
    MUTATIONS,
    ODD_VALUES,
    load_or_format_error,
    mutate,
)
from traceviz import TraceFormatError
from traceviz.cli import main

SMALL = CORPUS / "nvidia" / "v100_small_plain.json"
TINY_GZ = CORPUS / "amd" / "mi300x_compiled_llama_block_tiny.json.gz"

CASES = {
    "not JSON": (b"this is not json", "not valid JSON"),
    "empty": (b"", "empty file"),
    "whitespace": (b"  \n ", "empty file"),
    "not a trace": (b'{"hello": 1}', "traceEvents"),
    "events of wrong type": (b'{"traceEvents": {"a": 1}}', "traceEvents"),
    "scalar document": (b"42", "not a profiler trace"),
    "event not an object": (b'{"traceEvents": [1, 2]}', "traceEvents[0]"),
    "truncated JSON": (b'{"traceEvents": [{"ph": "X", "name": "a"', "not valid JSON"),
}


@pytest.mark.parametrize("content,reason", CASES.values(), ids=list(CASES))
def test_bad_file_raises_trace_format_error_naming_file(
    tmp_path: Path, content: bytes, reason: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(TraceFormatError) as info:
        traceviz.load(path)
    assert str(path) in str(info.value)
    assert reason in str(info.value)


def test_truncated_gzip(tmp_path: Path) -> None:
    path = tmp_path / "cut.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": []}).encode() * 50)[:30])
    with pytest.raises(TraceFormatError, match="gzip"):
        traceviz.load(path)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="no such file"):
        traceviz.load(tmp_path / "nope.json")
    with pytest.raises(TraceFormatError, match="directory"):
        traceviz.load(tmp_path)


def test_nan_and_infinity_literals_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "nan.json"
    path.write_text(
        '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, '
        '"ts": 1, "dur": NaN, "args": {"est. achieved occupancy %": Infinity}}]}'
    )
    trace = traceviz.load(path)
    assert trace.kernels.occupancy_pct[0] == float("inf")


def test_cli_prints_one_line_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.json"
    path.write_text("{")
    assert main(["summary", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err and "Traceback" not in err


@pytest.mark.skipif(not SMALL.exists(), reason=f"corpus not found at {CORPUS}")
@HOSTILE_SETTINGS
@given(mutation=MUTATIONS, gz=st.booleans())
def test_mutated_real_traces_load_or_raise_trace_format_error(
    tmp_path: Path, mutation: tuple[str, int, bytes], gz: bool
) -> None:
    source = TINY_GZ if gz else SMALL
    path = tmp_path / ("mutant.json.gz" if gz else "mutant.json")
    path.write_bytes(mutate(source.read_bytes(), *mutation))
    load_or_format_error(path)


@pytest.mark.skipif(not SMALL.exists(), reason=f"corpus not found at {CORPUS}")
@settings(
    max_examples=100, deadline=5000, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    field=st.sampled_from(["ph", "cat", "name", "pid", "tid", "ts", "dur", "args", "id"]),
    value=ODD_VALUES,
    index=st.integers(min_value=0, max_value=10**6),
)
def test_events_with_odd_field_values(
    tmp_path: Path, field: str, value: object, index: int
) -> None:
    doc = json.loads(SMALL.read_text())
    events = doc["traceEvents"]
    events[index % len(events)][field] = value
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(doc))
    load_or_format_error(path)


HOSTILE = ("nesting", "huge_int", "nan_literal", "bom", "negative_dur")
FIELDS = ("ts", "dur", "pid", "tid", "correlation", "External id", "stream", "grid", "Input Dims")
TOP_LEVEL = frozenset({"ts", "dur", "pid", "tid"})
NUMERIC_FIELDS = frozenset({"ts", "dur", "correlation", "External id", "stream"})


def _hostile_text(how: str, event_index: int, field: str, depth: int, exponent: int) -> str:
    """The small real trace with one hostile change to one event."""
    doc = json.loads(SMALL.read_text())
    event = doc["traceEvents"][event_index % len(doc["traceEvents"])]
    target = event if field in TOP_LEVEL else event.setdefault("args", {})
    value: object = {
        "nesting": "__DEEP__",
        "huge_int": (-1) ** exponent * 10**exponent,
        "nan_literal": [float("nan"), float("inf"), float("-inf")][exponent % 3],
        "bom": target.get(field, 0),
        "negative_dur": -(10**exponent % 10**6) - 1,
    }[how]
    target["dur" if how == "negative_dur" else field] = value
    text = json.dumps(doc)  # writes NaN / Infinity / -Infinity literals
    if how == "nesting":
        text = text.replace('"__DEEP__"', "[" * depth + "]" * depth)
    if how == "bom":
        text = "\ufeff" + text
    return text


@pytest.mark.skipif(not SMALL.exists(), reason=f"corpus not found at {CORPUS}")
@settings(
    max_examples=80,
    deadline=None,
    derandomize=True,  # the same examples on every run
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    how=st.sampled_from(HOSTILE),
    event_index=st.integers(min_value=0, max_value=10**6),
    field=st.sampled_from(FIELDS),
    depth=st.integers(min_value=1, max_value=3000),
    exponent=st.integers(min_value=15, max_value=40),
    gz=st.booleans(),
)
def test_hostile_changes_to_a_real_trace(
    tmp_path: Path, how: str, event_index: int, field: str, depth: int, exponent: int, gz: bool
) -> None:
    """Nesting, huge integers, NaN/Infinity, a BOM, negative durations: the trace loads with
    every event accounted for and no negative duration, or one error names the file."""
    from traceviz.analysis.summary import summarize

    data = _hostile_text(how, event_index, field, depth, exponent).encode()
    path = tmp_path / ("hostile.json.gz" if gz else "hostile.json")
    path.write_bytes(gzip.compress(data) if gz else data)
    try:
        trace = traceviz.load(path)
    except TraceFormatError as err:
        assert str(path) in str(err) and "\n" not in str(err)
        # Only two hostile changes are errors: nesting past the decoder's limit, and an array
        # where a number belongs (a numeric field); any other error is a bug.
        assert how == "nesting", err
        assert ("nested more than" in err.reason and depth > 900) or (
            "not a profiler trace" in err.reason and field in NUMERIC_FIELDS
        ), err
        return
    assert trace.stats.accounted == trace.stats.events_in
    for table in (trace.kernels, trace.ops, trace.launches, trace.spans):
        durs = table["dur_us"].to_numpy(dtype=float)
        assert not (durs < 0).any()
    if how == "negative_dur":
        assert trace.stats.ignored.get("bad_duration", 0) <= 1
    assert summarize(trace).kernel_time_us >= 0
