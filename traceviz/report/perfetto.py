"""Both traces of a :class:`~traceviz.analysis.compare.Comparison` in one Chrome trace, with
traceviz's analysis overlaid, for ui.perfetto.dev and chrome://tracing.

:func:`perfetto_trace` is a pure builder: Comparison (+ the two input trace files, by default
``Trace.meta.source``) → a dict ``{"traceEvents": [...], "displayTimeUnit": "ms",
"otherData": {...}}`` whose events are plain dicts; :func:`write_perfetto` streams it to
``.json``, ``.json.gz`` or stdout (``-``) one event at a time (orjson). docs/perfetto-export.md
describes the file; in short:

- **Every input event appears once.** Each side's processes get new integer pids (side a first,
  then side b, in order of first appearance), so the two traces are separate processes.
  Metadata events (``ph`` ``"M"``) are copied like the others; a ``process_name`` says the
  side, the rank and the device (``"eager · rank 0 · GPU 3"``, :func:`process_title`), a
  ``process_sort_index`` is offset so side a sorts above side b. Per pid with no
  ``process_name`` one is added. Flow and async ids of the
  inputs (``id``) become ``2·id + side`` (a: 0, b: 1) so the two sides' ids never meet.
- **Alignment per step.** Both sides are warped by a monotone, piecewise constant shift so that
  step k of both sides starts at the same time: ``T_0`` is side a's first step start and
  ``T_{k+1} = T_k + max(a_{k+1} − a_k, b_{k+1} − b_k)``; an event's start and end are each
  moved by the shift of the step they fall in (before the first step: the first step's shift).
  Order and nesting are kept; only an event that spans a step boundary where the other side's
  step was longer is stretched (its original duration is in ``args.traceviz.dur_us``).
  Without steps on both sides one constant shift lines up the earliest events.
- **Overlay.** Each compiled kernel event gets ``args.traceviz`` (:data:`KERNEL_ARGS`) from the
  fusion map's credits; every kernel, memcpy and memset event of both sides gets
  ``args.traceviz.roofline`` (:data:`ROOFLINE_ARGS`), the roofline row of the kernels-table row
  the event was matched to by name and start. A flow (``s`` → ``f``, ``bp`` ``"e"``, id
  ``flow_id_base + eager kernels-table row``) links each credited eager kernel to the compiled
  kernel of that name nearest in aligned time. A ``traceviz`` process holds blocking calls and
  graph-break gaps (spans, ``X``) and the findings (global instants, ``ph`` ``"i"``, ``s`` ``"g"``).
"""

from __future__ import annotations

import bisect
import functools
import gzip
import io
import json
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import orjson
import pandas as pd

from traceviz.analysis.compare import Comparison, Side
from traceviz.analysis.fusion.fusion_map import FusionKernels
from traceviz.analysis.fusion.lines import ByLine, split_kernel_names
from traceviz.analysis.fusion.match import Credits
from traceviz.analysis.regions import Gap
from traceviz.analysis.roofline.per_kernel import Roofline, RooflineColumns
from traceviz.analysis.timing.blocking import BlockingColumns
from traceviz.analysis.traffic.memory import KernelTraffic
from traceviz.errors import TraceFormatError, UsageError
from traceviz.report.bundle import Report
from traceviz.report.roofline_report import roofline_of
from traceviz.schema import Kernels, Steps
from traceviz.trace import Trace

__all__ = [
    "FLOW_CAT",
    "KERNEL_ARGS",
    "OVERLAY",
    "ROOFLINE_ARGS",
    "Warp",
    "perfetto_gzip",
    "perfetto_trace",
    "write_perfetto",
]

