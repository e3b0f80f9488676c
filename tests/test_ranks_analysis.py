"""Cross-rank analyses (traceviz/ranks: reduce, collectives, stragglers, spread, compare,
findings, render) on jobs made in the test (tests/ranks_fixtures.py) and the corpus' NCCL rank.

GIVEN ranks with known clock offsets and a planted straggler, WHEN they are reduced one by one
and analysed together, THEN the straggler is found, the offsets recovered, the collective time
split into transfer and waiting that add up to what was measured, and nothing is flagged in a
uniform job. Every gain a rank finding credits is at most what the per-rank tables measured.

The collective arguments (traceviz.ranks.comm_args) are read with the native scanner when it is
built, else (or when the scanner refuses the file) with a msgspec pass: the table is the same
either way, on the corpus NCCL rank, the jobs and hand-made documents of every odd kind of
value, and bad input is one TraceFormatError either way (each test compares the real
extension, skipped when not built, with the msgspec pass alone).
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest

import traceviz
from tests.conftest import CORPUS, corpus_params, load_trace, read_json
from tests.light_import_fixtures import assert_imports_none
from tests.ranks_fixtures import Job, ranks_from_trace, synthetic_job, write_ranks
from traceviz.analysis.summary import summarize
from traceviz.analysis.windows import full_steps, partial_steps
from traceviz.errors import TraceFormatError, UsageError
from traceviz.parse.read import read_bytes
from traceviz.ranks import comm_args
from traceviz.ranks.analyse import analyse_pair, analyse_ranks
from traceviz.ranks.collectives import Arrival, Instance, bus_factor, match_collectives
from traceviz.ranks.comm_args import CommArgs, collective_args
from traceviz.ranks.compare import compare_ranks, odd_compile_ranks
from traceviz.ranks.findings import PROFILED
from traceviz.ranks.reduce import Collectives, RankSummary, canonical_collective, reduce_rank
from traceviz.ranks.render import render_pair, render_ranks
from traceviz.ranks.spread import kernel_spread, step_spread
from traceviz.ranks.stragglers import Lateness, find_stragglers, robust_outliers
from traceviz.ranks.synth import make_ranks
from traceviz.schema import Steps

NCCL_TRACE = CORPUS / "nvidia" / "a100_eager_nccl_rank.json.gz"
needs_nccl = pytest.mark.skipif(not NCCL_TRACE.is_file(), reason=f"corpus not at {CORPUS}")
MI250 = CORPUS / "amd" / "mi250_eager_train_rocm62.json.gz"


def reduced(paths: list[Path]) -> SimpleNamespace:
    """The ranks' small tables, concatenated as a dataset would hold them."""
    tables = [reduce_rank(traceviz.load(p), r, str(p)) for r, p in enumerate(paths)]
    return SimpleNamespace(
        summary=pd.concat([t.summary for t in tables], ignore_index=True),
        collectives=pd.concat([t.collectives for t in tables], ignore_index=True),
        kernel_summary=pd.concat([t.kernel_summary for t in tables], ignore_index=True),
    )


def job_tables(tmp_path: Path, name: str, **options: Any) -> tuple[Job, SimpleNamespace]:
    job = synthetic_job(**options)
    return job, reduced(write_ranks(tmp_path / name, job.docs))


@pytest.fixture(scope="module")
def straggler_job(tmp_path_factory: pytest.TempPathFactory) -> tuple[Job, SimpleNamespace]:
    return job_tables(tmp_path_factory.mktemp("job"), "straggler", straggler=3, seed=7)


# --- reduce_rank --------------------------------------------------------------------------


def _raw_collective_kernels(path: Path) -> list[dict[str, Any]]:
    return [
        e for e in read_json(path)["traceEvents"]
        if e.get("cat") == "kernel" and re.match(r"nccl", e.get("name", ""), re.IGNORECASE)
    ]  # fmt: skip


