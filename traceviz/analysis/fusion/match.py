"""Credit each eager kernel to at most one compiled kernel: the fusion map as a partition.

:func:`credit_eager_kernels` returns one row per eager kernel *instance* (kernel rows of the
eager trace's kernels table, not memcpy/memset). Each instance is credited to **at most one**
compiled kernel name, or to nothing (``removed`` / ``no counterpart``), so summed over the
compiled kernels the credited count and time of every eager op never exceed what the eager
trace measured. The rules, in the order they claim instances (an instance claimed by one
stage is never offered to a later one):

1. **compiler** — when the compiler's record is given (``compiler``: eager row → compiled
   kernel, from Inductor's provenance and the source lines of both sides), those credits come
   first, basis ``compiler``.
2. **identical** — one-to-one matching of identical calls: an eager instance and a compiled
   kernel with the same op base name (``aten::addmm`` ↔ ``aten::addmm``,
   ``mkldnn_convolution`` ↔ ``mkldnn_convolution``), first with the same ``Input Dims`` and
   kernel name, then with the same ``Input Dims``, then with the same kernel name. Within a
   profiler step, the k-th such eager instance is paired with the k-th such compiled kernel of
   a step, so a compiled call that runs once per step takes one eager instance per step. A
   library kernel replayed by a CUDA/HIP graph (``mode="reduce-overhead"``) hangs off the
   compiled region, not off its aten op: it is paired by its kernel name alone.
3. **alias** — the same, one-to-one, between op names that do the same work
   (:data:`~traceviz.analysis.fusion.fusion_map.OP_ALIASES`: eager ``addmm`` ↔ compiled extern
   ``mm``), against compiled kernels Inductor did not generate.
4. **fused** / **part** — what is left is claimed by Inductor kernels whose decoded ops
   (:func:`~traceviz.analysis.inductor_names.fused_kernel_ops`) name the instance's op, or an op
   around it (the eager ``aten::sum`` inside ``aten::mean`` goes to ``…_mean_…``), or whose ops
   decompose into it (:data:`COMPOSITES`: ``mean`` → ``sum``, ``div``; ``addmm`` → ``add``).
   An own op beats an enclosing one, a named op beats a part. Among several compiled kernels
   that could hold the instance, the one at the nearest relative position within its step
   takes it, with ``confidence`` 1/n for n candidates (1 when only one kernel could).
   **Layout kernels** (:func:`is_layout_kernel`: an Inductor kernel named only after a GEMM or
   convolution that the compiled trace runs as an extern call, e.g. the CPU weight reorder
   ``graph_0_cpp_fused_convolution_0``) never take the computation of the op they prepare:
   they may hold only work *around* it (a bias add inside ``aten::convolution``). Nor does
   any Inductor kernel but a template take an instance whose own op is a GEMM, convolution or
   attention (:data:`HEAVY_KEYS`): ``triton_poi_fused_add_addmm_…`` holds the bias add, not
   the GEMM (the compiler stage's rule too).

An unclaimed instance is ``removed`` when its op moves no data, or is a copy/fill while the
compiled trace has no copy/fill kernel at all (Inductor folds them away); else it has ``no
counterpart``. Work is vectorised over instances; Python loops run over distinct names and
keys only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum

import numpy as np
import numpy.typing as npt
import pandas as pd

from traceviz import schema
from traceviz.analysis.fusion.inductor_record import NAME_MATCH_UNRECORDED_BASIS
from traceviz.analysis.fusion.op_keys import keys_of, name_keys, op_key
from traceviz.analysis.inductor_names import TritonSubkind, eager_op_base, fused_kernel_ops
from traceviz.analysis.kernels import issue_us
from traceviz.analysis.shapes import tensor_shapes
from traceviz.dense import sorted_unique
from traceviz.schema import ActivityKind, Kernels, Ops, Steps
from traceviz.trace import Trace

__all__ = [
    "COMPOSITES",
    "CREDITS_DTYPES",
    "HEAVY_KEYS",
    "Coded",
    "Credits",
    "How",
    "KernelSide",
    "Outcome",
    "credit_eager_kernels",
    "distinct",
    "instances_by_name",
    "is_layout_kernel",
    "kernel_side",
    "layout_kernels",
    "mark_unrecorded",
    "nearest_kernel",
    "own_key",
    "runs_heavy_work",
]

#: How many ops around a kernel's own op are looked at (``sum`` inside ``mean`` inside ...).
ANCESTOR_LEVELS = 4

#: Ops the compiler usually leaves to a library call (the ops that "survive" compilation).
HEAVY_KEYS: frozenset[str] = frozenset({"mm", "bmm", "convolution", "attention"})

#: Key → the keys of the ops it decomposes into or carries out along the way: a compiled
#: kernel named after the key may also hold eager instances of these (basis ``part``).
COMPOSITES: dict[str, tuple[str, ...]] = {
    "mean": ("sum", "div", "fill", "copy"),
    "var": ("sum", "sub", "mul", "div", "mean"),
    "std": ("sum", "sub", "mul", "div", "sqrt", "var", "mean"),
    "var_mean": ("sum", "sub", "mul", "div", "mean", "var"),
    "mm": ("add", "copy", "mul"),
    "bmm": ("add", "copy", "mul"),
    "convolution": ("add", "copy"),
    "layer_norm": ("mean", "var", "var_mean", "sub", "add", "mul", "rsqrt", "copy"),
    "batch_norm": ("add", "sub", "mul", "rsqrt", "div", "sqrt", "copy"),
    "group_norm": ("mean", "var", "var_mean", "sub", "add", "mul", "rsqrt", "copy"),
    "softmax": ("amax", "max", "sub", "exp", "sum", "div"),
    "log_softmax": ("amax", "max", "sub", "exp", "sum", "log"),
    "gelu": ("mul", "add", "erf", "tanh", "pow"),
    "silu": ("sigmoid", "mul"),
    "attention": ("mul", "div", "softmax", "bmm", "copy", "add"),
}

#: Ops Inductor folds into the kernels around them (scalar wrappers, broadcasts).
_FOLDED_KEYS = frozenset({"copy", "fill"})


class Outcome(str, Enum):
    """What became of an eager kernel instance."""

    MATCHED = "matched"  # credited to one compiled kernel
    REMOVED = "removed"  # moved no data, or a copy/fill the compiled trace has none of
    NO_COUNTERPART = "no counterpart"  # nothing in the compiled trace accounts for it


class How(str, Enum):
    """Which rule credited an instance (see the module docstring)."""

    COMPILER = "compiler"
    IDENTICAL = "identical"
    ALIAS = "alias"
    FUSED = "fused"
    PART = "part"
    NONE = ""


class Credits:
    """Columns of :func:`credit_eager_kernels`' table: one row per eager kernel instance."""

    eager_row = "eager_row"  # row in the eager trace's kernels table (Int64)
    op = "op"  # the op it stands for: its CPU op, else its own name (object)
    time_us = "time_us"  # its device time, µs, exclusive (``excl_dur_us``; float64)
    kernel = "kernel"  # compiled kernel name credited (object; None when none)
    outcome = "outcome"  # Outcome value (category)
    how = "how"  # How value (category)
    confidence = "confidence"  # 0–1: 1 when one compiled kernel could hold it (float64; NaN)
    # "compiler" | "name-match" (| "name-match (no Inductor kernels recorded)") for matched
    # rows, "" otherwise (category)
    basis = "basis"


