"""Memory: a higher peak after compiling, and large intermediates that fusion removes.

- **Peak up** (a pair): the compiled side's peak allocated memory is above the eager side's by
  more than :data:`PEAK_INCREASE` and :data:`PEAK_MIN_DELTA_BYTES`. The peaks come from
  run.json when there is one (``memory.eager``/``memory.compiled``: what a step allocates on
  top of weights and inputs, and ``torch.cuda.max_memory_allocated``), else from the traces'
  ``[memory]`` events (measured either way).
- **Large intermediates** (an eager trace): the outputs that chains of pointwise/reduction ops
  write and the next op reads back (:func:`traceviz.diagnose.facts.chain_groups`), which fused
  code never materialises; reported when the largest is big next to the peak allocated memory
  (sizes estimated from the recorded shapes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from traceviz.diagnose import docs
from traceviz.diagnose.facts import TraceFacts, chain_groups, facts_of_side, short_name
from traceviz.diagnose.finding import Evidence, Finding, Severity, Unit, format_value
from traceviz.runs.runinfo import RunInfo

if TYPE_CHECKING:
    from traceviz.analysis.compare import Comparison

PEAK_UP_ID = "peak-memory-up"
INTERMEDIATES_ID = "large-intermediates"
#: Allocator rounding and timing move the peak by a few percent; 10% is a real change.
PEAK_INCREASE = 0.10
#: Ignore increases under 1 MiB (toy models, allocator granularity).
PEAK_MIN_DELTA_BYTES = 2**20
#: An intermediate a tenth of the peak allocated memory is worth not materialising.
INTERMEDIATE_SHARE_OF_PEAK = 0.10
#: Without memory events: an intermediate of 64 MiB is large on any device.
LARGE_INTERMEDIATE_BYTES = 64 * 2**20


def peak_memory_up(comparison: Comparison) -> list[Finding]:
    """b's peak allocated memory is clearly above a's."""
    a, b = facts_of_side(comparison, "a"), facts_of_side(comparison, "b")
    if comparison.fusion.comparability.other_workload:
        return []  # two workloads' peaks say nothing about compiling
    peaks = _run_peaks(comparison.run_info) or _trace_peaks(comparison)
    if peaks is None:
        return []
    peak_a, peak_b, basis = peaks
    if peak_b - peak_a < max(PEAK_MIN_DELTA_BYTES, PEAK_INCREASE * peak_a):
        return []
    evidence: list[Evidence | str] = [
        Evidence(f"{a.name} peak allocated", peak_a, Unit.BYTES),
        Evidence(f"{b.name} peak allocated", peak_b, Unit.BYTES),
        Evidence("increase", peak_b - peak_a, Unit.BYTES),
        f"measured: {basis}",
    ]
    graphs = b.uses_graphs and not a.uses_graphs
    if graphs:
        evidence.append(f"{b.name} replays CUDA graphs: each graph keeps a private memory pool")
    return [
        Finding(
            id=PEAK_UP_ID,
            severity=Severity.WARNING,
            title=f"{b.name} allocates more memory at its peak than {a.name} "
            f"(+{(peak_b - peak_a) / 2**20:.3g} MiB, ×{peak_b / peak_a:.2f})"
            if peak_a > 0
            else f"{b.name} allocates more memory at its peak than {a.name}",
            evidence=tuple(evidence),
            next_step="Record a memory snapshot of both "
            "(`torch.cuda.memory._record_memory_history()`, then `_dump_snapshot`) and compare "
            "the live tensors at the peak. CUDA graphs "
            '(mode="reduce-overhead") keep static input/output buffers and a pool per graph; '
            "autotuning (max-autotune) may pick kernels that need workspace.",
            docs_url=docs.CUDAGRAPH_TREES if graphs else docs.CUDA_MEMORY,
        )
    ]


def large_intermediates(facts: TraceFacts) -> list[Finding]:
    """Big intermediates of unfused chains in an eager trace."""
    if facts.is_onnxruntime:  # ORT profiles: no allocator figures (ort_advice.py)
        return []
    if facts.compiled:
        return []
    groups = [g for g in chain_groups(facts) if g.largest_bytes]
    if not groups:
        return []
    largest = max(groups, key=lambda g: g.largest_bytes or 0)
    size = largest.largest_bytes or 0
    peak = facts.summary.peak_allocated_bytes
    limit = INTERMEDIATE_SHARE_OF_PEAK * peak if peak else LARGE_INTERMEDIATE_BYTES
    if size < limit:
        return []
    moved = facts.per_step(sum(g.bytes_saved or 0 for g in groups))
    evidence: list[Evidence | str] = [
        Evidence("largest intermediate (estimated)", size, Unit.BYTES),
        f"written by {short_name(largest.largest_op, 60)} in "
        + " → ".join(short_name(op, 40) for op in largest.ops),
        Evidence(
            "intermediate traffic per step (written + read back, estimated)", moved, Unit.BYTES
        ),
    ]
    if peak:
        evidence.append(Evidence("peak allocated (measured)", peak, Unit.BYTES))
        evidence.append(Evidence("largest intermediate / peak", size / peak, Unit.RATIO))
    return [
        Finding(
            id=INTERMEDIATES_ID,
            severity=Severity.INFO,
            title=f"{facts.name}: unfused chains materialise large intermediates "
            f"(up to {format_value(size, Unit.BYTES)})",
            evidence=tuple(evidence),
            next_step="torch.compile fuses these chains, so their intermediates are never "
            "allocated (less memory and traffic). In eager, in-place ops (`x.mul_()`, "
            "`nn.ReLU(inplace=True)`) avoid some of them where autograd allows.",
            docs_url=docs.TORCH_COMPILE,
            trace=facts.name,
        )
    ]


def _run_peaks(run_info: RunInfo | None) -> tuple[int, int, str] | None:
    """(eager, compiled, basis) peaks from run.json: device peak first, else profiled."""
    if run_info is None or run_info.memory.compiled is None:
        return None
    eager, compiled = run_info.memory.eager, run_info.memory.compiled
    device = (eager.device_peak_allocated_bytes, compiled.device_peak_allocated_bytes)
    profiled = (eager.profiled_peak_bytes, compiled.profiled_peak_bytes)
    for (a, b), basis in (
        (device, "torch.cuda.max_memory_allocated over timed steps"),
        (profiled, "peak allocated per step during profiling (run.json)"),
    ):
        if a is not None and b is not None:
            return a, b, basis
    return None


def _trace_peaks(comparison: Comparison) -> tuple[int, int, str] | None:
    a = comparison.a.traffic.peak_allocated_bytes
    b = comparison.b.traffic.peak_allocated_bytes
    if a is None or b is None:
        return None
    return a, b, "peak total allocated on the traces' devices ([memory] events)"
