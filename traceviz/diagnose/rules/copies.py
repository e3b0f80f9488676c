"""Copies and syncs inside the step (GPU traces; measured).

- **Host↔device copies**: ``memcpy`` activities HtoD/DtoH issued inside a step: their count,
  bytes and device time per step, pageable ones (not pinned: the CPU waits while they are
  staged), and the ops that issued them.
- **Synchronizations**: ``cudaDeviceSynchronize``/``cudaStreamSynchronize``/… calls inside a
  step: the CPU stops until the device has drained its queue, so the next kernels are not
  queued in time. Their CPU time is shown, with the ops that made them (``aten::item``,
  ``aten::_local_scalar_dense`` are ``.item()``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from traceviz.diagnose import docs
from traceviz.diagnose.facts import TraceFacts, durations, kernel_steps, points_in_windows
from traceviz.diagnose.finding import Evidence, Finding, Severity, Unit
from traceviz.schema import ActivityKind, Kernels, LaunchClass, Launches, Ops

COPIES_ID = "host-device-copy"
SYNC_ID = "sync-in-step"
HOST_DEVICE = ("HtoD", "DtoH")
#: Copies taking 5% of the step cost more than a small input transfer should: a warning.
COPY_WARNING_SHARE = 0.05
#: Below 1% of the step, and with no device-to-host copy, copies are routine (the input batch).
COPY_MIN_SHARE = 0.01
#: A sync costs throughput when it leaves the device without queued work: a warning when the
#: device idles a tenth of the step, information otherwise.
SYNC_WARNING_IDLE_SHARE = 0.10
COPY_GAIN_BASIS = (
    "upper bound: the copies' device time (measured), if they overlapped with compute "
    "(pinned memory, non_blocking=True) or were not needed"
)


def host_device_copies(facts: TraceFacts) -> list[Finding]:
    """Host↔device copies issued inside the steps."""
    if not facts.is_gpu:
        return []
    kernels = facts.kernels
    copies = (
        (kernels[Kernels.activity] == ActivityKind.MEMCPY.value).to_numpy(dtype=bool)
        & kernels[Kernels.copy_kind].astype(object).isin(HOST_DEVICE).to_numpy(dtype=bool)
        & (kernel_steps(facts) >= 0)
    )
    if not copies.any():
        return []
    rows = kernels[copies]
    durs = durations(rows)
    time_us = facts.per_step(float(durs.sum()))
    share = facts.share(time_us) or 0.0
    to_host = int((rows[Kernels.copy_kind].astype(object) == "DtoH").sum())
    if share < COPY_MIN_SHARE and to_host == 0:
        return []
    evidence = [*_direction_evidence(facts, rows), *_copy_sources(rows)]
    pageable = int(rows[Kernels.name].astype(str).str.contains("Pageable").sum())
    if pageable:
        evidence.append(
            Evidence("pageable (unpinned) copies per step", facts.per_step(pageable), Unit.COUNT)
        )
    return [
        Finding(
            id=COPIES_ID,
            severity=Severity.WARNING if share >= COPY_WARNING_SHARE else Severity.INFO,
            title=f"{facts.name}: host↔device copies inside the step "
            f"({facts.per_step(len(rows)):.3g} per step, {100 * share:.1f}% of the step)",
            evidence=tuple(evidence),
            est_gain_us=time_us,
            gain_basis=COPY_GAIN_BASIS,
            next_step="Keep tensors on the device across steps; load batches with "
            "`DataLoader(pin_memory=True)` and `.to(device, non_blocking=True)`; read results "
            "back (`.cpu()`, `.item()`, `.tolist()`) every N steps, not every step.",
            docs_url=docs.PINNED_MEMORY,
            trace=facts.name,
        )
    ]


def syncs(facts: TraceFacts) -> list[Finding]:
    """Device synchronisations made inside the steps."""
    if not facts.is_gpu:
        return []
    launches = facts.trace.launches
    ts = launches[Launches.ts_us].to_numpy(dtype=float)
    is_sync = (launches[Launches.launch_class] == LaunchClass.SYNC.value).to_numpy(dtype=bool)
    mask = is_sync & (points_in_windows(facts, ts) >= 0)
    if not mask.any():
        return []
    rows = launches[mask]
    cpu_us = facts.per_step(float(np.nansum(rows[Launches.dur_us].to_numpy(dtype=float))))
    names = rows[Launches.name].astype(object).value_counts()
    evidence: list[Evidence | str] = [
        Evidence("synchronizations per step", facts.per_step(len(rows)), Unit.COUNT),
        Evidence("CPU time blocked in them per step", cpu_us, Unit.US, facts.share(cpu_us)),
        "calls: " + ", ".join(f"{n} ×{c}" for n, c in names.items() if c),
    ]
    callers = _callers(facts, rows)
    if callers:
        evidence.append("made by: " + callers)
    idle_share = facts.launch.idle_share or 0.0
    idle = facts.per_step(facts.launch.idle_us)
    evidence.append(Evidence("device idle per step", idle, Unit.US, facts.share(idle)))
    return [
        Finding(
            id=SYNC_ID,
            severity=Severity.WARNING if idle_share >= SYNC_WARNING_IDLE_SHARE else Severity.INFO,
            title=f"{facts.name}: the CPU waits for the device "
            f"{facts.per_step(len(rows)):.3g} time(s) per step",
            evidence=tuple(evidence),
            next_step='Find each sync with `torch.cuda.set_sync_debug_mode("warn")`. Avoid '
            "`.item()`, `.cpu()`, printing tensors and data-dependent shapes (`nonzero`, boolean "
            "masks) inside the step; keep metrics on the device and read them every N steps.",
            docs_url=docs.SYNC_DEBUG,
            trace=facts.name,
        )
    ]


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


def _copy_sources(rows: pd.DataFrame) -> list[Evidence | str]:
    ops = rows[Kernels.op_name].dropna().astype(object).value_counts()
    ops = ops[ops > 0]
    if ops.empty:
        return []
    return ["issued by: " + ", ".join(f"{name} ×{count}" for name, count in ops.head(3).items())]


def _callers(facts: TraceFacts, rows: pd.DataFrame) -> str:
    """The ops (by External id) that made the sync calls, most frequent first."""
    ids = rows[Launches.external_id].dropna()
    if ids.empty:
        return ""
    ops = facts.trace.ops
    matched = ops[ops[Ops.external_id].isin(set(ids.astype("int64")))]
    if matched.empty:
        return ""
    counts = matched[Ops.name].astype(object).value_counts()
    return ", ".join(f"{name} ×{count}" for name, count in counts.head(3).items() if count)
