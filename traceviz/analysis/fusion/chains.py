"""Unfused chains: consecutive pointwise/reduction kernels that consume each other's outputs.

A **chain** is a run of at least :data:`MIN_CHAIN_KERNELS` kernels from at least
:data:`MIN_CHAIN_OPS` ops, one after the other on one **lane** (a GPU stream, or the thread of
a CPU-only trace) within one step and one compiled-region status, where each consecutive pair
is **linked**:

- both kernels are of a fusible kind (pointwise, reduction, normalization);
- both launching ops are known, outside optimizer steps (an ancestor span named
  ``Optimizer.step#…``/``Optimizer.zero_grad#…``/``optimizer_step``/``## optimizer ##``, or
  an ``aten::_foreach_*`` op: per-parameter updates of unrelated tensors are not a chain);
- both ops are under the same **parent**: the nearest enclosing span that is neither an aten
  op nor a Python frame (``with_stack`` traces wrap every call in one): the step, a
  ``record_function`` annotation, an autograd node;
- the second consumes the first's output, as far as the recorded shapes show: the same
  top-level op (its several kernels), or the second op reads a tensor of the first's output
  shape (in-place ops: their first input; other pointwise ops: their inputs broadcast; a
  reduction, whose output shape is not recorded: the second op also reads the reduced
  tensor). Without recorded shapes the link is by order only (``link`` says so).

Kernels nested inside another kernel's span on the same lane (a CPU op's helper ``copy_``) are
skipped, not chain breakers.

:func:`chain_members` returns one row per chain member (columns :class:`ChainMember`);
:func:`chain_groups` sums chains with the same op sequence (:class:`ChainGroup`). Estimates
(labelled as such): a chain would save its time minus its longest kernel; its intermediates
(the members' outputs but the last op's) are written and read back once each
(:func:`traceviz.analysis.traffic.estimates.estimate_op`). Kernel time credited to chains is at most
the kernels' measured time: each kernel is in at most one chain.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from traceviz.analysis.kernel_kinds import INDUCTOR_SOURCES, KernelKind
from traceviz.analysis.shapes import tensor_shapes
from traceviz.analysis.timing.timeline import Lane, timeline
from traceviz.analysis.traffic.estimates import _group_rows, estimate_op
from traceviz.dense import first_of_codes, sorted_unique
from traceviz.schema import OpCategory, Ops
from traceviz.trace import Trace

FUSIBLE_KINDS = frozenset(
    {KernelKind.POINTWISE.value, KernelKind.REDUCTION.value, KernelKind.NORMALIZATION.value}
)
#: Two adjacent fusible kernels are common and often deliberate (a reduction, then a pointwise
#: op on its result); three or more on the same data are a clear missed fusion.
MIN_CHAIN_KERNELS = 3
#: One op's several kernels are not a chain of ops (:func:`_several_ops` assumes 2).
MIN_CHAIN_OPS = 2
#: Spans whose ops update unrelated tensors one after another (optimizers, foreach ops).
OPTIMIZER = re.compile(r"optimizer|^aten::_foreach_", re.IGNORECASE)
SEPARATOR = "\x1f"  # joins op labels into one chain signature


class ChainMember:
    """Columns of :func:`chain_members` (one row per kernel in a chain, in lane order)."""

    row = "row"  # row in the kernels table
    chain = "chain"  # chain id (int), shared by the chain's members
    lane = "lane"  # lane code (int): GPU device/stream, or CPU thread
    ts_us = "ts_us"  # kernel start, µs
    dur_us = "dur_us"  # kernel duration, µs (measured)
    step = "step"  # step window index
    in_region = "in_region"  # issued inside a compiled region (bool)
    kind = "kind"  # KernelKind value
    source = "source"  # KernelSource value
    label = "label"  # the eager op for eager/extern GPU kernels and CPU ops, else kernel name
    op = "op"  # row in Trace.ops of the launching op (float)
    link = "link"  # how it links to the member before it: "first", "same op", "shapes", "order"
    written_bytes = "written_bytes"  # estimated bytes its op writes (NaN: unknown)


@dataclass(frozen=True)
class ChainGroup:
    """Chains with the same sequence of ops, summed over the trace.

    ``time_us`` is the chains' summed kernel device time (measured); ``saving_us`` their
    summed time minus each chain's longest kernel, ``bytes_saved`` the intermediates written
    and read back, ``largest_bytes`` the largest intermediate of one chain (all estimated,
    None when shapes do not allow it).
    """

    ops: tuple[str, ...]
    occurrences: int
    kernels: int
    time_us: float
    saving_us: float
    bytes_saved: int | None
    largest_bytes: int | None
    largest_op: str  # the op that writes the largest intermediate ("" when unknown)
    eager_kernels: bool  # some kernels are not Inductor's (eager leftovers in a compiled trace)
    shapes_known: bool  # every link was confirmed by the same op or by shapes


def chain_members(
    trace: Trace,
    kernels: pd.DataFrame,
    kernel_step: npt.NDArray,
    *,
    lanes: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The members of every chain of ``trace`` (see the module docstring).

    ``kernels`` is ``analysis.kernels.classify(trace)``; ``kernel_step`` gives, per kernel
    row, the step window it was issued in (−1: outside every step); ``lanes`` is
    :func:`~traceviz.analysis.timing.timeline.timeline` of the same three, when the caller has it
    (its shape keys are not used), else it is built here. Columns: :class:`ChainMember`.
    """
    # The lanes as they are (no renamed copy): every column read here but ts and dur has
    # this table's name; the kept rows' columns are renamed when the members are built.
    if lanes is None:
        lanes = timeline(trace, kernels, np.asarray(kernel_step), keys=False)
    seq = lanes
    if len(seq) < MIN_CHAIN_KERNELS or trace.ops.empty:
        return _empty()  # (no ops: no kernel has a launching op to link by)
    # Only a fusible kernel's op is asked about: a link needs both kernels fusible, and a
    # chain's members are linked ones (their top ops, and the reducing ops, are fusible).
    kind = seq[ChainMember.kind]
    fusible = kind.isin(FUSIBLE_KINDS).to_numpy(dtype=bool)
    reduction = (kind == KernelKind.REDUCTION.value).to_numpy(dtype=bool)
    op = seq[ChainMember.op].to_numpy(dtype=float)
    asked = np.flatnonzero(fusible & np.isfinite(op) & (op >= 0) & (op < len(trace.ops)))
    context, top, optimizer = _context_of_rows(trace.ops, op[asked].astype(np.int64))
    # per kernel: ok (fusible, known op, outside optimizers), its op's context and top op
    ok = np.zeros(len(seq), dtype=bool)
    ok[asked] = ~optimizer
    ctx = np.full(len(seq), -2, dtype=np.int64)
    ctx[asked] = context
    op_top = np.full(len(seq), -1, dtype=np.int64)
    op_top[asked] = top
    link = _link_codes_of(seq, trace.ops, ok, ctx, op_top, reduction)
    chain = np.cumsum(link == _BREAK)
    sizes = np.bincount(chain)[chain]
    long = sizes >= MIN_CHAIN_KERNELS
    keep = np.flatnonzero(_several_ops(chain, op_top, long))
    if not keep.size:
        return _empty()
    renamed = {Lane.ts: ChainMember.ts_us, Lane.dur: ChainMember.dur_us}
    columns = {
        renamed.get(name, name): _take(seq[name], keep)
        for name in seq.columns
        if name not in (Lane.end, Lane.key)
    }
    columns[ChainMember.chain] = chain[keep]
    # (a chain's first member, its link a break, is spelled "first"; texts on kept rows only)
    columns[ChainMember.link] = _MEMBER_LINKS[link[keep]]
    columns[ChainMember.written_bytes] = _written_bytes(trace.ops, pd.Series(op[keep]))
    return pd.DataFrame(columns)


