"""Bad and hostile input: one TraceFormatError naming the file and the problem (the CLI prints
one line and exits 2), or a counted-and-ignored event; mutated real traces never raise anything
else and never hang; bounded memory for gzip bombs; a closed pipe exits quietly; JSON counts are
integers.

traceviz.parse.read: a plain file's bytes are exactly the file, also when it grows while
read; the two decoders (decode_events: whole; decode_batches: in batches) share one document
check (BOM, bare array or object) and one strict decode: on every form of document they return
the same events and header, and fail with the same clear error. The batched parse (issue 14):
whatever the batch size, every table, the metadata and the event counts are exactly those of a
one-batch parse; errors name the event by its index in the whole file. Importing the parser
(pandas, numpy, pyarrow) runs with the cyclic collector paused, and leaves it as it was: on
when it was on, off when the program had turned it off."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import traceviz
from tests.conftest import (
    CORPUS,
    SAMPLES,
    corpus_files,
    corpus_params,
    kernel,
    launch,
    op,
    read_json,
    write_trace,
)
from tests.mutation_fixtures import (
    HOSTILE_SETTINGS,
    MUTATIONS,
    ODD_VALUES,
    load_or_format_error,
    mutate,
)
from tests.test_table_store import assert_same_trace
from traceviz import TraceFormatError, UsageError
from traceviz.cli import EXIT_PIPE_CLOSED, main
from traceviz.parse import load_trace, read, readers
from traceviz.parse.build import impossible
from traceviz.parse.events import Event, TraceHeader
from traceviz.parse.read import _read_plain, decode_events, read_bytes
from traceviz.parse.structs import StructSource
from traceviz.report.json_numbers import whole_counts
from traceviz.schema import Kernels, Ops
from traceviz.settings import MAX_BYTES_ENV, parse_size
from traceviz.trace import Trace

SMALL = CORPUS / "nvidia" / "v100_small_plain.json"
TINY_GZ = CORPUS / "amd" / "mi300x_compiled_llama_block_tiny.json.gz"
RUN = SAMPLES / "mlp"
SAMPLE_TRACES = sorted(SAMPLES.glob("*/*.json.gz"))
needs_corpus = pytest.mark.skipif(not SMALL.exists(), reason=f"corpus not found at {CORPUS}")


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _one_line_error(err: str, *needles: str) -> None:
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, (needle, err)


def _conserved(trace: Any) -> None:
    assert trace.stats.accounted == trace.stats.events_in


# -- nesting --------------------------------------------------------------------------------


def _deep_doc(depth: int, *, nan: bool = False) -> str:
    dur = "NaN" if nan else "1"
    value = "[" * depth + "]" * depth
    return (
        '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, '
        f'"ts": 0, "dur": {dur}, "args": {{"deep": {value}}}}}]}}'
    )


@pytest.mark.parametrize("nan", [False, True], ids=["plain", "with-NaN"])
def test_args_nested_5000_deep_is_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], nan: bool
) -> None:
    path = tmp_path / "deep.json"
    path.write_text(_deep_doc(5000, nan=nan))
    with pytest.raises(TraceFormatError, match="nested more than") as info:
        traceviz.load(path)
    assert str(path) in str(info.value)
    code, out, err = _cli(capsys, "summary", str(path))
    assert code == 2 and out == ""
    _one_line_error(err, str(path), "nested")


def test_moderate_nesting_in_unread_args_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "nested.json"
    path.write_text(_deep_doc(200))
    trace = traceviz.load(path)
    assert len(trace.ops) == 1
    _conserved(trace)


# -- NaN / Infinity -------------------------------------------------------------------------


def test_nan_and_infinity_with_raw_text_fields(tmp_path: Path) -> None:
    """grid/block and Input Dims are kept as raw JSON text; NaN/Infinity anywhere used to make
    the lenient decoder fail with "expected `raw`, got `array`"."""
    events = [
        op("aten::add", 0, 10, **{"Input Dims": [[2, 3], [2, 3]], "External id": 5}),
        launch("cudaLaunchKernel", 1, 2, 9),
        kernel("k", 4, 3, 9, grid=[4, 1, 1], block=[128, 1, 1], **{"External id": 5}),
        kernel("k2", 8, 1, 10, grid=[1, 1, 1], block=[32, 1, 1]),
    ]
    text = json.dumps({"traceEvents": events})
    text = text.replace('"dur": 1, "args": {"device"', '"dur": NaN, "args": {"device"', 1)
    text = text.replace('"grid": [1, 1, 1]', '"grid": [Infinity, 1, 1]', 1)
    assert "NaN" in text and "Infinity" in text
    path = tmp_path / "nan.json"
    path.write_text(text)
    trace = traceviz.load(path)
    _conserved(trace)
    kernels = trace.kernels.set_index(Kernels.name)
    assert kernels.loc["k", Kernels.grid] == "[4,1,1]"
    assert kernels.loc["k", Kernels.block] == "[128,1,1]"
    assert np.isnan(kernels.loc["k2", Kernels.dur_us])  # NaN duration: row kept, unknown
    assert "Infinity" in kernels.loc["k2", Kernels.grid]
    assert trace.ops[Ops.input_dims].iloc[0] == "[[2,3],[2,3]]"


def test_infinity_literal_keeps_its_value(tmp_path: Path) -> None:
    path = tmp_path / "inf.json"
    event = kernel("k", 1, 2, 1, **{"est. achieved occupancy %": 50})
    path.write_text(json.dumps({"traceEvents": [event]}).replace("50", "-Infinity"))
    assert traceviz.load(path).kernels[Kernels.occupancy_pct][0] == float("-inf")


def test_number_beyond_float_range_is_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "e400.json"
    path.write_text(
        json.dumps({"traceEvents": [kernel("k", 1, 2, 1)]}).replace('"ts": 1', '"ts": 1e400')
    )
    code, _, err = _cli(capsys, "summary", str(path))
    assert code == 2
    _one_line_error(err, str(path), "out of range", "traceEvents[0].ts")


def test_integers_beyond_64_bits_load(tmp_path: Path) -> None:
    big = 10**30
    events = [launch("cudaLaunchKernel", 1, 1, big), kernel("k", 3, 2, big, stream=-big)]
    trace = traceviz.load(write_trace(tmp_path / "big.json", events))
    _conserved(trace)
    assert trace.kernels[Kernels.correlation].isna().all()  # not representable: missing
    assert trace.kernels[Kernels.dur_us].tolist() == [2.0]


# -- byte-order mark ------------------------------------------------------------------------


@pytest.mark.parametrize("compress", [False, True], ids=["json", "gzip"])
@pytest.mark.parametrize("bare", [False, True], ids=["document", "bare-array"])
def test_utf8_bom_is_accepted(tmp_path: Path, compress: bool, bare: bool) -> None:
    events = [op("aten::mm", 0, 10), kernel("k", 2, 3, 1), launch("cudaLaunchKernel", 1, 1, 1)]
    body = json.dumps(events if bare else {"traceEvents": events}).encode()
    plain = tmp_path / "plain.json"
    plain.write_bytes(body)
    data = b"\xef\xbb\xbf" + b"\n " + body
    path = tmp_path / ("bom.json.gz" if compress else "bom.json")
    path.write_bytes(gzip.compress(data) if compress else data)
    trace, reference = traceviz.load(path), traceviz.load(plain)
    _conserved(trace)
    assert trace.stats.rows == reference.stats.rows
    assert trace.kernels[Kernels.launch_row].notna().all()


# -- negative and infinite durations --------------------------------------------------------


def test_negative_and_infinite_durations_are_counted_and_ignored(tmp_path: Path) -> None:
    good = [op("aten::mm", 0, 100), launch("cudaLaunchKernel", 10, 5, 1), kernel("k", 20, 50, 1)]
    bad = [
        kernel("neg", 30, -500, 2),
        op("aten::neg", 5, -10),
        launch("cudaLaunchKernel", 40, -1, 3),
        {**kernel("inf", 60, 1, 4), "dur": 1e308 * 10},
    ]
    path = write_trace(tmp_path / "neg.json", good + bad)
    trace = traceviz.load(path)
    assert trace.stats.ignored["bad_duration"] == len(bad)
    _conserved(trace)
    assert list(trace.kernels[Kernels.name]) == ["k"]
    for table in (trace.kernels, trace.ops, trace.launches, trace.spans):
        durs = table["dur_us"].to_numpy(dtype=float)
        assert not (durs < 0).any() and np.isfinite(durs[~np.isnan(durs)]).all()


def test_negative_duration_never_makes_a_figure_negative_or_over_100_percent(
    tmp_path: Path,
) -> None:
    events = [
        op("ProfilerStep#1", 0, 1000, cat="user_annotation"),
        op("aten::mm", 10, 900),
        launch("cudaLaunchKernel", 20, 5, 1),
        kernel("k", 30, 100, 1),
        kernel("bogus", 200, -500, 2),
    ]
    a = write_trace(tmp_path / "a.json", events)
    b = write_trace(tmp_path / "b.json", events[:-1])
    data = traceviz.compare(a, b).metrics
    rows = data.set_index("name")
    assert rows.loc["kernel_time_us", "a"] == rows.loc["kernel_time_us", "b"] == 100
    for name in ("kernel_time_us", "device_idle_us", "kernel_time_per_step_us"):
        assert rows.loc[name, "a"] >= 0
    idle_share = rows.loc["device_idle_us", "a"] / rows.loc["step_time_us", "a"]
    assert 0 <= idle_share <= 1


@needs_corpus
def test_negated_kernel_duration_in_a_real_trace(tmp_path: Path) -> None:
    doc = read_json(SMALL)
    original = traceviz.load(SMALL)
    kernels = [e for e in doc["traceEvents"] if e.get("cat") in ("kernel", "Kernel")]
    kernels[3]["dur"] = -abs(kernels[3]["dur"]) - 500
    path = tmp_path / "negated.json"
    path.write_text(json.dumps(doc))
    trace = traceviz.load(path)
    _conserved(trace)
    assert trace.stats.ignored["bad_duration"] == 1
    assert len(trace.kernels) == len(original.kernels) - 1
    assert 0 <= trace.kernels[Kernels.dur_us].sum() <= original.kernels[Kernels.dur_us].sum()


@pytest.mark.parametrize(
    "path",
    corpus_params() + [pytest.param(p, id=p.parent.name + "/" + p.name) for p in SAMPLE_TRACES],
)
def test_real_traces_have_no_impossible_durations(path: Path | None) -> None:
    """The rule drops nothing a real profiler wrote (decoded only: the full load is tested
    in test_parse_corpus.py)."""
    assert path is not None
    events, _ = decode_events(path, read_bytes(path))
    assert len(events) > 0
    assert not impossible(StructSource(events)).any()


# -- decompressed-size cap ------------------------------------------------------------------


def _gzip_bomb(path: Path, inflated: int) -> Path:
    """A valid trace document padded with whitespace to ``inflated`` bytes, written in chunks."""
    head, tail = b'{"traceEvents": [', b"]}"
    chunk = b" " * 2**20
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write(head)
        left = inflated - len(head) - len(tail)
        while left > 0:
            out.write(chunk[: min(left, len(chunk))])
            left -= len(chunk)
        out.write(tail)
    return path


def test_gzip_bomb_stops_at_the_cap_with_bounded_memory(tmp_path: Path) -> None:
    bomb = _gzip_bomb(tmp_path / "bomb.json.gz", 64 * 2**20)
    assert bomb.stat().st_size < 2**20  # a small file that inflates 64 MiB
    cap = 2**20
    tracemalloc.start()
    try:
        with pytest.raises(TraceFormatError) as info:
            traceviz.load(bomb, max_bytes=cap)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert str(bomb) in str(info.value) and f"{cap:,} bytes" in str(info.value)
    assert peak < 24 * 2**20  # the cap plus one read chunk, never the 64 MiB


def test_cap_from_environment_and_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bomb = _gzip_bomb(tmp_path / "bomb.json.gz", 3 * 2**20)
    monkeypatch.setenv(MAX_BYTES_ENV, "1M")
    with pytest.raises(TraceFormatError, match="1,048,576 bytes"):
        traceviz.load(bomb)
    monkeypatch.delenv(MAX_BYTES_ENV)
    assert traceviz.load(bomb).stats.events_in == 0  # under the default cap: an empty trace
    code, out, err = _cli(capsys, "summary", str(bomb), "--max-bytes", "2MiB")
    assert code == 2 and out == ""
    _one_line_error(err, str(bomb), "2,097,152 bytes", "--max-bytes")
    code, _, err = _cli(capsys, "summary", str(bomb), "--max-bytes", "lots")
    assert code == 2
    _one_line_error(err, "--max-bytes", "not a size")


def test_plain_file_over_the_cap(tmp_path: Path) -> None:
    path = write_trace(tmp_path / "t.json", [op("a", 0, 1)] * 50)
    size = path.stat().st_size
    with pytest.raises(TraceFormatError, match=f"is {size:,} bytes"):
        traceviz.load(path, max_bytes=size - 1)
    assert len(traceviz.load(path, max_bytes=size).ops) == 50


@needs_corpus
def test_real_gzip_trace_at_its_exact_size(tmp_path: Path) -> None:
    inflated = len(gzip.decompress(TINY_GZ.read_bytes()))
    assert len(read_bytes(TINY_GZ, limit=inflated)) == inflated
    with pytest.raises(TraceFormatError, match="inflates to more"):
        read_bytes(TINY_GZ, limit=inflated - 1)


def test_concatenated_gzip_members_are_one_file(tmp_path: Path) -> None:
    body = json.dumps({"traceEvents": [op("a", 0, 1), op("b", 2, 1)]}).encode()
    path = tmp_path / "multi.json.gz"
    path.write_bytes(gzip.compress(body[:20]) + gzip.compress(body[20:]))
    assert len(traceviz.load(path).ops) == 2


@pytest.mark.parametrize(
    "text,size",
    [("100", 100), ("1k", 1024), ("512M", 512 * 2**20), ("4GiB", 4 * 2**30), ("1.5G", 3 * 2**29)],
)
def test_parse_size(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "0", "-1", "1X", "G"])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(UsageError):
        parse_size(text)


@pytest.mark.parametrize("bad", [0, -5, 1.5, True])
def test_load_rejects_a_bad_max_bytes(tmp_path: Path, bad: Any) -> None:
    path = write_trace(tmp_path / "t.json", [op("a", 0, 1)])
    with pytest.raises(UsageError, match="max_bytes"):
        traceviz.load(path, max_bytes=bad)


# -- error messages -------------------------------------------------------------------------


def test_error_stays_on_one_line_when_the_file_name_has_a_newline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "two\nlines.json"
    path.write_text("{")
    code, _, err = _cli(capsys, "summary", str(path))
    assert code == 2
    _one_line_error(err, "two lines.json", "not valid JSON")


# -- -o and closed pipes --------------------------------------------------------------------

needs_run = pytest.mark.skipif(not RUN.is_dir(), reason=f"sample run missing: {RUN}")


@needs_run
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_output_into_missing_directory_or_onto_a_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    missing = tmp_path / "missing" / "dir" / "report.txt"
    code, out, err = _cli(capsys, "compare", str(RUN), "--format", fmt, "-o", str(missing))
    assert code == 2 and out == ""
    _one_line_error(err, str(missing), "no such directory")
    assert not missing.parent.exists()
    code, out, err = _cli(capsys, "compare", str(RUN), "--format", fmt, "-o", str(tmp_path))
    assert code == 2
    _one_line_error(err, str(tmp_path), "is a directory")
    target = tmp_path / "ok.out"
    code, _, err = _cli(capsys, "compare", str(RUN), "--format", fmt, "-o", str(target))
    assert code == 0 and err == "" and target.stat().st_size > 0


def test_output_error_comes_before_reading_the_traces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "missing" / "x.json"
    code, _, err = _cli(capsys, "compare", "nope-a.json", "nope-b.json", "-o", str(bad))
    assert code == 2
    _one_line_error(err, "no such directory")


@needs_run
@pytest.mark.parametrize(
    "argv",
    [
        ["compare", str(RUN)],
        ["compare", str(RUN), "--format", "json", "--fail-on", "warning"],
        ["summary", str(RUN / "eager.pt.trace.json.gz")],
        ["summary", str(RUN / "eager.pt.trace.json.gz"), "--format", "json"],
    ],
    ids=["compare-text", "compare-json-fail-on", "summary-text", "summary-json"],
)
def test_closed_pipe_exits_quietly_with_141(argv: list[str]) -> None:
    """The reader is gone before the first write (``| head -0``), so the result does not
    depend on how much fits in the pipe."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "traceviz.cli", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "COLUMNS": "120"},
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == EXIT_PIPE_CLOSED
    assert err == ""