#: The key under ``args`` that holds traceviz's additions to a copied event.
OVERLAY = "traceviz"
#: ``cat`` of every event traceviz adds (flows, spans, instants, its metadata).
FLOW_CAT = "traceviz"
#: Keys of ``args.traceviz`` on a compiled kernel (whole-trace figures of its kernel name).
KERNEL_ARGS = (
    "eager_ops",  # eager ops credited to it, "op (kernels), ...", by eager time (str)
    "eager_kernels",  # eager kernel instances credited to this kernel name (int)
    "eager_time_us",  # their exclusive device time, µs (float)
    "source_lines",  # user source lines whose ops it holds, "file:line" (list of str)
    "est_bytes_saved",  # credited eager kernels' estimated bytes − this name's, × step scale
    # (int; null when either side has no estimate or the difference is negative)
    "is_fusion",  # an Inductor-generated kernel (bool)
    "basis",  # "compiler" or "name-match"
    "confidence",  # credited-time-weighted confidence, 0–1 (float or null)
)
#: Keys of ``args.traceviz.roofline`` on a kernel, memcpy or memset event of either side: that
#: one execution's roofline figures
#: (:class:`~traceviz.analysis.roofline.per_kernel.RooflineColumns`); a figure that is unknown (NaN,
#: no precision) is left out, never written as NaN.
ROOFLINE_ARGS = (
    "flops",  # floating-point operations, FLOP (float; the op's FLOPs split by duration)
    "bytes",  # bytes read + written (int)
    "bytes_basis",  # how the bytes are known: "measured", "estimated", "compiler" (str)
    "achieved_tbps",  # bytes / device time, TB/s (float)
    "achieved_tflops",  # FLOPs / device time, TFLOP/s (float)
    "intensity",  # FLOPs / byte, FLOP/byte (float)
    "pct_of_roof",  # achieved over the attainable roof at that intensity, % (float)
    "bound",  # memory / compute / latency / transfer / unknown / no-peak (str)
    "precision",  # fp32 / tf32 / bf16 / fp16 / fp8 of the FLOPs (str)
    "peaks_basis",  # where the peaks come from: "table", "measured", "file", "no-peak" (str)
)
SIDE_SORT_OFFSET = (0, 1_000_000)
WRITE_BATCH = 4096  # events encoded per write
GZIP_LEVEL = 6  # gzip's own default: level 9 takes twice as long for a few % smaller files


@dataclass(frozen=True)
class Warp:
    """A monotone time warp of one side: ``t ↦ t + shifts_us[i]`` where ``i`` is the last of
    ``starts_us`` at or before ``t`` (the first one before them). µs, trace clock."""

    starts_us: npt.NDArray[np.float64]
    shifts_us: npt.NDArray[np.float64]

    def shift_at(self, t: float, *, end: bool = False) -> float:
        """The shift at time ``t``, µs (plain floats: this runs once per event). An ``end``
        exactly at a step start belongs to the step before (a step ending where the next
        begins is not stretched)."""
        starts, shifts = self._lists
        cut = bisect.bisect_left(starts, t) if end else bisect.bisect_right(starts, t)
        return shifts[max(cut - 1, 0)]

    @functools.cached_property
    def _lists(self) -> tuple[list[float], list[float]]:
        return self.starts_us.tolist(), self.shifts_us.tolist()

    def scalar(self, t: float) -> float:
        """``t`` warped, µs."""
        return t + self.shift_at(t)


def alignment(a: Trace, b: Trace) -> tuple[Warp, Warp, dict[str, Any]]:
    """The warps of both sides (module docstring) and their description for ``otherData``."""
    sa, sb = _step_starts(a), _step_starts(b)
    n = min(len(sa), len(sb))
    if n == 0:
        oa = a.meta.time_origin_us or 0.0
        ob = b.meta.time_origin_us or 0.0
        zero = np.zeros(1)
        info = {"kind": "origin", "steps_aligned": 0, "b_shift_us": oa - ob}
        return Warp(zero, zero.copy()), Warp(zero, np.array([oa - ob])), info
    grid = np.empty(n)
    grid[0] = sa[0]
    if n > 1:
        grid[1:] = sa[0] + np.cumsum(np.maximum(np.diff(sa[:n]), np.diff(sb[:n])))
    warp_a, warp_b = Warp(sa[:n], grid - sa[:n]), Warp(sb[:n], grid - sb[:n])
    info = {"kind": "per-step", "steps_aligned": n, "step_starts_us": grid.tolist()}
    return warp_a, warp_b, info