@needs_nccl
def test_reduce_rank_reads_the_nccl_ranks_collectives_and_their_sizes() -> None:
    trace = load_trace(NCCL_TRACE)
    tables = reduce_rank(trace, 0, str(NCCL_TRACE))
    raw = _raw_collective_kernels(NCCL_TRACE)
    comms = tables.collectives.sort_values(Collectives.ts_us, ignore_index=True)
    raw.sort(key=lambda e: e["ts"])
    assert len(comms) == len(raw) > 0
    sizes = {"Float": 4, "Long": 8, "Int": 4, "BFloat16": 2, "Half": 2}
    expected = [
        max(e["args"]["In msg nelems"], e["args"]["Out msg nelems"]) * sizes[e["args"]["dtype"]]
        for e in raw
    ]
    assert comms[Collectives.bytes].astype(int).tolist() == expected
    assert comms[Collectives.dtype].tolist() == [e["args"]["dtype"] for e in raw]
    names = {canonical_collective(e["args"]["Collective name"]) for e in raw}
    assert set(comms[Collectives.name]) == names
    summary = tables.summary.iloc[0]
    assert summary[RankSummary.comm_time_us] == pytest.approx(sum(e["dur"] for e in raw))
    assert summary[RankSummary.comm_kernels] == len(raw)
    assert summary[RankSummary.world_size] == trace.meta.distributed["world_size"]


@pytest.mark.parametrize("path", corpus_params())
def test_reduce_rank_on_every_corpus_trace_adds_up(path: Path) -> None:
    trace = load_trace(path)
    tables = reduce_rank(trace, 0, str(path))
    s = tables.summary.iloc[0]
    assert s[RankSummary.busy_us] + s[RankSummary.idle_us] == pytest.approx(s[RankSummary.wall_us])
    assert s[RankSummary.busy_us] <= s[RankSummary.wall_us] + 1e-6
    assert s[RankSummary.comm_time_us] <= s[RankSummary.kernel_time_us] + 1e-6
    assert s[RankSummary.wait_time_us] + s[RankSummary.cpu_wait_us] <= s[RankSummary.idle_us] + 1e-6
    ks = tables.kernel_summary
    assert ks["total_us"].sum() == pytest.approx(s[RankSummary.kernel_time_us], abs=1e-6)
    assert ks["calls"].sum() == s[RankSummary.kernels] == len(_raw_kernels(trace))
    assert len(tables.collectives) == s[RankSummary.comm_kernels]
    keys = tables.collectives.groupby(KEY_COLUMNS, dropna=False).size()
    assert (keys == 1).all()  # one row per collective instance key
    steps = full_steps(trace)[Steps.dur_us].to_numpy(dtype=float)
    if steps.size:
        assert s[RankSummary.step_p50_us] == pytest.approx(np.median(steps))


KEY_COLUMNS = [Collectives.step, Collectives.channel, Collectives.name, Collectives.seq]


def _raw_kernels(trace: traceviz.Trace) -> pd.DataFrame:
    return trace.kernels[trace.kernels["activity"] == "kernel"]


@pytest.mark.parametrize("run", ["graph-break", "pointwise"])
def test_reduce_rank_on_sample_runs_has_no_collectives(run: str) -> None:
    path = Path(__file__).parents[1] / "sample_traces" / run / "compiled.pt.trace.json.gz"
    trace = load_trace(path)
    tables = reduce_rank(trace, 5, str(path))
    assert tables.collectives.empty
    s = tables.summary.iloc[0]
    assert s[RankSummary.rank] == 5
    assert tables.kernel_summary["total_us"].sum() == pytest.approx(s[RankSummary.kernel_time_us])
    frames = trace.regions.loc[trace.regions["kind"] == "compiled_region", "frame_id"].nunique()
    assert s[RankSummary.compiled_frames] == frames


