"""Display names of the comparison's metric rows (``kernel_time_us`` → ``kernel time``).

The metrics table (:data:`traceviz.analysis.compare.METRICS`) names rows with their unit in
the name, for the JSON; people read the display name, with the value in its unit from the
formatter (``321 ms``). A metric with ``share`` in its name is a fraction (0–1) shown as %.
"""

from __future__ import annotations

#: Display name per metric row; ``{a}``/``{b}`` are the two traces' labels.
METRIC_LABELS: dict[str, str] = {
    "kernel_count": "kernels",
    "kernel_time_us": "kernel time",
    "step_count": "profiled steps",
    "step_time_us": "profiled step time (mean)",
    "kernels_per_step": "kernels per step",
    "kernel_time_per_step_us": "kernel time per step",
    "memcpy_count": "memcpy calls",
    "memcpy_bytes": "memcpy bytes",
    "memset_count": "memset calls",
    "launch_count": "launch calls",
    "launch_api_time_us": "launch API time",
    "launch_delay_p50_us": "launch delay (median)",
    "short_kernels": "kernels shorter than their launch",
    "device_idle_us": "device idle time",
    "cpu_wait_us": "device waiting for the CPU",
    "est_bytes": "memory traffic",
    "unestimated_time_share": "kernel time without a traffic estimate",
    "peak_allocated_bytes": "peak allocated memory",
    "compiled_regions": "compiled region calls",
    "compiled_frames": "compiled frames",
    "graph_breaks": "graph breaks",
    "recompiles": "recompiles",
    "kernels_outside_regions": "kernels outside compiled regions",
    "eager_kernels_per_compiled_kernel": "{a} kernels per {b} kernel",
    "est_bytes_saved": "memory traffic saved",
}

_UNIT_SUFFIXES = ("_us", "_bytes", "_count")


def metric_label(name: str, names: tuple[str, str] = ("eager", "compiled")) -> str:
    """The display name of metric row ``name``; an unknown row (a metric added without a label)
    reads as its name without the unit suffix, underscores as spaces."""
    label = METRIC_LABELS.get(name)
    if label is None:
        stem = next((name.removesuffix(s) for s in _UNIT_SUFFIXES if name.endswith(s)), name)
        return stem.replace("_", " ")
    return label.format(a=names[0], b=names[1])


def is_share(name: str) -> bool:
    """True for a metric whose value is a fraction of a whole (0–1), printed as %."""
    return "share" in name.split("_")