CREDITS_DTYPES: dict[str, str] = {
    Credits.eager_row: schema.I64,
    Credits.op: "object",
    Credits.time_us: schema.F64,
    Credits.kernel: "object",
    Credits.outcome: schema.CAT,
    Credits.how: schema.CAT,
    Credits.confidence: schema.F64,
    Credits.basis: schema.CAT,
}

COMPILER_BASIS = "compiler"
NAME_MATCH_BASIS = "name-match"


@dataclass(frozen=True)
class Coded:
    """A column of strings as codes into ``uniques`` (-1: missing), so work is done once per
    distinct value and joins compare integers."""

    codes: npt.NDArray[np.int64]
    uniques: npt.NDArray[np.object_]

    def values(self) -> npt.NDArray[np.object_]:
        """The column as objects (None where missing)."""
        table: npt.NDArray[np.object_] = np.empty(len(self.uniques) + 1, dtype=object)
        table[: len(self.uniques)] = self.uniques
        return table[self.codes]

    def map(self, fn: Callable[[str], object]) -> Coded:
        """``fn`` of each distinct value (same codes)."""
        mapped: npt.NDArray[np.object_] = np.empty(len(self.uniques), dtype=object)
        mapped[:] = [fn(str(u)) for u in self.uniques]
        return Coded(self.codes, mapped)

    def flags(self, fn: Callable[[str], bool]) -> npt.NDArray[np.bool_]:
        """Per row: ``fn`` of its value (False where missing)."""
        table = np.zeros(len(self.uniques) + 1, dtype=bool)
        table[: len(self.uniques)] = [bool(fn(str(u))) for u in self.uniques]
        return table[self.codes]

    @classmethod
    def of(cls, series: pd.Series, rows: npt.NDArray[np.int64] | None = None) -> Coded:
        """From a (categorical or plain) column, on its ``rows`` (positions) when given: a
        categorical's codes taken there (its categories kept), another column factorized."""
        if isinstance(series.dtype, pd.CategoricalDtype):
            cat_codes: npt.NDArray[np.int64] = np.asarray(series.cat.codes, dtype=np.int64)
            taken = cat_codes if rows is None else cat_codes[rows]
            return cls(taken, series.cat.categories.to_numpy(dtype=object))
        values = series.to_numpy(dtype=object)
        found, uniques = pd.factorize(values if rows is None else values[rows])
        codes: npt.NDArray[np.int64] = np.asarray(found, dtype=np.int64)
        return cls(codes, np.asarray(uniques, dtype=object))