def _step_starts(trace: Trace) -> npt.NDArray[np.float64]:
    ts = trace.steps[Steps.ts_us].to_numpy(dtype=float, na_value=np.nan)
    return np.unique(ts[np.isfinite(ts)])


# --- reading the inputs ------------------------------------------------------------------


def read_raw(path: str | Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A trace file's events as plain dicts and its other top-level keys."""
    from traceviz.parse.read import read_bytes

    target = Path(path)
    if target.is_dir():
        raise UsageError(f"{path}: the export needs the trace's JSON file, not a directory")
    if not target.is_file():
        raise UsageError(f"{path}: no such trace file (the export reads the original JSON)")
    data = read_bytes(target)
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:  # NaN / Infinity literals: the slow, lenient way
        try:
            doc = json.loads(bytes(data), parse_constant=str)
        except ValueError as err:
            raise TraceFormatError(target, f"not valid JSON ({err})") from err
    if isinstance(doc, list):
        return [e for e in doc if isinstance(e, dict)], {}
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise TraceFormatError(target, "not a profiler trace: no traceEvents list")
    events = [e for e in doc.pop("traceEvents") if isinstance(e, dict)]
    return events, doc


# --- copying one side ----------------------------------------------------------------------


@dataclass
class _Copied:
    """One side copied: output events, kernels-table row → index into ``events``, input pid →
    new pid, and the ``process_name`` and sort index added for each new pid its input named
    none for (``"<side> · rank <r> · pid <old pid>"``)."""

    events: list[dict[str, Any]]
    kernel_event: dict[int, int]
    pids: dict[Any, int]
    added: list[dict[str, Any]]


def _kernel_keys(trace: Trace) -> dict[tuple[str, float], list[int]]:
    """(name, start µs) → kernels-table rows, in row order, to find each row's raw event."""
    keys: dict[tuple[str, float], list[int]] = defaultdict(list)
    names = trace.kernels[Kernels.name].astype(str).tolist()
    starts = trace.kernels[Kernels.ts_us].to_numpy(dtype=float, na_value=np.nan).tolist()
    for row, key in enumerate(zip(names, starts, strict=True)):
        keys[key].append(row)
    return keys


def _as_float(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _new_id(value: Any, side: int) -> Any:
    """An input's flow/async id made distinct per side (``2·id + side``; text gets a prefix)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and abs(value) < 2**62:
        return 2 * value + side
    if isinstance(value, str):
        try:
            number = int(value, 0)
        except ValueError:
            return f"{'ab'[side]}:{value}"
        if abs(number) < 2**62:
            return 2 * number + side
    return f"{'ab'[side]}:{value}"


def rank_of(trace: Trace) -> int:
    """The trace's rank: ``distributedInfo.rank``, else 0 (a profile written without a
    process group is the job's only process)."""
    rank = trace.meta.distributed.get("rank")
    if isinstance(rank, bool) or not isinstance(rank, int | str):
        return 0
    try:
        return int(rank)
    except ValueError:
        return 0


def process_title(label: str, rank: int, device: str) -> str:
    """A process's name in the export: ``"<side> · rank <r> · <device>"``."""
    return f"{label} · rank {rank} · {device}"


def _devices(events: list[dict[str, Any]]) -> dict[Any, str]:
    """Input pid → what the process is: its ``process_labels`` (Kineto: ``"CPU"``,
    ``"GPU 3"``), else its ``process_name`` (``"python3"``)."""
    labels: dict[Any, str] = {}
    names: dict[Any, str] = {}
    for event in events:
        if event.get("ph") != "M" or not isinstance(event.get("args"), dict):
            continue
        if event.get("name") == "process_labels" and event["args"].get("labels"):
            labels[event.get("pid")] = str(event["args"]["labels"])
        elif event.get("name") == "process_name":
            names[event.get("pid")] = str(event["args"].get("name", ""))
    return {**names, **labels}


def _copy_side(
    events: list[dict[str, Any]], trace: Trace, side: int, label: str, warp: Warp, first_pid: int
) -> _Copied:
    """Every event of one side, pids renumbered, times warped, ids made distinct."""
    keys = _kernel_keys(trace)
    devices, rank = _devices(events), rank_of(trace)
    pids: dict[Any, int] = {}
    out: list[dict[str, Any]] = []
    kernel_event: dict[int, int] = {}
    named: set[int] = set()
    for event in events:  # edited in place: the events were read for this export alone
        if event.get("ph") == "X":  # find its kernels-table row before times move
            start = _as_float(event.get("ts"))
            rows = keys.get((str(event.get("name")), np.nan if start is None else start))
            if rows:
                kernel_event[rows.pop(0)] = len(out)
        pid = event.get("pid")
        if pid not in pids:
            pids[pid] = first_pid + len(pids)
        event["pid"] = pids[pid]
        if "id" in event:
            event["id"] = _new_id(event["id"], side)
        _warp_event(event, warp)
        if event.get("ph") == "M":
            if event.get("name") == "process_name":
                named.add(event["pid"])
            _label_metadata(event, side, process_title(label, rank, devices.get(pid, "")))
        out.append(event)
    added = [
        meta
        for orig, pid in pids.items()
        if pid not in named
        for meta in (
            _meta(pid, "process_name", {"name": process_title(label, rank, f"pid {orig}")}),
            _meta(pid, "process_sort_index", {"sort_index": SIDE_SORT_OFFSET[side] + pid}),
        )
    ]
    return _Copied(out, kernel_event, pids, added)


def _warp_event(event: dict[str, Any], warp: Warp) -> None:
    ts = _as_float(event.get("ts"))
    if ts is None or not np.isfinite(ts):
        return
    shift = warp.shift_at(ts)
    if shift:
        event["ts"] = ts + shift
    dur = _as_float(event.get("dur"))
    if dur is None or not np.isfinite(dur) or event.get("ph") != "X":
        return
    stretch = warp.shift_at(ts + dur, end=True) - shift if dur > 0 else 0.0
    if stretch:  # it spans a step boundary where the other side's step was longer
        _overlay(event)["dur_us"] = dur
        event["dur"] = dur + stretch


def _overlay(event: dict[str, Any]) -> dict[str, Any]:
    args = event.get("args")
    args = dict(args) if isinstance(args, dict) else {}
    event["args"] = args
    extra = args.setdefault(OVERLAY, {})
    return extra if isinstance(extra, dict) else {}


def _label_metadata(event: dict[str, Any], side: int, title: str) -> None:
    """A ``process_name`` becomes ``title``; a ``process_sort_index`` moves by the side's
    offset."""
    args = event.get("args")
    if not isinstance(args, dict):
        return
    args = dict(args)
    if event.get("name") == "process_name":
        args["name"] = title
    elif event.get("name") == "process_sort_index" and isinstance(args.get("sort_index"), int):
        args["sort_index"] = args["sort_index"] + SIDE_SORT_OFFSET[side]
    event["args"] = args


def _meta(pid: int, name: str, args: dict[str, Any], tid: int | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"ph": "M", "name": name, "pid": pid, "args": args, "cat": FLOW_CAT}
    if tid is not None:
        event["tid"] = tid
    return event


# --- the overlay ---------------------------------------------------------------------------


def _lines_of_kernels(by_line: pd.DataFrame) -> dict[str, list[str]]:
    """Compiled kernel name → the user source lines ("file:line") whose ops it holds."""
    lines: dict[str, list[str]] = defaultdict(list)
    for file, line, kernels in zip(
        by_line[ByLine.file], by_line[ByLine.line], by_line[ByLine.compiled_kernels], strict=True
    ):
        for kernel in split_kernel_names(kernels):
            lines[kernel].append(f"{file}:{line}")
    return lines


def kernel_bytes_saved(comparison: Comparison) -> dict[str, int | None]:
    """Compiled kernel name → estimated bytes its credited eager kernels moved minus what its
    own calls moved (× the fusion map's step scale); None where a figure is missing or the
    difference is negative. Bytes, **estimated** (:mod:`traceviz.analysis.traffic.memory`)."""
    fusion = comparison.fusion
    credits = fusion.credits
    eager_bytes = fusion.eager_traffic.per_kernel[KernelTraffic.est_bytes]
    credited = credits[credits[Credits.kernel].notna()]
    rows = credited[Credits.eager_row].to_numpy(dtype=np.int64)
    eager = pd.DataFrame(
        {"kernel": credited[Credits.kernel].to_numpy(), "bytes": eager_bytes.iloc[rows].to_numpy()}
    )
    names = comparison.b.trace.kernels[Kernels.name].astype(str)
    own = fusion.compiled_traffic.per_kernel[KernelTraffic.est_bytes]
    compiled = pd.DataFrame({"kernel": names.to_numpy(), "bytes": own.to_numpy()})
    out: dict[str, int | None] = {}
    for kernel, group in eager.groupby("kernel", sort=False):
        mine = compiled.loc[compiled["kernel"] == kernel, "bytes"]
        if group["bytes"].isna().any() or mine.empty or mine.isna().any():
            out[str(kernel)] = None
            continue
        saved = float(group["bytes"].sum()) - float(mine.sum()) * fusion.step_scale
        out[str(kernel)] = int(saved) if saved >= 0 else None
    return out


def _kernel_args(comparison: Comparison) -> dict[str, dict[str, Any]]:
    """``args.traceviz`` per compiled kernel name that has credits (keys: :data:`KERNEL_ARGS`)."""
    fusion = comparison.fusion
    lines = _lines_of_kernels(fusion.by_line)
    saved = kernel_bytes_saved(comparison)
    out: dict[str, dict[str, Any]] = {}
    for row in fusion.kernels.to_dict("records"):
        count = row[FusionKernels.eager_kernels]
        if pd.isna(count) or int(count) == 0:
            continue
        name = str(row[FusionKernels.kernel])
        confidence = row[FusionKernels.confidence]
        out[name] = {
            "eager_ops": row[FusionKernels.eager_ops],
            "eager_kernels": int(count),
            "eager_time_us": float(row[FusionKernels.eager_time_us]),
            "source_lines": lines.get(name, []),
            "est_bytes_saved": saved.get(name),
            "is_fusion": bool(row[FusionKernels.is_fusion]),
            "basis": str(row[FusionKernels.basis]),
            "confidence": None if pd.isna(confidence) else float(confidence),
        }
    return out


def _annotate_kernels(comparison: Comparison, b: _Copied) -> int:
    """Add ``args.traceviz`` to each compiled kernel event with credits; returns how many."""
    per_name = _kernel_args(comparison)
    names = comparison.b.trace.kernels[Kernels.name].astype(str).tolist()
    done = 0
    for row, index in b.kernel_event.items():
        extra = per_name.get(names[row])
        if extra is not None:
            _overlay(b.events[index]).update(extra)
            done += 1
    return done


def roofline_args(roofline: Roofline, rows: Iterable[int]) -> dict[int, dict[str, Any]]:
    """Kernels-table row → its ``args.traceviz.roofline`` (keys: :data:`ROOFLINE_ARGS`) for
    the given rows of a side whose roofline is ``roofline``; NaN and unknown figures are left
    out."""
    words = ("bytes_basis", "bound", "precision")  # the others but peaks_basis: numbers
    table = roofline.per_kernel  # ROOFLINE_ARGS are RooflineColumns' names
    columns = {key: table[getattr(RooflineColumns, key)] for key in ROOFLINE_ARGS[:-1]}
    floats = {
        key: column.to_numpy(dtype=float, na_value=np.nan)
        for key, column in columns.items()
        if key not in words
    }
    texts = {key: columns[key].astype(object).to_numpy() for key in words}
    basis = roofline.peaks.basis.value
    out: dict[int, dict[str, Any]] = {}
    for row in rows:
        args: dict[str, Any] = {}
        for key, values in floats.items():
            value = float(values[row])
            if np.isfinite(value):
                args[key] = int(value) if key == "bytes" else value
        for key, values in texts.items():
            if isinstance(values[row], str) and values[row]:
                args[key] = values[row]
        if "bytes" not in args:  # no figure: its basis ("none") says nothing more
            args.pop("bytes_basis", None)
        args["peaks_basis"] = basis
        out[row] = args
    return out


def _annotate_roofline(roofline: Roofline | None, copied: _Copied) -> int:
    """Add ``args.traceviz.roofline`` to each of a side's matched kernel events (``roofline``:
    the side's, None when its device is not analysed); returns how many."""
    if roofline is None:
        return 0
    per_row = roofline_args(roofline, copied.kernel_event)
    for row, index in copied.kernel_event.items():
        _overlay(copied.events[index])["roofline"] = per_row[row]
    return len(per_row)


def _flows(comparison: Comparison, a: _Copied, b: _Copied, base: int) -> list[dict[str, Any]]:
    """``s``/``f`` pairs: each credited eager kernel → the compiled kernel of the credited name
    whose aligned start is nearest. Id: ``base + eager kernels-table row``."""
    targets = _instances_by_name(comparison.b.trace, b)
    credits = comparison.fusion.credits
    credited = credits[credits[Credits.kernel].notna()]
    flows: list[dict[str, Any]] = []
    for row, kernel in zip(credited[Credits.eager_row], credited[Credits.kernel], strict=True):
        start = a.kernel_event.get(int(row))
        found = targets.get(str(kernel))
        if start is None or found is None:
            continue
        source = a.events[start]
        ts, index = found
        pos = int(np.clip(np.searchsorted(ts, source["ts"]), 0, len(ts) - 1))
        if pos > 0 and abs(ts[pos - 1] - source["ts"]) <= abs(ts[pos] - source["ts"]):
            pos -= 1
        target = b.events[int(index[pos])]
        common = {"cat": FLOW_CAT, "name": "fused into", "id": base + int(row)}
        flows += [
            {**common, "ph": "s", "pid": source["pid"], "tid": source.get("tid"),
             "ts": source["ts"]},
            {**common, "ph": "f", "bp": "e", "pid": target["pid"], "tid": target.get("tid"),
             "ts": target["ts"]},
        ]  # fmt: skip
    return flows


def _instances_by_name(
    trace: Trace, b: _Copied
) -> dict[str, tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]]:
    """Compiled kernel name → (aligned starts sorted, their output event indices)."""
    names = trace.kernels[Kernels.name].astype(str).tolist()
    grouped: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for row, index in b.kernel_event.items():
        grouped[names[row]].append((float(b.events[index]["ts"]), index))
    out = {}
    for name, pairs in grouped.items():
        pairs.sort()
        out[name] = (np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs]))
    return out


