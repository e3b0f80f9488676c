"""Launch-bound steps: the device waits for the CPU to issue kernels.

GPU traces (measured, :mod:`traceviz.analysis.timing.launch` and
:mod:`traceviz.analysis.timing.idle`): the share of the step the device sits idle waiting for the
CPU, and the kernels shorter than their own launch call. One finding, the true one: when most of the
wait is in long gaps the CPU was busy with other work and the finding is ``cpu-bound``
(:mod:`traceviz.diagnose.rules.idle`), naming that work, while this rule stays silent (both read the
condition from
:mod:`traceviz.diagnose.cpu_wait`); when it is spread over short gaps between kernels the step is
``launch-bound`` and the cure is fewer launches: CUDA graphs (``mode="reduce-overhead"``)
replay the whole step with one. When the CPU's blocked time in syncs is a larger part of the
idle time than the wait, neither fires: ``sync-in-step`` is the finding. When graphs are
already in use (graph launches, replayed kernels) the finding says so, and counts the kernels
still launched one by one; when most kernels are replayed (:data:`MOSTLY_REPLAYED`) the wait
is CPU time around the replays (guards, graph trees' bookkeeping, input copies), and the
finding says that instead of prescribing the graphs already in use. Its gain, a CPU-side
wait measured per profiled step, is scaled to run.json's timed step when there is one
(:func:`~traceviz.diagnose.facts.cpu_side_gain`).

CPU-only traces have no launches; there the step time outside compute ops is framework
overhead (Python, dispatcher, allocator; in an ONNX Runtime profile the executor between
nodes), reported when it dominates. ORT profiles of GPU providers hold host-side node times
only, so launch-bound stays silent on them.
"""

from __future__ import annotations

from traceviz.diagnose import docs, ort_advice
from traceviz.diagnose.cpu_wait import idle_evidence, is_cpu_bound, waits_for_cpu
from traceviz.diagnose.facts import TraceFacts, cpu_side_gain, graphs_requested, is_kernel
from traceviz.diagnose.finding import Evidence, Finding, Severity, Unit
from traceviz.schema import DeviceKind, Kernels, LaunchClass, Launches

LAUNCH_BOUND_ID = "launch-bound"
GRAPHS_ID = "cuda-graphs-in-use"
OVERHEAD_ID = "framework-overhead"
#: Half of all kernels finish faster than the CPU call that launched them ...
SHORT_KERNEL_SHARE = 0.5
#: ... while the device idles a quarter of the step: launch-bound even when the wait
#: attribution (which needs both launch and kernel times) misses some gaps.
SHORT_KERNEL_IDLE_SHARE = 0.25
#: CPU-only traces: half the step outside compute ops is overhead worth naming.
CPU_OVERHEAD_SHARE = 0.5
GAIN_BASIS = (
    "upper bound: the device time spent waiting for the CPU to issue the next kernel "
    "(measured); CUDA graphs remove most of it, not all"
)
#: From this share of kernels replayed by graphs on, the wait is CPU time around the replays,
#: not launches: CUDA graphs are the cure already taken.
MOSTLY_REPLAYED = 0.5
REPLAYED_GAIN_BASIS = (
    "upper bound: the device time spent waiting for the CPU (measured); the kernels are "
    "already replayed by CUDA graphs, so it is CPU time around the replays (Dynamo's guards, "
    "CUDA graph trees' bookkeeping, input copies), saved only as far as that work shrinks"
)
REPLAYED_STEP = (
    "The step's kernels already replay from CUDA graphs: the wait is CPU time around the "
    "replays (Dynamo's guard checks, under `TorchDynamo Cache Lookup`; CUDA graph trees' "
    "bookkeeping; copies of inputs that are not static into the graph's buffers). Shrink it: "
    "one compiled graph per step (`fullgraph=True`, no graph breaks) runs one set of guards; "
    "inputs kept at fixed addresses (reuse the same input tensors, or "
    "`torch._dynamo.mark_static_address`) are not copied; more work per replay (a larger "
    "batch) spreads the CPU time over more of it."
)


def launch_bound(facts: TraceFacts) -> list[Finding]:
    """Launch-bound steps on a GPU trace (none where the step is CPU-bound, see the module
    docstring); otherwise an info finding when graphs are in use."""
    if facts.is_onnxruntime:  # ORT profiles: no launches: node times are host-side (ort_advice.py)
        return []
    if not facts.is_gpu or facts.summary.kernel_count == 0:
        return []
    if is_cpu_bound(facts):
        return []  # the cpu-bound finding (rules/idle.py)
    launch = facts.launch
    idle_share = launch.idle_share or 0.0
    # over all kernels: graph replays have no launch of their own, so they are never "short"
    short_share = launch.short_kernels / facts.summary.kernel_count
    short = short_share >= SHORT_KERNEL_SHARE and idle_share >= SHORT_KERNEL_IDLE_SHARE
    bound = waits_for_cpu(facts) or short
    if not bound:
        return [_graphs_info(facts)] if facts.uses_graphs else []
    return [_launch_bound(facts, short_share)]