def test_broken_pipe_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Closed:
        def write(self, text: str) -> int:
            raise BrokenPipeError

        def flush(self) -> None:
            raise BrokenPipeError

    path = write_trace(tmp_path / "t.json", [op("a", 0, 1)])
    monkeypatch.setattr(sys, "stdout", Closed())
    assert main(["summary", str(path), "--format", "json"]) == EXIT_PIPE_CLOSED


# -- integers in JSON -----------------------------------------------------------------------


def _whole_floats(data: Any, key: str = "") -> list[str]:
    """Paths of whole floats under count keys (or count/bytes unit rows)."""
    found: list[str] = []
    if isinstance(data, list):
        for item in data:
            found += _whole_floats(item, key)
    elif isinstance(data, dict):
        unit_counts = data.get("unit") in ("count", "bytes")
        for k, v in data.items():
            counted = unit_counts and k in ("a", "b", "delta", "value")
            if isinstance(v, float) and v.is_integer() and (counted or _count_key(k)):
                found.append(f"{key}.{k}")
            found += _whole_floats(v, f"{key}.{k}")
    return found


def _count_key(key: str) -> bool:
    return key in ("calls", "count", "bytes", "frame_id", "recompile_id", "steps") or key.endswith(
        ("_count", "_calls", "_bytes")
    )