def _flow_base(*sides: _Copied) -> int:
    """The smallest power of ten above every integer id the inputs use."""
    ids = (e["id"] for side in sides for e in side.events if isinstance(e.get("id"), int))
    used, base = max(ids, default=0), 1
    while base <= used:
        base *= 10
    return base


# --- the traceviz process ------------------------------------------------------------------

TRACKS = {"findings": 0, "blocking": 1, "gaps": 3}  # + side (0/1) for blocking and gaps


def _traceviz_meta(pid: int, names: tuple[str, str]) -> list[dict[str, Any]]:
    events = [_meta(pid, "process_name", {"name": "traceviz"})]
    events.append(_meta(pid, "process_sort_index", {"sort_index": -1}))
    events.append(_meta(pid, "thread_name", {"name": "findings"}, TRACKS["findings"]))
    for side, label in enumerate(names):
        events.append(
            _meta(pid, "thread_name", {"name": f"{label} · blocking calls"}, 1 + side)
        )  # fmt: skip
        events.append(_meta(pid, "thread_name", {"name": f"{label} · graph-break gaps"}, 3 + side))
    return events


def _span(pid: int, tid: int, name: str, warp: Warp, start: float, end: float, args: dict) -> dict:
    shift = warp.shift_at(start)
    dur = max(end - start + warp.shift_at(end, end=True) - shift, 0.0) if end > start else 0.0
    return {"ph": "X", "cat": FLOW_CAT, "name": name, "pid": pid, "tid": tid,
            "ts": start + shift, "dur": dur, "args": {OVERLAY: args}}  # fmt: skip