@pytest.mark.skipif(not MI250.is_file(), reason=f"corpus not at {CORPUS}")
def test_rank_steps_leave_the_cut_off_step_out() -> None:
    """The MI250 trace ends with a 49 µs fragment after a 9.3 ms step: left out of the rank's
    step figures, as the single-trace summary does (analysis.windows.full_steps)."""
    trace = load_trace(MI250)
    assert partial_steps(trace) == 1 and len(trace.steps) == 2
    row = reduce_rank(trace, 0, str(MI250)).summary.iloc[0]
    full = trace.steps[Steps.dur_us].to_numpy(dtype=float)[:1]  # the first, whole step
    assert row[RankSummary.steps] == 1 == summarize(trace).step_count
    assert row[RankSummary.step_mean_us] == pytest.approx(float(np.mean(full)))
    assert row[RankSummary.step_p50_us] == pytest.approx(float(np.median(full)))


def test_collective_sizes_are_missing_not_guessed_without_the_file(tmp_path: Path) -> None:
    job = synthetic_job(2, straggler=None, steps=1, collectives=2)
    path = write_ranks(tmp_path, job.docs)[0]
    trace = traceviz.load(path)
    with_file = reduce_rank(trace, 0, str(path)).collectives
    assert (with_file[Collectives.bytes] == job.nelems * 4).all()
    gone = reduce_rank(trace, 0, str(tmp_path / "moved.json")).collectives
    assert len(gone) == len(with_file)
    assert gone[Collectives.bytes].isna().all()


def test_canonical_collective_names() -> None:
    assert canonical_collective("ncclKernel_AllReduce_RING_LL_Sum_float") == "all_reduce"
    assert canonical_collective("_allgather_base") == "all_gather"
    assert canonical_collective("reduce_scatter_tensor_coalesced") == "reduce_scatter"
    assert canonical_collective("ncclDevKernel_SendRecv(ncclDevComm*)") == "send_recv"
    assert canonical_collective("broadcast") == "broadcast"
    assert canonical_collective("ncclDevKernel_Generic") == "other"


# --- the collective arguments: the scanner's table is the msgspec pass's --------------------------


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


# --- alignment, wait vs transfer, stragglers ----------------------------------------------


def test_planted_straggler_is_found(straggler_job: tuple[Job, SimpleNamespace]) -> None:
    job, t = straggler_job
    found = find_stragglers(t.summary, t.collectives)
    assert found.ranks == [job.straggler]
    row = found.per_rank.set_index("rank").loc[job.straggler]
    assert row["arrived_last_share"] == 1.0
    assert row["lateness_p50_us"] == pytest.approx(job.slow_us, abs=10.0)
    assert found.to_json()[0]["rank"] == job.straggler


def test_rank_gains_say_they_are_per_profiled_step(
    straggler_job: tuple[Job, SimpleNamespace],
) -> None:
    gains = [f for f in analyse_ranks(straggler_job[1]).findings if f.est_gain_us is not None]
    assert gains, "the straggler job should give findings with gains"
    assert all(f.gain_basis.endswith(PROFILED) for f in gains), [f.gain_basis for f in gains]


def test_alignment_recovers_the_planted_clock_offsets(
    straggler_job: tuple[Job, SimpleNamespace],
) -> None:
    job, t = straggler_job
    offsets = match_collectives(t.collectives).offsets.set_index("rank")["offset_us"]
    planted = np.array(job.offsets_us)
    got = offsets.sort_index().to_numpy()
    np.testing.assert_allclose(got - got[0], planted - planted[0], atol=1e-3)


def test_wait_and_transfer_add_up_to_the_measured_durations(
    straggler_job: tuple[Job, SimpleNamespace],
) -> None:
    job, t = straggler_job
    match = match_collectives(t.collectives)
    a = match.arrivals
    np.testing.assert_allclose(a[Arrival.transfer_us] + a[Arrival.wait_us], a[Arrival.dur_us])
    assert (a[Arrival.wait_us] >= 0).all()
    per = match.per_rank().set_index("rank").sort_index()
    measured = t.collectives.groupby(Collectives.rank)[Collectives.dur_us].sum().sort_index()
    assert (per["transfer_us"] + per["wait_us"] <= measured.to_numpy() + 1e-6).all()
    np.testing.assert_allclose(per["wait_us"].to_numpy(), job.wait_us, atol=1e-6)
    np.testing.assert_allclose(match.instances[Instance.transfer_us], job.transfer_us)


