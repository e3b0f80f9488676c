"""The fusion map per user source line, and the compiler's record as credits.

Two pieces built on :class:`LineRecord` — the source lines of both sides: each eager kernel's
line (from the eager trace's line marks or Python stacks, or from its twin in a run's separate
lines trace: :mod:`traceviz.analysis.fusion.line_transfer`) and each compiled kernel's lines (from
Inductor's provenance in the compile log):

- :func:`compiler_credits` credits an eager kernel to the compiled kernel that holds its line;
  when several compiled kernels hold that line, the one whose ops (decoded name, post-grad
  nodes) include the eager op wins, then the one nearest in position (``confidence`` 1/n for
  n such kernels); a layout kernel never takes the GEMM/convolution it prepares. One row per
  eager kernel at most — the ``compiler`` stage of
  :func:`~traceviz.analysis.fusion.match.credit_eager_kernels`.
- :func:`lines_table` sums the credits per line (:class:`ByLine`): the line's eager kernels
  and their time, the compiled kernels they were credited to, and those kernels' time split
  over the lines that share them in proportion to the eager time credited from each (evenly
  when none was), so a compiled kernel's time is counted at most once over all lines; then
  the compiled kernels the provenance ties to a line that no eager kernel was credited to
  (:func:`~traceviz.analysis.fusion.by_line.uncredited_shares`), split evenly over their lines.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from traceviz import schema
from traceviz.analysis.fusion.by_line import add_uncredited, lines_table_rows, uncredited_shares
from traceviz.analysis.fusion.line_transfer import LineTransfer, transfer_lines
from traceviz.analysis.fusion.match import (
    COMPOSITES,
    HEAVY_KEYS,
    Credits,
    KernelSide,
    instances_by_name,
    kernel_side,
    layout_kernels,
    nearest_kernel,
    own_key,
    runs_heavy_work,
)
from traceviz.analysis.fusion.op_keys import OP_ALIASES, name_keys
from traceviz.analysis.inductor_names import fused_kernel_ops
from traceviz.analysis.provenance import (
    compiled_kernel_provenance,
    eager_kernel_lines,
    extern_op_name,
)
from traceviz.parse.compile_log import CompileLog, read_compile_log
from traceviz.schema import Kernels
from traceviz.source_files import locate
from traceviz.trace import Trace

__all__ = [
    "BY_LINE_DTYPES",
    "CREDITED_DTYPES",
    "ByLine",
    "LineRecord",
    "compiler_credits",
    "fusion_evidence",
    "lines_table",
    "read_log",
    "split_kernel_names",
    "with_uncredited",
]


class ByLine:
    """Columns of :attr:`FusionMap.by_line <traceviz.analysis.fusion.fusion_map.FusionMap.by_line>`:
    one row per user source line, by eager time, largest first."""

    file = "file"  # source file as Python recorded it (str)
    line = "line"  # 1-based line number (Int64)
    code = "code"  # the line's text ("" when not recorded) (str)
    eager_kernels = "eager_kernels"  # eager kernel instances launched from it (Int64)
    eager_time_us = "eager_time_us"  # their device time, µs, exclusive (float64)
    eager_ops = "eager_ops"  # their ops, "op (kernels), ...", by time (str)
    compiled_kernels = "compiled_kernels"  # compiled kernels holding its ops, comma-joined (str)
    compiled_time_us = "compiled_time_us"  # their time, this line's share, µs (float64)
    fused_with = "fused_with"  # other lines sharing its Inductor kernels, "file:line, ..." (str)
    # of compiled_kernels, those no eager kernel was credited to (no eager counterpart: a
    # library's split-K reduction, a second GEMM), tied to the line by the compiler's
    # provenance; comma-joined, "" for none (str)
    uncredited_kernels = "uncredited_kernels"


#: The columns of the table built from the credits alone (fusion_by_line.lines_table_rows),
#: before the uncredited kernels are added.
CREDITED_DTYPES: dict[str, str] = {
    ByLine.file: "object",
    ByLine.line: schema.I64,
    ByLine.code: "object",
    ByLine.eager_kernels: schema.I64,
    ByLine.eager_time_us: schema.F64,
    ByLine.eager_ops: "object",
    ByLine.compiled_kernels: "object",
    ByLine.compiled_time_us: schema.F64,
    ByLine.fused_with: "object",
}
BY_LINE_DTYPES: dict[str, str] = {**CREDITED_DTYPES, ByLine.uncredited_kernels: "object"}


def _frame(columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame({c: [] for c in columns})


@dataclass(frozen=True)
class LineRecord:
    """Source lines of both sides.

    ``eager``: ``eager_row`` (row of the eager kernels table), ``file``, ``line``, ``code``,
    optionally ``function`` and ``exact`` (False: the line only names its function);
    ``compiled``: ``kernel`` (the compiled kernel's name as the trace shows it), ``file``,
    ``line``, ``code``, optionally ``function``, one row per (kernel, line); ``compiled_ops``:
    per compiled kernel name, the op keys its FX nodes hold (from the post-grad node names);
    ``recorded``: the compiled kernel names Inductor's provenance explains (their rows have
    basis ``compiler``); ``transfer``: when the eager lines were read from a separate lines
    trace, how many eager kernels had a twin there (``transfer.coverage``), else None.
    """

    eager: pd.DataFrame = field(
        default_factory=lambda: _frame(["eager_row", "file", "line", "code"])
    )
    compiled: pd.DataFrame = field(
        default_factory=lambda: _frame(["kernel", "file", "line", "code"])
    )
    compiled_ops: dict[str, frozenset[str]] = field(default_factory=dict)
    recorded: frozenset[str] = frozenset()  # compiled kernel names the compile log explains
    # the eager lines came from a lines trace: how many eager kernels had a twin there
    transfer: LineTransfer | None = None


def compiler_credits(eager: Trace, compiled: Trace, lines: LineRecord) -> pd.DataFrame:
    """``eager_row`` → compiled ``kernel`` through the source lines (module docstring)."""

    out = pd.DataFrame({"eager_row": pd.Series([], dtype="int64"), "kernel": [], "confidence": []})
    if lines.eager.empty or lines.compiled.empty:
        return out
    e = kernel_side(eager, eager.kernels)
    c = kernel_side(compiled, compiled.kernels)
    known = set(c.names)
    held = lines.compiled[lines.compiled["kernel"].isin(known)]
    at = pd.Index(e.rows).get_indexer(pd.Index(lines.eager["eager_row"].to_numpy(dtype=np.int64)))
    eager_lines = lines.eager.assign(i=at)[at >= 0]
    spelled = eager_lines.assign(file=_same_files(eager_lines["file"], held["file"]))
    pairs = line_pairs(spelled, held)
    found = line_credits(e, c, pairs, lines.compiled_ops)
    return out if found is None else found


def _same_files(eager_files: pd.Series, compiled_files: pd.Series) -> pd.Series:
    """Eager file names as the compile log spells them: a profiler's frame may hold a relative
    path (``model.py``) where the log has the absolute one (``/work/model.py``); a name is
    replaced by the one log path that ends with it, component-wise."""
    logged = {str(f) for f in compiled_files.dropna().unique()}
    spelled: dict[str, str] = {}
    for name in {str(f) for f in eager_files.dropna().unique()}:
        if name in logged:
            continue
        tail = "/" + name.lstrip("./").replace("\\", "/")
        found = [f for f in logged if f.replace("\\", "/").endswith(tail)]
        if len(found) == 1:
            spelled[name] = found[0]
    return eager_files.astype(str).replace(spelled) if spelled else eager_files


def line_pairs(eager_lines: pd.DataFrame, held: pd.DataFrame) -> list[tuple[int, str]]:
    """(i, kernel) for each eager instance and each compiled kernel holding its line: on
    (file, line) for an exact eager line, then on (file, function) for a line that only names
    its function (a ``with_stack`` frame gives the function's first line, not the call's); each
    pair once. ``eager_lines`` has ``i``,
    ``file`` (as the log spells it), ``line``, optionally ``exact`` and ``function``."""
    on_line: dict[tuple[Any, Any], list[str]] = {}
    for key in dict.fromkeys(zip(held["kernel"], held["file"], held["line"], strict=True)):
        on_line.setdefault((key[1], key[2]), []).append(key[0])
    rows = list(
        zip(eager_lines["i"].tolist(), eager_lines["file"], eager_lines["line"], strict=True)
    )
    exact = (
        eager_lines["exact"].fillna(True).astype(bool).tolist()
        if "exact" in eager_lines
        else [True] * len(rows)
    )
    pairs = [
        (i, k)
        for (i, f, n), ok in zip(rows, exact, strict=True)
        if ok
        for k in on_line.get((f, n), [])
    ]
    if "exact" in eager_lines and "function" in held and not all(exact):
        on_function: dict[tuple[Any, Any], list[str]] = {}
        keys = zip(held["kernel"], held["file"], held["function"], strict=True)
        for key in dict.fromkeys(keys):
            on_function.setdefault((key[1], key[2]), []).append(key[0])
        functions = eager_lines["function"].tolist()
        pairs += [
            (i, k)
            for (i, f, _), ok, fn in zip(rows, exact, functions, strict=True)
            if not ok
            for k in on_function.get((f, fn), [])
        ]
    return list(dict.fromkeys(pairs))


def line_credits(
    e: KernelSide,
    c: KernelSide,
    pairs: list[tuple[int, str]],
    compiled_ops: dict[str, frozenset[str]],
) -> pd.DataFrame | None:
    """``eager_row``, ``kernel``, ``confidence`` from the line ``pairs`` (None when no pair
    survives the filters; ``compiled_ops``: per compiled kernel, the op keys of its FX nodes):
    the pairs a heavy op or a layout kernel rules out dropped, each instance's best op match
    kept, then the nearest kernel picked."""
    own = own_key(e.label).values()
    layout = layout_kernels(c)
    kept = []
    for i, kernel in pairs:
        key = own[i]
        heavy = key in HEAVY_KEYS
        # a layout kernel never does the GEMM/conv it prepares; a heavy op runs in a library
        # kernel or an Inductor template, never in a pointwise kernel carrying its epilogue
        if heavy and (kernel in layout or not runs_heavy_work(kernel)):
            continue
        kept.append((i, kernel, key))
    if not kept:
        return None
    ops = {n: compiled_ops.get(n, frozenset()) | frozenset(name_keys(n)) for n, in
           dict.fromkeys((k,) for _, k, _ in kept)}  # fmt: skip
    parts = {
        n: frozenset(p for k in keys for p in COMPOSITES.get(k, ())) for n, keys in ops.items()
    }
    # 2: the kernel holds the eager op itself; 1: a part of one of its ops (addmm's bias add)
    scored = [(i, n, 2 if k in ops[n] else 1 if k in parts[n] else 0) for i, n, k in kept]
    best: dict[int, int] = {}
    for i, _, has in scored:
        best[i] = max(best.get(i, has), has)
    scored = [s for s in scored if s[2] == best[s[0]]]
    distinct: dict[int, set[str]] = {}
    for i, n, _ in scored:
        distinct.setdefault(i, set()).add(n)
    # Sharing a line is evidence only when the line names one compiled kernel: on a coarse
    # line (a whole model called from one line) a kernel without the eager op is a guess.
    scored = [s for s in scored if s[2] > 0 or len(distinct[s[0]]) == 1]
    if not scored:
        return None
    by_i: dict[int, set[str]] = {}
    for i, n, _ in sorted(scored, key=lambda s: s[0]):
        by_i.setdefault(i, set()).add(n)
    # a tuple, not a joined string: library kernel names hold ", " in their template arguments
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, names in by_i.items():
        groups.setdefault(tuple(sorted(names)), []).append(i)
    by_name = instances_by_name(c)
    rows: list[npt.NDArray[np.int64]] = []
    chosen: list[npt.NDArray[np.object_]] = []
    confidence: list[npt.NDArray[np.float64]] = []
    for names_of, members in groups.items():
        instances = np.asarray(members, dtype=np.int64)
        rows.append(e.rows[instances])
        chosen.append(nearest_kernel(list(names_of), by_name, e.pos[instances]))
        confidence.append(np.full(len(members), 1.0 / len(names_of)))
    return pd.DataFrame(
        {
            "eager_row": np.concatenate(rows),
            "kernel": np.concatenate(chosen),
            "confidence": np.concatenate(confidence),
        }
    )


def lines_table(
    credits: pd.DataFrame, compiled_classified: pd.DataFrame, lines: LineRecord
) -> pd.DataFrame:
    """The credits per eager source line (:class:`ByLine`; module docstring)."""
    if lines.eager.empty:
        return schema.conform(_frame(list(BY_LINE_DTYPES)), BY_LINE_DTYPES)
    located = _located(credits, lines)
    if located.empty:
        return schema.conform(_frame(list(BY_LINE_DTYPES)), BY_LINE_DTYPES)
    table = lines_table_rows(located, compiled_classified, _generated, CREDITED_DTYPES)
    return with_uncredited(table, credits, compiled_classified, lines)


def with_uncredited(
    table: pd.DataFrame, credits: pd.DataFrame, compiled_classified: pd.DataFrame, lines: LineRecord
) -> pd.DataFrame:
    """The credited table (:data:`CREDITED_DTYPES`) with the compiled kernels the compiler's
    provenance ties to a line but no eager kernel was credited to, split evenly over their
    lines (:func:`~traceviz.analysis.fusion.by_line.uncredited_shares`): the ByLine table."""
    held = lines.compiled
    spelled = _same_files(table[ByLine.file], held["file"]) if len(held) else table[ByLine.file]
    rows = list(zip(spelled, table[ByLine.line].astype(int), strict=True))
    shares = uncredited_shares(credits, compiled_classified, held, rows)
    return schema.conform(add_uncredited(table, spelled, shares), BY_LINE_DTYPES)


def _located(credits: pd.DataFrame, lines: LineRecord) -> pd.DataFrame:
    """The credits joined to their eager source lines (``file``, ``line``, ``code``, ...)."""
    return credits.merge(
        lines.eager.rename(columns={"eager_row": Credits.eager_row}), on=Credits.eager_row
    )


def _generated(kernel: str) -> bool:
    return fused_kernel_ops(kernel) is not None


def split_kernel_names(joined: object) -> list[str]:
    """The kernel names of a comma-joined list (``ByLine.compiled_kernels``,
    ``uncredited_kernels``). Only commas outside brackets part names: a library kernel's
    demangled name has its own within its template arguments and parameters
    (``void at::native::vectorized_elementwise_kernel<4, FillFunctor<float>, …>(int, …)``)."""
    names, depth, start = [], 0, 0
    text = "" if joined is None or joined != joined else str(joined)  # None / NaN: no names
    for i, char in enumerate(text):
        if char in "(<[{":
            depth += 1
        elif char in ")>]}":
            depth = max(depth - 1, 0)
        elif char == "," and depth == 0:
            names.append(text[start:i])
            start = i + 1
    names.append(text[start:])
    return [name.strip() for name in names if name.strip()]


def fusion_evidence(
    eager: Trace,
    compiled: Trace,
    compile_log: CompileLog | str | os.PathLike[str] | None = None,
    eager_lines: Trace | None = None,
) -> tuple[pd.DataFrame | None, LineRecord | None]:
    """The compiler's credits and the source lines of both sides, from what is available:
    the eager side's line marks (or Python stacks) and, when given, the compiled side's compile
    log (a ``CompileLog`` or a path :func:`traceviz.parse.compile_log.read_compile_log` reads).
    ``eager_lines`` is the run's lines trace (the eager steps profiled again under the line
    marks): each eager kernel then gets the line of its twin there
    (:func:`~traceviz.analysis.fusion.line_transfer.transfer_lines`), else the eager trace's own.
    ``(None, None)`` when neither gives anything."""
    transfer = transfer_lines(eager, eager_lines) if eager_lines is not None else None
    eager_lines_table = eager_kernel_lines(eager) if transfer is None else transfer.lines
    eager_located = _eager_lines(eager_lines_table)
    compiled_lines = _empty_compiled()
    compiled_ops: dict[str, frozenset[str]] = {}
    log = read_log(compile_log)
    if log is not None:
        compiled_lines, compiled_ops = _compiled_lines(compiled, log)
    if eager_located.empty and compiled_lines.empty:
        return None, None
    record = LineRecord(
        eager=_found_files(eager_located),
        compiled=_found_files(compiled_lines),
        compiled_ops=compiled_ops,
        recorded=frozenset(compiled_ops) | frozenset(compiled_lines["kernel"].astype(str)),
        transfer=transfer,
    )
    compiler = compiler_credits(eager, compiled, record) if compile_log is not None else None
    return compiler, record


def _found_files(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with each ``file`` where it is on this machine (a run directory stores them
    relative to itself; a moved run or a clone finds them elsewhere:
    :func:`traceviz.source_files.locate`), as recorded when it is not here. Both sides go
    through it, so their spellings still meet."""
    if table.empty or "file" not in table:
        return table
    files = {f: str(locate(f) or f) for f in table["file"].dropna().astype(str).unique()}
    if all(k == v for k, v in files.items()):
        return table
    return table.assign(file=table["file"].map(lambda f: files.get(str(f), f), na_action="ignore"))