@needs_run
def test_compare_and_summary_json_write_counts_as_integers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _cli(capsys, "compare", str(RUN), "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert _whole_floats(data) == []
    metrics = {m["name"]: m for m in data["metrics"]}
    assert isinstance(metrics["kernel_count"]["a"], int)
    assert isinstance(metrics["kernel_time_us"]["a"], float)
    assert all(isinstance(r["calls"], int) for r in data["regions"])
    code, out, _ = _cli(
        capsys, "summary", str(RUN / "compiled.pt.trace.json.gz"), "--format", "json"
    )
    assert code == 0
    summary = json.loads(out)
    assert _whole_floats(summary) == []
    assert isinstance(summary["kernel_count"], int)


def test_whole_counts_changes_only_counts() -> None:
    data = {
        "metrics": [
            {"unit": "count", "a": 3.0, "b": 2.5, "delta": -0.5, "ratio": 1.0},
            {"unit": "us", "a": 3.0, "b": 4.0, "delta": 1.0, "ratio": 2.0},
        ],
        "regions": [{"calls": 3.0, "wall_us": 9.0, "kernel_count": 15.0, "frame_id": None}],
        "share": 1.0,
        "total_bytes": 1024.0,
    }
    assert whole_counts(data) == data  # equal as numbers ...
    out = whole_counts(data)
    assert type(out["metrics"][0]["a"]) is int and type(out["metrics"][0]["b"]) is float
    assert type(out["metrics"][0]["ratio"]) is float
    assert all(type(v) is float for k, v in out["metrics"][1].items() if k != "unit")
    assert type(out["regions"][0]["calls"]) is int and type(out["regions"][0]["wall_us"]) is float
    assert type(out["share"]) is float and type(out["total_bytes"]) is int


# -- bad files and mutated real traces ---------------------------------------------------------

CASES = {
    "not JSON": (b"this is not json", "not valid JSON"),
    "empty": (b"", "empty file"),
    "whitespace": (b"  \n ", "empty file"),
    "not a trace": (b'{"hello": 1}', "traceEvents"),
    "events of wrong type": (b'{"traceEvents": {"a": 1}}', "traceEvents"),
    "scalar document": (b"42", "not a profiler trace"),
    "event not an object": (b'{"traceEvents": [1, 2]}', "traceEvents[0]"),
    "truncated JSON": (b'{"traceEvents": [{"ph": "X", "name": "a"', "not valid JSON"),
    "cut after a brace": (b"{", "not valid JSON"),
    "malformed JSON": (b'{"traceEvents": [}', "not valid JSON"),
    "truncated gzip": (gzip.compress(b'{"traceEvents": []}' * 50)[:30], "corrupt gzip"),
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
    assert "jSON" not in str(info.value)  # the decoder's "JSON is malformed" keeps its capitals


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="no such file"):
        traceviz.load(tmp_path / "nope.json")
    with pytest.raises(TraceFormatError, match="directory"):
        traceviz.load(tmp_path)


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


# --- traceviz.parse.read: the two decoders, plain reads, batches ------------------------

EVENTS = [op("aten::mm", 0.0, 5.0), kernel("gemm", 10.0, 3.0, 1), op("aten::relu", 20.0, 2.0)]


def _both(path: Path, data: bytes) -> tuple[tuple[list[Event], Any], tuple[list[Event], Any]]:
    events, doc = read.decode_events(path, data)
    batches, count, header = read.decode_batches(path, data)
    batched = [event for batch in batches for event in batch]
    assert count == len(batched)
    return (events, doc), (batched, header)


def _same(a: list[Event], b: list[Event]) -> None:
    assert [msgspec.json.encode(e) for e in a] == [msgspec.json.encode(e) for e in b]


@pytest.mark.parametrize("bom", [False, True], ids=["plain", "bom"])
@pytest.mark.parametrize("bare", [False, True], ids=["document", "bare-array"])
@pytest.mark.parametrize("nan", [False, True], ids=["finite", "nan-literal"])
def test_both_decoders_read_every_form_alike(bom: bool, bare: bool, nan: bool) -> None:
    text = json.dumps(EVENTS if bare else {"traceName": "t", "traceEvents": EVENTS}, indent=1)
    if nan:
        text = text.replace('"dur": 2.0', '"dur": NaN')
    data = (read.UTF8_BOM if bom else b"") + b"  \n" + text.encode()
    (events, doc), (batched, header) = _both(Path("t.json"), data)
    assert len(events) == len(EVENTS)
    assert [e.name for e in events] == [e["name"] for e in EVENTS]
    _same(events, batched)
    assert (doc is None) == bare and (header is None) == bare
    if not bare:
        assert doc.traceName == header.traceName == "t"


@pytest.mark.parametrize(
    "text",
    ['{"traceEvents": 5}', "[1, 2]", '{"traceEvents": [{"ts": {"a": 1}}]}'],
    ids=["events-not-a-list", "bare-not-events", "bad-field"],
)
def test_both_decoders_reject_the_wrong_shape_naming_the_file(text: str) -> None:
    path = Path("odd.json")
    with pytest.raises(TraceFormatError, match="not a profiler trace") as whole:
        read.decode_events(path, text.encode())
    with pytest.raises(TraceFormatError, match="not a profiler trace") as batched:
        batches, _, _ = read.decode_batches(path, text.encode())
        for _ in batches:
            pass
    assert "odd.json" in str(whole.value) and "odd.json" in str(batched.value)


def test_both_decoders_agree_on_a_real_sample() -> None:
    path = SAMPLES / "attention" / "compiled.pt.trace.json.gz"
    data = read.read_bytes(path)
    (events, doc), (batched, header) = _both(path, data)
    assert len(events) > 0
    _same(events, batched)
    fields = TraceHeader.__struct_fields__  # every top-level key but the events
    assert [getattr(doc, f) for f in fields] == [getattr(header, f) for f in fields]
    # the Kineto reader (parse/readers.py) reads them into the trace load_trace gives
    assert_same_trace(readers.KINETO.read(path, data), load_trace(path, cache=False))


class _GrowsAfterFstat:
    """A file handle whose file gains ``extra`` bytes between the fstat and the first read
    (a profiler still writing the trace)."""

    def __init__(self, path: Path, extra: bytes) -> None:
        self._path, self._extra = path, extra
        self._handle = path.open("rb")
        self._grown = False

    def fileno(self) -> int:
        return self._handle.fileno()

    def read(self, n: int) -> bytes:
        if not self._grown:
            with self._path.open("ab") as out:
                out.write(self._extra)
            self._grown = True
        data: bytes = self._handle.read(n)
        return data

    def close(self) -> None:
        self._handle.close()


def _grown_read(tmp_path: Path, body: bytes, extra: bytes, cap: int) -> Any:
    path = tmp_path / "t.json"
    path.write_bytes(body)
    handle = _GrowsAfterFstat(path, extra)
    try:
        return _read_plain(path, handle, cap)
    finally:
        handle.close()


def test_reads_exactly_the_file(tmp_path: Path) -> None:
    body = b'{"traceEvents": []}' + b" " * 70_000
    path = tmp_path / "t.json"
    path.write_bytes(body)
    assert read_bytes(path) == body


def test_a_file_that_grows_while_read_is_read_whole(tmp_path: Path) -> None:
    body, extra = b"x" * 50_000, b"y" * 30_000
    assert _grown_read(tmp_path, body, extra, cap=1_000_000) == body + extra


def test_a_file_that_grows_past_the_cap_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="grew while read"):
        _grown_read(tmp_path, b"x" * 1_000, b"y" * 2_000, cap=2_500)