def _take(column: pd.Series, rows: npt.NDArray[np.intp]) -> object:
    """``column``'s values at ``rows`` (positions), keeping its dtype: ``seq[keep]``'s column
    without the frame's boolean filter over every column."""
    values = column.array
    if isinstance(values, pd.arrays.NumpyExtensionArray):
        return values.to_numpy()[rows]
    return values.take(rows)


def _several_ops(
    chain: npt.NDArray[np.int64], op_top: npt.NDArray[np.int64], rows: npt.NDArray[np.bool_]
) -> npt.NDArray[np.bool_]:
    """Per row, whether it is one of ``rows`` and its chain has at least
    :data:`MIN_CHAIN_OPS` (two) distinct top ops: the chain's least and greatest top op
    differ, over its run of rows (a chain's rows are consecutive), no sort."""
    out = np.zeros(chain.size, dtype=bool)
    at = np.flatnonzero(rows)
    if not at.size:
        return out
    ids, tops = chain[at], op_top[at]
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    several = np.minimum.reduceat(tops, starts) != np.maximum.reduceat(tops, starts)
    out[at] = np.repeat(several, np.diff(np.r_[starts, at.size]))
    return out


def chain_groups(trace: Trace, members: pd.DataFrame) -> list[ChainGroup]:
    """:func:`chain_members` grouped by op sequence, largest total time first."""
    if members.empty:
        return []
    return _group_table(_chain_table(members), trace.ops)


