"""The native parse path (traceviz.parse.native: the C scanner's columns) gives the very tables,
meta and stats of the Python path (msgspec structs), on every real trace (batches scanned when
asked for, and a batch ahead on a worker thread) and on hand-made traces of every odd kind of
value; whatever the scanner refuses is parsed the Python way.

Its fast forms against the general ones they stand for, on made data and real traces:
``native._present`` (two reductions, then an OR of bits) against a ``np.bincount`` per field;
``native._factorize``'s small-range tables (values less the least as indices: the scanner's
codes, ids numbered within a batch) against ``pd.factorize`` (same codes, distinct values in
order of first appearance, first positions and dtypes); ``regions.region_table`` (built in final
order and dtypes) against the raw JSON's marker spans; and the tables whatever
``native.BATCH_EVENTS`` is.

Each test runs with the real extension, and is skipped where it is not built.
"""

from __future__ import annotations

import gzip
import importlib
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pandas as pd
import pytest

from tests.conftest import (
    SAMPLES,
    corpus_files,
    corpus_params,
    kernel,
    launch,
    op,
    read_json,
    write_trace,
)  # fmt: skip
from tests.real_data import SAMPLE_RUNS
from tests.test_table_store import assert_same_trace as assert_same
from traceviz import settings
from traceviz.dense import factorize_in_order
from traceviz.errors import TraceFormatError
from traceviz.parse import load_trace, native, read, regions
from traceviz.parse.build import Collector
from traceviz.parse.columns import _Numbering
from traceviz.parse.events import Event
from traceviz.parse.structs import StructSource
from traceviz.schema import REGIONS_DTYPES, Ops, Regions
from traceviz.trace import Trace

SAMPLE_FILES = sorted(SAMPLES.rglob("*.json.gz"))
REAL = corpus_params() + [pytest.param(p, id=str(p.relative_to(SAMPLES))) for p in SAMPLE_FILES]


def _real_module() -> Any:
    try:
        return importlib.import_module("traceviz.parse._scan")
    except ImportError:
        return None


def test_extension_is_built_under_ci() -> None:
    """CI must never test only the Python path: there a missing extension is a failure."""
    if not os.environ.get("CI"):
        pytest.skip("only checked under CI (env CI set)")
    assert _real_module() is not None, "the C scanner traceviz.parse._scan is not built"


@pytest.fixture
def scanner() -> Any:
    """The built extension (the test is skipped where it is not built)."""
    module = _real_module()
    if module is None:
        pytest.skip("_scan not built")
    return module


def python_trace(path: Path, monkeypatch: pytest.MonkeyPatch) -> Trace:
    """The trace parsed the Python way (TRACEVIZ_NATIVE=0)."""
    with monkeypatch.context() as patch:
        patch.setenv(settings.NATIVE_ENV, "0")
        return load_trace(path, cache=False)


def native_trace(path: Path, module: Any) -> Trace | None:
    """The trace parsed by ``module``'s scanner (``None``: it refused the file)."""
    return native.parse_native(path, read.read_bytes(path), module=module)


def _check(path: Path, scanner: Any, monkeypatch: pytest.MonkeyPatch, *, scanned: bool) -> Trace:
    """Native and Python path agree; ``scanned``: the scanner took the file (else it refused
    it, and load_trace, with that scanner, gave the Python path's trace)."""
    expected = python_trace(path, monkeypatch)
    got = native_trace(path, scanner)
    assert (got is not None) == scanned
    if got is None:
        monkeypatch.setattr(native, "_module", scanner)
        monkeypatch.delenv(settings.NATIVE_ENV, raising=False)
        got = load_trace(path, cache=False)
    assert_same(expected, got)
    return expected


def _scan_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "traceviz-scan"]