def _spans(side: Side, index: int, pid: int, warp: Warp) -> list[dict[str, Any]]:
    """Side ``index``'s blocking calls (track 1 + index), then its graph-break gaps (3 + index)."""
    c, spans = BlockingColumns, []
    for row in side.launch.blocking.calls.to_dict("records"):
        args = {
            "reason": str(row[c.reason]),
            "thread": str(row[c.thread]),
            "dur_us": float(row[c.dur_us]),
            "op": row[c.op],
            "frame": row[c.frame],
            "bytes": None if pd.isna(row[c.bytes]) else float(row[c.bytes]),
        }
        end = row[c.ts_us] + row[c.dur_us]
        spans.append(_span(pid, 1 + index, str(row[c.name]), warp, row[c.ts_us], end, args))
    for row in side.regions.gaps.to_dict("records"):
        args = {
            "thread": str(row[Gap.thread]),
            "wall_us": float(row[Gap.wall_us]),
            "kernel_count": int(row[Gap.kernel_count]),
            "kernel_time_us": float(row[Gap.kernel_time_us]),
        }
        name, start, end = "graph-break gap", row[Gap.start_us], row[Gap.end_us]
        spans.append(_span(pid, 3 + index, name, warp, start, end, args))
    return spans


# --- the builder -----------------------------------------------------------------------------