def _empty() -> pd.DataFrame:
    columns = [v for k, v in vars(ChainMember).items() if not k.startswith("_")]
    return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})


# --- op context ---------------------------------------------------------------------------


def _op_context(
    lookup: _NodeFlags,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """Per op row: its parent context (row of the nearest enclosing span that is neither an
    aten op nor a Python frame, −1 at the root), its top op (the outermost aten op of a nest of
    aten ops, itself if not aten), and whether it runs inside an optimizer step; the whole
    table, by depth levels (where a parent is not shallower than its child, the levels do not
    see it as the walks of :func:`_context_of_rows` would)."""
    n = len(lookup.parent)
    rows_all = np.arange(n, dtype=np.int64)
    parent = np.where(lookup.parent >= 0, lookup.parent, -1)
    bits = lookup.bits(rows_all)
    aten, optimizer = (bits & _ATEN) != 0, (bits & _OPTIMIZER) != 0
    transparent = (bits & (_ATEN | _FRAME)) != 0
    holder = np.where(transparent, -1, rows_all)  # nearest context span at or above each op
    top = rows_all.copy()
    for at in _by_depth(rows_all[parent >= 0], lookup.depth):
        up = parent[at]
        optimizer[at] |= optimizer[up]
        holder[at] = np.where(transparent[at], holder[up], at)
        top[at] = np.where(aten[at] & aten[up], top[up], at)
    context = np.where(parent >= 0, holder[np.maximum(parent, 0)], -1)
    return context, top, optimizer


def _context_of_rows(
    ops: pd.DataFrame, rows: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """Per row of ``rows`` (valid op rows), what ``_op_context(ops, rows)`` gives at it:
    context, top op, optimizer; with less walking: each row walked up only to its context
    (its run of aten ops, the top op, never goes past it: a context is not an aten op), the
    optimizer test above the contexts once per distinct context, the names' and categories'
    tests only for the ops on the way; the whole table by :func:`_op_context` when a parent
    on the way is not shallower than its child."""
    lookup = _NodeFlags.of(ops)
    walked = _walk_to_context(lookup, rows)
    if walked is None:
        return tuple(a[rows] for a in _op_context(lookup))  # type: ignore[return-value]
    context, top, optimizer = walked
    has = np.flatnonzero(context >= 0)
    if has.size:
        contexts = sorted_unique(context[has]).astype(np.int64, copy=False)
        above = _optimizer_above(lookup, contexts)
        if above is None:
            return tuple(a[rows] for a in _op_context(lookup))  # type: ignore[return-value]
        position = np.empty(len(ops), dtype=np.intp)
        position[contexts] = np.arange(contexts.size)
        optimizer[has] |= above[position[context[has]]]
    return context, top, optimizer


_ATEN, _OPTIMIZER, _FRAME = 1, 2, 4  # bits of _NodeFlags.bits


def _walk_to_context(
    lookup: _NodeFlags, rows: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.bool_]] | None:
    """Per row: its context (−1: none), its top op, and whether it or an op below its
    context is an optimizer span; the rows still walking carried as compact arrays, one
    level per pass (None when a parent is not shallower than its child)."""
    parent, depth = lookup.parent, lookup.depth
    bits = lookup.bits(rows)
    optimizer = (bits & _OPTIMIZER) != 0
    context = np.full(rows.size, -1, dtype=np.int64)
    top = rows.copy()
    up = parent[rows]
    go = up >= 0
    at, up, below, chain = np.flatnonzero(go), up[go], depth[rows][go], (bits & _ATEN)[go] != 0
    while at.size:
        level = depth[up]
        if (level >= below).any():
            return None
        bits = lookup.bits(up)
        optimizer[at[(bits & _OPTIMIZER) != 0]] = True
        found = (bits & (_ATEN | _FRAME)) == 0  # (a context ends the run of aten ops too)
        context[at[found]] = up[found]
        chain &= (bits & _ATEN) != 0
        top[at[chain]] = up[chain]
        above = parent[up]
        go = ~found & (above >= 0)
        at, up, below, chain = at[go], above[go], level[go], chain[go]
    return context, top, optimizer


def _optimizer_above(
    lookup: _NodeFlags, rows: npt.NDArray[np.int64]
) -> npt.NDArray[np.bool_] | None:
    """Per row, whether it or an op above it is an optimizer span (None when a parent is
    not shallower than its child)."""
    parent, depth = lookup.parent, lookup.depth
    optimizer = (lookup.bits(rows) & _OPTIMIZER) != 0
    up = parent[rows]
    go = up >= 0
    at, up, below = np.flatnonzero(go), up[go], depth[rows][go]
    while at.size:
        level = depth[up]
        if (level >= below).any():
            return None
        optimizer[at[(lookup.bits(up) & _OPTIMIZER) != 0]] = True
        above = parent[up]
        go = above >= 0
        at, up, below = at[go], above[go], level[go]
    return optimizer


@dataclass(frozen=True)
class _NodeFlags:
    """What is tested of each op, read at the ops asked about only: the parent (negative:
    none) and depth of every op, and per name code the name's tests."""

    parent: npt.NDArray[np.int64]
    depth: npt.NDArray[np.int64]
    name_codes: npt.NDArray[np.integer]
    category_codes: npt.NDArray[np.integer]
    name_bits: npt.NDArray[np.uint8]  # per name code _ATEN, _OPTIMIZER; a last 0 (code −1)
    python: int  # the category code of Python frames (−2: none)

    @classmethod
    def of(cls, ops: pd.DataFrame) -> _NodeFlags:
        """The flags of ``ops`` (name and category made categorical when they are not)."""
        names, category = (ops[c].astype("category").array for c in (Ops.name, Ops.category))
        n = len(ops)
        parent = _integers(ops[Ops.parent_row], -1)
        if parent.size and int(parent.max()) >= n:
            parent = np.where(parent < n, parent, -1)
        distinct = [str(c) for c in names.categories.tolist()]
        bits = [
            (_ATEN if c.startswith("aten::") else 0) | (_OPTIMIZER if OPTIMIZER.search(c) else 0)
            for c in distinct
        ]
        python = category.categories.get_indexer(pd.Index([OpCategory.PYTHON_FUNCTION.value]))
        return cls(
            parent=parent,
            depth=_integers(ops[Ops.depth], 0),
            name_codes=names.codes,
            category_codes=category.codes,
            name_bits=np.array([*bits, 0], dtype=np.uint8),
            python=int(python[0]) if python[0] >= 0 else -2,
        )

    def bits(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.uint8]:
        """Per row, its _ATEN, _OPTIMIZER and _FRAME (Python frame) bits."""
        frame = (self.category_codes[rows] == self.python).view(np.uint8) << 2
        return self.name_bits[self.name_codes[rows]] | frame


def _integers(column: pd.Series, missing: int) -> npt.NDArray[np.int64]:
    """An integer column as int64, ``missing`` for <NA> (any other dtype through float,
    truncated)."""
    if pd.api.types.is_integer_dtype(column.dtype):
        return column.to_numpy(dtype=np.int64, na_value=missing)
    return column.to_numpy(dtype=float, na_value=float(missing)).astype(np.int64)


def _by_depth(
    rows: npt.NDArray[np.int64], depth: npt.NDArray[np.int64]
) -> list[npt.NDArray[np.int64]]:
    """``rows`` grouped by their ``depth``, shallowest first, each group in ascending row
    order."""
    if not rows.size:
        return []
    levels = depth[rows]
    if levels.min() >= np.iinfo(np.int16).min and levels.max() <= np.iinfo(np.int16).max:
        levels = levels.astype(np.int16)  # a stable sort of int16 is a radix sort
    by_level = np.argsort(levels, kind="stable")
    bounds = np.flatnonzero(np.diff(levels[by_level])) + 1
    return np.split(rows[by_level], bounds)


# --- links --------------------------------------------------------------------------------


#: Link codes of :func:`_link_codes_of`: no link (the row starts a chain), and the three links.
_BREAK, _SAME_OP, _SHAPES, _ORDER = 0, 1, 2, 3
_LINK_TEXTS = np.array(["", "same op", "shapes", "order"], dtype=object)
_MEMBER_LINKS = np.array(["first", "same op", "shapes", "order"], dtype=object)
_LINK_CODES = {text: code for code, text in enumerate(_LINK_TEXTS.tolist())}


def _link_codes_of(
    seq: pd.DataFrame,
    ops: pd.DataFrame,
    ok: npt.NDArray[np.bool_],
    ctx: npt.NDArray[np.int64],
    top_op: npt.NDArray[np.int64],
    reduction: npt.NDArray[np.bool_] | None = None,
) -> npt.NDArray[np.int8]:
    """Per row of ``seq``, how it continues the chain of the row before it (``_BREAK``,
    ``_SAME_OP``, ``_SHAPES``, ``_ORDER``), from its per-kernel figures (``reduction``: per
    kernel, a reduction, when the caller has it): ``ok`` (fusible, a known op, outside
    optimizers), the op's context (−2: no op) and top op (−1: no op). ``ctx`` is read where
    ``ok`` only, ``top_op`` there and at every reduction kernel with a known op (whether a
    link's first op reduces); elsewhere they may be −2 and −1."""
    lane, step = seq[ChainMember.lane].to_numpy(), seq[ChainMember.step].to_numpy()
    region = seq[ChainMember.in_region].to_numpy()
    candidate = np.zeros(len(seq), dtype=bool)
    candidate[1:] = (
        ok[1:] & ok[:-1] & (lane[1:] == lane[:-1]) & (step[1:] == step[:-1]) & (step[1:] >= 0)
        & (region[1:] == region[:-1]) & (ctx[1:] == ctx[:-1])
    )  # fmt: skip
    out = np.zeros(len(seq), dtype=np.int8)
    at = np.flatnonzero(candidate)
    a, b = top_op[at - 1], top_op[at]
    same = a == b
    out[at[same]] = _SAME_OP
    at, a, b = at[~same], a[~same], b[~same]
    if not len(at):
        return out
    # Decided once per distinct (a's shapes text, a's name, a reduces, b's shapes text): the
    # links of a long trace repeat a few hundred op pairs thousands of times.
    dims, names = ops[Ops.input_dims], ops[Ops.name]
    reduces = _reducing_table(seq, top_op, len(ops), reduction)[a]  # (a: −1, the op unknown)
    key, groups = _group_rows([dims.iloc[a], names.iloc[a], pd.Series(reduces), dims.iloc[b]])
    links = [
        _LINK_CODES[
            _data_link(
                _shapes(dims_a),
                str(np.nan) if name_a is None else str(name_a),
                bool(reduces_a),
                _shapes(dims_b),
            )
        ]
        for dims_a, name_a, reduces_a, dims_b in groups
    ]
    out[at] = np.array(links, dtype=np.int8)[key]
    return out


def _reducing_table(
    seq: pd.DataFrame,
    top_op: npt.NDArray[np.int64],
    n_ops: int,
    reduction: npt.NDArray[np.bool_] | None = None,
) -> npt.NDArray[np.bool_]:
    """Per op row, whether it launched a reduction kernel (its output is not its inputs'
    shape), plus a last False that the unknown top op (−1) reads: a lookup, no sort
    (``reduction``: per row of ``seq``, a reduction kernel, when the caller has it)."""
    if reduction is None:
        reduction = (seq[ChainMember.kind] == KernelKind.REDUCTION.value).to_numpy(dtype=bool)
    table = np.zeros(n_ops + 1, dtype=bool)
    table[top_op[reduction & (top_op >= 0)]] = True
    return table


def _data_link(
    shapes_a: tuple[tuple[int, ...], ...] | None,
    name_a: str,
    reduces: bool,
    shapes_b: tuple[tuple[int, ...], ...] | None,
) -> str:
    """ "shapes" when b reads a's output (as far as shapes show), "order" when shapes were not
    recorded for one of them, "" when the shapes show b does not read a's output (or a only
    reads 0-d tensors and scalars, such as a counter's ``add_(1)``).

    A reducing op's output shape is not recorded: b reads it when b reads a's largest input
    and a smaller tensor of that input's shape reduced (dims set to 1 or dropped), as in
    ``x - x.amax(-1, keepdim=True)``."""
    if shapes_a is None or shapes_b is None:
        return "order"
    if not shapes_a or not shapes_b:
        return ""
    if reduces:
        full = max(shapes_a, key=_numel)
        reduced = any(_reduced_from(s, full) for s in shapes_b)
        return "shapes" if _numel(full) > 1 and full in shapes_b and reduced else ""
    produced = _output_shape(shapes_a, name_a)
    return "shapes" if _numel(produced) > 1 and produced in shapes_b else ""


def _reduced_from(shape: tuple[int, ...], full: tuple[int, ...]) -> bool:
    """``shape`` is ``full`` reduced over some dims (kept as 1, or dropped), and smaller."""
    if _numel(shape) >= _numel(full):
        return False
    if len(shape) == len(full):
        return all(d in (f, 1) for d, f in zip(shape, full, strict=True))
    it = iter(full)
    return all(any(d == f for f in it) for d in shape)


def _output_shape(shapes: tuple[tuple[int, ...], ...], name: str) -> tuple[int, ...]:
    """An op's output shape from its inputs: in-place and normalization ops write their first
    input's shape; other pointwise ops write their inputs broadcast together."""
    if name.endswith("_") or "norm" in name:
        return shapes[0]
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*shapes))
    except ValueError:
        return max(shapes, key=_numel)