def read_log(compile_log: CompileLog | str | os.PathLike[str] | None) -> CompileLog | None:
    """A compile log read once: None stays None, a path is read
    (:func:`~traceviz.parse.compile_log.read_compile_log`, which raises TraceFormatError
    naming it when it holds no log), a read log is kept."""
    if compile_log is None or isinstance(compile_log, CompileLog):
        return compile_log
    return read_compile_log(Path(compile_log))


def _empty_compiled() -> pd.DataFrame:
    return _frame(["kernel", "file", "line", "code", "function"])


def _eager_lines(table: pd.DataFrame) -> pd.DataFrame:
    """``eager_kernel_lines`` (kernel_row, file, line, function, code) as LineRecord.eager."""
    if table is None or table.empty:
        return _frame(["eager_row", "file", "line", "code", "function", "exact"])
    out = table.rename(columns={"kernel_row": "eager_row"})
    out = out[out["file"].notna() & out["line"].notna()]
    code = out["code"] if "code" in out else pd.Series("", index=out.index)
    function = out["function"] if "function" in out else pd.Series("", index=out.index)
    exact = out["exact"] if "exact" in out else pd.Series(True, index=out.index)
    return pd.DataFrame(
        {
            "eager_row": out["eager_row"].to_numpy(dtype=np.int64),
            "file": out["file"].astype(str).to_numpy(),
            "line": out["line"].to_numpy(dtype=np.int64),
            "code": code.fillna("").astype(str).to_numpy(),
            "function": function.fillna("").astype(str).to_numpy(),
            "exact": exact.fillna(True).astype(bool).to_numpy(),
        }
    )


