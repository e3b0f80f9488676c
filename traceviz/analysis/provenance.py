"""Which compiled kernel came from which FX nodes, and which eager kernel from which source line.

Two pure functions over a parsed trace, reading what the compiler and the profiler recorded
rather than inferring it from names:

- :func:`compiled_kernel_provenance` joins a compiled trace's kernels to Inductor's own
  provenance record (:class:`~traceviz.parse.compile_log.CompileLog`): generated kernels by
  name within their compiled region, library calls (``extern_kernels.addmm``…) by their order
  within one call of the compiled graph.
- :func:`eager_kernel_lines` reads the Python frames of an eager trace recorded with
  ``with_stack=True``: each kernel's innermost user-code frame (frames in torch, Triton and
  the standard library are folded to the frame that called them; model libraries such as
  transformers are model code).
"""

from __future__ import annotations

import linecache
import re
import weakref
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pandas as pd

from traceviz import schema
from traceviz.parse.compile_log import LINE_MARK_PREFIX, CompileLog, is_library
from traceviz.schema import KernelProvenance as KP
from traceviz.schema import Kernels as K
from traceviz.schema import OpCategory, RegionKind
from traceviz.schema import Ops as O
from traceviz.schema import ProvenanceKernels as P
from traceviz.schema import Regions as R
from traceviz.source_files import locate
from traceviz.trace import Trace

_GRAPH_PREFIX = re.compile(r"^graph_(\d+)_")
_PY_FRAME = re.compile(r"^(?P<file>.+)\((?P<line>\d+)\): (?P<function>.+)$")
_CALL_KINDS = (
    RegionKind.FX_GRAPH_CALL.value,
    RegionKind.COMPILED_FUNCTION.value,
    RegionKind.COMPILED_FUNCTION_BACKWARD.value,
)
_NONE = -1


def compiled_kernel_provenance(trace: Trace, log: CompileLog) -> pd.DataFrame:
    """One row per row of ``trace.kernels`` that ``log``'s provenance explains.

    Columns (:class:`~traceviz.schema.KernelProvenance`): ``kernel_row`` (index in
    ``trace.kernels``), ``compile_id``, ``prov_kernel`` (the log's unique kernel id),
    ``kernel`` (Inductor's name, no ``graph_N_`` prefix), ``pre_grad_nodes`` and
    ``post_grad_nodes`` (comma-joined FX node names), ``est_bytes`` (Inductor's estimate of
    the bytes one call reads and writes; NA when not logged) and ``primary`` (True for the
    row that is the call itself; False for work nested inside a call, e.g. the ``aten::copy_``
    an ``aten::addmm`` does on CPU: count bytes and calls on primary rows only).

    A generated kernel (``cpp_fused_…``, ``triton_…``) matches by name within its compiled
    region ("Torch-Compiled Region: X/Y" → compile id X/Y; the backward graph under
    ``CompiledFunctionBackward``), else by the ``graph_N_`` prefix, else by a name unique in
    the log. A library call (``extern_kernels.addmm:N``) matches the aten op of that name
    called directly by one call of the compiled graph, the k-th such op to the k-th such
    entry in handle order. Rows the log does not explain are left out. Raises ``TypeError``
    for arguments that are not a Trace and a CompileLog.

    A comparison asks twice for the same pair (the compiled side's memory traffic, then its
    source lines): the last pair's result is kept (weak references to both, so it never
    keeps them alive) and a copy of it returned.
    """
    _check(trace, Trace, "trace")
    _check(log, CompileLog, "log")
    global _last
    last = _last
    if last is not None and last[0]() is trace and last[1]() is log:
        return last[2].copy()
    table = _provenance(trace, log)
    _last = (weakref.ref(trace), weakref.ref(log), table)
    return table.copy()


#: the last (trace, log) of :func:`compiled_kernel_provenance` and its table
_last: tuple[weakref.ref[Trace], weakref.ref[CompileLog], pd.DataFrame] | None = None


