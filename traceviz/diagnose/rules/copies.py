"""Copies and syncs inside the step (GPU traces; measured).

- **Host↔device copies**: ``memcpy`` activities HtoD/DtoH issued inside a step: their count,
  bytes and device time per step, pageable ones (not pinned: the CPU waits while they are
  staged), and the ops that issued them.
  The copies' cost is their device time or the CPU time blocked in their calls
  (synchronous or pageable copies), whichever union is larger: a 45 µs copy whose call waits
  114 ms for the device is 114 ms of the step. The finding warns on the copies' own device
  time only; the blocked CPU time is the blocking-call finding's warning (one warning per cost).
- **Blocking calls** (:mod:`traceviz.analysis.timing.blocking`): syncs (``*Synchronize``),
  synchronous or pageable copies and stalled launches inside a step: the CPU stops until the
  device has drained its queue, so the next kernels are not queued in time. Severity follows
  the measured blocked share of the step; the evidence names the longest calls, the op and
  Python frame that issued each (``aten::item``/``aten::_local_scalar_dense`` are ``.item()``,
  ``<built-in method cpu …>`` is ``.cpu()``), and the blocked time.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from traceviz.analysis.timing.blocking import BlockingColumns as B
from traceviz.analysis.timing.blocking import BlockReason
from traceviz.analysis.timing.idle import IdleParts
from traceviz.analysis.windows import overlap, union
from traceviz.diagnose import docs, ort_advice
from traceviz.diagnose.facts import (
    TraceFacts,
    cpu_side_gain,
    durations,
    kernel_steps,
    short_name,
    us,
    window_bounds,
)
from traceviz.diagnose.finding import Evidence, Finding, Severity, Unit
from traceviz.schema import ActivityKind, Kernels
from traceviz.units import fmt_bytes

COPIES_ID = "host-device-copy"
SYNC_ID = "sync-in-step"
HOST_DEVICE = ("HtoD", "DtoH")
#: Copies taking 5% of the step cost more than a small input transfer should: a warning.
COPY_WARNING_SHARE = 0.05
#: Below 1% of the step, and with no device-to-host copy, copies are routine (the input batch).
COPY_MIN_SHARE = 0.01
#: Blocking calls whose estimated gain (the device's idle time while the CPU was blocked) is 5%
#: of the step: a warning. The severity follows the gain, not the CPU time blocked: a sync
#: during which the device is busy costs little however long it blocks the CPU.
SYNC_WARNING_SHARE = 0.05
#: The longest blocking calls named in the evidence.
SYNC_CALLS_SHOWN = 3
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
COPY_REASONS = (BlockReason.SYNC_COPY.value, BlockReason.PAGEABLE_COPY.value)
REASON_TEXT = {
    BlockReason.SYNC.value: "sync",
    BlockReason.SYNC_COPY.value: "synchronous copy",
    BlockReason.PAGEABLE_COPY.value: "copy to/from pageable memory",
    BlockReason.STALLED_LAUNCH.value: "stalled launch",
}
SYNC_GAIN_BASIS = (
    "rough: the device's idle time while the CPU was blocked in these calls (measured); "
    "the CPU time blocked while the device worked is not counted"
)
COPY_GAIN_BASIS = (
    "upper bound: the copies' device time plus the device's idle time counted as blocked "
    "while the CPU was in their calls (measured), if they overlapped with compute (pinned memory, "
    "non_blocking=True) or were not needed; CPU time blocked while the device worked is "
    "not counted"
)


def host_device_copies(facts: TraceFacts) -> list[Finding]:
    """Host↔device copies issued inside the steps."""
    if not facts.is_gpu:
        return []
    if facts.is_onnxruntime:
        return _ort_copies(facts)
    kernels = facts.kernels
    copies = (
        (kernels[Kernels.activity] == ActivityKind.MEMCPY.value).to_numpy(dtype=bool)
        & kernels[Kernels.copy_kind].isin(HOST_DEVICE).to_numpy(dtype=bool)  # by code
        & (kernel_steps(facts) >= 0)
    )
    if not copies.any():
        return []
    rows = kernels[copies]
    durs = durations(rows)
    time_us = facts.per_step(float(durs.sum()))
    cost_us = max(time_us, facts.per_step(_copy_cost(facts, rows)))
    # the copies' device time as measured; the device idle in their calls is CPU-side time
    idle = cpu_side_gain(facts, facts.per_step(_idle_in_copy_calls(facts)), "")
    gain_us = min(time_us + idle.us, cost_us)
    share = facts.share(cost_us) or 0.0
    to_host = int((rows[Kernels.copy_kind].astype(object) == "DtoH").sum())
    if share < COPY_MIN_SHARE and to_host == 0:
        return []
    evidence = _direction_evidence(facts, rows)
    if sources := _most_counted(rows[Kernels.op_name]):
        evidence.append("issued by: " + sources)
    if cost_us > time_us:
        evidence.append(
            Evidence(
                "copy time incl. CPU blocked in the copy calls per step",
                cost_us,
                Unit.US,
                facts.share(cost_us),
            )
        )
    pageable = int(rows[Kernels.name].astype(str).str.contains("Pageable").sum())
    if pageable:
        evidence.append(
            Evidence("pageable (unpinned) copies per step", facts.per_step(pageable), Unit.COUNT)
        )
    # The CPU time blocked in the copy calls is sync-in-step's warning: one warning per cost,
    # so this one warns only on the copies' own device time.
    own_share = facts.share(time_us) or 0.0
    blocked_note = "; mostly the CPU blocked in the copy calls: see sync-in-step"
    return [
        Finding(
            id=COPIES_ID,
            severity=Severity.WARNING if own_share >= COPY_WARNING_SHARE else Severity.INFO,
            title=f"{facts.name}: host↔device copies inside the step "
            f"({facts.per_step(len(rows)):.3g} per step, {100 * share:.1f}% of the step"
            f"{blocked_note if cost_us > 2 * time_us else ''})",
            evidence=tuple(evidence),
            est_gain_us=gain_us,
            gain_basis=f"{COPY_GAIN_BASIS}; the idle part {idle.basis}"
            if idle.us > 0
            else COPY_GAIN_BASIS,
            next_step="Keep tensors on the device across steps; load batches with "
            "`DataLoader(pin_memory=True)` and `.to(device, non_blocking=True)`; read results "
            "back (`.cpu()`, `.item()`, `.tolist()`) every N steps, not every step.",
            docs_url=docs.PINNED_MEMORY,
            trace=facts.name,
        )
    ]


#: ORT's copy nodes between the host and a GPU provider (inputs in, outputs out).
ORT_COPY_OPS = {"MemcpyFromHost": "to the device", "MemcpyToHost": "to the host"}


def _ort_copies(facts: TraceFacts) -> list[Finding]:
    """An ORT profile of a GPU provider: the MemcpyFromHost/MemcpyToHost nodes ORT inserted
    to move inputs and outputs every run (their host-side time, measured): IOBinding."""
    kernels = facts.kernels
    ops = kernels[Kernels.op_name].astype(object)
    copies = ops.isin(list(ORT_COPY_OPS)).to_numpy(dtype=bool) & (kernel_steps(facts) >= 0)
    if not copies.any():
        return []
    rows = kernels[copies]
    time_us = facts.per_step(float(durations(rows).sum()))
    share = facts.share(time_us) or 0.0
    directions = rows[Kernels.op_name].astype(object).value_counts()
    evidence: list[Evidence | str] = [
        Evidence(f"{op} nodes per run ({ORT_COPY_OPS[str(op)]})", facts.per_step(n), Unit.COUNT)
        for op, n in directions.items()
    ]
    evidence.append(Evidence("their time per run (host side)", time_us, Unit.US, share))
    known = rows[Kernels.bytes].dropna()
    if len(known):
        evidence.append(Evidence("bytes per run (ORT's sizes)", facts.per_step(known.sum()),
                                 Unit.BYTES))  # fmt: skip
    return [
        Finding(
            id=COPIES_ID,
            severity=Severity.WARNING if share >= COPY_WARNING_SHARE else Severity.INFO,
            title=f"{facts.name}: ONNX Runtime copies inputs/outputs between host and device "
            f"every run ({facts.per_step(len(rows)):.3g} copy nodes per run, {100 * share:.1f}% "
            "of the run)",
            evidence=tuple(evidence),
            est_gain_us=time_us,
            gain_basis="upper bound: the copy nodes' host-side time (measured), if the data "
            "stayed on the device",
            next_step=ort_advice.IO_BINDING_STEP,
            docs_url=ort_advice.IO_BINDING,
            trace=facts.name,
        )
    ]


def syncs(facts: TraceFacts) -> list[Finding]:
    """Calls that block the CPU inside the steps, sized by their measured duration."""
    if facts.is_onnxruntime or not facts.is_gpu:  # ORT profiles: no sync calls (ort_advice.py)
        return []
    calls = facts.launch.blocking.calls
    calls = calls[calls[B.step] >= 0]
    if calls.empty:
        return []
    blocked = facts.per_step(facts.launch.blocking.blocked_us)
    share = facts.share(blocked) or 0.0
    per_step = facts.per_step(len(calls))
    idle_blocked = facts.per_step(facts.launch.idle.total(IdleParts.blocked_us))
    gain = cpu_side_gain(facts, idle_blocked, SYNC_GAIN_BASIS)
    gain_share = (facts.share(gain.us) or 0.0) if idle_blocked > 0 else 0.0
    names = calls[B.name].value_counts()
    evidence: list[Evidence | str] = [
        Evidence("CPU time blocked per step", blocked, Unit.US, facts.share(blocked)),
        Evidence("blocking calls per step", per_step, Unit.COUNT),
        *_longest_calls(calls),
        "calls: " + ", ".join(f"{n} ×{c}" for n, c in names.head(4).items() if c),
        Evidence(
            "device idle while the CPU was blocked, per step",
            idle_blocked,
            Unit.US,
            facts.share(idle_blocked),
        ),
    ]
    if callers := _most_counted(calls[B.op]):  # the innermost ops that made the calls
        evidence.append("made by: " + callers)
    return [
        Finding(
            id=SYNC_ID,
            severity=Severity.WARNING if gain_share >= SYNC_WARNING_SHARE else Severity.INFO,
            est_gain_us=gain.us if idle_blocked > 0 else None,
            gain_basis=gain.basis if idle_blocked > 0 else "",
            title=f"{facts.name}: the CPU blocks on the device {per_step:.3g} time(s) per step, "
            f"{us(blocked)} ({100 * share:.1f}% of the step)",
            evidence=tuple(evidence),
            next_step='Find each sync with `torch.cuda.set_sync_debug_mode("warn")`. Avoid '
            "`.item()`, `.cpu()`, `.tolist()`, printing tensors and data-dependent shapes "
            "(`nonzero`, boolean masks) inside the step; keep metrics on the device and read "
            "them every N steps; copy into pinned memory with `non_blocking=True`.",
            docs_url=docs.SYNC_DEBUG,
            trace=facts.name,
        )
    ]


def _longest_calls(calls: pd.DataFrame) -> list[Evidence | str]:
    """One line per longest blocking call: name, why, size, issuer, frame, blocked time."""
    top = calls.sort_values(B.dur_us, ascending=False, kind="stable").head(SYNC_CALLS_SHOWN)
    out: list[Evidence | str] = []
    for row in top.to_dict("records"):
        what = REASON_TEXT.get(str(row[B.reason]), str(row[B.reason]))
        if isinstance(row[B.copy_kind], str):
            size = row[B.bytes]
            what += f", {row[B.copy_kind]}" + (
                f" {fmt_bytes(float(size))}" if np.isfinite(size) else ""
            )
        by = [
            short_name(_ADDRESS.sub("", v), 60)
            for v in (row[B.op], row[B.frame])
            if isinstance(v, str)
        ]
        source = f" from {' in '.join(by)}" if by else ""
        share = float(row[B.step_share])
        percent = "<0.1%" if share < 0.001 else f"{100 * share:.1f}%"
        out.append(
            f"{row[B.name]} ({what}){source}: {us(float(row[B.dur_us]))} blocked, "
            f"{percent} of its step"
        )
    return out


def _copy_calls(facts: TraceFacts) -> pd.DataFrame:
    """The steps' blocking calls that are copies (synchronous or pageable)."""
    calls = facts.launch.blocking.calls
    return calls[calls[B.reason].isin(COPY_REASONS) & (calls[B.step] >= 0)]