@pytest.mark.parametrize("path", REAL)
def test_real_traces_identical(path: Path, scanner: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Also scanned a batch ahead (:func:`traceviz.parse.native._scan_ahead`: the next batch
    scanned on a worker thread while this thread turns the last one into columns), in batches
    of 4099 events so that small traces have several."""
    expected = _check(path, scanner, monkeypatch, scanned=True)
    assert expected.stats.events_in > 0
    monkeypatch.setattr(native, "AHEAD_BYTES", 0)
    monkeypatch.setattr(native, "BATCH_EVENTS", 4099)
    got = native_trace(path, scanner)
    assert got is not None
    assert_same(expected, got)
    assert not _scan_threads()


def test_samples_are_there() -> None:
    assert len(SAMPLE_FILES) >= 10


# ---------------------------------------------------------------------------------------------
# Hand-made traces: one per odd kind of value


def _x(name: Any, ts: Any, dur: Any, *, cat: Any = "cpu_op", pid: Any = 1, tid: Any = 1,
       **args: Any) -> dict:  # fmt: skip
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
            "args": args}  # fmt: skip


def _kernel(name: Any, ts: Any, dur: Any, corr: Any, **args: Any) -> dict:
    args = {"device": 0, "stream": 7, "correlation": corr, **args}
    return _x(name, ts, dur, cat="kernel", pid=0, tid=7, **args)


def _launch(ts: Any, corr: Any, **args: Any) -> dict:
    return _x("cudaLaunchKernel", ts, 2, cat="cuda_runtime", correlation=corr, **args)


BASE = [
    _x("aten::mm", 10, 50, **{"External id": 1, "Input Dims": [[2, 3], [3, 4]]}),
    _launch(12, 100, **{"External id": 1}),
    _kernel("gemm", 20, 30, 100, **{"External id": 1, "grid": [1, 2, 3], "block": [128, 1, 1]}),
    _x("aten::add", 70, 5, **{"External id": 2, "Sequence number": 4, "Fwd thread id": 0}),
]

CASES: dict[str, list[dict]] = {
    "strings_in_ts_dur": [*BASE, _x("a", "80.5", "3"), _x("b", 90, "N/A"), _x("c", "inf", 1)],
    "strings_in_ids": [
        *BASE,
        _launch(95, "0x1f", **{"External id": "7"}),
        _kernel("k2", 96, 1, "0x1f", stream="stream 9", **{"External id": "7"}),
    ],
    "floats_in_ids": [
        *BASE,
        _launch(95, 101.0, **{"External id": 3.7}),
        _kernel("k2", 96, 1, 101.0, device=0.0, **{"registers per thread": 32.0}),
    ],
    "ints_in_names": [*BASE, _x(123, 95, 1), _x(4.5, 96, 1, cat=7), _x(None, 97, 1)],
    "string_pids": [
        *BASE,
        _x("PyTorch Profiler (0)", 0, 200, cat="Trace", pid="Spans", tid="PyTorch Profiler"),
        _x("x", 5, 1, pid="Traces", tid=3),
        _x("y", 6, 1, pid=1.0, tid=1),
    ],
    "null_and_absent": [
        *BASE,
        {"ph": "X", "cat": "cpu_op", "name": "n", "pid": 1, "tid": 1, "ts": 99, "dur": None},
        {"ph": "X", "cat": "cpu_op", "name": None, "pid": None, "ts": 100},
        {"ph": "X", "cat": None, "name": "nocat", "pid": 1, "tid": 1, "ts": 101, "dur": 1},
        {"ph": "X", "cat": "cpu_op", "name": "noargs", "pid": 1, "tid": 1, "ts": 102, "dur": 1},
    ],
    "bad_durations": [*BASE, _x("neg", 95, -5), _kernel("negk", 96, -1.5, 100), _x("ok", 97, 0)],
    "memory_instants": [
        *BASE,
        {
            "ph": "i",
            "name": "[memory]",
            "pid": 1,
            "tid": 1,
            "ts": 15,
            "s": "t",
            "args": {
                "Device Type": 1,
                "Device Id": 0,
                "Bytes": 512,
                "Total Allocated": 512,
                "Total Reserved": 2048,
            },
        },
        {
            "ph": "i",
            "name": "[memory]",
            "pid": 1,
            "tid": 1,
            "ts": 16,
            "args": {"Device Type": "cuda", "Device Id": "0", "Bytes": -512},
        },
        {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 17, "args": {"Device Type": 99}},
        {"ph": "i", "name": "other instant", "pid": 1, "tid": 1, "ts": 18},
        {"ph": "I", "name": 5, "pid": 1, "tid": 1, "ts": 19},
    ],
    "metadata_names": [
        *BASE,
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python3"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main"}},
        {"ph": "M", "name": "thread_name", "pid": "Spans", "tid": 2, "args": {"name": 7}},
        {"ph": "M", "name": "process_sort_index", "pid": 1, "args": {"sort_index": 3}},
        {"ph": "s", "id": 1, "pid": 1, "tid": 1, "ts": 12, "cat": "ac2g", "name": "flow"},
        {"ph": "C", "name": "counter", "pid": 1, "ts": 1, "args": {"value": 3}},
    ],
    "copy_kinds": [
        *BASE,
        _x("Memcpy HtoD (Pageable -> Device)", 90, 3, cat="gpu_memcpy", pid=0, tid=7, bytes=64),
        _x("Memcpy", 91, 3, cat="gpu_memcpy", pid=0, tid=7, kind="DtoH", bytes="64"),
        _x(17, 92, 3, cat="gpu_memcpy", pid=0, tid=7, kind=1),
        _x("Memset (Device)", 93, 1, cat="gpu_memset", pid=0, tid=7, bytes=8),
    ],
    "raw_args": [
        *BASE,
        _x("aten::cat", 95, 1, **{"Input dims": [[1], [2]], "Input type": ["float", ""]}),
        _x("aten::cat", 96, 1, **{"Input Dims": [], "Input dims": [[9]]}),
        _x("aten::to", 97, 1, **{"Concrete Inputs": ["", "7", None], "Input Dims": None}),
        _kernel("k3", 98, 1, 101, grid="weird", block=None),
    ],
    "text_escapes": [
        *BASE,
        _x('caf\u00e9 \u2603 \U0001f600 "quoted" \\ \n', 95, 1),
        _x(
            "kernel_backend",
            96,
            1,
            kernel_backend="triton",
            kernel_file="/tmp/x.py",
            kernel_num_gb=0.25,
        ),
    ],
    "large_ids": [
        *BASE,
        _launch(95, 2**62 + 1, **{"External id": 2**63 - 1}),
        _kernel("k2", 96, 1, 2**62 + 1, **{"External id": -(2**63)}),
        _x("big", 97, 1, **{"Sequence number": 2**53 + 1, "External id": 0}),
    ],
    "legacy_schema": [
        _x("aten::mm", 10, 50, cat="Operator", **{"external id": 5}),
        _x("cudaLaunchKernel", 12, 2, cat="Runtime", correlation=9, **{"external id": 5}),
        _x("gemm", 20, 30, cat="Kernel", pid=0, tid=7, device=0, stream=7, correlation=9),
    ],
}


@pytest.mark.parametrize("batch", [None, 2], ids=["one-batch", "batches-of-2"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_hand_made_identical(
    case: str, batch: int | None, scanner: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In batches of 2 events too: each column's numbering carries over batches, odd kinds
    appear in some batches only."""
    path = tmp_path / f"{case}.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": CASES[case]}))
    if batch:
        monkeypatch.setattr(native, "BATCH_EVENTS", batch)
    expected = _check(path, scanner, monkeypatch, scanned=True)
    assert expected.stats.events_in == len(CASES[case])


