"""traceviz.ranks.comm_args reads the collective arguments with the native scanner when it is
built, else (or when the scanner refuses the file) with its msgspec pass: the table is the
same either way, on the corpus NCCL rank, on the ranks fixtures' jobs and on hand-made
documents of every odd kind of value; bad input is one TraceFormatError either way.

Each test compares the real extension (skipped when not built) with the msgspec pass alone."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.conftest import CORPUS, read_json
from tests.ranks_fixtures import ranks_from_trace, synthetic_job, write_ranks
from traceviz.errors import TraceFormatError
from traceviz.parse.read import read_bytes
from traceviz.ranks import comm_args
from traceviz.ranks.comm_args import CommArgs, collective_args

NCCL_TRACE = CORPUS / "nvidia" / "a100_eager_nccl_rank.json.gz"
needs_nccl = pytest.mark.skipif(not NCCL_TRACE.is_file(), reason=f"corpus not at {CORPUS}")


@pytest.fixture
def scanner() -> Any:
    """The native scanner (skipped when it is not built)."""
    return pytest.importorskip("traceviz.parse._scan", reason="_scan not built")


def msgspec_table(path: Path) -> pd.DataFrame:
    """The table of the msgspec pass alone (no scanner)."""
    return comm_args._table(comm_args._decoded_rows(path, read_bytes(path)))


def assert_same_table(path: Path, scanner: Any, *, scanned: bool = True) -> pd.DataFrame:
    """The scanner's table is the msgspec pass's, dtypes included; with ``scanned``, the
    scanner really read the file (did not fall back)."""
    want = msgspec_table(path)
    got = collective_args(path, scanner=scanner)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert list(got.dtypes.astype(str)) == list(want.dtypes.astype(str))
    rows = comm_args._scanned_rows(read_bytes(path), scanner)
    assert (rows is not None) == scanned
    return got


@needs_nccl
def test_corpus_nccl_rank(scanner: Any) -> None:
    table = assert_same_table(NCCL_TRACE, scanner)
    # Counted independently from the JSON: every event whose args name a collective.
    events = read_json(NCCL_TRACE)["traceEvents"]
    named = [e for e in events if (e.get("args") or {}).get("Collective name") is not None]
    assert len(table) == len(named) > 0
    kernels = [e for e in named if str(e.get("cat")).lower() == "kernel"]
    assert int(table[CommArgs.on_kernel].sum()) == len(kernels) > 0
    assert table[CommArgs.in_nelems].notna().all()


@needs_nccl
def test_ranks_copied_from_the_corpus(tmp_path: Path, scanner: Any) -> None:
    doc = read_json(NCCL_TRACE)
    docs = ranks_from_trace(doc, 3, offsets_us=[0.0, 120.0, -40.0], straggler=1, lateness_us=30)
    for path in write_ranks(tmp_path, docs):
        assert len(assert_same_table(path, scanner)) > 0


def test_synthetic_job(tmp_path: Path, scanner: Any) -> None:
    job = synthetic_job(4, steps=2, collectives=3)
    for path in write_ranks(tmp_path, job.docs):
        table = assert_same_table(path, scanner)
        assert len(table) > 0
        assert (table[CommArgs.in_nelems] == job.nelems).all()
        assert set(table[CommArgs.dtype]) == {job.dtype}


def _event(cat: Any, **args: Any) -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": "ncclDevKernel_AllReduce", "ts": 1, "dur": 2,
            "args": args}  # fmt: skip


ODD_EVENTS = [
    _event(
        "kernel",
        **{
            "Collective name": "allreduce",
            "In msg nelems": 1024,
            "Out msg nelems": 1024,
            "dtype": "Float",
            "Group size": 8,
            "Process Group Name": "0",
            "correlation": 17,
        },
    ),
    _event(
        "Kernel",
        **{
            "Collective name": "allgather",
            "In msg nelems": "2048",
            "Out msg nelems": 2.5e3,
            "dtype": None,
            "Group size": "8",
            "correlation": 2**62 + 1,
        },
    ),
    _event(
        "cpu_op",
        **{
            "Collective name": 7,
            "In msg nelems": -3,
            "External id": 99,
            "Process Group Name": 3.0,
            "dtype": "BFloat16",
        },
    ),
    _event(None, **{"Collective name": "broadcast", "In msg nelems": "", "Group size": "x"}),
    _event(12, **{"Collective name": "\u00e9t\u00e9 \U0001f600", "Out msg nelems": 1e300}),
    _event("kernel", **{"Collective name": None, "In msg nelems": 5}),  # a null name: no row
    _event("kernel", **{"In msg nelems": 5}),  # no name: no row
    {"ph": "X", "cat": "kernel", "name": "no args"},
    {"ph": "i", "name": "no cat", "args": {"Collective name": "barrier"}},
]


def test_odd_values(tmp_path: Path, scanner: Any) -> None:
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ODD_EVENTS, "after": [1]}))
    table = assert_same_table(path, scanner)
    assert len(table) == 6
    rows = table.set_index(CommArgs.collective)
    assert rows.loc["allgather", CommArgs.correlation] == 2**62 + 1  # exact: no float trip
    assert rows.loc["allgather", CommArgs.out_nelems] == 2500
    assert rows.loc["allgather", CommArgs.in_nelems] == 2048
    assert pd.isna(rows.loc["\u00e9t\u00e9 \U0001f600", CommArgs.out_nelems])  # beyond int64
    assert pd.isna(rows.loc["broadcast", CommArgs.group_size])
    assert (
        pd.isna(rows.loc["7", CommArgs.correlation]) and rows.loc["7", CommArgs.external_id] == 99
    )
    assert list(table[CommArgs.on_kernel]) == [True, True, False, False, False, False]


def test_bare_array_and_gzip(tmp_path: Path, scanner: Any) -> None:
    bare = tmp_path / "bare.json.gz"
    bare.write_bytes(gzip.compress(json.dumps(ODD_EVENTS).encode()))
    assert len(assert_same_table(bare, scanner)) == 6


def test_no_events(tmp_path: Path, scanner: Any) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text('{"traceEvents": []}')
    assert assert_same_table(empty, scanner).empty
    # no traceEvents key: the scanner refuses, the msgspec pass gives no rows
    none = tmp_path / "none.json"
    none.write_text('{"schemaVersion": 1}')
    assert assert_same_table(none, scanner, scanned=False).empty


@pytest.mark.parametrize(
    "text",
    [
        # what the scanner refuses but msgspec reads: the msgspec pass reads it
        '{"traceEvents": [{"cat": "kernel", "args": null}]}',
        '{"traceEvents": [{"cat": "kernel", "args": {"Collective name": "a", '
        '"Collective name": "b", "In msg nelems": 3}}]}',
        '{"traceEvents": [{"cat": "kernel", "args": {"In msg nelems": 1, '
        '"Collective\\u0020name": "x"}}]}',
        '{"traceEvents": [{"cat": "kernel", "args": {"Collective name": "a", '
        '"In msg nelems": 18446744073709551615}}]}',
    ],
    ids=["args-null", "key-twice", "escaped-key", "beyond-int64"],
)
def test_what_the_scanner_refuses_is_read_by_msgspec(
    tmp_path: Path, scanner: Any, text: str
) -> None:
    path = tmp_path / "odd.json"
    path.write_text(text)
    assert comm_args._scanned_rows(read_bytes(path), scanner) is None
    assert_same_table(path, scanner, scanned=False)


@pytest.mark.parametrize(
    "text",
    [
        '{"traceEvents": [{"cat": "kernel", "args": {"Collective name": true}}]}',
        '{"traceEvents": [{"cat": "kernel", "args": {"In msg nelems": [1]}}]}',
        '{"traceEvents": [{"cat": "kernel", "args": {"Collective name": "a"}}',
        '{"traceEvents": [{"cat": "kernel", "args": 3}]}',
        '{"traceEvents": [7]}',
        "\ufeff" + '{"traceEvents": []}',
        '{"traceEvents": [{"cat": NaN}]}',
    ],
    ids=["bool", "array", "truncated", "args-number", "event-number", "bom", "nan"],
)
def test_bad_input_is_one_format_error_either_way(tmp_path: Path, scanner: Any, text: str) -> None:
    path = tmp_path / "rank0.json"
    path.write_text(text, encoding="utf-8")
    for module in (scanner, None):
        with pytest.raises(TraceFormatError, match=r"rank0\.json: collective arguments"):
            if module is None:
                msgspec_table(path)
            else:
                collective_args(path, scanner=module)
