"""Which CPU ops are "kernels" on a CPU-only trace.

On a GPU trace a kernel is a device activity. On a CPU-only trace the work is done inside CPU
ops, so traceviz counts as kernels the ops that do the work themselves, the way a GPU kernel
would be launched once for them. The rule, applied to ``cpu_op`` events:

1. **Candidates** are ops of a compute namespace (``aten::``, ``mkldnn::``, ``mkl::``,
   ``quantized::``, ``onednn::``, ``_c10d_functional::``, ``c10d::``) and Inductor's C++ kernels
   (``graph_N_cpp_fused_…``, ``cpp_fused_…``), except view/metadata/allocation ops that move no
   data (``aten::view``, ``aten::as_strided``, ``aten::t``, ``aten::expand``, ``aten::empty``,
   ``aten::resolve_conj``, … see :data:`NON_COMPUTE`).
2. A candidate is a **wrapper**, not a kernel, when one of its direct children is a candidate
   other than a helper (``copy_``, ``fill_``, ``zero_``) or a copy wrapper (below):
   ``aten::linear`` → ``aten::addmm``,
   ``aten::layer_norm`` → ``aten::native_layer_norm``, the dispatcher's outer ``aten::sum`` →
   inner ``aten::sum``. Helpers do not make their parent a wrapper: ``aten::addmm`` computes the
   GEMM itself and also counts the ``aten::copy_`` that broadcasts the bias; ``aten::mul`` by
   a Python scalar computes itself although it first wraps the scalar with ``aten::to``.
3. Ops that only delegate their work to a ``copy_`` child (:data:`COPY_WRAPPERS`: ``clone``,
   ``_to_copy``, ``to``, ``contiguous``, …) are wrappers, so a copy is counted once.

The rule depends only on names and nesting, never on timing, so the same model gives the same
count on every run, and eager and compiled counts mean the same thing.

**Time is counted once.** A helper kernel runs inside the kernel that calls it (``aten::copy_``
inside ``aten::addmm``), so summing ``dur_us`` would count the copy twice: once as itself and
once inside addmm. :func:`exclusive_durations` gives each kernel its duration less the part
covered by the kernels nested directly inside it on its thread (``excl_dur_us``); summed over
the kernels of a thread it is at most the union of their intervals.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from traceviz.aten_ops import COPY_OPS, NO_DATA_OPS, with_inplace
from traceviz.parse import nesting

COMPUTE_NAMESPACES = ("aten", "mkldnn", "mkl", "quantized", "onednn", "_c10d_functional", "c10d")
INDUCTOR_CPP_KERNEL = re.compile(r"^(graph_\d+_)?cpp_fused_|^cpp_")

#: Ops that move no data (views, allocations, metadata; :data:`traceviz.aten_ops.NO_DATA_OPS`)
#: and their in-place forms: never kernels.
NON_COMPUTE = with_inplace(NO_DATA_OPS)

HELPERS = frozenset({"copy_", "fill_", "zero_"})
COPY_WRAPPERS = COPY_OPS | {"type_as"}


def op_base_name(name: str) -> tuple[str, str]:
    """``"aten::addmm"`` → ``("aten", "addmm")``; names without a namespace → ``("", name)``."""
    namespace, sep, base = name.partition("::")
    return (namespace, base) if sep else ("", name)


def _classify_name(name: str) -> tuple[bool, bool, bool]:
    """(is candidate, is helper, is copy wrapper) for one op name."""
    namespace, base = op_base_name(name)
    if not namespace:
        return bool(INDUCTOR_CPP_KERNEL.match(name)), False, False
    candidate = namespace in COMPUTE_NAMESPACES and base not in NON_COMPUTE
    return candidate, candidate and base in HELPERS, candidate and base in COPY_WRAPPERS


def cpu_kernel_mask(names: pd.Categorical, is_cpu_op: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Boolean mask over ops: True where the op is a CPU kernel by the module's rule.

    ``names`` is the ops' name column, ``is_cpu_op`` marks ``cpu_op`` rows, ``parent`` is the
    parent row (−1 for none). Each distinct name is classified once.
    """
    flags = np.array([_classify_name(str(c)) for c in names.categories], dtype=bool)
    flags = flags.reshape(-1, 3) if flags.size else np.zeros((0, 3), dtype=bool)
    codes = np.asarray(names.codes)
    known = codes >= 0
    candidate = np.zeros(len(codes), dtype=bool)
    helper = np.zeros(len(codes), dtype=bool)
    copy_wrapper = np.zeros(len(codes), dtype=bool)
    candidate[known] = flags[codes[known], 0]
    helper[known] = flags[codes[known], 1]
    copy_wrapper[known] = flags[codes[known], 2]
    candidate &= is_cpu_op
    makes_wrapper = candidate & ~helper & ~copy_wrapper & (parent >= 0)
    has_work_child = np.zeros(len(codes), dtype=bool)
    has_work_child[parent[makes_wrapper]] = True
    return candidate & ~has_work_child & ~copy_wrapper


def exclusive_durations(
    thread_codes: np.ndarray, starts_us: np.ndarray, durs_us: np.ndarray
) -> np.ndarray:
    """Each kernel's duration less the time its directly nested kernels cover, µs.

    Kernels (rows in any order) are nested by time on their thread (``thread_codes``) with
    :mod:`traceviz.parse.nesting`; a child's interval is clipped to its parent before it is
    subtracted, and the result never goes below 0. NaN durations stay NaN (they count as 0
    for their parent). So the exclusive times of one thread's kernels add up to at most the
    union of their [start, start + dur) intervals.
    """
    n = len(durs_us)
    out = np.asarray(durs_us, dtype=np.float64).copy()
    if n == 0:
        return out
    order = nesting.sort_order(thread_codes, starts_us, durs_us)
    codes = np.asarray(thread_codes)[order]
    start = np.asarray(starts_us, dtype=np.float64)[order]
    dur = np.nan_to_num(np.asarray(durs_us, dtype=np.float64)[order])
    end = start + dur
    timeline = nesting.Timeline.covering(start, end)
    depth = nesting.depths(timeline.keys(codes, start), timeline.keys(codes, end), dur)
    parent = nesting.parents(depth, codes)
    child = np.flatnonzero(parent >= 0)
    up = parent[child]
    # A child starts inside its parent; only the part past the parent's end is not covered.
    # Computed from offsets, not absolute ends, so that µs stay exact on a 1e12 µs clock.
    overhang = np.clip(start[child] - start[up] + dur[child] - dur[up], 0.0, None)
    covered = np.clip(dur[child] - overhang, 0.0, None)
    nested = np.bincount(up, weights=np.nan_to_num(covered), minlength=n)
    exclusive = np.maximum(dur - nested, 0.0)
    out[order] = np.where(np.isnan(out[order]), np.nan, exclusive)
    return out