def _provenance(trace: Trace, log: CompileLog) -> pd.DataFrame:
    kernels = trace.kernels
    if kernels.empty or log.kernels.empty:
        return schema.empty_table(schema.KERNEL_PROVENANCE_DTYPES)
    ctx = _OpContext(trace)
    generated = _match_generated(kernels, ctx, log.kernels)
    extern = _match_extern(kernels, ctx, log.kernels, generated)
    rows = pd.concat([generated, extern]).drop_duplicates(KP.kernel_row)
    return _finish(rows, log.kernels)


def _check(value: object, kind: type, name: str) -> None:
    if not isinstance(value, kind):
        raise TypeError(f"{name} must be a {kind.__name__}, not {type(value).__name__}")


class _OpContext:
    """Per ops row: its innermost graph call, compiled region and backward marker (-1 none)."""

    def __init__(self, trace: Trace) -> None:
        ops, regions = trace.ops, trace.regions
        n = len(ops)
        self.parent = _ints(ops[O.parent_row], n)
        self.depth = ops[O.depth].fillna(0).to_numpy(dtype=np.int64)
        self.names = ops[O.name].astype(str).to_numpy()
        # each region's kind and op row read once, as arrays (-1: no op row)
        kinds = regions[R.kind].to_numpy(dtype=object)
        op_rows = _ints(regions[R.op_row], len(regions))
        self.call = self._nearest(kinds, op_rows, _CALL_KINDS)
        self.region = self._nearest(kinds, op_rows, (RegionKind.COMPILED_REGION.value,))
        self.backward = self._nearest(
            kinds, op_rows, (RegionKind.COMPILED_FUNCTION_BACKWARD.value,)
        )
        frames, recompiles = regions[R.frame_id].tolist(), regions[R.recompile_id].tolist()
        compiled = (kinds == RegionKind.COMPILED_REGION.value) & (op_rows != _NONE)
        self.compile_id = {
            int(op_rows[i]): f"{frames[i]}/{recompiles[i]}" for i in np.flatnonzero(compiled)
        }

    def _nearest(
        self, kinds: np.ndarray, op_rows: np.ndarray, wanted: tuple[str, ...]
    ) -> np.ndarray:
        seed = np.full(len(self.parent), _NONE, dtype=np.int64)
        rows = op_rows[np.isin(kinds, wanted) & (op_rows != _NONE)]
        seed[rows] = rows
        return propagate_down(self.parent, self.depth, seed)

    def compile_id_of(self, op_row: int) -> str | None:
        region = self.region[op_row] if op_row >= 0 else _NONE
        return self.compile_id.get(int(region)) if region != _NONE else None


def propagate_down(parent: np.ndarray, depth: np.ndarray, seed: np.ndarray) -> np.ndarray:
    """``seed`` filled in from each row's nearest ancestor that has a value (-1 = none):
    one vectorised pass per nesting depth, parents before children."""
    out = seed.copy()
    for level in np.unique(depth):
        rows = np.flatnonzero((depth == level) & (out == _NONE) & (parent != _NONE))
        if rows.size:
            out[rows] = out[parent[rows]]
    return out


def _ints(series: pd.Series, n: int) -> np.ndarray:
    values = series.astype("Int64").fillna(_NONE).to_numpy(dtype=np.int64)
    return values if len(values) == n else np.full(n, _NONE, dtype=np.int64)


def _kernel_ops(kernels: pd.DataFrame) -> np.ndarray:
    return _ints(kernels[K.op_row], len(kernels))