@dataclass(frozen=True)
class KernelSide:
    """One trace's kernel instances as aligned columns (:func:`kernel_side`)."""

    rows: npt.NDArray[np.int64]  # rows in the kernels table
    label: Coded  # op name, else kernel name
    base: Coded  # op base name (namespace, overload and trailing _ dropped)
    name: Coded  # kernel name
    names: npt.NDArray[np.object_]  # kernel name as objects (name.values())
    shape: Coded  # Input Dims text of its op, missing when unknown
    step: npt.NDArray[np.int64]  # position of its step, -1 outside every step
    pos: npt.NDArray[np.float64]  # rank within its step, 0–1
    time: npt.NDArray[np.float64]  # excl_dur_us (dur_us where missing)


@dataclass
class _State:
    """The credits being built: per eager instance ``kernel``/``how``/``confidence``, per
    compiled instance ``used`` by a one-to-one stage."""

    kernel: npt.NDArray[np.object_]
    how: npt.NDArray[np.object_]
    confidence: npt.NDArray[np.float64]
    used: npt.NDArray[np.bool_]


def credit_eager_kernels(
    eager: Trace,
    compiled: Trace,
    *,
    compiled_classified: pd.DataFrame,
    compiler: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Credit every eager kernel instance to at most one compiled kernel (module docstring).

    ``compiled_classified`` is :func:`~traceviz.analysis.kernels.classify` of ``compiled``;
    ``compiler`` (optional) has columns ``eager_row`` and ``kernel`` (a compiled kernel name),
    and optionally ``confidence``, at most one row per eager row, from the compiler's record.
    Returns a table with the :class:`Credits` columns, in eager-row order.
    """
    e = kernel_side(eager, eager.kernels)
    c = kernel_side(compiled, compiled_classified)
    n = len(e.rows)
    state = _State(
        kernel=np.full(n, None, dtype=object),
        how=np.full(n, How.NONE.value, dtype=object),
        confidence=np.full(n, np.nan),
        used=np.zeros(len(c.rows), dtype=bool),
    )
    if compiler is not None and len(compiler) and len(c.rows):
        _take_compiler(e, c, compiler, state)
    if len(c.rows):
        fusion = c.name.flags(lambda s: fused_kernel_ops(s) is not None)
        e_key, c_key = own_key(e.label), own_key(c.label)
        replayed = _replayed(compiled_classified, c) & ~fusion
        stages = [
            ([e.base, e.shape, e.name], [c.base, c.shape, c.name], None, How.IDENTICAL),
            ([e.base, e.shape], [c.base, c.shape], None, How.IDENTICAL),
            ([e.base, e.name], [c.base, c.name], None, How.IDENTICAL),
            ([e_key, e.shape], [c_key, c.shape], ~fusion, How.ALIAS),
            ([e_key], [c_key], ~fusion, How.ALIAS),
        ]
        if replayed.any():
            stages.insert(3, ([e.name], [c.name], replayed, How.IDENTICAL))
        for e_cols, c_cols, c_mask, rule in stages:
            _one_to_one(e, c, e_cols, c_cols, c_mask, state, rule)
        _claim_fused(eager, e, c, fusion, state)
    return _table(e, c, state)


def _replayed(classified: pd.DataFrame, c: KernelSide) -> npt.NDArray[np.bool_]:
    """Per compiled instance: replayed by a CUDA/HIP graph (its op is the replay's region, not
    the aten op that launched it at capture, so only its kernel name can match)."""
    if Kernels.in_graph not in classified:
        return np.zeros(len(c.rows), dtype=bool)
    flags = classified[Kernels.in_graph].astype("boolean").fillna(False)
    return np.asarray(flags.to_numpy(dtype=bool)[c.rows], dtype=bool)


def layout_kernels(c: KernelSide) -> set[str]:
    """The names of ``c``'s layout kernels (:func:`is_layout_kernel`)."""
    fusion = c.name.flags(lambda s: fused_kernel_ops(s) is not None)
    extern_keys = distinct(own_key(c.label), ~fusion)
    return {n for n in distinct(c.name, fusion) if is_layout_kernel(n, extern_keys)}


def distinct(column: Coded, mask: npt.NDArray[np.bool_] | None = None) -> set[str]:
    """The distinct non-missing values of ``column`` (on the rows of ``mask``)."""
    codes = column.codes if mask is None else column.codes[mask]
    found = sorted_unique(codes[codes >= 0])  # (np.unique's, without its sort)
    return {str(v) for v in column.uniques[found] if v is not None}


def runs_heavy_work(kernel: str) -> bool:
    """A library kernel or an Inductor template: where a GEMM/conv/attention can run."""
    decoded = fused_kernel_ops(kernel)
    return decoded is None or decoded.subkind is TritonSubkind.TEMPLATE


def is_layout_kernel(name: str, extern_keys: Iterable[str]) -> bool:
    """An Inductor kernel that only prepares a heavy op run elsewhere: not a template, named
    only after ops of :data:`HEAVY_KEYS`, all of which the compiled trace also runs as extern
    (non-Inductor) kernels, whose keys are ``extern_keys``."""
    decoded = fused_kernel_ops(name)
    if decoded is None or decoded.subkind is TritonSubkind.TEMPLATE or not decoded.descriptive:
        return False
    keys = set(keys_of(decoded.ops))
    return bool(keys) and keys <= HEAVY_KEYS and keys <= set(extern_keys)


# --- the two sides -----------------------------------------------------------------------


def kernel_side(trace: Trace, kernels: pd.DataFrame) -> KernelSide:
    is_kernel = (kernels[Kernels.activity] == ActivityKind.KERNEL.value).to_numpy(dtype=bool)
    rows = np.flatnonzero(is_kernel).astype(np.int64)
    # the few columns used, taken on the kernel rows (not the whole wide table's rows)
    name = Coded.of(kernels[Kernels.name], rows)
    op = Coded.of(kernels[Kernels.op_name], rows)
    label_codes = np.where(op.codes >= 0, op.codes, len(op.uniques) + name.codes)
    uniques = np.concatenate([op.uniques, name.uniques]).astype(str).astype(object)
    canon, distinct = pd.factorize(uniques)  # one code per distinct label
    label = Coded(
        canon[label_codes].astype(np.int64) if len(canon) else label_codes,
        np.asarray(distinct, dtype=object),
    )
    op_rows = kernels[Kernels.op_row].to_numpy(dtype=float, na_value=np.nan)[rows]
    excl = kernels[Kernels.excl_dur_us].to_numpy(dtype=float, na_value=np.nan)[rows]
    dur = kernels[Kernels.dur_us].to_numpy(dtype=float, na_value=np.nan)[rows]
    time = np.nan_to_num(
        np.where(np.isnan(excl), dur, excl), nan=0.0, posinf=np.inf, neginf=-np.inf
    )
    step, pos = _positions(trace, issue_us(kernels)[rows])
    return KernelSide(
        rows=rows,
        label=label,
        base=label.map(lambda s: eager_op_base(s, strip_inplace=True)),
        name=name,
        names=name.values(),
        shape=_shapes(trace.ops, op_rows),
        step=step,
        pos=pos,
        time=time,
    )


def _shapes(ops: pd.DataFrame, op_rows: npt.NDArray[np.float64]) -> Coded:
    """The Input Dims text of each instance's op (missing when it has none)."""
    codes = np.full(len(op_rows), -1, dtype=np.int64)
    if not len(ops):
        return Coded(codes, np.empty(0, dtype=object))
    dims = Coded.of(ops[Ops.input_dims])
    has = ~np.isnan(op_rows)
    codes[has] = dims.codes[op_rows[has].astype(np.int64)]
    return Coded(codes, dims.uniques)


def _positions(
    trace: Trace, issue: npt.NDArray[np.float64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """Per instance: the position of the step it was issued in (-1: none) and its rank within
    that step as a fraction (0–1; the whole trace is one step when it has none)."""
    n = len(issue)
    step = np.full(n, -1, dtype=np.int64)
    # every span, a partial last step included: the steps only place instances for matching
    # (which step, how far into it), no figure is divided by their count
    steps = trace.steps.sort_values(Steps.ts_us)
    if len(steps):
        starts = steps[Steps.ts_us].to_numpy(dtype=float)
        ends = starts + np.nan_to_num(steps[Steps.dur_us].to_numpy(dtype=float))
        at = np.searchsorted(starts, issue, side="right") - 1
        inside = (at >= 0) & (issue <= ends[np.maximum(at, 0)])
        step[inside] = at[inside]
    order = np.lexsort((np.nan_to_num(issue), step))
    sorted_steps = step[order]
    first = np.r_[True, sorted_steps[1:] != sorted_steps[:-1]] if n else np.array([], bool)
    group_start = np.maximum.accumulate(np.where(first, np.arange(n), 0)) if n else first
    rank = np.arange(n) - group_start
    counts = np.bincount(np.cumsum(first) - 1) if n else np.array([], dtype=np.int64)
    size = counts[np.cumsum(first) - 1] if n else np.array([], dtype=np.int64)
    pos = np.empty(n)
    pos[order] = (rank + 0.5) / np.maximum(size, 1)
    return step, pos


def own_key(labels: Coded) -> Coded:
    """Per instance: the key of its own op (None for ops that move no data or several keys)."""

    def one(label: str) -> str | None:
        keys = name_keys(label)
        return keys[0] if len(keys) == 1 else None

    return labels.map(one)


# --- stages --------------------------------------------------------------------------------


def _free(kernel: npt.NDArray[np.object_]) -> npt.NDArray[np.bool_]:
    return np.asarray(pd.isna(kernel), dtype=bool)


def _take_compiler(
    e: KernelSide,
    c: KernelSide,
    compiler: pd.DataFrame,
    state: _State,
) -> None:
    """Stage 1: the compiler's record (eager kernels-table row → compiled kernel name)."""
    known = distinct(c.name)
    record = compiler.drop_duplicates("eager_row")
    record = record[record["kernel"].isin(known)]
    at = pd.Index(e.rows).get_indexer(pd.Index(record["eager_row"].to_numpy(dtype=np.int64)))
    ok = at >= 0
    state.kernel[at[ok]] = record["kernel"].to_numpy(dtype=object)[ok]
    state.how[at[ok]] = How.COMPILER.value
    given = "confidence" in record
    state.confidence[at[ok]] = record["confidence"].to_numpy(dtype=float)[ok] if given else 1.0


def _one_to_one(
    e: KernelSide,
    c: KernelSide,
    e_cols: list[Coded],
    c_cols: list[Coded],
    c_mask: npt.NDArray[np.bool_] | None,
    state: _State,
    rule: How,
) -> None:
    """Pair free eager instances with free compiled instances of the same signature
    (``*_cols``): the k-th of an eager step with the k-th of a compiled step. A compiled
    instance taken here is not offered to later one-to-one stages. Instances whose signature
    has a missing part (None, or "" shapes) are skipped."""
    free = _free(state.kernel)
    c_take = ~state.used if c_mask is None else c_mask & ~state.used
    e_sig, c_sig = _signature(e_cols, c_cols)
    e_ok = free & (e_sig >= 0)
    c_ok = c_take & (c_sig >= 0)
    if not e_ok.any() or not c_ok.any():
        return
    j = np.flatnonzero(c_ok)
    j = j[np.lexsort((c.pos[j], c.step[j]))]  # by step, then position (stable)
    c_occ = _occurrence(c.step[j], c_sig[j])
    idx = np.flatnonzero(e_ok)
    idx = idx[np.lexsort((e.pos[idx], e.step[idx]))]
    e_occ = _occurrence(e.step[idx], e_sig[idx])
    # the k-th eager instance of a signature in its step takes the first compiled instance
    # that is the k-th of that signature in its own step
    width = int(max(c_occ.max(initial=0), e_occ.max(initial=0))) + 1
    c_key = c_sig[j] * width + c_occ
    e_key = e_sig[idx] * width + e_occ
    keys, first = np.unique(c_key, return_index=True)
    at_key = np.clip(np.searchsorted(keys, e_key), 0, max(len(keys) - 1, 0))
    hit = keys[at_key] == e_key if len(keys) else np.zeros(len(e_key), dtype=bool)
    at = idx[hit]
    state.kernel[at] = c.names[j[first[at_key[hit]]]]
    state.how[at] = rule.value
    state.confidence[at] = 1.0
    # every compiled instance whose (signature, k) was taken is used, in whichever step
    state.used[j[np.isin(c_key, e_key[hit])]] = True


def _occurrence(step: npt.NDArray[np.int64], sig: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Per row (rows in order), how many rows of its (step, signature) came before it."""
    n = len(step)
    if not n:
        return np.zeros(0, dtype=np.int64)
    group = (step - step.min()) * (int(sig.max()) + 1) + sig  # one integer per (step, sig)
    order = np.argsort(group, kind="stable")
    sorted_group = group[order]
    starts = np.r_[True, sorted_group[1:] != sorted_group[:-1]]
    first = np.maximum.accumulate(np.where(starts, np.arange(n), 0))
    occ = np.empty(n, dtype=np.int64)
    occ[order] = np.arange(n) - first
    return occ


def _signature(
    e_cols: list[Coded], c_cols: list[Coded]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """One integer per row for the tuple of columns, shared by both sides; -1 when a part is
    missing (None or "")."""
    n_e = len(e_cols[0].codes)
    combined = np.zeros(n_e + len(c_cols[0].codes), dtype=np.int64)
    missing = np.zeros(len(combined), dtype=bool)
    for a, b in zip(e_cols, c_cols, strict=True):
        both = np.concatenate([a.uniques, b.uniques])
        canon, distinct = pd.factorize(both, use_na_sentinel=True)  # few: distinct values
        empty = np.array([v is None or v == "" for v in distinct] + [True], dtype=bool)
        canon = np.where(canon < 0, len(distinct), canon)
        table = np.append(canon, len(distinct))  # code -1 → missing
        offset = np.concatenate([a.codes, np.where(b.codes >= 0, b.codes + len(a.uniques), -1)])
        shared = table[np.where(offset >= 0, offset, len(table) - 1)]
        missing |= empty[shared]
        combined = combined * (len(distinct) + 1) + shared
        combined = pd.factorize(combined)[0].astype(np.int64)  # keep the numbers small
    out: npt.NDArray[np.int64] = np.where(missing, -1, combined).astype(np.int64)
    return out[:n_e], out[n_e:]


def _claim_fused(
    eager: Trace,
    e: KernelSide,
    c: KernelSide,
    fusion: npt.NDArray[np.bool_],
    state: _State,
) -> None:
    """Stage 4: free instances go to the Inductor kernels (or extern calls, by their
    :data:`COMPOSITES` parts) whose ops name the instance's op or one around it; among
    several, the one nearest on the anchor scale (:func:`anchor_coordinates`: the calls paired
    one-to-one before mark where each side is)."""
    kernel, how, confidence = state.kernel, state.how, state.confidence
    anchored = np.isin(how, [How.IDENTICAL.value, How.ALIAS.value])
    used = state.used
    offers = _offers(c, fusion)
    if offers.empty:
        return
    free = np.flatnonzero(_free(kernel))
    if free.size == 0:
        return
    wants = _wants(eager, e, free)
    # level 0 (own op) may not go to a layout kernel: drop those offers there
    joined = wants.merge(offers, on="key")
    joined = joined[~(joined["layout"] & (joined["level"] == 0))]
    # a GEMM/conv/attention runs in a library kernel or an Inductor template, never in an
    # Inductor kernel that only carries its epilogue (``triton_poi_fused_add_addmm_…``), as
    # in the compiler stage (fusion_lines.compiler_credits)
    own = own_key(e.label)
    heavy = np.array([k in HEAVY_KEYS for k in own.uniques] + [False], dtype=bool)
    joined = joined[~(heavy[own.codes[joined["i"].to_numpy(dtype=np.int64)]] & ~joined["runs"])]
    joined = joined[_data_flows(joined, e, c, fusion)]
    if joined.empty:
        return
    joined["score"] = joined["level"] * 2 + joined["part"]
    best = joined.groupby("i", sort=False)["score"].transform("min")
    joined = joined[joined["score"] == best]
    e_place, c_place = anchor_coordinates(e, anchored), anchor_coordinates(c, used)
    by_name = instances_by_name(c, c_place)
    for (_, score), group in joined.groupby(["key", "score"], sort=False):
        assert isinstance(score, (int, np.integer))
        names = sorted(set(group["name"]))
        instances = group.drop_duplicates("i")["i"].to_numpy()
        chosen = nearest_kernel(names, by_name, e_place[instances])
        kernel[instances] = chosen
        rule = How.PART if score % 2 else How.FUSED
        how[instances] = rule.value
        confidence[instances] = 1.0 / len(names)


def _data_flows(
    joined: pd.DataFrame, e: KernelSide, c: KernelSide, fusion: npt.NDArray[np.bool_]
) -> npt.NDArray[np.bool_]:
    """Per offer row of ``joined``: kept unless it credits an eager op's own work
    (``level`` 0) to an extern call as one of its :data:`COMPOSITES` parts while no data
    flows between them: the op's ``Input Dims`` share no tensor shape with the call's inputs
    or its GEMM output (:func:`call_shapes`). A bias add ``[M, N] + [N]`` may be in a compiled
    ``addmm([N], [M, K], [K, N])``; an ``aten::mul`` on ``[8, 128, 256]`` or a scalar
    ``copy_`` beside an ``mm`` of ``[1024, 256]`` is not. Checked once per distinct (shape
    text, compiled name)."""
    keep = np.ones(len(joined), dtype=bool)
    extern = np.asarray(~joined["name"].isin(distinct(c.name, fusion)).to_numpy(dtype=bool))
    check = (joined["part"].to_numpy() == 1) & (joined["level"].to_numpy() == 0) & extern
    if not check.any():
        return keep
    at = np.flatnonzero(check)
    shape_codes = e.shape.codes[joined["i"].to_numpy(dtype=np.int64)[at]]
    name_codes, names = pd.factorize(joined["name"].to_numpy(dtype=object)[at])
    pair = (shape_codes + 1) * (len(names) + 1) + name_codes  # one integer per (shape, name)
    distinct_pairs, inverse = np.unique(pair, return_inverse=True)
    call = call_shapes(c)
    flows = np.zeros(len(distinct_pairs), dtype=bool)
    for k, key in enumerate(distinct_pairs.tolist()):
        code, name = key // (len(names) + 1) - 1, names[key % (len(names) + 1)]
        text = e.shape.uniques[code] if code >= 0 else None
        flows[k] = bool(_tensor_shapes(text) & call.get(str(name), frozenset()))
    keep[at] = flows[inverse.reshape(-1)]
    return keep


Shape = tuple[int, ...]


def call_shapes(c: KernelSide) -> dict[str, frozenset[Shape]]:
    """Per compiled kernel name: the tensor shapes its calls take (``Input Dims``) and, for
    a GEMM, the shape it makes (``[..., M, K] @ [..., K, N]`` → ``[..., M, N]``, from its last
    two matrix inputs). Scalars are left out."""
    out: dict[str, set[Shape]] = {}
    pairs = pd.DataFrame({"name": c.name.codes, "shape": c.shape.codes}).drop_duplicates()
    for name_code, shape_code in pairs.itertuples(index=False):
        if name_code < 0 or shape_code < 0:
            continue
        text = c.shape.uniques[shape_code]
        shapes = _tensor_shapes(text)
        matrices = [s for s in tensor_shapes(text) if len(s) >= 2] if isinstance(text, str) else []
        if len(matrices) >= 2 and matrices[-2][-1] == matrices[-1][-2]:
            shapes = shapes | {matrices[-2][:-1] + matrices[-1][-1:]}
        out.setdefault(str(c.name.uniques[name_code]), set()).update(shapes)
    return {name: frozenset(shapes) for name, shapes in out.items()}


def _tensor_shapes(text: object) -> frozenset[Shape]:
    """The tensor shapes of an ``Input Dims`` text, scalars left out (none when missing)."""
    return frozenset(tensor_shapes(text)) if isinstance(text, str) else frozenset()


def _offers(c: KernelSide, fusion: npt.NDArray[np.bool_]) -> pd.DataFrame:
    """Per distinct compiled kernel: (name, key, part, layout, runs) — the keys it may take,
    part=1 for keys only reached through :data:`COMPOSITES`; runs: it can run a heavy op (a
    library kernel or an Inductor template)."""
    fused_names = sorted(distinct(c.name, fusion))
    extern = ~fusion
    extern_names = sorted(distinct(c.name, extern))
    c_keys = own_key(c.label)
    extern_keys = distinct(c_keys, extern)
    rows: list[tuple[str, str, int, bool, bool]] = []
    for name in fused_names:
        decoded = fused_kernel_ops(name)
        keys = keys_of(decoded.ops) if decoded is not None else []
        layout = is_layout_kernel(name, extern_keys)
        runs = decoded is None or decoded.subkind is TritonSubkind.TEMPLATE
        rows += [(name, key, 0, layout, runs) for key in keys]
        if not layout:
            rows += [(name, p, 1, False, runs) for key in keys for p in COMPOSITES.get(key, ())]
    own = dict(zip(c.names[extern], c_keys.values()[extern], strict=True))
    for name in extern_names:
        key = own.get(name)
        if key is not None:
            rows += [(name, p, 1, False, True) for p in COMPOSITES.get(key, ())]
    table = pd.DataFrame(rows, columns=["name", "key", "part", "layout", "runs"])
    table = table.sort_values("part", kind="stable").drop_duplicates(["name", "key"])
    return table


def _wants(eager: Trace, e: KernelSide, free: npt.NDArray[np.int64]) -> pd.DataFrame:
    """Per free eager instance ``i``: the keys it could be credited under, with their
    ``level`` (0: its own op, 1: the op around it, ...)."""

    parts = []
    codes = e.label.codes[free]
    for code in np.unique(codes):
        at = free[codes == code]
        for key in name_keys(str(e.label.uniques[code])):
            parts.append(pd.DataFrame({"i": at, "key": key, "level": 0}))
    ancestors = _ancestor_keys(eager, e, free)
    parts += ancestors
    if not parts:
        return pd.DataFrame({"i": [], "key": [], "level": []})
    wants = pd.concat(parts, ignore_index=True)
    return wants.sort_values("level", kind="stable").drop_duplicates(["i", "key"])


def _ancestor_keys(eager: Trace, e: KernelSide, free: npt.NDArray[np.int64]) -> list[pd.DataFrame]:
    """(i, key, level) for the namespaced ops enclosing each free instance's op."""
    ops = eager.ops
    if ops.empty:
        return []
    op_rows = eager.kernels[Kernels.op_row].to_numpy(dtype=float, na_value=np.nan)[e.rows[free]]
    parent = ops[Ops.parent_row].to_numpy(dtype=float, na_value=np.nan)
    codes, uniques = pd.factorize(ops[Ops.name].astype(object))
    key_of = np.array(
        [op_key(str(u)) if "::" in str(u) else None for u in uniques] + [None],
        dtype=object,
    )
    out = []
    at = op_rows
    for level in range(1, ANCESTOR_LEVELS + 1):
        has = ~np.isnan(at)
        at = np.where(has, parent[np.where(has, at, 0).astype(np.int64)], np.nan)
        has = ~np.isnan(at)
        if not has.any():
            break
        keys = key_of[codes[at[has].astype(np.int64)]]
        ok = np.array([k is not None for k in keys], dtype=bool)
        out.append(pd.DataFrame({"i": free[has][ok], "key": keys[ok], "level": level}))
    return out


def anchor_coordinates(side: KernelSide, anchor: npt.NDArray[np.bool_]) -> npt.NDArray[np.float64]:
    """Per instance: where it lies on its step's anchor scale.

    The anchors (``anchor``) are the calls paired one-to-one between the two sides (the same
    library call with the same ``Input Dims`` on both, so the same data flows into it): the
    k-th anchor of a step is at k; an instance after the k-th anchor and before the next is
    at k + its rank among the instances between them (0–1, exclusive). Both sides' anchors
    are the same calls in the same order, so a fused kernel and the eager ops it holds get
    about the same coordinate: an eager op between the first and the second matmul of a step
    is looked for between the same two matmuls of the compiled step, not at the same fraction
    of a step whose kernel count fusion changed (which puts block 2's ops near block 1's
    kernel when the blocks repeat the same ops). Without anchors the coordinate is the
    position within the step (0–1)."""
    n = len(side.rows)
    if not n:
        return np.zeros(0)
    order = np.lexsort((side.pos, side.step))
    steps, is_anchor = side.step[order], anchor[order]
    step_start = np.r_[True, steps[1:] != steps[:-1]]
    running = np.cumsum(is_anchor)
    before_step = np.maximum.accumulate(np.where(step_start, running - is_anchor, 0))
    # anchors at or before this one, in its step
    anchors_up_to: npt.NDArray[np.int64] = running - before_step
    # a segment: the instances of a step between two anchors (anchors themselves apart)
    starts = step_start | np.r_[False, is_anchor[:-1]]
    segment = np.cumsum(starts)
    rest = np.flatnonzero(~is_anchor)
    seg_rest = segment[rest]
    first = np.r_[True, seg_rest[1:] != seg_rest[:-1]] if len(rest) else np.zeros(0, bool)
    group_start = np.maximum.accumulate(np.where(first, np.arange(len(rest)), 0))
    size = np.bincount(np.cumsum(first) - 1)[np.cumsum(first) - 1] if len(rest) else first
    place: npt.NDArray[np.float64] = anchors_up_to.astype(float)
    place[rest] += (np.arange(len(rest)) - group_start + 0.5) / np.maximum(size, 1)
    out = np.empty(n)
    out[order] = place
    return out


def instances_by_name(
    c: KernelSide, places: npt.NDArray[np.float64] | None = None
) -> dict[str, npt.NDArray[np.float64]]:
    """Compiled instance places per kernel name, sorted: ``places`` (one per instance, e.g.
    :func:`anchor_coordinates`), by default their positions within their steps."""
    at = c.pos if places is None else places
    order = np.lexsort((at, c.name.codes))
    codes = c.name.codes[order]
    cuts = np.flatnonzero(np.diff(codes)) + 1
    return {
        str(c.name.uniques[part[0]]): at[order_part]
        for part, order_part in zip(np.split(codes, cuts), np.split(order, cuts), strict=True)
        if len(part) and part[0] >= 0
    }


def nearest_kernel(
    names: list[str], by_name: dict[str, npt.NDArray[np.float64]], pos: npt.NDArray[np.float64]
) -> npt.NDArray[np.object_]:
    """For each position, the name among ``names`` with an instance nearest to it."""
    if len(names) == 1:
        return np.full(len(pos), names[0], dtype=object)
    where = np.concatenate([by_name[n] for n in names])
    label = np.concatenate([np.full(len(by_name[n]), i) for i, n in enumerate(names)])
    order = np.argsort(where, kind="stable")
    where, label = where[order], label[order]
    right = np.clip(np.searchsorted(where, pos), 0, len(where) - 1)
    left = np.clip(right - 1, 0, len(where) - 1)
    pick = np.where(np.abs(where[left] - pos) <= np.abs(where[right] - pos), left, right)
    return np.array(names, dtype=object)[label[pick]]


def mark_unrecorded(credits: pd.DataFrame) -> pd.DataFrame:
    """The credits of a compiled trace whose Inductor kernels were not recorded
    (:mod:`~traceviz.analysis.fusion.inductor_record`): each name-matched credit says so (basis
    :data:`NAME_MATCH_UNRECORDED_BASIS`), and a credit the fused stage chose among n visible
    kernels had one more candidate the trace does not show, so its confidence 1/n becomes
    1/(n+1). Credits of the same call on both sides (identical, alias) keep theirs. A new
    table; ``credits`` is not changed."""
    out = credits.copy()
    name_matched = (out[Credits.basis] == NAME_MATCH_BASIS).to_numpy(dtype=bool)
    guessed = out[Credits.how].isin([How.FUSED.value, How.PART.value]).to_numpy(dtype=bool)
    confidence = out[Credits.confidence].to_numpy(dtype=float, na_value=np.nan).copy()
    at = name_matched & guessed
    confidence[at] = confidence[at] / (1.0 + confidence[at])  # 1/n -> 1/(n + 1)
    out[Credits.confidence] = confidence
    basis = out[Credits.basis].astype(object).to_numpy(dtype=object).copy()
    basis[name_matched] = NAME_MATCH_UNRECORDED_BASIS
    out[Credits.basis] = basis
    return schema.conform(out, CREDITS_DTYPES)


# --- the table -----------------------------------------------------------------------------


def _table(e: KernelSide, c: KernelSide, state: _State) -> pd.DataFrame:
    kernel, how = state.kernel, state.how
    matched = ~_free(kernel)
    compiled_keys = distinct(own_key(c.label))
    for name in distinct(c.name):
        decoded = fused_kernel_ops(name)
        if decoded is not None:
            compiled_keys.update(keys_of(decoded.ops))
    folded = _FOLDED_KEYS - compiled_keys
    own = own_key(e.label)
    gone = np.array([k is None or k in folded for k in own.uniques] + [False], dtype=bool)
    removed = ~matched & gone[own.codes]
    outcome = np.where(matched, Outcome.MATCHED.value, Outcome.NO_COUNTERPART.value)
    outcome = np.where(removed, Outcome.REMOVED.value, outcome)
    basis = np.where(how == How.COMPILER.value, COMPILER_BASIS, NAME_MATCH_BASIS)
    table = pd.DataFrame(
        {
            Credits.eager_row: e.rows,
            Credits.op: e.label.values(),
            Credits.time_us: e.time,
            Credits.kernel: kernel,
            Credits.outcome: outcome,
            Credits.how: how,
            Credits.confidence: state.confidence,
            Credits.basis: np.where(matched, basis, ""),
        }
    )
    return schema.conform(table, CREDITS_DTYPES)