def perfetto_trace(
    comparison: Report, paths: tuple[str | Path, str | Path] | None = None
) -> dict[str, Any]:
    """The annotated Chrome trace of ``comparison`` (module docstring) as a dict.

    ``paths`` are the JSON files of side a and side b (default: each trace's
    ``meta.source``). Raises :class:`UsageError` when a file is gone or is a cache directory,
    :class:`TraceFormatError` when it is not a trace."""
    if paths is None:
        paths = (comparison.a.trace.meta.source, comparison.b.trace.meta.source)
    warp_a, warp_b, aligned = alignment(comparison.a.trace, comparison.b.trace)
    raw_a, top_a = read_raw(paths[0])
    a = _copy_side(raw_a, comparison.a.trace, 0, comparison.names[0], warp_a, 1)
    del raw_a
    raw_b, top_b = read_raw(paths[1])
    b = _copy_side(raw_b, comparison.b.trace, 1, comparison.names[1], warp_b, 1 + len(a.pids))
    del raw_b
    pid = 1 + len(a.pids) + len(b.pids)
    fusion = _fusion_overlay(comparison, a, b)
    rooflines = (roofline_of(comparison, "a"), roofline_of(comparison, "b"))
    roofline = {
        "annotated_kernel_events": [
            _annotate_roofline(rooflines[0], a),
            _annotate_roofline(rooflines[1], b),
        ],
        "peaks": [None if r is None else r.peaks.to_json() for r in rooflines],
    }
    extra = _traceviz_meta(pid, comparison.names)
    for index, (side, warp) in enumerate(((comparison.a, warp_a), (comparison.b, warp_b))):
        extra += _spans(side, index, pid, warp)
    origin = comparison.a.trace.meta.time_origin_us or 0.0
    anchor = float(aligned.get("step_starts_us", [warp_a.scalar(origin)])[0])
    # each finding an instant at the first step's start
    extra += [
        {"ph": "i", "s": "g", "cat": FLOW_CAT, "name": f.title, "pid": pid,
         "tid": TRACKS["findings"], "ts": anchor, "args": {OVERLAY: f.to_json()}}
        for f in comparison.findings
    ]  # fmt: skip
    top = {**top_b, **top_a}  # side a's keys win; side b's fill the keys a lacks
    inputs_other = [t.pop("otherData", None) for t in (top_a, top_b)]
    top.pop("otherData", None)
    top.pop("displayTimeUnit", None)
    other = {
        "names": list(comparison.names),
        "inputs": [str(p) for p in paths],
        "input_events": [len(a.events), len(b.events)],
        "input_other_data": inputs_other,
        "pids": [sorted(a.pids.values()), sorted(b.pids.values())],
        "traceviz_pid": pid,
        "alignment": aligned,
        "fusion": fusion.pop("info"),
        "roofline": roofline,
        "findings": len(comparison.findings),
    }
    return {
        **top,
        "displayTimeUnit": "ms",
        "otherData": {OVERLAY: other},
        "traceEvents": a.events + a.added + b.events + b.added + fusion["flows"] + extra,
    }