def test_growth_up_to_the_cap_is_kept(tmp_path: Path) -> None:
    data = _grown_read(tmp_path, b"x" * 1_000, b"y" * 1_500, cap=2_500)
    assert len(data) == 2_500


ONE_BATCH = 10**9


def _load(path: Path, batch: int, monkeypatch: pytest.MonkeyPatch) -> Trace:
    with monkeypatch.context() as patch:
        patch.setattr(read, "BATCH_EVENTS", batch)
        return traceviz.load(path, cache=False)


def _assert_same(a: Trace, b: Trace) -> None:
    assert_same_trace(b, a)
    assert b.stats.events_in == b.stats.accounted


def test_corpus_parses_the_same_in_small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    files = corpus_files()
    if not files:
        pytest.skip(f"corpus not found at {CORPUS}")
    checked = 0
    for path in files:
        try:
            whole = _load(path, ONE_BATCH, monkeypatch)
        except TraceFormatError as err:  # a deliberately broken file fails the same way
            with pytest.raises(TraceFormatError) as again:
                _load(path, 1000, monkeypatch)
            assert str(again.value) == str(err)
            continue
        _assert_same(whole, _load(path, 1000, monkeypatch))
        checked += 1
    assert checked >= 10


@pytest.mark.parametrize("batch", [1, 7, 64])
def test_sample_runs_parse_the_same_in_tiny_batches(
    batch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = sorted(SAMPLES.glob("*/*.pt.trace.json.gz"))
    assert paths
    for path in paths[:6]:
        _assert_same(_load(path, ONE_BATCH, monkeypatch), _load(path, batch, monkeypatch))


def _mixed_events() -> list[dict]:
    """Ops on two threads (one written as "1" and 1), launches, kernels, a memcpy, flows,
    metadata and a [memory] instant, spread so every batch of a few events holds a mix."""
    events: list[dict] = [
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "worker"}},
    ]
    for i in range(12):
        tid = 1 if i % 3 else "1"
        events.append(op(f"aten::op{i % 4}", 100.0 * i, 50.0, tid=tid, **{"External id": i + 1}))
        events.append(op("aten::inner", 100.0 * i + 5, 10.0, tid=tid))
        events.append(launch("cudaLaunchKernel", 100.0 * i + 6, 2.0, 500 + i, tid=tid))
        events.append(kernel(f"k{i % 5}", 100.0 * i + 20, 5.0, 500 + i))
        events.append({"ph": "s", "id": i, "pid": 1, "tid": 1, "ts": 100.0 * i, "cat": "ac2g"})
    events.append(
        kernel("Memcpy HtoD (Pageable -> Device)", 2000.0, 3.0, 999, cat="gpu_memcpy", bytes=64)
    )
    events.append({"ph": "i", "name": "[memory]", "pid": 1, "tid": 2, "ts": 5.0,
                   "args": {"Bytes": 512, "Device Type": 1, "Device Id": 0}})  # fmt: skip
    events.append(op("bad", 5.0, -3.0, tid=2))  # an impossible duration: ignored, counted
    return events


