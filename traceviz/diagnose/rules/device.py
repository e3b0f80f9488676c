"""Devices traceviz does not model: say what the trace holds instead of reporting zeros.

A trace of an accelerator other than a CUDA/ROCm GPU (``DeviceKind.OTHER``, e.g. MTIA) loads,
but its device work is not in the kernels table: its kernel, launch, idle and traffic figures
are not analysed (null, basis ``not-analysed``). The ``device-not-analysed`` finding (info)
says so and counts what the trace holds (:class:`traceviz.analysis.device.DeviceActivity`).
"""

from __future__ import annotations

from traceviz.analysis.device import device_activity
from traceviz.diagnose import docs, ort_advice
from traceviz.diagnose.facts import TraceFacts
from traceviz.diagnose.finding import Evidence, Finding, Severity, Unit

RULE_ID = "device-not-analysed"


def device_not_analysed(facts: TraceFacts) -> list[Finding]:
    """One info finding for a trace whose device traceviz does not model."""
    held = device_activity(facts.trace)
    if held is None:
        return []
    names = ", ".join(sorted(set(held.device_names))) or "unnamed device"
    ort_profile = facts.is_onnxruntime
    if ort_profile:  # the providers are the device names ORT records
        names = ", ".join(facts.trace.meta.profiler_flags.get("providers") or []) or names
    return [
        Finding(
            id=RULE_ID,
            severity=Severity.INFO,
            title=f"{facts.name}: device not analysed ({names}): traceviz models CUDA/ROCm GPUs "
            "and CPU-only traces; kernel, launch, idle and traffic figures are n/a",
            evidence=(
                Evidence("device runtime calls", held.runtime_calls, Unit.COUNT),
                Evidence("CPU time in them (summed over threads)", held.runtime_time_us, Unit.US),
                Evidence("device events", held.device_events, Unit.COUNT),
                Evidence(
                    "device event time (summed over streams, overlaps)",
                    held.device_event_time_us,
                    Unit.US,
                ),
                "device event categories: " + (", ".join(held.categories) or "none"),
            ),
            next_step="Use the execution provider's own profiling for device time; the "
            "model_run times and ORT's node times (host side) traceviz shows are still measured."
            if ort_profile
            else "Use the device vendor's profiler tools for device time; the CPU ops, "
            "steps and compiled regions traceviz shows are still measured.",
            docs_url=ort_advice.PROFILING if ort_profile else docs.PROFILER,
            trace=facts.name,
        )
    ]