def test_uniform_jobs_flag_nobody(tmp_path: Path) -> None:
    for seed in range(4):
        _, t = job_tables(tmp_path, f"uniform{seed}", straggler=None, seed=seed, jitter_us=30.0)
        assert find_stragglers(t.summary, t.collectives).ranks == []
        assert step_spread(t.summary).slow_ranks == []
        assert kernel_spread(t.kernel_summary).empty
        ids = {f.id for f in analyse_ranks(t).findings}
        assert not ids & {"rank-straggler", "step-time-spread", "kernel-spread"}


@needs_nccl
def test_straggler_and_offsets_on_ranks_made_from_the_corpus_nccl_trace(tmp_path: Path) -> None:
    offsets = [0.0, 12_345.5, -40_000.25]
    docs = ranks_from_trace(
        read_json(NCCL_TRACE), 3, offsets_us=offsets, straggler=2, lateness_us=800.0
    )
    t = reduced(write_ranks(tmp_path, docs))
    found = find_stragglers(t.summary, t.collectives)
    assert found.ranks == [2]
    got = found.match.offsets.set_index("rank")["offset_us"].sort_index().to_numpy()
    np.testing.assert_allclose(got - got[0], np.array(offsets) - offsets[0], atol=1e-3)
    per = found.match.per_rank()
    assert (per["transfer_us"] + per["wait_us"] <= per["comm_us"] + 1e-6).all()


def test_robust_rule() -> None:
    flags, score, threshold = robust_outliers(np.array([10.0, 11, 9, 10, 10, 50]), k=3.5)
    assert flags.tolist() == [False] * 5 + [True]
    assert threshold < 50 and score[-1] > 3.5
    flags, _, _ = robust_outliers(np.array([10.0, 10, 10, 10.5]), floor=5.0)
    assert not flags.any()
    flags, _, threshold = robust_outliers(np.array([np.nan, 3.0]))
    assert not flags.any()


# --- bus bandwidth ------------------------------------------------------------------------


def _instance_rows(name: str, n: int, nbytes: int, durs: list[float]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            Collectives.rank: range(n), Collectives.seq: 0, Collectives.name: name,
            Collectives.kernel: "ncclDevKernel_x", Collectives.stream: 7,
            Collectives.channel: "pg 0", Collectives.step: pd.array([1] * n, dtype="Int64"),
            Collectives.ts_us: [100.0 - d for d in durs], Collectives.dur_us: durs,
            Collectives.end_us: 100.0, Collectives.bytes: pd.array([nbytes] * n, dtype="Int64"),
            Collectives.dtype: "Float", Collectives.group_size: pd.array([n] * n, dtype="Int64"),
        }
    )  # fmt: skip


@pytest.mark.parametrize(
    ("name", "factor"),
    [("all_reduce", lambda n: 2 * (n - 1) / n), ("all_gather", lambda n: (n - 1) / n),
     ("reduce_scatter", lambda n: (n - 1) / n), ("broadcast", lambda n: 1.0)],
)  # fmt: skip
def test_bus_bandwidth_follows_nccl_tests(name: str, factor: Any) -> None:
    n, nbytes = 8, 2_000_000_000
    durs = [20_000.0 + 1_000 * r for r in range(n)]  # the shortest is the transfer: 20 ms
    inst = match_collectives(_instance_rows(name, n, nbytes, durs)).instances.iloc[0]
    algbw = nbytes / (min(durs) * 1e-6) / 1e9
    assert inst[Instance.algbw_gbps] == pytest.approx(algbw)
    assert inst[Instance.busbw_gbps] == pytest.approx(algbw * factor(n))
    assert bus_factor(name, n) == pytest.approx(factor(n))
    assert inst[Instance.wait_us] == pytest.approx(sum(durs) - n * min(durs))


# --- spread, compare, findings, rendering -------------------------------------------------


def test_kernel_spread_names_the_slow_rank(tmp_path: Path) -> None:
    scale = [1.0] * 6 + [1.6, 1.0]
    _, t = job_tables(tmp_path, "slowkernel", n_ranks=8, straggler=None, compute_scale=scale)
    slow = kernel_spread(t.kernel_summary)
    assert slow["rank"].tolist() == [6]
    assert slow["ratio"].iloc[0] == pytest.approx(1.6, rel=0.02)
    assert "kernel-spread" in {f.id for f in analyse_ranks(t).findings}