def _compiled_lines(
    compiled: Trace, log: CompileLog
) -> tuple[pd.DataFrame, dict[str, frozenset[str]]]:
    """Per compiled kernel name (as the trace shows it): its source lines, and the op keys
    of its post-grad nodes."""

    prov = compiled_kernel_provenance(compiled, log)
    if prov is None or prov.empty:
        return _empty_compiled(), {}
    keep = prov["prov_kernel"].notna().to_numpy(dtype=bool)
    names = compiled.kernels[Kernels.name].astype(object).to_numpy()
    trace_names = names[prov["kernel_row"].to_numpy(dtype=np.int64)[keep]].tolist()
    prov_kernels = prov["prov_kernel"].to_numpy(dtype=object)[keep].tolist()
    nodes = prov["post_grad_nodes"].to_numpy(dtype=object)[keep].tolist()
    calls = _calls(compiled, prov)[keep].tolist()
    first = dict.fromkeys(zip(trace_names, prov_kernels, strict=True), -1)
    per_kernel = []  # (trace name, prov kernel, post-grad nodes, a call): each pair once
    for i, pair in enumerate(zip(trace_names, prov_kernels, strict=True)):
        if first[pair] < 0:
            first[pair] = i
            per_kernel.append((*pair, nodes[i], calls[i]))
    return _held_lines(per_kernel, log.lines), _node_ops(per_kernel)