def _copy_cost(facts: TraceFacts, rows: pd.DataFrame) -> float:
    """Union of the copies' device spans and the CPU spans of their blocking calls, µs,
    inside the steps (total over the steps)."""
    starts = rows[Kernels.ts_us].to_numpy(dtype=float)
    ends = starts + durations(rows)
    calls = _copy_calls(facts)
    c_start = calls[B.ts_us].to_numpy(dtype=float)
    c_end = c_start + calls[B.dur_us].to_numpy(dtype=float)
    all_starts, all_ends = np.concatenate([starts, c_start]), np.concatenate([ends, c_end])
    total = 0.0
    for lo, hi in zip(*window_bounds(facts), strict=True):
        # only the spans reaching into the window: the others clip to nothing (union drops
        # them), so the union and its sum are the same
        near = (all_ends > lo) & (all_starts < hi)
        s, e = union(np.clip(all_starts[near], lo, hi), np.clip(all_ends[near], lo, hi))
        total += float((e - s).sum())
    return total


def _idle_in_copy_calls(facts: TraceFacts) -> float:
    """The idle split's blocked time (device idle while the CPU was blocked) that falls inside
    the steps' blocking copy calls, µs (total over the steps)."""
    calls = _copy_calls(facts)
    if calls.empty:
        return 0.0
    c_start, c_end = union(
        calls[B.ts_us].to_numpy(dtype=float),
        (calls[B.ts_us] + calls[B.dur_us]).to_numpy(dtype=float),
    )
    return float(overlap(*facts.launch.idle.blocked_spans, c_start, c_end).sum())


def _direction_evidence(facts: TraceFacts, rows: pd.DataFrame) -> list[Evidence | str]:
    out: list[Evidence | str] = []
    kinds = rows[Kernels.copy_kind].astype(object).to_numpy()
    durs = durations(rows)
    sizes = rows[Kernels.bytes].to_numpy(dtype=float, na_value=np.nan)
    for kind in HOST_DEVICE:
        mine = kinds == kind
        if not mine.any():
            continue
        time_us = facts.per_step(float(durs[mine].sum()))
        out += [
            Evidence(f"{kind} copies per step", facts.per_step(int(mine.sum())), Unit.COUNT),
            Evidence(
                f"{kind} bytes per step", facts.per_step(float(np.nansum(sizes[mine]))), Unit.BYTES
            ),
            Evidence(f"{kind} time per step", time_us, Unit.US, facts.share(time_us)),
        ]
    return out


def _most_counted(names: pd.Series) -> str:
    """The three most frequent names, ``"name ×count"`` each ("" when there are none)."""
    counts = names.dropna().astype(str).value_counts()
    return ", ".join(f"{name} ×{count}" for name, count in counts.head(3).items() if count)