def _match_generated(kernels: pd.DataFrame, ctx: _OpContext, log: pd.DataFrame) -> pd.DataFrame:
    """Generated (non-extern) kernels, matched by name in their compiled region.

    One kernel can be called at several places of a graph (the same fused kernel for each
    layer): the log then has one entry per call site, and the k-th launch of that name within
    one graph call is the k-th entry in handle order."""
    gen = log[~log[P.extern]]
    by_name = {name: group for name, group in gen.groupby(P.kernel, sort=False)}
    op_rows = _kernel_ops(kernels)
    names = kernels[K.name].astype(str).to_numpy()
    out = []
    memo: dict[tuple[str, str | None, bool, int], str | None] = {}  # steps repeat the kernels
    seen: dict[tuple[int, str], int] = {}  # (graph call, name) → launches so far
    order = np.argsort(kernels[K.ts_us].to_numpy(), kind="stable")
    for row in order:
        name, op_row = str(names[row]), int(op_rows[row])
        prefix = _GRAPH_PREFIX.match(name)
        base = name[prefix.end() :] if prefix else name
        candidates = by_name.get(base)
        if candidates is None:
            continue
        call = _launch_scope(ctx, op_row)
        k = seen.get((call, name), 0)
        seen[(call, name)] = k + 1
        key = (name, ctx.compile_id_of(op_row), _is_backward(ctx, op_row), k)
        if key not in memo:
            graph = int(prefix.group(1)) if prefix else None
            memo[key] = _choose(candidates, key[1], key[2], graph, k)
        chosen = memo[key]
        if chosen is not None:
            out.append((int(row), chosen, True))
    return _rows(out)


def _launch_scope(ctx: _OpContext, op_row: int) -> int:
    """Where a generated kernel's launches are counted: its graph call (ops row); a kernel in
    no graph call but in a compiled region (a CUDA-graph replay, ``mode="reduce-overhead"``:
    the replayed kernels hang off the region's ``cudaGraphLaunch``, one replay per region
    call) that region call, as ``-2 - row``; else one scope for the whole trace (-1)."""
    if op_row < 0:
        return _NONE
    call = int(ctx.call[op_row])
    if call == _NONE and ctx.region[op_row] != _NONE:
        return -2 - int(ctx.region[op_row])
    return call


def _is_backward(ctx: _OpContext, op_row: int) -> bool:
    return op_row >= 0 and ctx.backward[op_row] != _NONE


def _choose(
    candidates: pd.DataFrame, compile_id: str | None, backward: bool, graph: int | None, k: int
) -> str | None:
    """The one log entry a trace kernel is, narrowed by compile id, graph_N_, direction, and
    among several call sites of the same kernel in one graph by ``k``, its launch index in
    the graph call."""
    pool = candidates
    if compile_id is not None and (pool[P.compile_id] == compile_id).any():
        pool = pool[pool[P.compile_id] == compile_id]
    if graph is not None and (pool[P.graph] == graph).any():
        pool = pool[pool[P.graph] == graph]
    if len(pool) > 1:
        side = pool[P.graph_index] > 0 if backward else pool[P.graph_index] == 0
        if side.any():
            pool = pool[side.fillna(False)]
    if len(pool) > 1 and pool[[P.compile_id, P.graph_index]].drop_duplicates().shape[0] == 1:
        pool = pool.sort_values(P.handle).iloc[k : k + 1]  # call sites of one graph
    return str(pool[P.prov_kernel].iloc[0]) if len(pool) == 1 else None


def extern_op_name(kernel: str) -> str:
    """The aten op a library call runs: ``extern_kernels.addmm`` → ``aten::addmm``."""
    name = kernel
    for prefix in ("extern_kernels.", "torch.ops.aten.", "aten."):
        name = name.removeprefix(prefix)
    return "aten::" + name.split(".")[0]