def _calls(compiled: Trace, prov: pd.DataFrame) -> np.ndarray:
    """Per provenance row: the kernel does the call's own op (its ops are the call's). The
    call itself (``primary``), and a further kernel launched by that same op, as a library
    launches the split-K reduction of its GEMM; not work nested in the call under another op
    (the ``aten::copy_`` inside a CPU ``aten::addmm``)."""
    n = len(prov)
    primary = (
        prov["primary"].fillna(True).astype(bool).to_numpy(dtype=bool)
        if "primary" in prov
        else np.ones(n, dtype=bool)
    )
    if primary.all() or "kernel" not in prov:
        return primary
    rows = prov["kernel_row"].to_numpy(dtype=np.int64)
    op_names = compiled.kernels[Kernels.op_name].astype(object).to_numpy()[rows]
    logged = prov["kernel"].astype(object).to_numpy()
    same = np.array(
        [isinstance(o, str) and isinstance(k, str) and o == extern_op_name(k)
         for o, k in zip(op_names, logged, strict=True)],
        dtype=bool,
    )  # fmt: skip
    return primary | same


def _held_lines(per_kernel: list[tuple[Any, Any, Any, bool]], lines: pd.DataFrame) -> pd.DataFrame:
    """(kernel, file, line, code, function) of each kernel's provenance lines, in the order
    of a join of the two (kernels first seen first, then the log's lines), each
    (kernel, file, line) once."""
    at: dict[Any, list[int]] = {}
    for j, key in enumerate(lines["prov_kernel"].tolist()):
        at.setdefault(key, []).append(j)
    files = lines["file"].tolist()
    numbers = lines["line"].tolist()
    codes = lines["code"].tolist()
    functions = lines["function"].tolist()
    rows: dict[tuple[Any, Any, Any], int] = {}
    for name, prov_kernel, _, _ in per_kernel:
        for j in at.get(prov_kernel, []):
            rows.setdefault((name, _same(files[j]), _same(numbers[j])), j)
    picked = list(rows.items())
    return pd.DataFrame(
        {
            "kernel": pd.Series([name for (name, _, _), _ in picked], dtype="str"),
            "file": pd.Series([files[j] for _, j in picked], dtype=lines["file"].dtype),
            "line": pd.Series([numbers[j] for _, j in picked], dtype=lines["line"].dtype),
            "code": pd.Series([codes[j] for _, j in picked], dtype=object).fillna("").astype(str),
            "function": pd.Series([functions[j] for _, j in picked], dtype=object)
            .fillna("")
            .astype(str),
        }
    )


