"""traceviz.analysis.chains as it was before its vectorised form (commit faae093): the
reference that tests/test_chains_fast.py holds the module's chain_members and chain_groups
equal to, on every sample and corpus trace and the 1M pair. Not imported by traceviz. What the
vectorised module kept unchanged is imported from it (see the imports); the rest is as it was.

The original module docstring follows (what a chain is).

Unfused chains: consecutive pointwise/reduction kernels that consume each other's outputs.

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
(:func:`traceviz.analysis.traffic.estimate_op`). Kernel time credited to chains is at most the
kernels' measured time: each kernel is in at most one chain.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pandas as pd

# From the vectorised module: what it kept unchanged that calls nothing it replaced. This file
# keeps only the replaced functions and those that call them, as they were.
from traceviz.analysis.chains import (
    FUSIBLE_KINDS,
    INDUCTOR_SOURCES,
    MIN_CHAIN_KERNELS,
    MIN_CHAIN_OPS,
    OPTIMIZER,
    SEPARATOR,
    ChainGroup,
    _at,
    _by_depth,
    _distinct_per_chain,
    _equals,
    _integers,
    _OpFlags,
    _shapes,
    _signatures,
    _text,
    _texts,
    _written,
)
from traceviz.analysis.kernel_kinds import KernelKind
from traceviz.analysis.timeline import Lane, timeline
from traceviz.analysis.traffic import _group_rows
from traceviz.schema import OpCategory, Ops
from traceviz.trace import Trace


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
    :func:`~traceviz.analysis.timeline.timeline` of the same three, when the caller has it
    (its shape keys are not used), else it is built here. Columns: :class:`ChainMember`.
    """
    seq = _lane_order(trace, kernels, kernel_step, lanes)
    if len(seq) < MIN_CHAIN_KERNELS or trace.ops.empty:
        return _empty()  # (no ops: no kernel has a launching op to link by)
    context, top, optimizer = _op_context(trace.ops, _known_rows(seq, len(trace.ops)))
    link = _links(seq, trace.ops, context, top, optimizer)
    chain = np.cumsum(link == "")
    sizes = np.bincount(chain)[chain]
    op_top = _at(top, seq["op"].to_numpy(dtype=float))
    long = sizes >= MIN_CHAIN_KERNELS
    keep = long & (_distinct_per_chain(chain, op_top, long) >= MIN_CHAIN_OPS)
    if not keep.any():
        return _empty()
    kept = link[keep]  # ("first" spelled on the kept rows only: an object test per row)
    members = seq[keep].assign(chain=chain[keep], link=np.where(kept == "", "first", kept))
    members = members.reset_index(drop=True)
    return members.assign(written_bytes=_written_bytes(trace.ops, members[ChainMember.op]))


def chain_groups(trace: Trace, members: pd.DataFrame) -> list[ChainGroup]:
    """:func:`chain_members` grouped by op sequence, largest total time first."""
    if members.empty:
        return []
    return _group(_per_chain(members), trace.ops)


def _empty() -> pd.DataFrame:
    columns = [v for k, v in vars(ChainMember).items() if not k.startswith("_")]
    return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})


# --- lanes --------------------------------------------------------------------------------


