"""The rules, one module per family, registered in the two lists the engine runs.

A **trace rule** takes the :class:`~traceviz.diagnose.facts.TraceFacts` of one trace and runs on
every trace (both sides of a comparison, and ``traceviz summary``'s single trace); a
**comparison rule** takes a :class:`~traceviz.analysis.compare.Comparison`. Both return a list
of findings (empty when nothing applies) and never print, mutate or raise on odd traces.
No rule module imports another (a contract in pyproject.toml): what rules share lives below
them, in :mod:`traceviz.diagnose.facts` and the small modules beside it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from traceviz.diagnose.facts import TraceFacts
from traceviz.diagnose.finding import Finding
from traceviz.diagnose.rules import (
    breaks,
    chains,
    comparable,
    copies,
    device,
    gemm,
    idle,
    inductor_kernels,
    launch,
    memory,
    profiling,
    slower,
)

if TYPE_CHECKING:
    from traceviz.analysis.compare import Comparison

TraceRule = Callable[[TraceFacts], list[Finding]]
ComparisonRule = Callable[["Comparison"], list[Finding]]

TRACE_RULES: list[TraceRule] = [
    device.device_not_analysed,
    chains.unfused_chains,
    breaks.graph_breaks,
    breaks.recompiles,
    idle.cpu_bound,
    launch.launch_bound,
    launch.framework_overhead,
    gemm.extern_gemms,
    gemm.matmul_add,
    copies.host_device_copies,
    copies.syncs,
    memory.large_intermediates,
    profiling.no_compiled_region,
    profiling.compile_in_window,
    profiling.no_record_shapes,
    profiling.few_steps,
    profiling.empty_trace,
]

COMPARISON_RULES: list[ComparisonRule] = [
    comparable.not_comparable,
    slower.compiled_slower,
    inductor_kernels.inductor_kernels_not_recorded,
    memory.peak_memory_up,
]

__all__ = ["COMPARISON_RULES", "TRACE_RULES", "ComparisonRule", "TraceRule"]