def test_step_spread_flags_a_slow_rank() -> None:
    summary = pd.DataFrame(
        {RankSummary.rank: range(8), RankSummary.node: "n0",
         RankSummary.step_p50_us: [1000.0, 1002, 998, 1001, 999, 1300, 1000, 1003],
         RankSummary.step_p95_us: 1400.0}
    )  # fmt: skip
    spread = step_spread(summary)
    assert spread.slow_ranks == [5]
    assert spread.spread == pytest.approx(1300 / 998)


def test_categorical_tables_give_the_same_answer(
    straggler_job: tuple[Job, SimpleNamespace],
) -> None:
    _, t = straggler_job
    cat = lambda f: f.astype({c: "category" for c in f.columns if f[c].dtype == object})  # noqa: E731
    plain = find_stragglers(t.summary, t.collectives)
    coded = find_stragglers(cat(t.summary), cat(t.collectives))
    pd.testing.assert_frame_equal(plain.per_rank, coded.per_rank)


def test_compare_ranks_per_rank_speedup_and_odd_compile(tmp_path: Path) -> None:
    _, a = job_tables(tmp_path, "a", straggler=None, seed=1)
    _, b = job_tables(tmp_path, "b", straggler=None, seed=2, compute_us=500.0,
                      regions=[1, 1, 1, 2, 1, 1, 1, 1])  # fmt: skip
    cmp = compare_ranks(a, b, names=("eager", "compiled"))
    expected = a.summary[RankSummary.step_p50_us] / b.summary[RankSummary.step_p50_us]
    np.testing.assert_allclose(cmp.per_rank["speedup"], expected)
    assert cmp.per_rank.loc[cmp.per_rank["odd_b"], "rank"].tolist() == [3]
    assert odd_compile_ranks(a.summary).empty
    pair = analyse_pair(a, b, names=("eager", "compiled"))
    odd = [f for f in pair.findings if f.id == "rank-compile-differs"]
    assert len(odd) == 1 and odd[0].trace == "compiled"
    with pytest.raises(UsageError):
        compare_ranks(object(), object())


def test_uneven_speedup_is_a_finding(tmp_path: Path) -> None:
    _, a = job_tables(tmp_path, "a2", n_ranks=4, straggler=None, seed=1)
    b = SimpleNamespace(**vars(a))
    b.summary = a.summary.copy()
    b.summary[RankSummary.step_p50_us] = a.summary[RankSummary.step_p50_us] / [2.0, 2.0, 2.0, 0.9]
    pair = analyse_pair(a, b)
    uneven = [f for f in pair.findings if f.id == "rank-speedup-uneven"]
    assert len(uneven) == 1 and "rank 3" in uneven[0].title


def test_render_json_text_markdown(straggler_job: tuple[Job, SimpleNamespace]) -> None:
    job, t = straggler_job
    t.failed = pd.DataFrame({"source": ["rank9.json"], "rank": [9], "error": ["not JSON"]})
    analysis = analyse_ranks(t)
    data = json.loads(render_ranks(analysis, "json"))
    assert {"schema_version", "ranks", "stragglers", "failed", "findings"} <= set(data)
    assert [s["rank"] for s in data["stragglers"]] == [job.straggler]
    assert len(data["ranks"]) == len(job.docs)
    assert data["failed"][0]["source"] == "rank9.json"
    assert {f["id"] for f in data["findings"]} >= {"rank-straggler", "ranks-failed"}
    totals = data["collectives"]
    assert totals["transfer_us"] + totals["wait_us"] == pytest.approx(totals["comm_us"])
    text = render_ranks(analysis, "text", top=3)
    assert f"rank {job.straggler}" in text and "straggler" in text
    assert render_ranks(analysis, "markdown").startswith("# Ranks")
    pair = json.loads(render_pair(analyse_pair(t, t), "json"))
    assert pair["median_speedup"] == pytest.approx(1.0)
    with pytest.raises(UsageError):
        render_ranks(analysis, "html")