def _match_extern(
    kernels: pd.DataFrame, ctx: _OpContext, log: pd.DataFrame, generated: pd.DataFrame
) -> pd.DataFrame:
    """Library calls: the k-th ``aten::X`` op directly inside one graph call ↔ the k-th
    ``extern_kernels.X`` entry (handle order) of that call's graph; kernels at or below it."""
    ext = log[log[P.extern]].sort_values([P.compile_id, P.graph_index, P.handle])
    if ext.empty:
        return _rows([])
    graph_of = _graph_of_calls(kernels, ctx, log, generated)
    matched: dict[int, str] = {}  # ops row of the aten op → prov_kernel
    parent = ctx.parent
    direct = (parent != _NONE) & (ctx.call[np.clip(parent, 0, None)] == parent)
    children = pd.DataFrame({"parent": parent[direct], "name": ctx.names[direct]})
    children.index = np.flatnonzero(direct)  # ops rows of the direct children of a graph call
    for call_value, group in children.groupby("parent", sort=False):
        call = int(str(call_value))
        graph = graph_of.get(call) or _graph_from_region(ctx, call, log)
        if graph is None:
            continue
        entries = ext[(ext[P.compile_id] == graph[0]) & (ext[P.graph_index] == graph[1])]
        seen: dict[str, int] = {}
        wanted: dict[str, list[str]] = {}
        for prov, kernel in zip(entries[P.prov_kernel], entries[P.kernel], strict=True):
            wanted.setdefault(extern_op_name(str(kernel)), []).append(str(prov))
        for op_row, name in zip(group.index, group["name"], strict=True):
            k = seen.get(name, 0)
            if name in wanted and k < len(wanted[name]):
                matched[int(op_row)] = wanted[name][k]
            seen[name] = k + 1
    return _kernels_under(kernels, ctx, matched)


def _graph_of_calls(
    kernels: pd.DataFrame, ctx: _OpContext, log: pd.DataFrame, generated: pd.DataFrame
) -> dict[int, tuple[str, int]]:
    """Graph call (ops row) → (compile id, graph index) of the generated kernels inside it."""
    if generated.empty:
        return {}
    info = log.set_index(P.prov_kernel)
    op_rows = _kernel_ops(kernels)
    out: dict[int, tuple[str, int]] = {}
    for row, prov in zip(generated[KP.kernel_row], generated[KP.prov_kernel], strict=True):
        op_row = op_rows[int(row)]
        call = ctx.call[op_row] if op_row >= 0 else _NONE
        if call != _NONE and int(call) not in out:
            entry = info.loc[prov]
            out[int(call)] = (str(entry[P.compile_id]), int(entry[P.graph_index]))
    return out


def _graph_from_region(ctx: _OpContext, call: int, log: pd.DataFrame) -> tuple[str, int] | None:
    """A call without generated kernels: its compiled region's compile id, or the only graph."""
    index = 1 if ctx.backward[call] != _NONE else 0
    compile_id = ctx.compile_id_of(call)
    graphs = log[[P.compile_id, P.graph_index]].drop_duplicates()
    if compile_id is None:
        only = graphs.to_numpy().tolist()
        return (str(only[0][0]), int(only[0][1])) if len(only) == 1 else None
    pick = graphs[(graphs[P.compile_id] == compile_id) & (graphs[P.graph_index] == index)]
    return (compile_id, index) if len(pick) else None


def _kernels_under(kernels: pd.DataFrame, ctx: _OpContext, matched: dict[int, str]) -> pd.DataFrame:
    """Kernel rows whose op is a matched op or nested in one; the first per op is primary."""
    if not matched:
        return _rows([])
    seed = np.full(len(ctx.parent), _NONE, dtype=np.int64)
    seed[list(matched)] = list(matched)
    owner = propagate_down(ctx.parent, ctx.depth, seed)
    op_rows = _kernel_ops(kernels)
    owners = np.where(op_rows >= 0, owner[np.clip(op_rows, 0, None)], _NONE)
    out, seen = [], set()
    order = np.argsort(kernels[K.ts_us].to_numpy(), kind="stable")
    for row in order:
        op = int(owners[row])
        if op == _NONE:
            continue
        primary = op not in seen and (op_rows[row] == op or not _has_self_row(op_rows, op))
        seen.add(op) if primary else None
        out.append((int(row), matched[op], primary))
    return _rows(out)


def _has_self_row(op_rows: np.ndarray, op: int) -> bool:
    return bool((op_rows == op).any())


