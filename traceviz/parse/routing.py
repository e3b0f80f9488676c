"""Which table each event goes to, decided once per distinct (phase, category) pair.

Every event lands in exactly one table or in one named ignored count, so conservation can be
checked: see ``Trace.stats``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from traceviz.parse.columns import factorize
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


def route(phs: list[Any], cats: list[Any]) -> tuple[np.ndarray, list[str]]:
    """Destination code per event, and the destination label of each code."""
    ph_codes, ph_uniques = codes_from_one(phs)
    cat_codes, cat_uniques = codes_from_one(cats)
    pair = ph_codes * (len(cat_uniques) + 1) + cat_codes
    pair_codes, pair_uniques = pd.factorize(pair)
    labels: list[str] = []
    for value in pair_uniques:
        ph_i, cat_i = divmod(int(value), len(cat_uniques) + 1)
        ph = ph_uniques[ph_i - 1] if ph_i else None
        cat = cat_uniques[cat_i - 1] if cat_i else None
        labels.append(destination(ph, cat))
    return np.asarray(pair_codes), labels


def codes_from_one(values: list[Any]) -> tuple[np.ndarray, list[Any]]:
    """Codes starting at 1 (0 = missing) and the distinct values."""
    codes, uniques = factorize(values)
    return codes + 1, uniques