def _same(value: Any) -> Any:
    """A key part as drop_duplicates compares it: every missing value the same."""
    return None if value is None or value is pd.NA or value != value else value


def _node_ops(per_kernel: list[tuple[Any, Any, Any, bool]]) -> dict[str, frozenset[str]]:
    """Per compiled kernel name: the op keys of its post-grad nodes (its calls' nodes only)."""
    ops: dict[str, set[str]] = {}
    for name, _, nodes, is_call in per_kernel:
        ops.setdefault(str(name), set())
        if not is_call:  # work nested in a call (the copy_ inside addmm) is not the call's op
            continue
        for node in str(nodes or "").split(","):
            base = node_op(node)
            if base:
                ops.setdefault(str(name), set()).update(name_keys(f"aten::{base}"))
    return {k: frozenset(v) for k, v in ops.items()}


#: Overload names Inductor appends to a post-grad node made from an OpOverload
#: (``aten.mm.default`` → ``mm_default``, ``aten.add.Tensor`` → ``add_tensor_3``).
_OVERLOAD_SUFFIXES = ("_default", "_tensor", "_scalar")


def node_op(node: str) -> str:
    """The op a post-grad node's name stands for: its counter and overload dropped
    (``mm_default_5`` → ``mm``, ``add_tensor`` → ``add``, ``var_mean_2`` → ``var_mean``); an
    op whose own name ends like an overload (``scalar_tensor``) is kept."""
    base = node.strip().rstrip("0123456789").rstrip("_")
    if base in OP_ALIASES:
        return base
    for suffix in _OVERLOAD_SUFFIXES:
        if base.endswith(suffix) and len(base) > len(suffix):
            return base[: -len(suffix)]
    return base