def test_bare_array_gzip_bom_header(
    scanner: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = CASES["string_pids"]
    bare = tmp_path / "bare.json.gz"
    bare.write_bytes(gzip.compress(b"\xef\xbb\xbf  " + json.dumps(events).encode() + b"\n "))
    _check(bare, scanner, monkeypatch, scanned=True)
    doc = tmp_path / "doc.json"
    header = {"deviceProperties": [{"id": 0, "name": "NVIDIA A100"}], "baseTimeNanoseconds": 7}
    text = json.dumps({"schemaVersion": 1, **header, "traceEvents": events, "traceName": "t"})
    doc.write_bytes(b"\xef\xbb\xbf" + text.encode())
    expected = _check(doc, scanner, monkeypatch, scanned=True)
    assert expected.meta.trace_name == "t" and expected.meta.devices
    assert expected.meta.base_time_ns == 7


def test_import_does_not_load_the_extension() -> None:
    """The scanner is imported when a trace is first parsed, not by ``import traceviz``."""
    code = (
        "import sys, traceviz, traceviz.parse;"
        "assert 'traceviz.parse._scan' not in sys.modules, 'imported'"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


def test_empty_events(scanner: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "empty.json"
    path.write_text('{"traceEvents": [], "schemaVersion": 1}')
    expected = _check(path, scanner, monkeypatch, scanned=True)
    assert expected.stats.events_in == 0


# ---------------------------------------------------------------------------------------------
# What the scanner refuses: parsed the Python way, same trace or same error

REFUSED = {
    "nan_literal": '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, '
    '"tid": 1, "ts": 1, "dur": NaN}, {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, '
    '"tid": 1, "ts": 2, "dur": Infinity}]}',
    "beyond_int64": json.dumps({"traceEvents": [_x("a", 1, 2, **{"External id": 2**64 + 3})]}),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_parsed_the_python_way(
    case: str, scanner: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / f"{case}.json"
    path.write_text(REFUSED[case])
    _check(path, scanner, monkeypatch, scanned=False)


BROKEN = {
    "args_null": json.dumps({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "args": None}]}),
    "bool_in_ts": json.dumps({"traceEvents": [{"ph": "X", "name": "a", "ts": True}]}),
    "event_not_object": json.dumps({"traceEvents": [[1, 2]]}),
    "no_events": json.dumps({"schemaVersion": 1}),
    "overflowing_float": '{"traceEvents": [{"ph": "X", "name": "a", "ts": 1e400, "dur": 1}]}',
    "truncated": '{"traceEvents": [{"ph": "X", "name": "a"',
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_refused_errors_unchanged(
    case: str, scanner: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / f"{case}.json"
    path.write_text(BROKEN[case])
    with monkeypatch.context() as patch:
        patch.setenv(settings.NATIVE_ENV, "0")
        with pytest.raises(TraceFormatError) as python_error:
            load_trace(path, cache=False)
    assert native_trace(path, scanner) is None
    monkeypatch.setattr(native, "_module", scanner)
    with pytest.raises(TraceFormatError) as native_error:
        load_trace(path, cache=False)
    assert str(native_error.value) == str(python_error.value)
    assert str(path) in str(native_error.value)


@pytest.mark.parametrize("ahead", [False, True], ids=["asked-for", "scanned-ahead"])
def test_refused_in_a_later_batch(
    ahead: bool, scanner: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unsupported after some batches were taken (by the scan-ahead worker too): the partial
    columns are dropped and the whole file is parsed again the Python way."""
    events = json.dumps(CASES["copy_kinds"] + CASES["metadata_names"])[1:-1]
    path = tmp_path / "late.json"
    path.write_text('{"traceEvents": [' + events + ', {"ph": "X", "ts": NaN}]}')
    monkeypatch.setattr(native, "BATCH_EVENTS", 3)
    monkeypatch.setattr(native, "AHEAD_BYTES", 0 if ahead else 1 << 62)
    expected = _check(path, scanner, monkeypatch, scanned=False)
    assert expected.stats.events_in == len(CASES["copy_kinds"] + CASES["metadata_names"]) + 1
    assert not _scan_threads()


# ---------------------------------------------------------------------------------------------
# The scan-ahead worker: its errors are raised in their turn; a caller that stops early stops
# it, even one that keeps the error.


def test_a_caller_that_stops_early_stops_the_worker(
    scanner: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Also when the caller keeps the error (``except ... as err``, a notebook's last
    traceback): that kept the generator's frame alive, and with it a worker polling forever
    with the scanner and the document's bytes."""
    events = json.dumps(CASES["copy_kinds"] * 200)[1:-1]
    path = tmp_path / "many.json"
    path.write_text('{"traceEvents": [' + events + "]}")
    monkeypatch.setattr(native, "AHEAD_BYTES", 0)
    monkeypatch.setattr(native, "BATCH_EVENTS", 3)
    taken = []
    add = Collector.add

    def add_two_then_fail(self: Collector, source: Any) -> None:
        if len(taken) == 2:
            raise KeyError("stop here")
        taken.append(len(source))
        add(self, source)

    monkeypatch.setattr(Collector, "add", add_two_then_fail)
    kept: BaseException | None = None
    try:
        native_trace(path, scanner)
    except KeyError as err:
        kept = err
    assert kept is not None and kept.__traceback__ is not None and taken == [3, 3]
    assert not _scan_threads()  # joined before the error left parse_native


class _FailingScanner:
    """Two batches of one event, then MemoryError, like a scanner out of memory."""

    def __init__(self) -> None:
        self.calls = 0
        self.strings = ["x"]
        self.raws: list[bytes] = []

    def next(self, _: int) -> Any:
        self.calls += 1
        if self.calls > 2:
            raise MemoryError("scanner")
        return 1, [b"\x04"], [b"\x00" * 8]


def test_the_workers_error_is_raised_after_the_batches_before_it() -> None:
    got = []
    with pytest.raises(MemoryError, match="scanner"):
        for batch in native._scan_ahead(_FailingScanner()):
            got.append(batch.n)
    assert got == [1, 1]
    assert not _scan_threads()


# ---------------------------------------------------------------------------------------------
# Which path load_trace takes


class _Spy:
    """A scanner module that counts the scanners made."""

    def __init__(self, module: Any) -> None:
        self.made = 0
        self.module = module
        self.Unsupported = module.Unsupported

    def Scanner(self, *args: Any) -> Any:
        self.made += 1
        return self.module.Scanner(*args)


def test_native_env_switch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": BASE}))
    if _real_module() is None:
        pytest.skip("_scan not built")
    spy = _Spy(_real_module())
    monkeypatch.setattr(native, "_module", spy)
    monkeypatch.setenv(settings.NATIVE_ENV, "0")
    off = load_trace(path, cache=False)
    assert spy.made == 0
    monkeypatch.delenv(settings.NATIVE_ENV)
    on = load_trace(path, cache=False)
    assert spy.made == 1
    assert_same(off, on)


def test_without_extension_python_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": BASE}))
    monkeypatch.setattr(native, "_module", None)
    monkeypatch.delenv(settings.NATIVE_ENV, raising=False)
    assert native.scanner_module() is None
    assert native.parse_native(path, path.read_bytes()) is None
    assert load_trace(path, cache=False).stats.rows["kernels"] == 1


def test_field_lists_follow_the_structs() -> None:
    """The keys the scanner is given are the structs' own (nothing retyped)."""
    assert native.TOP_KEYS == ("ph", "cat", "name", "pid", "tid", "ts", "dur")
    assert "External id" in native.ARG_KEYS and "name" in native.ARG_KEYS
    raw = {"grid", "block", "Input Dims", "Input dims", "Input type", "Concrete Inputs"}
    assert raw == native.RAW_KEYS
    assert len(native.FIELDS) == len(native.TOP_KEYS) + len(native.ARG_KEYS)


RAW_FIELDS = ("grid", "block", "input_dims", "input_dims_legacy", "input_types", "concrete_inputs")


def test_source_conversions_match_structs(scanner: Any) -> None:
    """Field by field, NativeSource gives what StructSource gives on the same events (all the
    hand-made cases in one batch, and every third event of it)."""
    events = [e for case in CASES.values() for e in case]
    text = json.dumps(events).encode()
    structs = StructSource(msgspec.json.decode(text, type=list[Event]))
    scan = scanner.Scanner(text, native.TOP_KEYS, native.ARG_KEYS, native.RAW_KEYS)
    n, kinds, values = scan.next(10**6)
    source = native.NativeSource(native._Batch(n, kinds, values, scan.strings, scan.raws))
    rows = np.arange(0, n, 3)
    for want, got in ((structs, source), (structs.take(rows), source.take(rows))):
        assert len(want) == len(got)
        for field in native.FIELDS:
            if field in RAW_FIELDS:
                assert _codes(want.raw_codes, field) == _codes(got.raw_codes, field)
                continue
            assert list(want.values(field)) == list(got.values(field)), field
            np.testing.assert_array_equal(want.floats(field), got.floats(field), field)
            np.testing.assert_array_equal(want.ints(field), got.ints(field), field)
            assert _codes(want.codes, field) == _codes(got.codes, field)
            assert want.equals(field, "[memory]").tolist() == got.equals(field, "[memory]").tolist()
        merged = _codes(want.raw_codes, "input_dims", "input_dims_legacy")
        assert merged == _codes(got.raw_codes, "input_dims", "input_dims_legacy")
        for pair in (("pid", "tid"), ("ph", "cat"), ("name", "ts")):
            assert _codes(want.pair_codes, *pair) == _codes(got.pair_codes, *pair)


def _codes(method: Any, *fields: str) -> tuple[list[int], list[Any]]:
    """Codes from a fresh numbering and the numbering's values, in order."""
    numbering = _Numbering()
    codes = method(numbering, *fields)
    return codes.tolist(), list(numbering)


FALLBACKS = {  # case -> the converter of the Python path its odd values go through
    "strings_in_ts_dur": "streamed",
    "strings_in_ids": "streamed",
    "floats_in_ids": "streamed",
    "ints_in_names": "_encode",
    "string_pids": "pairs_encoded",
}


@pytest.mark.parametrize("case", sorted(FALLBACKS))
def test_odd_kinds_take_the_python_converters(
    case: str, scanner: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Odd mixes of kinds go through the Python path's converters; plain traces never do."""
    calls: dict[str, int] = dict.fromkeys(set(FALLBACKS.values()), 0)
    for name in calls:
        original = getattr(native, name)

        def counted(*args: Any, _name: str = name, _original: Any = original) -> Any:
            calls[_name] += 1
            return _original(*args)

        monkeypatch.setattr(native, name, counted)
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"traceEvents": BASE}))
    assert native_trace(plain, scanner) is not None
    assert sum(calls.values()) == 0
    odd = tmp_path / f"{case}.json"
    odd.write_text(json.dumps({"traceEvents": CASES[case]}))
    assert native_trace(odd, scanner) is not None
    assert calls[FALLBACKS[case]] > 0


# every corpus trace; of the sample runs, one per code path (real_data.SAMPLE_RUNS)
REAL_PATHS = corpus_files() + [
    p for run in SAMPLE_RUNS for p in sorted((SAMPLES / run).glob("*.json.gz"))
]


def present_by_bincount(kinds: np.ndarray) -> int:
    """The replaced ``native._present``: a bincount of the kinds, as a bit set."""
    counts = np.bincount(kinds, minlength=native.RAW + 1)
    return sum(1 << k for k in np.flatnonzero(counts).tolist())


def _kind_columns(path: Path) -> list[np.ndarray]:
    """Every field's kinds, batch by batch, as the extension scans ``path``."""
    module = native.scanner_module()
    view, _ = read._document(read.read_bytes(path))
    scanner = module.Scanner(view, native.TOP_KEYS, native.ARG_KEYS, native.RAW_KEYS)
    columns = []
    while (batch := scanner.next(4096)) is not None:
        columns += [np.frombuffer(kinds, dtype=np.uint8) for kinds in batch[1]]
    return columns


def test_present_equals_bincount_on_random_kinds() -> None:
    rng = np.random.default_rng(14)
    cases = [np.zeros(0, dtype=np.uint8), np.full(5, 3, dtype=np.uint8)]
    cases += [np.array([k], dtype=np.uint8) for k in range(256)]
    for _ in range(2000):
        high = int(rng.choice([1, 2, 3, 6, 8, 9, 64, 256]))
        cases.append(rng.integers(0, high, int(rng.integers(0, 300))).astype(np.uint8))
    for kinds in cases:
        got = native._present(kinds)
        assert type(got) is int
        assert got == present_by_bincount(kinds), kinds
        rows = np.arange(0, len(kinds), 3)  # a gathered subset, as NativeSource.take gives
        assert native._present(kinds[rows]) == present_by_bincount(kinds[rows])


@pytest.mark.skipif(native.scanner_module() is None, reason="_scan not built")
def test_present_equals_bincount_on_real_traces() -> None:
    assert REAL_PATHS
    mixed = 0
    for path in REAL_PATHS:
        try:
            columns = _kind_columns(path)
        except native.scanner_module().Unsupported:
            continue  # parsed the Python way: no kinds
        for kinds in columns:
            expected = present_by_bincount(kinds)
            assert native._present(kinds) == expected, path
            mixed += expected & (expected - 1) != 0
    assert mixed  # the OR path ran, not only the one-kind shortcut


@pytest.mark.skipif(native.scanner_module() is None, reason="_scan not built")
def test_batch_size_changes_no_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same Trace whatever the batch size: the traces that span several batches of the
    default size (the corpus's) with the old size (65536) and small batches, and the three
    largest sample traces cut into several small batches (so that the property is checked
    in a clone without the corpus too)."""
    events = {p: load_trace(p, cache=False).stats.events_in for p in REAL_PATHS}
    big = [p for p, n in events.items() if n > native.BATCH_EVENTS]
    samples = sorted((p for p in REAL_PATHS if p.is_relative_to(SAMPLES)), key=events.__getitem__)
    checks = [(p, (65536, 5000)) for p in big] + [(p, (1000, 777)) for p in samples[-3:]]
    assert all(events[p] > min(sizes) for p, sizes in checks) and checks
    for path, sizes in checks:
        default = load_trace(path, cache=False)
        for size in sizes:
            with monkeypatch.context() as patch:
                patch.setattr(native, "BATCH_EVENTS", size)
                assert_same(load_trace(path, cache=False), default)


_REGION_MARKER = re.compile(
    r"^(Torch-Compiled Region: \d+/\d+|## Call CompiledFxGraph \S+ ##|CompiledFunction(Backward)?)$"
)


def _check_regions_against_the_json(trace: Trace, events: list[dict]) -> None:
    """The regions table holds one row per region-marker span of the raw JSON on the CPU side
    (device-lane copies of an annotation are not regions), ordered by start, each pointing at
    its op, in the schema's dtypes, with categories that are the values used, sorted."""
    raw = sorted(
        (str(e["name"]), float(e["ts"]), float(e.get("dur", 0)))
        for e in events
        if e.get("ph") == "X" and e.get("cat") != "gpu_user_annotation"
        and _REGION_MARKER.match(str(e.get("name", "")))
    )  # fmt: skip
    table = trace.regions
    names = table[Regions.name].astype(str)
    got = list(zip(names, table[Regions.ts_us].astype(float), table[Regions.dur_us], strict=True))
    assert len(got) == len(raw)
    for (name, ts, dur), want in zip(sorted(got), raw, strict=True):
        assert name == want[0] and ts == pytest.approx(want[1], abs=1e-3)
        assert dur == pytest.approx(want[2], abs=1e-3)
    assert table[Regions.ts_us].is_monotonic_increasing
    ops = trace.ops.iloc[table[Regions.op_row].to_numpy(dtype=np.int64)]
    assert list(ops[Ops.name].astype(str)) == [name for name, _, _ in got]
    assert table.dtypes.astype(str).to_dict() == REGIONS_DTYPES
    for column in (Regions.kind, Regions.name, Regions.graph_key, Regions.thread):
        categories = table[column].cat.categories
        assert not pd.api.types.is_numeric_dtype(categories)  # text, even when empty
        assert list(categories) == sorted(set(table[column].dropna().astype(str)))


def test_regions_are_the_marker_spans_of_the_json_on_real_traces() -> None:
    with_regions = 0
    for path in REAL_PATHS:
        trace = load_trace(path, cache=False)
        doc = read_json(path)
        _check_regions_against_the_json(trace, doc["traceEvents"] if isinstance(doc, dict) else doc)
        with_regions += len(trace.regions) > 0
        # the kernels credited to one kind's regions are at most the kernels measured
        for _, part in trace.regions.groupby("kind", observed=True):
            assert part["kernel_count"].sum() <= len(trace.kernels)
            assert part["kernel_time_us"].sum() <= trace.kernels["excl_dur_us"].sum() + 1e-6
    assert with_regions >= 5


def _region_events() -> list[dict]:
    """Regions out of start order over two threads, identical nested spans (ties), FX-graph
    calls with and without a key, a recompile, and kernels launched inside them."""
    return [
        op("Torch-Compiled Region: 1/0", 50, 40, tid=2),
        op("Torch-Compiled Region: 0/0", 10, 100),
        op("Torch-Compiled Region: 0/0", 10, 100),  # the same span twice: a tie
        op("## Call CompiledFxGraph fb ##", 20, 30),
        op("## Call CompiledFxGraph None ##", 55, 10, tid=2),
        op("## Call CompiledFxGraph aa ##", 10, 100),
        op("Torch-Compiled Region: 0/1", 150, 20),
        op("CompiledFunction", 60, 5, tid=2),
        op("CompiledFunctionBackward", 200, 5),
        launch("cudaLaunchKernel", 25, 2, 1),
        launch("cudaLaunchKernel", 56, 2, 2, tid=2),
        launch("cudaLaunchKernel", 155, 2, 3),
        launch("cudaLaunchKernel", 300, 2, 4),
        kernel("k1", 30, 4, 1),
        kernel("k2", 60, 4, 2),
        kernel("k3", 160, 4, 3),
        kernel("k4", 310, 4, 4),
    ]


@pytest.mark.parametrize(
    "keep",
    [
        pytest.param(lambda e: True, id="all"),
        pytest.param(lambda e: "CompiledFxGraph" not in e["name"], id="no-graph-keys"),
        pytest.param(lambda e: "None" not in e["name"], id="keys-only"),
        pytest.param(lambda e: e["name"] != "Torch-Compiled Region: 0/0", id="no-ties"),
        pytest.param(lambda e: e.get("cat") != "kernel", id="no-kernels"),
        pytest.param(lambda e: "Compiled" not in e["name"], id="no-regions"),
    ],
)
def test_regions_are_the_marker_spans_of_made_traces(
    tmp_path: Path, keep: Callable[[dict], bool]
) -> None:
    events = [e for e in _region_events() if keep(e)]
    trace = load_trace(write_trace(tmp_path / "regions.json", events), cache=False)
    _check_regions_against_the_json(trace, events)
    pd.testing.assert_frame_equal(regions.region_table(trace.ops, trace.kernels), trace.regions)


def _pandas(values: np.ndarray, firsts: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pandas form (the only one before the small-range tables)."""
    codes, distinct = pd.factorize(values)
    if not firsts:
        where = np.arange(len(distinct), dtype=np.int64)
    else:
        running = np.maximum.accumulate(codes) if len(codes) else codes
        where = np.flatnonzero(np.diff(running, prepend=-1) > 0)
    return codes.astype(np.int64, copy=False), np.asarray(distinct), where


def _same_as_pandas(values: np.ndarray, firsts: bool) -> None:
    got = native._factorize(values, firsts)
    want = _pandas(values, firsts)
    for g, w, name in zip(got, want, ("codes", "distinct", "first"), strict=True):
        assert g.dtype == w.dtype, name
        np.testing.assert_array_equal(g, w, err_msg=name)


@pytest.mark.parametrize("firsts", [True, False])
def test_made_arrays(firsts: bool) -> None:
    rng = np.random.default_rng(14)
    cases = [np.array([0]), np.array([5]), np.array([3, 3, 3]), np.array([2, 0, 2, 1, 0])]
    for n in (1, 2, 7, 100, 5000, 32768):
        for high in (1, 3, n, 4 * n + 1023, 4 * n + 1024, 10**9):
            cases.append(rng.integers(0, high, size=n, dtype=np.int64))
        cases.append(rng.integers(-5, 5, size=n, dtype=np.int64))
        cases.append(rng.integers(3 * 10**6, 3 * 10**6 + 2 * n, size=n, dtype=np.int64))
        cases.append(rng.integers(-(2**63), -(2**63) + n, size=n, dtype=np.int64))
        cases.append(rng.integers(2**63 - n - 1, 2**63 - 1, size=n, dtype=np.int64))
        cases.append(np.repeat(rng.integers(0, 50, size=max(n // 10, 1)), 10)[:n])
    for values in cases:
        _same_as_pandas(values.astype(np.int64), firsts)


def test_the_tables_are_used_where_they_apply() -> None:
    def small(*values: int) -> bool:
        return factorize_in_order(np.array(values, dtype=np.int64)) is not None

    assert small(0, 1023) and small(4 + 1023) and small(-5, 3)
    assert small(7, 7 + 8 + 1023) and not small(7, 7 + 8 + 1024)
    assert not small(-(2**63), 2**63 - 1)  # the difference overflows int64
    assert factorize_in_order(np.zeros(0, dtype=np.int64)) is None
    ids = np.arange(3_000_000, 3_032_768, dtype=np.int64)  # ids numbered within a batch
    assert factorize_in_order(ids) is not None


FACTORIZED = sorted(SAMPLES.glob("*/*.pt.trace.json*"))[:8] + corpus_files()[:8]


@pytest.mark.parametrize("path", FACTORIZED, ids=lambda p: p.name)
def test_every_column_of_real_batches(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every field's values of every batch (codes, ints, float bits), as the table builders
    factorize them."""
    module = native.scanner_module()
    if module is None:
        pytest.skip("the native scanner is not built")
    monkeypatch.setattr(native, "BATCH_EVENTS", 7919)
    data = read.read_bytes(path)
    view, _ = read._document(data)
    scanner = module.Scanner(view, native.TOP_KEYS, native.ARG_KEYS, native.RAW_KEYS)
    checked = 0
    while (batch := native._next_batch(scanner)) is not None:
        for j in range(len(batch.kinds)):
            kinds, values = batch.column(j)
            for kind in np.unique(kinds).tolist():
                picked = values[kinds == kind]
                _same_as_pandas(picked, True)
                _same_as_pandas(picked, False)
                checked += 1
    assert checked > 0