def _lane_order(
    trace: Trace,
    kernels: pd.DataFrame,
    kernel_step: npt.NDArray,
    lanes: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Kernels sorted by start within each lane, nested helpers dropped (the timeline's lanes,
    ``lanes`` when given, under this table's column names)."""
    if lanes is None:
        lanes = timeline(trace, kernels, np.asarray(kernel_step), keys=False)
    renamed = {Lane.ts: ChainMember.ts_us, Lane.dur: ChainMember.dur_us}
    return lanes.drop(columns=[Lane.end, Lane.key]).rename(columns=renamed)


# --- op context ---------------------------------------------------------------------------


def _op_context(
    ops: pd.DataFrame, rows: npt.NDArray[np.int64] | None = None
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """Per op row: its parent context (row of the nearest enclosing span that is neither an
    aten op nor a Python frame, −1 at the root), its top op (the outermost aten op of a nest of
    aten ops, itself if not aten), and whether it runs inside an optimizer step.

    With ``rows`` (valid op rows: the chains' launching ops), only those rows' entries are
    computed, by walking up each one's parents (the other entries are the op itself, −1 and
    False); when a parent on the way is not shallower than its child, the depth levels below
    would not see it as the walk does, so the whole table goes by levels as before."""
    flags = _op_flags(ops)
    if rows is not None:
        walked = _walk_up(flags, rows)
        if walked is not None:
            return walked
    parent, depth, aten, optimizer, transparent = flags
    optimizer = optimizer.copy()
    n = len(parent)
    rows_all = np.arange(n, dtype=np.int64)
    holder = np.where(transparent, -1, rows_all)  # nearest context span at or above each op
    top = rows_all.copy()
    for at in _by_depth(rows_all[parent >= 0], depth):
        up = parent[at]
        optimizer[at] |= optimizer[up]
        holder[at] = np.where(transparent[at], holder[up], at)
        top[at] = np.where(aten[at] & aten[up], top[up], at)
    context = np.where(parent >= 0, holder[np.maximum(parent, 0)], -1)
    return context, top, optimizer


def _op_flags(ops: pd.DataFrame) -> _OpFlags:
    """What :func:`_op_context` reads of each op (its own name's tests, its parent, depth)."""
    n = len(ops)
    # Tested once per distinct name (the name column is categorical), then spread by code.
    names = ops[Ops.name].astype("category")
    codes = names.cat.codes.to_numpy()
    distinct = [str(c) for c in names.cat.categories]
    is_aten = np.array([c.startswith("aten::") for c in distinct] + [False], dtype=bool)
    in_optimizer = np.array([bool(OPTIMIZER.search(c)) for c in distinct] + [False], dtype=bool)
    parent = _integers(ops[Ops.parent_row], -1)
    parent = np.where((parent >= 0) & (parent < n), parent, -1)
    depth = _integers(ops[Ops.depth], 0)
    aten = is_aten[codes]  # code −1 (missing name) picks the trailing False
    python = _equals(ops[Ops.category], OpCategory.PYTHON_FUNCTION.value)
    return parent, depth, aten, in_optimizer[codes], aten | python  # transparent spans


def _walk_up(
    flags: _OpFlags, rows: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.bool_]] | None:
    """:func:`_op_context` at ``rows`` only: each row's parents walked up together, one level
    per pass (None when a parent is not shallower than its child: see :func:`_op_context`)."""
    parent, depth, aten, in_optimizer, transparent = flags
    n = len(parent)
    optimizer = in_optimizer[rows]  # (a copy)
    context = np.full(rows.size, -1, dtype=np.int64)
    found = np.zeros(rows.size, dtype=bool)  # the context is the first non-transparent parent
    top = rows.copy()
    chain = aten[rows]  # still on the row's run of nested aten ops
    node = rows.copy()
    live = np.flatnonzero(parent[rows] >= 0)
    while live.size:
        child = node[live]
        up = parent[child]
        if (depth[up] >= depth[child]).any():
            return None
        optimizer[live] |= in_optimizer[up]
        newly = ~found[live] & ~transparent[up]
        context[live[newly]] = up[newly]
        found[live[newly]] = True
        extend = chain[live] & aten[up]
        top[live[extend]] = up[extend]
        chain[live] = extend
        node[live] = up
        live = live[parent[up] >= 0]
    out_context = np.full(n, -1, dtype=np.int64)
    out_top = np.arange(n, dtype=np.int64)
    out_optimizer = np.zeros(n, dtype=bool)
    out_context[rows], out_top[rows], out_optimizer[rows] = context, top, optimizer
    return out_context, out_top, out_optimizer


def _known_rows(seq: pd.DataFrame, n_ops: int) -> npt.NDArray[np.int64]:
    """The op rows of ``seq``'s kernels that are rows of the ops table (as :func:`_links`
    reads them)."""
    op = seq[ChainMember.op].to_numpy(dtype=float)
    return op[np.isfinite(op) & (op >= 0) & (op < n_ops)].astype(np.int64)


# --- links --------------------------------------------------------------------------------


def _links(
    seq: pd.DataFrame,
    ops: pd.DataFrame,
    context: npt.NDArray[np.int64],
    top: npt.NDArray[np.int64],
    optimizer: npt.NDArray[np.bool_],
) -> npt.NDArray[np.object_]:
    """Per row, how it continues the chain of the row before it ("" when it does not)."""
    op = seq[ChainMember.op].to_numpy(dtype=float)
    known = np.isfinite(op) & (op >= 0) & (op < len(ops))
    row = np.where(known, op, 0).astype(np.int64)
    fusible = seq[ChainMember.kind].isin(FUSIBLE_KINDS).to_numpy(dtype=bool)
    ok = fusible & known & ~np.where(known, optimizer[row], True)
    ctx, top_op = np.where(known, context[row], -2), np.where(known, top[row], -1)
    lane, step = seq[ChainMember.lane].to_numpy(), seq[ChainMember.step].to_numpy()
    region = seq[ChainMember.in_region].to_numpy()
    candidate = np.zeros(len(seq), dtype=bool)
    candidate[1:] = (
        ok[1:] & ok[:-1] & (lane[1:] == lane[:-1]) & (step[1:] == step[:-1]) & (step[1:] >= 0)
        & (region[1:] == region[:-1]) & (ctx[1:] == ctx[:-1])
    )  # fmt: skip
    out = np.full(len(seq), "", dtype=object)
    at = np.flatnonzero(candidate)
    a, b = top_op[at - 1], top_op[at]
    same = a == b
    out[at[same]] = "same op"
    at, a, b = at[~same], a[~same], b[~same]
    if not len(at):
        return out
    # Decided once per distinct (a's shapes text, a's name, a reduces, b's shapes text): the
    # links of a long trace repeat a few hundred op pairs thousands of times.
    dims, names = ops[Ops.input_dims], ops[Ops.name]
    reduces = _reducing_table(seq, top_op, len(ops))[a]  # (a is −1 where the op is unknown)
    categorical = all(isinstance(c.dtype, pd.CategoricalDtype) for c in (dims, names))
    if (
        categorical
        and (len(dims.cat.categories) + 1) ** 2 * (len(names.cat.categories) + 1) < 2**61
    ):
        out[at] = _links_by_code(dims, names, a, reduces, b)
        return out
    decided: dict[tuple[object, str, bool, object], str] = {}
    links = []
    for key in zip(
        _texts(dims.iloc[a]),
        map(str, names.iloc[a].to_numpy(dtype=object)),
        reduces.tolist(),
        _texts(dims.iloc[b]),
        strict=True,
    ):
        link = decided.get(key)
        if link is None:
            dims_a, name_a, reduces_a, dims_b = key
            link = _data_link(_shapes(dims_a), name_a, reduces_a, _shapes(dims_b))
            decided[key] = link
        links.append(link)
    out[at] = links
    return out


def _links_by_code(
    dims: pd.Series,
    names: pd.Series,
    a: npt.NDArray[np.int64],
    reduces: npt.NDArray[np.bool_],
    b: npt.NDArray[np.int64],
) -> npt.NDArray[np.object_]:
    """:func:`_data_link` of each (a, b) op pair, decided once per distinct (a's shapes, a's
    name, a reduces, b's shapes), told apart by the categorical columns' codes (no text per
    link): the texts are those :func:`_texts` and ``str`` give (a missing shapes text is
    None, a missing name ``"nan"``)."""
    dim_codes = dims.cat.codes.to_numpy().astype(np.int64)
    name_codes = names.cat.codes.to_numpy().astype(np.int64)
    n_dims, n_names = len(dims.cat.categories) + 1, len(names.cat.categories) + 1
    # one int64 per (a's shapes, a's name, a reduces, b's shapes): below n_dims² · n_names · 2
    key = ((dim_codes[a] + 1) * n_names + name_codes[a] + 1) * 2 + reduces
    key = key * n_dims + dim_codes[b] + 1
    inverse, unique_keys = pd.factorize(key)
    rest, dims_b = np.divmod(np.asarray(unique_keys, dtype=np.int64), n_dims)
    rest, reduces_a = np.divmod(rest, 2)
    dims_a, name_a = np.divmod(rest, n_names)
    distinct = zip(
        (dims_a - 1).tolist(), (name_a - 1).tolist(), reduces_a.tolist(), (dims_b - 1).tolist(),
        strict=True,
    )  # fmt: skip
    dim_texts = [v if isinstance(v, str) else None for v in dims.cat.categories.tolist()]
    name_texts = [str(v) for v in names.cat.categories.tolist()]

    def text(code: int) -> str | None:
        return dim_texts[code] if code >= 0 else None

    links = [
        _data_link(
            _shapes(text(dims_a)),
            name_texts[name_a] if name_a >= 0 else str(np.nan),
            bool(reduces_a),
            _shapes(text(dims_b)),
        )
        for dims_a, name_a, reduces_a, dims_b in distinct
    ]
    return np.asarray(links, dtype=object)[inverse]


def _reducing_ops(seq: pd.DataFrame, top_op: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Top ops that launched a reduction kernel: their output is not their inputs' shape."""
    reduction = (seq[ChainMember.kind] == KernelKind.REDUCTION.value).to_numpy(dtype=bool)
    return np.unique(top_op[reduction & (top_op >= 0)])


def _reducing_table(
    seq: pd.DataFrame, top_op: npt.NDArray[np.int64], n_ops: int
) -> npt.NDArray[np.bool_]:
    """Per op row, whether it is one of :func:`_reducing_ops`, plus a last False that the
    unknown top op (−1) reads: ``np.isin(rows, _reducing_ops(...))`` as a lookup, no sort."""
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
    return int(np.prod(shape)) if shape else 1


# --- bytes and grouping -------------------------------------------------------------------


def _written_bytes(ops: pd.DataFrame, op_rows: pd.Series) -> npt.NDArray[np.float64]:
    """Estimated bytes each member's launching op writes (NaN: unknown)."""
    rows = op_rows.to_numpy(dtype=float)
    out = np.full(len(rows), np.nan)
    known = np.isfinite(rows) & (rows >= 0) & (rows < len(ops))
    if not known.any():
        return out
    picked = ops.iloc[rows[known].astype(np.int64)]
    # estimated once per distinct (name, dims, types, concrete inputs), spread by group
    key, groups = _group_rows(
        [picked[c] for c in (Ops.name, Ops.input_dims, Ops.input_types, Ops.concrete_inputs)]
    )
    per_group = np.array([_written(*(_text(v) for v in values)) for values in groups], dtype=float)
    out[known] = per_group[key]
    return out


def _per_chain(members: pd.DataFrame) -> pd.DataFrame:
    """One row per chain occurrence: signature, kernels, time, longest kernel, intermediates.

    A member's output counts as an intermediate when it is the first kernel of its op in the
    chain and that op is not the chain's last (an op's several kernels share one output).

    A chain's members are consecutive rows (chain ids only grow down the lane order), so each
    figure is taken over its run of rows with NumPy; the two float sums by pandas' groupby
    (its compensated sum, as before), the maxima skipping NaN, the first row of a tie.
    """
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
    # the first row of each (chain, op) pair (duplicated: NaN equals NaN)
    op_codes = pd.factorize(op, use_na_sentinel=False)[0].astype(np.int64)
    first_of_op = np.zeros(n, dtype=bool)
    first_of_op[np.unique(run * (op_codes.max(initial=0) + 1) + op_codes, return_index=True)[1]] = (
        True
    )
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
    labels = members[ChainMember.label].astype(str)
    table = pd.DataFrame(
        {
            "signature": _signatures(members[ChainMember.chain], labels),
            "kernels": np.diff(np.r_[starts, n]).astype(np.int64),
            "time_us": sums["time_us"].to_numpy(),
            "longest_us": np.fmax.reduceat(dur, starts) if n else dur,
            "moved": sums["moved"].to_numpy(),
            "unknown": np.logical_or.reduceat(unknown, starts) if n else unknown,
            "largest": np.fmax.reduceat(out, starts) if n else out,
            "eager": np.logical_or.reduceat(eager, starts) if n else eager,
            "shapes_known": np.logical_and.reduceat(confirmed, starts) if n else confirmed,
            "largest_op": op[largest_row],
        },
        index=pd.Index(chain[starts], name=ChainMember.chain),
    )
    return table


def _group(per_chain: pd.DataFrame, ops: pd.DataFrame) -> list[ChainGroup]:
    """Sum chains with the same op sequence; largest total time first.

    Signatures numbered in order of first appearance (as groupby without sorting); the sums
    by one groupby over the numbers (pandas' compensated float sums, as before), the other
    figures with NumPy: counts, any/all, the largest skipping NaN, and the op of the chain
    with the largest intermediate (the first such chain on a tie)."""
    per_chain = per_chain.assign(
        saving_us=per_chain["time_us"] - per_chain["longest_us"],
        largest_key=per_chain["largest"].fillna(-1.0),
    ).reset_index(drop=True)
    codes, signatures = pd.factorize(per_chain["signature"])
    n = len(signatures)
    summed = ["kernels", "time_us", "saving_us", "moved"]
    sums = per_chain[summed].groupby(codes, sort=False).sum()
    unknown = per_chain["unknown"].to_numpy(dtype=bool)
    eager = per_chain["eager"].to_numpy(dtype=bool)
    known = per_chain["shapes_known"].to_numpy(dtype=bool)
    largest = np.full(n, np.nan)
    np.fmax.at(largest, codes, per_chain["largest"].to_numpy(dtype=float))
    key = per_chain["largest_key"].to_numpy(dtype=float)
    by_key = np.lexsort((np.arange(len(codes)), -key, codes))  # per signature: largest first
    first = by_key[np.r_[True, codes[by_key][1:] != codes[by_key][:-1]]]
    table = pd.DataFrame(
        {
            "occurrences": np.bincount(codes, minlength=n).astype(np.int64),
            **{c: sums[c].to_numpy() for c in summed},
            "unknown": np.bincount(codes[unknown], minlength=n) > 0,
            "largest": largest,
            "eager": np.bincount(codes[eager], minlength=n) > 0,
            "shapes_known": np.bincount(codes[~known], minlength=n) == 0,
            "largest_op": per_chain["largest_op"].to_numpy()[first],
        },
        index=pd.Index(signatures, name="signature"),
    )
    table = table.sort_values("time_us", ascending=False, kind="stable")
    names = ops[Ops.name]
    return [_chain_group(str(signature), row, names) for signature, row in table.iterrows()]


def _chain_group(signature: str, row: pd.Series, names: pd.Series) -> ChainGroup:
    unknown = bool(row["unknown"])
    largest = float(row["largest"])
    op = float(row["largest_op"])
    return ChainGroup(
        ops=tuple(signature.split(SEPARATOR)),
        occurrences=int(row["occurrences"]),
        kernels=int(row["kernels"]),
        time_us=float(row["time_us"]),
        saving_us=float(row["saving_us"]),
        bytes_saved=None if unknown else int(row["moved"]),
        largest_bytes=None if unknown or not np.isfinite(largest) else int(largest),
        largest_op=str(names.iloc[int(op)]) if np.isfinite(op) and 0 <= op < len(names) else "",
        eager_kernels=bool(row["eager"]),
        shapes_known=bool(row["shapes_known"]),
    )