def _rows(items: list[tuple[int, str, bool]]) -> pd.DataFrame:
    return pd.DataFrame(items, columns=[KP.kernel_row, KP.prov_kernel, KP.primary])


def _finish(rows: pd.DataFrame, log: pd.DataFrame) -> pd.DataFrame:
    if rows.empty:
        return schema.empty_table(schema.KERNEL_PROVENANCE_DTYPES)
    info = log.set_index(P.prov_kernel)
    joined = rows.join(info, on=KP.prov_kernel)
    joined = joined.sort_values(KP.kernel_row).reset_index(drop=True)
    return schema.conform(joined, schema.KERNEL_PROVENANCE_DTYPES)


def eager_kernel_lines(trace: Trace) -> pd.DataFrame:
    """One row per row of ``trace.kernels`` with a known user source line.

    Columns (:class:`~traceviz.schema.KernelLines`): ``kernel_row`` (index in
    ``trace.kernels``), ``file``, ``line`` (1-based), ``function``, ``code`` (the line's text
    read with linecache, stripped; NA when the file is not on this machine), ``exact``.

    The line is the innermost span around the kernel's op that names a user-code line: the
    runner's ``traceviz line <file>(<line>): <function>`` marks (``exact``: the calling
    line), else the Python frames of ``with_stack=True`` (``python_function`` events) that
    are not in torch, Triton or the standard library (not exact: such a frame names its
    function's first line). Empty for a trace with neither. Raises ``TypeError`` when
    ``trace`` is not a Trace.
    """
    _check(trace, Trace, "trace")
    ops, kernels = trace.ops, trace.kernels
    if kernels.empty or ops.empty:
        return schema.empty_table(schema.KERNEL_LINES_DTYPES)
    frames = _user_frames(ops)
    if not frames:
        return schema.empty_table(schema.KERNEL_LINES_DTYPES)
    python = [row for row, frame in frames.items() if not frame[3]]
    seed = np.full(len(ops), _NONE, dtype=np.int64)
    seed[python] = python
    parent = _ints(ops[O.parent_row], len(ops))
    depth = ops[O.depth].fillna(0).to_numpy(dtype=np.int64)
    owner = propagate_down(parent, depth, seed)
    marked = _marks_around(ops, [row for row, frame in frames.items() if frame[3]])
    op_rows = _kernel_ops(kernels)
    rows = []
    code: dict[tuple[str, int], str | None] = {}  # each line read once per call
    for row, op_row in enumerate(op_rows):
        frame_row = _NONE if op_row < 0 else marked[op_row]
        frame_row = owner[op_row] if frame_row == _NONE and op_row >= 0 else frame_row
        if frame_row != _NONE:
            file, line, function, exact = frames[int(frame_row)]
            if (file, line) not in code:
                code[(file, line)] = source_line(file, line)
            rows.append((row, file, line, function, code[(file, line)], exact))
    if not rows:
        return schema.empty_table(schema.KERNEL_LINES_DTYPES)
    # built in the declared dtypes (text as object: inferred as str, conform cast it back);
    # a missing code is NaN as that cast made it, None when no line was read at all
    columns = list(zip(*rows, strict=True))
    if any(text is not None for text in code.values()):
        columns[4] = tuple(np.nan if text is None else text for text in columns[4])
    return pd.DataFrame(
        {
            name: pd.Series(values, dtype=dtype)
            for (name, dtype), values in zip(
                schema.KERNEL_LINES_DTYPES.items(), columns, strict=True
            )
        }
    )