# --- the CLI on datasets made by traceviz ingest ------------------------------------------


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Job]:
    """Two ingested jobs: a (a straggler, rank 3, and one corrupt rank file) and b (faster
    compute, a graph break on rank 5 only)."""
    pytest.importorskip("pyarrow", reason="pyarrow not installed (ranks extra)")
    from traceviz.ranks.ingestion import ingest

    root = tmp_path_factory.mktemp("datasets")
    job_a = synthetic_job(8, straggler=3, seed=3)
    write_ranks(root / "a", job_a.docs)
    (root / "a" / "rank8.json").write_text('{"traceEvents": [')
    job_b = synthetic_job(8, straggler=None, seed=4, compute_us=500.0,
                          regions=[1, 1, 1, 1, 1, 2, 1, 1])  # fmt: skip
    write_ranks(root / "b", job_b.docs)
    ingest(root / "a", root / "ds_a")
    ingest(root / "b", root / "ds_b")
    return root / "ds_a", root / "ds_b", job_a


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from traceviz.cli import main

    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_summary_ranks_json_names_the_straggler_and_the_failed_rank(
    datasets: tuple[Path, Path, Job], capsys: pytest.CaptureFixture[str]
) -> None:
    ds_a, _, job = datasets
    code, out, _ = _cli(["summary", str(ds_a), "--ranks", "--format", "json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert [s["rank"] for s in data["stragglers"]] == [job.straggler]
    assert sorted(r["rank"] for r in data["ranks"]) == list(range(8))
    assert len(data["failed"]) == 1 and data["failed"][0]["source"].endswith("rank8.json")
    code, out, _ = _cli(["summary", str(ds_a), "--ranks", "--format", "markdown"], capsys)
    assert code == 0 and out.startswith("# Ranks") and "straggler" in out


def test_compare_ranks_cli(
    datasets: tuple[Path, Path, Job], capsys: pytest.CaptureFixture[str]
) -> None:
    ds_a, ds_b, _ = datasets
    argv = ["compare", str(ds_a), str(ds_b), "--ranks", "--names", "eager", "compiled"]
    code, out, _ = _cli([*argv, "--format", "json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert data["names"] == ["eager", "compiled"]
    assert [r["rank"] for r in data["odd_compile"]["compiled"]] == [5]
    assert data["median_speedup"] > 1
    code, out, _ = _cli([*argv, "--fail-on", "warning"], capsys)
    assert code == 1 and "compiled differently" in out


def test_ranks_cli_bad_input_is_one_line(
    datasets: tuple[Path, Path, Job], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ds_a, _, _ = datasets
    code, _, err = _cli(["summary", str(tmp_path), "--ranks"], capsys)  # names the folder
    assert code == 2 and "ranks dataset" in err and len(err.strip().splitlines()) == 1
    assert str(tmp_path) in err and "traceviz-dataset" in err
    code, _, err = _cli(["compare", str(ds_a), "--ranks"], capsys)
    assert code == 2 and "two ranks datasets" in err
    code, _, err = _cli(["compare", str(ds_a), str(ds_a), "--ranks", "--format", "html"], capsys)
    assert code == 2 and "markdown" in err
    code, _, err = _cli(["summary", str(ds_a), "--ranks", "--format", "json", "--top", "-1"],
                        capsys)  # fmt: skip
    assert code == 2
    sample = Path(__file__).parents[1] / "sample_traces" / "mlp" / "eager.pt.trace.json.gz"
    code, _, err = _cli(["summary", str(sample), "--format", "markdown"], capsys)
    assert code == 2 and "--ranks" in err


def test_summary_ranks_stays_light(datasets: tuple[Path, Path, Job]) -> None:
    ds_a, _, _ = datasets
    code = (
        "from traceviz.cli import main;"
        f"assert main(['summary', {str(ds_a)!r}, '--ranks', '--format', 'json']) == 0"
    )
    assert_imports_none(code, ("dask", "distributed", "torch", "plotly", "panel"))


# --- the figure and the dashboard view ----------------------------------------------------


def test_ranks_figure_bars_add_up_and_outline_the_straggler(
    straggler_job: tuple[Job, SimpleNamespace],
) -> None:
    pytest.importorskip("plotly")
    from traceviz.ranks.render import per_rank_table
    from traceviz.report.figures.ranks import STRAGGLER_COLOR, ranks_figure

    job, t = straggler_job
    table = per_rank_table(analyse_ranks(t))
    fig = ranks_figure(table)
    bars = {tr.name: np.asarray(tr.y, dtype=float) for tr in fig.data if tr.type == "bar"}
    per_step = table["steps"].to_numpy(dtype=float)
    comm = (table["comm_time_us"].to_numpy(dtype=float) / per_step) / 1e3
    np.testing.assert_allclose(bars["collective transfer"] + bars["waiting for other ranks"], comm)
    outline = list(fig.data[0].marker.line.color)
    assert [i for i, c in enumerate(outline) if c == STRAGGLER_COLOR] == [job.straggler]
    assert f"stragglers: {job.straggler}" in fig.layout.title.text
    assert "no ranks" in str(ranks_figure(table.iloc[:0]).layout.annotations[0].text)


def test_ranks_view_selects_a_rank(straggler_job: tuple[Job, SimpleNamespace]) -> None:
    pytest.importorskip("panel")
    from traceviz.dashboard.tabs.ranks import RanksView, has_ranks
    from traceviz.dashboard.views import VIEWS

    job, t = straggler_job
    analysis = analyse_ranks(t)
    view = RanksView(analysis=analysis)
    view.__panel__().get_root()
    assert view.rank == job.straggler  # the straggler is shown first
    other = next(r for r in range(len(job.docs)) if r != job.straggler)
    view._grid.selection = [int(np.flatnonzero(view._grid.value["rank"] == other)[0])]
    assert view.rank == other
    assert f"Rank {other}" in view._detail.objects[0].object
    assert "Ranks" in VIEWS and has_ranks(SimpleNamespace(ranks=analysis))
    assert not has_ranks(SimpleNamespace())


def test_point_to_point_kernels_are_not_matched_across_ranks() -> None:
    rows = _instance_rows("send_recv", 4, 1024, [10.0, 20.0, 30.0, 40.0])
    assert match_collectives(rows).empty
    both = pd.concat([rows, _instance_rows("all_reduce", 4, 1024, [10.0, 20.0, 30.0, 40.0])])
    assert match_collectives(both).instances[Instance.name].tolist() == ["all_reduce"]


def test_facade_compare_ranks_on_loaded_datasets(datasets: tuple[Path, Path, Job]) -> None:
    ds_a, ds_b, _ = datasets
    a, b = traceviz.load_ranks(ds_a), traceviz.load_ranks(ds_b)
    cmp = traceviz.compare_ranks(a, b, names=("eager", "compiled"))
    assert cmp.per_rank["rank"].tolist() == a.ranks
    assert cmp.odd["compiled"]["rank"].tolist() == [5]
    assert cmp.median_speedup > 1


def test_empty_and_collective_free_jobs_render(tmp_path: Path) -> None:
    from traceviz import schema
    from traceviz.ranks.reduce import (
        COLLECTIVES_DTYPES,
        KERNEL_SUMMARY_DTYPES,
        SUMMARY_DTYPES,
    )

    empty = SimpleNamespace(
        summary=schema.empty_table(SUMMARY_DTYPES),
        collectives=schema.empty_table(COLLECTIVES_DTYPES),
        kernel_summary=schema.empty_table(KERNEL_SUMMARY_DTYPES),
    )
    for fmt in ("text", "json", "markdown"):
        assert render_ranks(analyse_ranks(empty), fmt)
    assert json.loads(render_pair(analyse_pair(empty, empty), "json"))["ranks"] == []
    sample = Path(__file__).parents[1] / "sample_traces" / "mlp" / "compiled.pt.trace.json.gz"
    cpu = reduced([sample, sample, sample])  # three CPU ranks: no collective at all
    analysis = analyse_ranks(cpu)
    assert analysis.stragglers.ranks == [] and analysis.stragglers.match.empty
    data = json.loads(render_ranks(analysis, "json"))
    assert [r["lateness_p50_us"] for r in data["ranks"]] == [None] * 3
    assert data["collectives"]["instances"] == 0


def test_stragglers_are_grouped_by_node(tmp_path: Path) -> None:
    job = synthetic_job(8, straggler=None, compute_scale=[1, 1, 1, 1, 1, 1.5, 1.5, 1], seed=5)
    for rank, doc in enumerate(job.docs):
        doc["distributedInfo"]["host"] = "node-a" if rank < 4 else "node-b"
    t = reduced(write_ranks(tmp_path, job.docs))
    found = find_stragglers(t.summary, t.collectives)
    assert sorted(found.ranks) == [5, 6]
    by_node = found.by_node.set_index("node")
    assert by_node.loc["node-b", "stragglers"] == 2 and by_node.loc["node-a", "stragglers"] == 0
    assert by_node["ranks"].tolist() == [4, 4]
    finding = next(f for f in analyse_ranks(t).findings if f.id == "rank-straggler")
    assert any("node-b (2 of 4 ranks)" in str(e) for e in finding.evidence)


# --- gains against the per-rank tables (ranks made by traceviz.ranks.synth.make_ranks) ------


@pytest.fixture(scope="module")
def made_job(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """Eight ranks made from the corpus' NCCL rank, rank 3 a straggler: the others'
    collectives start up to 10 ms earlier, never before the previous kernel on their stream."""
    out = tmp_path_factory.mktemp("ranks-gains")
    made = make_ranks(NCCL_TRACE, out, 8, straggler=3)
    paths = sorted(out.glob("rank*.pt.trace.json.gz"))
    assert len(paths) == len(made) == 8
    ranks = reduced(paths)
    return SimpleNamespace(ranks=ranks, analysis=analyse_ranks(ranks))


@needs_nccl
def test_straggler_gain_is_at_most_what_the_other_ranks_waited(made_job: SimpleNamespace) -> None:
    """No rank's step can shrink by more than it waited inside collectives."""
    analysis = made_job.analysis
    assert analysis.stragglers.ranks == [3]
    per = analysis.stragglers.per_rank.set_index(Lateness.rank)
    steps = float(made_job.ranks.summary[RankSummary.steps].median())
    most_waited_per_step = float(per.drop(index=3)[Lateness.wait_us].max()) / steps
    late_bound = float(per.loc[3, Lateness.lateness_p50_us]) * int(per.loc[3, Lateness.instances])
    # the planted lateness (10 ms) is more than the others could wait: the cap must bite here
    assert late_bound / steps > most_waited_per_step
    (finding,) = [f for f in analysis.findings if f.id == "rank-straggler" and f.trace == "rank 3"]
    assert finding.est_gain_us <= most_waited_per_step + 1e-6
    assert finding.est_gain_us == pytest.approx(most_waited_per_step)
    assert "waited" in finding.gain_basis


@needs_nccl
def test_collective_wait_gain_is_the_mean_ranks_wait(made_job: SimpleNamespace) -> None:
    per = made_job.analysis.stragglers.per_rank
    summary = made_job.ranks.summary.set_index(RankSummary.rank)
    for row in per.to_dict("records"):
        comm = float(summary.loc[row[Lateness.rank], RankSummary.comm_time_us])
        assert row[Lateness.transfer_us] + row[Lateness.wait_us] == pytest.approx(comm)
        assert 0 <= row[Lateness.wait_us] <= comm
    steps = float(made_job.ranks.summary[RankSummary.steps].median())
    (finding,) = [f for f in made_job.analysis.findings if f.id == "collective-wait"]
    assert finding.est_gain_us == pytest.approx(
        float(per[Lateness.wait_us].sum()) / len(per) / steps
    )
    assert finding.est_gain_us <= float(per[Lateness.wait_us].max()) / steps