def _numel(shape: tuple[int, ...]) -> int:
    """The product of the dims (1 for none), as ``np.prod`` gives it (an int64 product: the
    exact one when it fits, else NumPy's wrapped one)."""
    if not shape:
        return 1
    exact = math.prod(shape)
    return exact if -(2**63) <= exact < 2**63 else int(np.prod(shape))


def _shapes(dims: object) -> tuple[tuple[int, ...], ...] | None:
    """The tensor shapes (at least one dimension) of an ``Input Dims`` JSON text; None when
    shapes were not recorded."""
    return tensor_shapes(dims) if isinstance(dims, str) else None


# --- bytes and grouping -------------------------------------------------------------------


def _written_bytes(
    ops: pd.DataFrame, op_rows: pd.Series | npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """Estimated bytes each member's launching op writes (NaN: unknown)."""
    rows = np.asarray(op_rows, dtype=float)
    out = np.full(len(rows), np.nan)
    known = np.isfinite(rows) & (rows >= 0) & (rows < len(ops))
    if not known.any():
        return out
    at = rows[known].astype(np.int64)
    columns = [ops[c] for c in (Ops.name, Ops.input_dims, Ops.input_types, Ops.concrete_inputs)]
    # estimated once per distinct (name, dims, types, concrete inputs), spread by group
    key, groups = _group_rows([c.iloc[at] for c in columns])
    per_group = np.array([_written(*(_text(v) for v in values)) for values in groups], dtype=float)
    out[known] = per_group[key]
    return out


@lru_cache(maxsize=2**16)  # distinct shape strings; bounded for long-lived processes
def _written(name: str | None, dims: str | None, types: str | None, concrete: str | None) -> float:
    estimate = estimate_op(name or "", dims, types, concrete)
    return float(estimate.bytes_written) if estimate is not None else np.nan


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _chain_table(members: pd.DataFrame) -> dict[str, Any]:
    """Per chain occurrence, in order: chain id, signature, kernels, time, longest kernel,
    intermediates, as arrays. A member's output counts as an intermediate when it is the
    first kernel of its op in the chain and that op is not the chain's last (an op's several
    kernels share one output). A chain's members are consecutive rows, so each figure is taken
    over its run of rows (float sums by pandas' compensated groupby sum, maxima skipping NaN,
    the first row of a tie). ``signature_codes``: per chain, its signature's number in order of
    first appearance; ``signature_texts``: per number, the signature."""
    chain = members[ChainMember.chain].to_numpy()
    n = chain.size
    starts = np.flatnonzero(np.r_[True, chain[1:] != chain[:-1]]) if n else np.zeros(0, int)
    run = np.repeat(np.arange(starts.size), np.diff(np.r_[starts, n]))
    positions = np.arange(n)
    written = members[ChainMember.written_bytes].to_numpy(dtype=float)
    op = members[ChainMember.op].to_numpy(dtype=float)
    dur = members[ChainMember.dur_us].to_numpy(dtype=float)
    # each chain's last known op (groupby "last" skips NaN)
    last_at = np.maximum.reduceat(np.where(np.isnan(op), -1, positions), starts) if n else run
    last_op = np.where(last_at >= starts, op[np.maximum(last_at, 0)], np.nan)[run]
    first_of_op = _first_of_op(run, op)
    counted = first_of_op & (op != last_op)
    moved = np.where(counted, 2.0 * np.nan_to_num(written), 0.0)
    unknown = (counted & np.isnan(written)) | np.isnan(op)
    out = np.where(counted, written, np.nan)
    eager = ~members[ChainMember.source].isin(INDUCTOR_SOURCES).to_numpy(dtype=bool)
    confirmed = (members[ChainMember.link] != "order").to_numpy(dtype=bool)
    sums = pd.DataFrame({"time_us": dur, "moved": moved}).groupby(run, sort=False).sum()
    filled = np.where(np.isnan(out), -1.0, out)
    peak = np.maximum.reduceat(filled, starts) if n else filled
    largest_row = (
        np.minimum.reduceat(np.where(filled == peak[run], positions, n), starts) if n else run
    )
    codes, texts = _signature_numbers(members[ChainMember.label], starts)
    return {
        ChainMember.chain: chain[starts],
        "signature_codes": codes,
        "signature_texts": texts,
        "kernels": np.diff(np.r_[starts, n]).astype(np.int64),
        "time_us": sums["time_us"].to_numpy(),
        "longest_us": np.fmax.reduceat(dur, starts) if n else dur,
        "moved": sums["moved"].to_numpy(),
        "unknown": np.logical_or.reduceat(unknown, starts) if n else unknown,
        "largest": np.fmax.reduceat(out, starts) if n else out,
        "eager": np.logical_or.reduceat(eager, starts) if n else eager,
        "shapes_known": np.logical_and.reduceat(confirmed, starts) if n else confirmed,
        "largest_op": op[largest_row],
    }


def _first_of_op(run: npt.NDArray[np.intp], op: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
    """Per row, whether it is the first row of its (run, op) pair (NaN equals NaN)."""
    first = np.zeros(op.size, dtype=bool)
    if not op.size:
        return first
    op_codes = pd.factorize(op, use_na_sentinel=False)[0].astype(np.int64)
    pairs = pd.factorize(run.astype(np.int64) * (int(op_codes.max()) + 1) + op_codes)[0]
    first[first_of_codes(pairs)] = True
    return first


def _signature_numbers(
    labels: pd.Series, starts: npt.NDArray[np.intp]
) -> tuple[npt.NDArray[np.intp], list[str]]:
    """Per chain (runs of rows from ``starts``), its signature's number in order of first
    appearance, and each number's signature: its members' labels (a missing one "nan")
    joined by :data:`SEPARATOR`."""
    codes, uniques = pd.factorize(labels)
    names = [str(u) for u in np.asarray(uniques, dtype=object).tolist()] + [str(np.nan)]
    texts = [names[c] for c in codes.tolist()]  # (code −1, missing: the last name)
    number: dict[str, int] = {}
    bounds = [*starts.tolist(), len(texts)]
    per_chain = [
        number.setdefault(SEPARATOR.join(texts[a:b]), len(number)) for a, b in pairwise(bounds)
    ]
    return np.asarray(per_chain, dtype=np.intp), list(number)


def _group_table(table: dict[str, Any], ops: pd.DataFrame) -> list[ChainGroup]:
    """Sum the chains of :func:`_chain_table` with the same op sequence; largest total time
    first (ties in order of first appearance). The largest intermediate's op is that of the
    first chain holding it."""
    codes, signatures = table["signature_codes"], table["signature_texts"]
    n = len(signatures)
    time_us = np.asarray(table["time_us"], dtype=float)
    largest_per_chain = np.asarray(table["largest"], dtype=float)
    summed = {
        "kernels": table["kernels"],
        "time_us": time_us,
        "saving_us": time_us - np.asarray(table["longest_us"], dtype=float),
        "moved": table["moved"],
    }
    sums = pd.DataFrame(summed).groupby(codes, sort=False).sum()
    kernels, time_sum, saving, moved = (sums[c].to_numpy() for c in summed)
    occurrences = np.bincount(codes, minlength=n)
    unknown = np.bincount(codes[np.asarray(table["unknown"], dtype=bool)], minlength=n) > 0
    eager = np.bincount(codes[np.asarray(table["eager"], dtype=bool)], minlength=n) > 0
    known = np.bincount(codes[~np.asarray(table["shapes_known"], dtype=bool)], minlength=n) == 0
    largest = np.full(n, np.nan)
    np.fmax.at(largest, codes, largest_per_chain)
    key = np.where(np.isnan(largest_per_chain), -1.0, largest_per_chain)
    by_key = np.lexsort((np.arange(len(codes)), -key, codes))  # per signature: largest first
    first = by_key[np.r_[True, codes[by_key][1:] != codes[by_key][:-1]]]
    largest_op = np.asarray(table["largest_op"], dtype=float)[first]
    valid = np.isfinite(largest_op) & (largest_op >= 0) & (largest_op < len(ops))
    op_names = [""] * n
    names = ops[Ops.name].iloc[largest_op[valid].astype(np.int64)].tolist()
    for i, name in zip(np.flatnonzero(valid).tolist(), names, strict=True):
        op_names[i] = str(name)  # a missing name: "nan"
    groups = []
    for i in np.argsort(-time_sum, kind="stable").tolist():
        lost = bool(unknown[i])
        top = float(largest[i])
        groups.append(
            ChainGroup(
                ops=tuple(str(signatures[i]).split(SEPARATOR)),
                occurrences=int(occurrences[i]),
                kernels=int(kernels[i]),
                time_us=float(time_sum[i]),
                saving_us=float(saving[i]),
                bytes_saved=None if lost else int(moved[i]),
                largest_bytes=None if lost or not np.isfinite(top) else int(top),
                largest_op=op_names[i],
                eager_kernels=bool(eager[i]),
                shapes_known=bool(known[i]),
            )
        )
    return groups