def _marks_around(ops: pd.DataFrame, marks: list[int]) -> np.ndarray:
    """Per ops row, the line mark whose span holds its start on the same thread (-1 none).

    By time, not by nesting: a ``record_function`` span opened inside a Python frame outlives
    that frame, so the parser's nesting may put the marked ops beside the mark, not under it.
    Marks never nest (the marking hook is off while a marked call runs).
    """
    out = np.full(len(ops), _NONE, dtype=np.int64)
    if not marks:
        return out
    ts = ops[O.ts_us].to_numpy(dtype=np.float64)
    end = ts + ops[O.dur_us].fillna(0).to_numpy(dtype=np.float64)
    threads = ops[O.thread].astype(str).to_numpy()
    mark_rows = np.asarray(marks, dtype=np.int64)
    for thread in np.unique(threads[mark_rows]):
        mine = mark_rows[threads[mark_rows] == thread]
        mine = mine[np.argsort(ts[mine], kind="stable")]
        rows = np.flatnonzero(threads == thread)
        at = np.searchsorted(ts[mine], ts[rows], side="right") - 1
        inside = at >= 0
        candidate = mine[np.clip(at, 0, None)]
        inside &= ts[rows] < end[candidate]
        out[rows[inside]] = candidate[inside]
    return out


def _user_frames(ops: pd.DataFrame) -> dict[int, tuple[str, int, str, bool]]:
    """ops row → (file, line, function, exact) of each line mark and each python_function
    frame in user code."""

    def is_mark(text: str) -> bool:
        return text.startswith(LINE_MARK_PREFIX)

    def is_frame(text: str) -> bool:
        return text == OpCategory.PYTHON_FUNCTION.value

    name, category = ops[O.name], ops[O.category]
    if isinstance(name.dtype, pd.CategoricalDtype) and isinstance(
        category.dtype, pd.CategoricalDtype
    ):  # tested by category; the names spelled only at the rows picked (most traces: none)
        marks, python = _category_flags(name, is_mark), _category_flags(category, is_frame)
        picked = np.flatnonzero(marks | python)
        names = _text_where(name.iloc[picked], is_mark)[0]
    else:
        all_names, marks = _text_where(name, is_mark)
        python = _text_where(category, is_frame)[1]
        picked = np.flatnonzero(marks | python)
        names = all_names[picked]
    out = {}
    for row, text, exact in zip(
        ops.index[picked], names.tolist(), marks[picked].tolist(), strict=True
    ):
        match = _PY_FRAME.match(text.removeprefix(LINE_MARK_PREFIX) if exact else text)
        if match is None or match["file"].startswith("<") or is_library(match["file"]):
            continue
        out[int(row)] = (match["file"], int(match["line"]), match["function"], bool(exact))
    return out


def _category_flags(column: pd.Series, test: Callable[[str], bool]) -> npt.NDArray[np.bool_]:
    """:func:`_text_where`'s flags of a categorical column (``test`` once per category; a
    missing value False), without spelling every row."""
    passed = np.array([test(str(c)) for c in column.cat.categories] + [False], dtype=bool)
    return passed[np.asarray(column.cat.codes, dtype=np.int64)]


def _text_where(
    column: pd.Series, test: Callable[[str], bool]
) -> tuple[npt.NDArray[np.object_], npt.NDArray[np.bool_]]:
    """The column as text (``str`` of each value, as ``astype(str)`` spells it) and ``test``
    of each; a categorical column is read once per category, not once per row."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        texts = [str(c) for c in column.cat.categories] + [str(np.nan)]
        table = np.array(texts, dtype=object)
        passed = np.array([test(t) for t in texts[:-1]] + [False], dtype=bool)
        codes = np.asarray(column.cat.codes, dtype=np.int64)
        return table[codes], passed[codes]
    text = column.astype(str)
    return text.to_numpy(dtype=object), np.array([test(t) for t in text], dtype=bool)


def source_line(file: str, line: int) -> str | None:
    """The text of ``file``'s line ``line``, stripped; None when it cannot be read. ``file``
    is found as :func:`traceviz.source_files.locate` says (a moved run or clone too)."""
    found = locate(file)
    if found is None:
        return None
    name = str(found)
    linecache.checkcache(name)  # a file edited since this process last read it
    text = linecache.getline(name, line).strip()
    return text or None