def framework_overhead(facts: TraceFacts) -> list[Finding]:
    """CPU-only traces: most of the step is spent outside compute ops."""
    if facts.trace.device_kind is not DeviceKind.CPU or facts.summary.kernel_count == 0:
        return []
    share = facts.launch.idle_share
    if share is None or share < CPU_OVERHEAD_SHARE:
        return []
    idle = facts.per_step(facts.launch.idle_us)
    compute = facts.per_step(facts.summary.kernel_time_us)
    step = "Compile the model: Inductor's generated code skips the eager dispatcher per op."
    where = "Python, dispatcher, allocator"
    if facts.is_onnxruntime:
        step, where = ort_advice.OVERHEAD_STEP, "ORT's executor: scheduling, allocation, threads"
    elif facts.compiled:
        step = (
            "The compiled code is fast; what is left is Python and framework time around it. "
            "Give each call more work (a larger batch), or compile more of the step "
            "(the loop body, not only the model)."
        )
    return [
        Finding(
            id=OVERHEAD_ID,
            severity=Severity.INFO,
            title=f"{facts.name}: {100 * share:.0f}% of the step is outside compute ops ({where})",
            evidence=(
                Evidence("time outside compute ops per step", idle, Unit.US, share),
                Evidence("compute ops' time per step", compute, Unit.US, facts.share(compute)),
                Evidence(
                    "compute ops per step", facts.per_step(facts.summary.kernel_count), Unit.COUNT
                ),
            ),
            next_step=step,
            docs_url=ort_advice.THREADING if facts.is_onnxruntime else docs.TORCH_COMPILE,
            trace=facts.name,
        )
    ]


def _replayed_share(facts: TraceFacts) -> float:
    """The share of the trace's kernels replayed by graphs (0 without kernels)."""
    kernels = facts.kernels
    replayed = int((is_kernel(kernels) & kernels[Kernels.in_graph].to_numpy(dtype=bool)).sum())
    return replayed / max(facts.summary.kernel_count, 1)


def _graph_evidence(facts: TraceFacts) -> list[Evidence | str]:
    launches = facts.trace.launches[Launches.launch_class]  # (by code when categorical)
    graph_launches = int((launches == LaunchClass.GRAPH_LAUNCH.value).sum())
    kernels = facts.kernels  # launched one by one: not replayed by a graph
    direct = int((is_kernel(kernels) & ~kernels[Kernels.in_graph].to_numpy(dtype=bool)).sum())
    return [
        Evidence("graph launches per step", facts.per_step(graph_launches), Unit.COUNT),
        Evidence("kernels replayed by graphs", _replayed_share(facts), Unit.RATIO),
        Evidence("kernels launched one by one per step", facts.per_step(direct), Unit.COUNT),
    ]


def _graphs_info(facts: TraceFacts) -> Finding:
    return Finding(
        id=GRAPHS_ID,
        severity=Severity.INFO,
        title=f"{facts.name}: CUDA graphs are in use (kernels replayed by graph launches)",
        evidence=tuple(_graph_evidence(facts)),
        next_step="Nothing to change for launch overhead. Graph replays keep their own memory "
        "pool, and the profiler shows replayed kernels without their own launch calls.",
        docs_url=docs.CUDAGRAPH_TREES,
        trace=facts.name,
    )


def _launch_bound(facts: TraceFacts, short_share: float) -> Finding:
    launch = facts.launch
    wait = facts.per_step(launch.cpu_wait_us)
    idle = facts.per_step(launch.idle_us)
    evidence: list[Evidence | str] = [
        Evidence("device waiting for the CPU per step", wait, Unit.US, facts.share(wait)),
        Evidence("device idle per step", idle, Unit.US, facts.share(idle)),
        *idle_evidence(facts)[1:],
        Evidence("kernels per step", facts.per_step(facts.summary.kernel_count), Unit.COUNT),
        Evidence("kernels shorter than their launch call", short_share, Unit.RATIO),
    ]
    if launch.mean_launch_us is not None:
        evidence.append(Evidence("mean launch call", launch.mean_launch_us, Unit.US))
    if launch.delay_p50_us is not None:
        evidence.append(Evidence("median launch delay", launch.delay_p50_us, Unit.US))
    basis = GAIN_BASIS
    if facts.uses_graphs and _replayed_share(facts) >= MOSTLY_REPLAYED:
        evidence += _graph_evidence(facts)
        step, basis = REPLAYED_STEP, REPLAYED_GAIN_BASIS
        title = f"{facts.name}: the device waits for the CPU around its CUDA graph replays"
    elif facts.uses_graphs:
        evidence += _graph_evidence(facts)
        step = (
            "CUDA graphs are in use, but kernels are still launched one by one outside them. "
            "CUDA graph trees skip graphs with CPU ops, dynamic shapes, graph breaks or "
            'mutated inputs: `TORCH_LOGS="perf_hints"` prints why a graph was skipped.'
        )
        title = f"{facts.name}: launch-bound despite CUDA graphs"
    elif facts.compiled and graphs_requested(facts.run_info):
        mode = facts.run_info.compile.mode if facts.run_info is not None else ""
        step = (
            f'The compile asked for CUDA graphs (mode="{mode}"), but no kernel replays from '
            "one: CUDA graph trees skip graphs with CPU ops, dynamic shapes, graph breaks or "
            'mutated inputs; `TORCH_LOGS="perf_hints"` prints why. Otherwise give each kernel '
            "more work (a larger batch)."
        )
        title = f"{facts.name}: launch-bound: CUDA graphs were asked for but not replayed"
    else:
        step = (
            'Compile with `torch.compile(model, mode="reduce-overhead")`: CUDA graphs replay the '
            "step's kernels with one launch. Otherwise give each kernel more work (a larger "
            "batch) or fuse kernels (torch.compile's default mode)."
        )
        title = f"{facts.name}: launch-bound: the device waits for the CPU to launch kernels"
    gain = cpu_side_gain(facts, wait, basis)
    return Finding(
        id=LAUNCH_BOUND_ID,
        severity=Severity.WARNING,
        title=title,
        evidence=tuple(evidence),
        est_gain_us=gain.us if wait > 0 else None,
        gain_basis=gain.basis if wait > 0 else "",
        next_step=step,
        docs_url=docs.CUDAGRAPH_TREES,
        trace=facts.name,
    )
