"""Build a large Chrome/Kineto trace by replicating a real one, for the parse benchmark.

The source trace is repeated ``factor`` times, one copy after another in time, so the result
looks like one long profiling session rather than ten overlapping ones:

* copy 0 is the source's events, unchanged and in their original order;
* copy ``k`` (k ≥ 1) repeats every event except the metadata (``ph: "M"``, which describes
  processes and threads and so appears once), in the same order, with
  - ``ts`` shifted by ``k * period_us``, where ``period_us`` is the source's span (earliest start
    to latest end, rounded up to a whole µs) plus a 1 ms gap, so each copy starts after the
    previous one has ended;
  - every positive integer id shifted by ``k * id_stride``: the flow/async ``id`` and the args
    listed in :data:`ID_ARGS` (``correlation``, ``External id``, ...). ``id_stride`` is a power
    of ten above the largest such id, so copies never share an id and the links inside each copy
    (launch → kernel by correlation, flow start → flow end, op → kernel by External id) stay
    exactly as they were;
  - ``ProfilerStep#N`` names renumbered to continue the step count.

So the output has ``n_meta + factor * (n - n_meta)`` events. The top-level keys (device
properties, distributed info, ...) are kept, in their order. The output is compact JSON with
one event per line, written to a temporary file and renamed into place; the same inputs always
give the same bytes. A JSON sidecar (``<out>.meta.json``) records the inputs and the output's
size and SHA-256, so a second call with the same inputs returns at once.

CLI::

    python benchmarks/make_large_trace.py [--source FILE] [--factor 10] [--out FILE] [--force]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import re
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import msgspec

GENERATOR_VERSION = 1
ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
DEFAULT_SOURCE = CORPUS / "nvidia" / "a100_compiled_cudagraph_train_2023.json.gz"
DEFAULT_FACTOR = 10
DATA_DIR = ROOT / "benchmarks" / "data"
GAP_US = 1000

# Integer args that identify or link events; each copy gets its own range of them.
ID_ARGS = (
    "correlation",
    "External id",
    "Sequence number",
    "Ev Idx",
    "Python id",
    "Python parent id",
)
_STEP = re.compile(r"^ProfilerStep#(\d+)$")


@dataclass(frozen=True)
class LargeTrace:
    """What :func:`make_large_trace` wrote (or found already written)."""

    path: str
    source: str
    source_sha256: str
    factor: int
    events: int  # events in the output
    source_events: int
    meta_events: int  # "M" events, kept once
    period_us: int  # time shift between consecutive copies
    id_stride: int  # id shift between consecutive copies
    step_stride: int  # ProfilerStep number shift between consecutive copies
    bytes: int
    sha256: str
    generator_version: int = GENERATOR_VERSION
    seconds: float = 0.0  # generation time; 0 when an existing file was reused
    reused: bool = False


def default_out(factor: int = DEFAULT_FACTOR, source: Path = DEFAULT_SOURCE) -> Path:
    stem = source.name.split(".")[0]
    return DATA_DIR / f"{stem}_x{factor}.json"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def _read_source(source: Path) -> bytes:
    raw = source.read_bytes()
    return gzip.decompress(raw) if source.suffix == ".gz" else raw


def _is_id(value: Any) -> bool:
    return type(value) is int and value > 0


def _plan(events: list[dict[str, Any]]) -> tuple[int, int, int]:
    """Return (period_us, id_stride, step_stride) for a list of source events."""
    starts = [e["ts"] for e in events if e.get("ph") != "M" and "ts" in e]
    ends = [e["ts"] + (e.get("dur") or 0) for e in events if e.get("ph") != "M" and "ts" in e]
    span = (max(ends) - min(starts)) if starts else 0
    period = int(-(-span // 1)) + GAP_US  # ceil to a whole µs, plus the gap
    max_id = 0
    steps: list[int] = []
    for e in events:
        if _is_id(e.get("id")):
            max_id = max(max_id, e["id"])
        args = e.get("args")
        if args:
            for key in ID_ARGS:
                value = args.get(key)
                if _is_id(value):
                    max_id = max(max_id, value)
        name = e.get("name")
        if isinstance(name, str) and (m := _STEP.match(name)):
            steps.append(int(m.group(1)))
    id_stride = 10 ** len(str(max_id))
    step_stride = (max(steps) - min(steps) + 1) if steps else 0
    return period, id_stride, step_stride


def shift_event(event: dict[str, Any], dt: int, did: int, dstep: int) -> dict[str, Any]:
    """A copy of ``event``: ``dt`` µs later, ids ``did`` higher, step number ``dstep`` higher."""
    out = dict(event)
    if "ts" in out:
        out["ts"] = out["ts"] + dt
    if _is_id(out.get("id")):
        out["id"] = out["id"] + did
    args = out.get("args")
    if args:
        new_args = None
        for key in ID_ARGS:
            value = args.get(key)
            if _is_id(value):
                if new_args is None:
                    new_args = dict(args)
                new_args[key] = value + did
        if new_args is not None:
            out["args"] = new_args
    if dstep:
        name = out.get("name")
        if isinstance(name, str) and (m := _STEP.match(name)):
            out["name"] = f"ProfilerStep#{int(m.group(1)) + dstep}"
    return out


def _write(
    out: Path, doc: Any, events: list[dict[str, Any]], factor: int, plan: tuple[int, int, int]
) -> int:
    """Write the replicated trace to ``out``; return the number of events written."""
    period, id_stride, step_stride = plan
    encode = msgspec.json.Encoder().encode
    body = [e for e in events if e.get("ph") != "M"]
    written = 0
    with out.open("wb") as fh:
        if isinstance(doc, list):  # the oldest schema: a bare array of events
            keys: list[str] = ["traceEvents"]
            fh.write(b"[")
        else:
            keys = list(doc)
            fh.write(b"{")
        for key_index, key in enumerate(keys):
            if isinstance(doc, dict):
                fh.write((b",\n" if key_index else b"\n") + encode(key) + b":")
                if key != "traceEvents":
                    fh.write(encode(doc[key]))
                    continue
                fh.write(b"[")
            sep = b"\n"
            for k in range(factor):
                chunk = events if k == 0 else body
                dt, did, dstep = k * period, k * id_stride, k * step_stride
                for event in chunk:
                    fh.write(sep + encode(event if k == 0 else shift_event(event, dt, did, dstep)))
                    sep = b",\n"
                written += len(chunk)
            fh.write(b"\n]")
        if isinstance(doc, dict):
            fh.write(b"\n}")
        fh.write(b"\n")
    return written


def make_large_trace(
    source: str | os.PathLike[str] = DEFAULT_SOURCE,
    factor: int = DEFAULT_FACTOR,
    out: str | os.PathLike[str] | None = None,
    *,
    force: bool = False,
) -> LargeTrace:
    """Write ``source`` replicated ``factor`` times to ``out`` (see the module docstring).

    Reuses an existing ``out`` when its sidecar records the same source (by SHA-256), factor and
    generator version and the file still has the recorded size and SHA-256, unless ``force``.
    """
    if factor < 1:
        raise ValueError(f"factor must be ≥ 1, not {factor}")
    source = Path(source)
    out = Path(out) if out is not None else default_out(factor, source)
    sidecar = out.with_name(out.name + ".meta.json")
    source_sha = _sha256(source)
    if not force and out.is_file() and sidecar.is_file():
        try:
            recorded = json.loads(sidecar.read_text())
        except ValueError:
            recorded = {}
        same_inputs = (
            recorded.get("source_sha256") == source_sha
            and recorded.get("factor") == factor
            and recorded.get("generator_version") == GENERATOR_VERSION
        )
        if (
            same_inputs
            and out.stat().st_size == recorded.get("bytes")
            and _sha256(out) == recorded.get("sha256")
        ):
            recorded.update(seconds=0.0, reused=True, path=str(out))
            return LargeTrace(**recorded)

    t0 = time.perf_counter()
    doc = msgspec.json.decode(_read_source(source))
    events = doc if isinstance(doc, list) else doc.get("traceEvents", [])
    plan = _plan(events)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    try:
        written = _write(tmp, doc, events, factor, plan)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    info = LargeTrace(
        path=str(out),
        source=str(source),
        source_sha256=source_sha,
        factor=factor,
        events=written,
        source_events=len(events),
        meta_events=sum(1 for e in events if e.get("ph") == "M"),
        period_us=plan[0],
        id_stride=plan[1],
        step_stride=plan[2],
        bytes=out.stat().st_size,
        sha256=_sha256(out),
        seconds=round(time.perf_counter() - t0, 3),
    )
    record = {k: v for k, v in asdict(info).items() if k not in ("seconds", "reused", "path")}
    sidecar.write_text(json.dumps(record, indent=1) + "\n")
    return info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="trace to replicate")
    parser.add_argument("--factor", type=int, default=DEFAULT_FACTOR, help="number of copies")
    parser.add_argument("--out", type=Path, help="output .json (default: benchmarks/data/...)")
    parser.add_argument("--force", action="store_true", help="rewrite even if up to date")
    args = parser.parse_args(argv)
    if not args.source.is_file():
        print(f"make_large_trace: no source trace at {args.source}", file=sys.stderr)
        return 2
    info = make_large_trace(args.source, args.factor, args.out, force=args.force)
    state = "reused" if info.reused else f"written in {info.seconds:.1f} s"
    print(
        f"{info.path}: {info.events:,} events, {info.bytes / 1e6:.1f} MB, "
        f"sha256 {info.sha256[:16]}… ({state})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
