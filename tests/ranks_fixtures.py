"""Many-rank jobs made in a test: small per-rank traces with known clock offsets and a planted
straggler, shared by the ranks tests (tests/test_ranks_*.py).

Two makers, both returning one trace document (a dict) per rank:

- :func:`synthetic_job`: a tiny GPU job built from scratch. Each step runs, per collective, a
  compute kernel on every rank and then an NCCL all-reduce; every rank's all-reduce ends when the
  last rank has arrived plus the transfer time, so the ranks that arrive early *wait* inside the
  kernel. The straggler's compute is ``slow_us`` longer, so it arrives last every time. The true
  (offset-free) numbers are returned with the documents, for tests to check against.
- :func:`ranks_from_trace`: copies of a real trace (e.g. the corpus' NCCL rank), one per rank,
  ``distributedInfo.rank`` rewritten and every timestamp shifted by the rank's clock offset; on
  every rank but the straggler each collective kernel starts up to ``lateness_us`` earlier
  (and lasts that much longer, never overlapping the kernel before it on its stream), as if it
  had waited for the straggler.

:func:`write_ranks` writes the documents as ``rank<N>.json`` files.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from traceviz.ranks.synth import make_rank_doc

NCCL_ALLREDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
COMPUTE = "ampere_sgemm_128x64_nn"


@dataclass
class Job:
    """A synthetic job: the per-rank documents and the truth they were made from."""

    docs: list[dict[str, Any]]
    offsets_us: list[float]  # clock offset added to every timestamp of each rank
    straggler: int | None
    slow_us: float
    transfer_us: float  # true transfer time of each collective
    nelems: int
    dtype: str
    # per rank, summed true waiting time inside its collectives (end − own arrival − transfer)
    wait_us: list[float] = field(default_factory=list)
    comm_us: list[float] = field(default_factory=list)  # per rank, summed collective durations


def synthetic_job(
    n_ranks: int = 8,
    *,
    steps: int = 3,
    collectives: int = 4,
    straggler: int | None = 3,
    slow_us: float = 400.0,
    compute_us: float = 1000.0,
    transfer_us: float = 150.0,
    jitter_us: float = 5.0,
    offsets_us: list[float] | None = None,
    nelems: int = 1 << 20,
    dtype: str = "Float",
    seed: int = 0,
    compute_scale: list[float] | None = None,
    regions: list[int] | None = None,
) -> Job:
    """A tiny ``n_ranks`` GPU job (see the module docstring). ``offsets_us`` default: random
    offsets within ±50 ms; ``compute_scale`` multiplies each rank's compute kernel durations
    (a rank with a slower kernel); ``regions`` gives each rank that many compiled frames per
    step (``Torch-Compiled Region: X/0`` spans; more than one is a graph break)."""
    rng = np.random.default_rng(seed)
    if offsets_us is None:
        offsets_us = [float(x) for x in rng.uniform(-50_000, 50_000, n_ranks)]
    scale = compute_scale or [1.0] * n_ranks
    events: list[list[dict[str, Any]]] = [[] for _ in range(n_ranks)]
    wait = [0.0] * n_ranks
    comm = [0.0] * n_ranks
    corr = [0] * n_ranks
    t = 1_000_000.0
    for step in range(steps):
        step_start = t
        for _c in range(collectives):
            ready = []
            for r in range(n_ranks):
                comp = compute_us * scale[r] + (slow_us if r == straggler else 0.0)
                comp += float(rng.uniform(0, jitter_us))
                corr[r] += 1
                events[r] += _launched(COMPUTE, "aten::mm", t + 10, comp, corr[r], stream=7)
                ready.append(t + 10 + comp)
            end = max(ready) + transfer_us
            for r in range(n_ranks):
                corr[r] += 1
                dur = end - ready[r]
                args = _comm_args(nelems, dtype, n_ranks)
                events[r] += _launched(
                    NCCL_ALLREDUCE, "record_param_comms", ready[r], dur, corr[r], stream=20,
                    kernel_args=args, op_args=args,
                )  # fmt: skip
                wait[r] += dur - transfer_us
                comm[r] += dur
            t = end
        t += 50.0
        for r in range(n_ranks):
            events[r].append(_span(f"ProfilerStep#{step}", step_start, t - step_start))
            for frame in range((regions or [0] * n_ranks)[r]):
                width = (t - step_start) / (regions or [1])[r]
                lo = step_start + frame * width + 1
                events[r].append(_span(f"Torch-Compiled Region: {frame}/0", lo, width - 2))
        t += 100.0
    docs = []
    for r in range(n_ranks):
        shifted = [_shift(e, offsets_us[r]) for e in events[r]]
        docs.append(_doc(shifted, r, n_ranks))
    return Job(
        docs=docs, offsets_us=list(offsets_us), straggler=straggler, slow_us=slow_us,
        transfer_us=transfer_us, nelems=nelems, dtype=dtype, wait_us=wait, comm_us=comm,
    )  # fmt: skip


def ranks_from_trace(
    doc: dict[str, Any],
    n_ranks: int,
    *,
    offsets_us: list[float],
    straggler: int | None = None,
    lateness_us: float = 0.0,
) -> list[dict[str, Any]]:
    """``n_ranks`` copies of a real trace document (see the module docstring), made by
    :func:`traceviz.ranks.synth.make_rank_doc` (its straggler's compute is not slowed)."""
    return [
        make_rank_doc(copy.deepcopy(doc), r, n_ranks, offset_us=offsets_us[r],
                      waits=r != straggler and lateness_us > 0, late_us=lateness_us)
        for r in range(n_ranks)
    ]  # fmt: skip


def write_ranks(directory: Path, docs: list[dict[str, Any]]) -> list[Path]:
    """Write each document as ``directory/rank<N>.json``; the paths, in rank order."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for r, doc in enumerate(docs):
        path = directory / f"rank{r}.json"
        path.write_text(json.dumps(doc))
        paths.append(path)
    return paths


def _comm_args(nelems: int, dtype: str, group: int) -> dict[str, Any]:
    return {
        "Collective name": "allreduce", "In msg nelems": nelems, "Out msg nelems": nelems,
        "dtype": dtype, "Group size": group, "Process Group Name": "0",
    }  # fmt: skip


def _launched(
    name: str,
    op_name: str,
    ts: float,
    dur: float,
    corr: int,
    *,
    stream: int,
    kernel_args: dict[str, Any] | None = None,
    op_args: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """A CPU op, its launch call and the kernel it launched (starting at ``ts``)."""
    ext = 100_000 + corr
    op_ts, launch_ts = ts - 9.0, ts - 7.0
    return [
        {"ph": "X", "cat": "cpu_op", "name": op_name, "pid": 1, "tid": 1, "ts": op_ts,
         "dur": 6.0, "args": {"External id": ext, **(op_args or {})}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
         "ts": launch_ts, "dur": 3.0, "args": {"correlation": corr, "External id": ext}},
        {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts,
         "dur": dur, "args": {"device": 0, "stream": stream, "correlation": corr,
                              "External id": ext, **(kernel_args or {})}},
    ]  # fmt: skip


def _span(name: str, ts: float, dur: float) -> dict[str, Any]:
    return {"ph": "X", "cat": "user_annotation", "name": name, "pid": 1, "tid": 1, "ts": ts,
            "dur": dur, "args": {}}  # fmt: skip


def _shift(event: dict[str, Any], offset: float) -> dict[str, Any]:
    return {**event, "ts": event["ts"] + offset}


def _doc(events: list[dict[str, Any]], rank: int, world: int) -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world},
        "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}],
        "traceEvents": events,
    }