@pytest.mark.parametrize("batch", [1, 2, 3, 5, 8])
def test_hand_made_trace_same_in_any_batch_size(
    batch: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_trace(tmp_path / "mixed.json", _mixed_events())
    whole = _load(path, ONE_BATCH, monkeypatch)
    _assert_same(whole, _load(path, batch, monkeypatch))
    assert whole.stats.ignored == {"bad_duration": 1, "flow": 12, "metadata": 1}
    assert list(whole.ops["thread"].cat.categories) == ["1/1", "1/2"]


@pytest.mark.parametrize("bare", [False, True])
def test_a_bad_event_is_named_by_its_index_in_the_file(
    bare: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = [op(f"op{i}", float(i), 1.0) for i in range(12)]
    events[10]["ts"] = {"not": "a number"}
    doc: object = events if bare else {"traceEvents": events}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    where = "$[10].ts" if bare else "$.traceEvents[10].ts"
    for batch in (4, ONE_BATCH):
        with pytest.raises(TraceFormatError, match=r"not a profiler trace") as err:
            _load(path, batch, monkeypatch)
        assert where in str(err.value), str(err.value)


def test_invalid_utf8_in_a_later_batch_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = json.dumps({"traceEvents": [op(f"op{i}", float(i), 1.0) for i in range(12)]})
    data = text.encode().replace(b"op11", b"op\x8011")
    path = tmp_path / "bad-utf8.json.gz"
    path.write_bytes(gzip.compress(data))
    messages = set()
    for batch in (4, ONE_BATCH):
        with pytest.raises(TraceFormatError) as err:
            _load(path, batch, monkeypatch)
        messages.add(str(err.value))
    assert len(messages) == 1, messages  # the same message whatever the batch size
    assert str(path) in messages.pop()


def test_nan_in_a_later_batch_takes_the_lenient_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = json.dumps({"traceEvents": [op(f"op{i}", float(i), 1.0) for i in range(12)]})
    path = tmp_path / "nan.json"
    path.write_text(text.replace('"dur": 1.0', '"dur": NaN'))
    small, whole = _load(path, 4, monkeypatch), _load(path, ONE_BATCH, monkeypatch)
    _assert_same(whole, small)
    assert whole.ops["dur_us"].isna().sum() == 12


# --- importing the parser: the cyclic collector paused -----------------------------------

# Counts, in a fresh interpreter, the collections that start once numpy is being imported
# (the heavy part: numpy, pandas, pyarrow, the parser) until the statement ends, and reports
# whether the collector is on afterwards. The one collection the resumed collector may run
# at once (for what the paused import allocated) is allowed; an import with the collector on
# runs dozens.
PROBE = """
import gc, json, sys
if sys.argv[2] == "off":
    gc.disable()
runs = []
def count(phase, info):
    if phase == "start" and "numpy" in sys.modules:
        runs.append(info["generation"])
gc.callbacks.append(count)
assert "numpy" not in sys.modules
exec(sys.argv[1])
gc.callbacks.clear()
print(json.dumps({"collections": len(runs), "enabled": gc.isenabled(),
                  "pandas": "pandas" in sys.modules}))
"""

IMPORTS = {
    "the parser": "from traceviz.parse import load_trace",
    "traceviz.compare": "import traceviz; traceviz.compare",
    "traceviz.Trace": "import traceviz; traceviz.Trace",
}


def _probe(statement: str, collector: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, statement, collector],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("what", sorted(IMPORTS))
def test_heavy_import_runs_without_collections_and_turns_it_back_on(what: str) -> None:
    result = _probe(IMPORTS[what], "on")
    assert result["pandas"] is True  # the import did import pandas...
    assert result["collections"] <= 1  # ...with no collection walking it while it ran
    assert result["enabled"] is True


def test_a_collector_the_program_turned_off_stays_off() -> None:
    result = _probe(IMPORTS["the parser"], "off")
    assert result == {"collections": 0, "enabled": False, "pandas": True}


def test_without_the_pause_the_same_import_does_collect() -> None:
    """The probe can see collections: importing pandas itself with the collector on runs
    many (else the tests above could not fail)."""
    result = _probe("import pandas, numpy", "on")
    assert isinstance(result["collections"], int) and result["collections"] > 1