def _fusion_overlay(comparison: Comparison, a: _Copied, b: _Copied) -> dict[str, Any]:
    """Annotate compiled kernels and make the flows; ``info`` says what was done or why not."""
    verdict = comparison.fusion.comparability
    if verdict.withheld:
        why = "; ".join(verdict.reasons)
        absent = f"absent: the fusion map was withheld (traces not comparable: {why}); rerun "
        return {"info": {"overlay": absent + "with --force to compute it"}, "flows": []}
    base = _flow_base(a, b)
    annotated = _annotate_kernels(comparison, b)
    flows = _flows(comparison, a, b, base)
    forced = verdict.forced and not verdict.comparable
    info: dict[str, Any] = {
        "overlay": "present (forced: traces not comparable)" if forced else "present",
        "flow_id_base": base,
        "flows": len(flows) // 2,
        "annotated_kernel_events": annotated,
        "unmatched_kernel_rows": [
            len(comparison.a.trace.kernels) - len(a.kernel_event),
            len(comparison.b.trace.kernels) - len(b.kernel_event),
        ],
    }
    return {"info": info, "flows": flows}


# --- writing -------------------------------------------------------------------------------


class _Sink(Protocol):
    def write(self, data: bytes, /) -> Any: ...


def write_perfetto(data: dict[str, Any], target: str) -> None:
    """Stream ``data`` to ``target``: ``-`` is stdout, a name ending ``.json.gz`` is gzipped,
    ``.json`` is plain; any other name is a :class:`UsageError`. One event per line."""
    if target == "-":
        _write(data, sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    if not (target.endswith(".json") or target.endswith(".json.gz")):
        raise UsageError(
            f"-o {target}: the name must end in .json or .json.gz (or be - for stdout)"
        )  # the folder was checked by the command (commands/export.py), before any work
    try:
        gz = target.endswith(".gz")
        with gzip.open(target, "wb", GZIP_LEVEL) if gz else open(target, "wb") as handle:
            _write(data, handle)
    except OSError as err:
        raise UsageError(f"-o {target}: cannot write: {err.strerror or err}") from err


def perfetto_gzip(data: dict[str, Any]) -> bytes:
    """``data`` as the bytes of a ``.json.gz`` file (for a download button)."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=GZIP_LEVEL) as handle:
        _write(data, handle)
    return buffer.getvalue()


def _write(data: dict[str, Any], handle: _Sink) -> None:
    head = {k: v for k, v in data.items() if k != "traceEvents"}
    handle.write(orjson.dumps(head, option=orjson.OPT_NON_STR_KEYS)[:-1])
    handle.write(b',"traceEvents":[\n' if head else b'"traceEvents":[\n')
    batch: list[bytes] = []
    separator = b""
    for chunk in _encoded(data["traceEvents"]):
        batch.append(chunk)
        if len(batch) == WRITE_BATCH:  # a few large writes, not one per event
            handle.write(separator + b",\n".join(batch))
            batch, separator = [], b",\n"
    if batch:
        handle.write(separator + b",\n".join(batch))
    handle.write(b"\n]}\n")


def _encoded(events: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    option = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY
    for event in events:
        try:
            yield orjson.dumps(event, option=option, default=_plain)
        except orjson.JSONEncodeError:  # an integer beyond 64 bits: Python's encoder takes it
            yield json.dumps(event, default=_plain, allow_nan=False).encode()


def _plain(value: Any) -> Any:
    """Values orjson does not know (numpy/pandas scalars, NA) as JSON values."""
    if value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, np.generic):
        return value.item()
    return str(value)
