"""Which table each event goes to, decided once per distinct (phase, category) pair.

Every event lands in exactly one table or in one named ignored count, so conservation can be
checked: see ``Trace.stats``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from traceviz.parse.columns import _Numbering
from traceviz.schema import ActivityKind, OpCategory

DEVICE_CATEGORIES: dict[str, ActivityKind] = {
    "kernel": ActivityKind.KERNEL,
    "Kernel": ActivityKind.KERNEL,
    "gpu_memcpy": ActivityKind.MEMCPY,
    "Memcpy": ActivityKind.MEMCPY,
    "gpu_memset": ActivityKind.MEMSET,
    "Memset": ActivityKind.MEMSET,
}
OP_CATEGORIES: dict[str, OpCategory] = {
    "cpu_op": OpCategory.CPU_OP,
    "Operator": OpCategory.CPU_OP,
    "user_annotation": OpCategory.USER_ANNOTATION,
    "python_function": OpCategory.PYTHON_FUNCTION,
}
LAUNCH_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver", "Runtime", "Driver"})
LEGACY_CATEGORIES = frozenset({"Operator", "Runtime", "Kernel", "Memcpy", "Memset"})
MEMORY_EVENT_NAME = "[memory]"

if TYPE_CHECKING:
    from traceviz.parse.source import EventSource

KERNELS, OPS, LAUNCHES, SPANS, MEMORY = "kernels", "ops", "launches", "spans", "memory"
TABLES = (KERNELS, OPS, LAUNCHES, SPANS, MEMORY)
INSTANT = "instant"  # decided per event by name: memory table or ignored


def is_launch_category(cat: Any) -> bool:
    """Runtime/driver API categories, including other vendors' (``mtia_runtime``)."""
    return isinstance(cat, str) and (
        cat in LAUNCH_CATEGORIES or cat.endswith("_runtime") or cat.endswith("_driver")
    )


def destination(ph: Any, cat: Any) -> str:
    """A table name, :data:`INSTANT`, or ``"ignored:<reason>"``."""
    if ph == "X":
        if cat in DEVICE_CATEGORIES:
            return KERNELS
        if cat in OP_CATEGORIES:
            return OPS
        if is_launch_category(cat):
            return LAUNCHES
        return SPANS
    if ph in ("i", "I"):
        return INSTANT
    if ph in ("s", "t", "f"):
        return "ignored:flow"  # ac2g/fwdbwd arrows: the same links are in correlation args
    if ph == "M":
        return "ignored:metadata"  # process/thread names: read into TraceMeta
    return f"ignored:phase_{ph}"


def route(events: EventSource) -> tuple[np.ndarray, list[str], list[tuple[Any, Any]]]:
    """Destination code per event, the destination label of each code, and each code's
    (phase, category) pair (pairs numbered in order of first appearance)."""
    numbering = _Numbering()
    codes = events.pair_codes(numbering, "ph", "cat")
    pairs = list(numbering)
    return codes, [destination(ph, cat) for ph, cat in pairs], pairs
