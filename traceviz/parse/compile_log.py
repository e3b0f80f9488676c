"""The compiler's own record of a compilation: Inductor provenance, source lines, compile times.

Stage: structured compile log (``torch._logging.trace_structured`` records) → typed tables.
Three sources are read, all without torch:

- a run directory's ``compile_log.jsonl.gz`` (written by :mod:`traceviz.runner.compile_log`):
  one JSON object per line, ``{"metadata": {...}, "payload": "..." | null}``;
- a ``TORCH_TRACE`` directory (files ``dedicated_log_torch_trace_*.log``), or one such file:
  glog-prefixed lines whose text after ``] `` is the metadata JSON, followed by the payload's
  lines, each indented by one tab (``torch/_logging/_internal.py``, ``TorchLogsFormatter``).

What is kept: ``inductor_provenance_tracking_node_mappings`` (kernel → post-grad → pre-grad FX
nodes), ``inductor_provenance_tracking_kernel_stack_traces`` (kernel → user source frames),
``inductor_output_code`` (only the ``graph_N_`` kernel-name prefix the CPU trace shows),
``compilation_metrics`` and ``dynamo_graph_break_reason`` (per-frame compile facts), and the
runner's ``traceviz_inductor_node_bytes`` (Inductor's per-node byte estimate).
"""

from __future__ import annotations

import gzip
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from traceviz import schema
from traceviz.errors import TraceFormatError
from traceviz.schema import CompileFrames as F
from traceviz.schema import ProvenanceKernels as P
from traceviz.schema import ProvenanceLines as L

COMPILE_LOG = "compile_log.jsonl.gz"  # the run directory's file
TORCH_TRACE_PREFIX = "dedicated_log_torch_trace_"

#: The Inductor setting that writes the provenance records below into the structured log
#: (with ``TORCH_TRACE=DIR`` in the environment); a log written without it has none.
PROVENANCE_SETTING = "torch._inductor.config.trace.provenance_tracking_level = 1"
NODE_MAPPINGS = "inductor_provenance_tracking_node_mappings"
STACK_TRACES = "inductor_provenance_tracking_kernel_stack_traces"
NODE_BYTES = "traceviz_inductor_node_bytes"
OUTPUT_CODE = "inductor_output_code"
METRICS = "compilation_metrics"
GRAPH_BREAK = "dynamo_graph_break_reason"

# The runner's source-line marker in eager traces: "traceviz line <file>(<line>): <function>".
LINE_MARK_PREFIX = "traceviz line "
# The runner's own wait for the device at the end of each profiled CUDA step (an annotation
# around torch.cuda.synchronize): the harness, not the model, so no finding counts it.
STEP_SYNC_MARK = "traceviz step sync"

# Frames that are library code, folded to their caller: torch and the compiler stack it
# drives, the standard library, frozen modules and the runner's line-marking hook. Model
# libraries in site-packages (transformers, timm, ...) are model code: their lines are where the
# ops are written (a GPT-2 from transformers would otherwise be one line, the call of the
# model), and a pip-installed traceviz's built-in models must keep their lines.
LIBRARY_PARTS = ("<frozen ", "/traceviz/runner/lines.py")
# torch's own packages where pip puts them, or as the relative "torch/nn/…" of with_stack
# frames; not any folder named torch (a venv in /opt/torch/.venv holds model libraries too)
_TORCH = re.compile(r"(?:(?:site|dist)-packages/|^/)(?:torch|functorch|torchgen|triton)/")
_STDLIB = re.compile(r"/lib/python3(?:\.\d+)?/(?!(?:site|dist)-packages/)")

_GLOG = re.compile(r"^(?:\[rank\d+\]:)?[VIWEC]\d{4} [\d:.]+ +\d+ [^\]]*\](?: \[[^\]]*\])* (\{.*)$")
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>.+)$')
_PREFIX = re.compile(r"\bgraph_(\d+)_([A-Za-z0-9_]+)")
_KERNEL_KEY = re.compile(r"^(?P<kernel>.+):(?P<handle>\d+)$")


@dataclass(frozen=True)
class Record:
    """One structured-log record: its metadata dict and payload text (None when it has none)."""

    metadata: dict[str, Any]
    payload: str | None

    @property
    def name(self) -> str:
        """The artifact name, or the record's own kind (``compilation_metrics``, …)."""
        artifact = self.metadata.get("artifact")
        if isinstance(artifact, dict) and "name" in artifact:
            return str(artifact["name"])
        for key in self.metadata:
            if key not in _CONTEXT_KEYS:
                return str(key)
        return ""

    @property
    def compile_id(self) -> str:
        """Dynamo's compile id as torch prints it: ``X/Y`` (``!A/X/Y`` under compiled autograd)."""
        md = self.metadata
        frame, attempt = md.get("frame_id"), md.get("frame_compile_id")
        text = f"{'?' if frame is None else frame}/{'?' if attempt is None else attempt}"
        ca = md.get("compiled_autograd_id")
        return f"!{ca}/{text}" if ca is not None else text


_CONTEXT_KEYS = frozenset(
    ("rank", "compiled_autograd_id", "frame_id", "frame_compile_id", "attempt", "has_payload",
     "subgraph_name", "stack")
)  # fmt: skip


@dataclass(frozen=True)
class CompileLog:
    """A structured compile log as tables; columns in :mod:`traceviz.schema`.

    ``kernels`` (:class:`~traceviz.schema.ProvenanceKernels`): every kernel Inductor generated
    or called, with the FX nodes it computes and its byte estimate; ``lines``
    (:class:`~traceviz.schema.ProvenanceLines`): each kernel's user source lines; ``frames``
    (:class:`~traceviz.schema.CompileFrames`): per Dynamo frame compile time, graph breaks,
    recompile reason, cache hit. ``source`` is what was read.
    """

    source: str
    kernels: pd.DataFrame
    lines: pd.DataFrame
    frames: pd.DataFrame
    records: int = 0  # records read
    names: dict[str, int] = field(default_factory=dict)  # record name → count

    @property
    def has_provenance(self) -> bool:
        """The log maps kernels to FX nodes (written with :data:`PROVENANCE_SETTING`)."""
        return not self.kernels.empty


def read_compile_log(path: str | Path) -> CompileLog:
    """Read a run directory, a ``TORCH_TRACE`` directory, one trace log or a ``.jsonl[.gz]``.

    Raises :class:`TraceFormatError` naming the file when nothing readable is there or a
    record is malformed.
    """
    target = Path(path)
    records = list(iter_records(target))
    if not records:
        raise TraceFormatError(target, "no structured compile-log records in it")
    return build_compile_log(records, source=str(target))


def find_compile_log(directory: Path) -> list[Path]:
    """The compile-log files of a directory: the run's file, else TORCH_TRACE logs (sorted)."""
    own = directory / COMPILE_LOG
    if own.is_file():
        return [own]
    return sorted(directory.glob(f"{TORCH_TRACE_PREFIX}*.log"))


def iter_records(target: Path) -> Iterator[Record]:
    """Every record of ``target`` (a file or a directory), in log order."""
    if target.is_dir():
        files = find_compile_log(target)
        if not files:
            raise TraceFormatError(
                target, f"no {COMPILE_LOG} and no {TORCH_TRACE_PREFIX}*.log files in this folder"
            )
    elif target.is_file():
        files = [target]
    else:
        raise TraceFormatError(target, "no such file or directory")
    for file in files:
        yield from _read_file(file)


def _read_file(file: Path) -> Iterator[Record]:
    try:
        raw = file.read_bytes()
        text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8")
    except (OSError, EOFError, gzip.BadGzipFile, UnicodeDecodeError) as err:
        raise TraceFormatError(file, f"cannot read the compile log: {err}") from err
    first = next((line for line in text.splitlines() if line.strip()), "")
    if first.startswith("{"):
        yield from _read_jsonl(file, text)
    else:
        yield from _read_torch_trace(file, text)


def _read_jsonl(file: Path, text: str) -> Iterator[Record]:
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as err:
            raise TraceFormatError(file, f"line {number} is not JSON: {err}") from err
        if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
            raise TraceFormatError(file, f"line {number} has no metadata object")
        payload = obj.get("payload")
        yield Record(obj["metadata"], payload if isinstance(payload, str) else None)


def _read_torch_trace(file: Path, text: str) -> Iterator[Record]:
    metadata: dict[str, Any] | None = None
    payload: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("\t"):
            if metadata is None:
                raise TraceFormatError(file, f"line {number}: payload line before any record")
            payload.append(line[1:])
            continue
        if not line.strip():
            continue
        match = _GLOG.match(line)
        if match is None:
            raise TraceFormatError(file, f"line {number} is not a TORCH_TRACE record")
        if metadata is not None:
            yield Record(metadata, "\n".join(payload) if payload else None)
        try:
            metadata = json.loads(match.group(1))
        except ValueError as err:
            raise TraceFormatError(file, f"line {number}: metadata is not JSON: {err}") from err
        if not isinstance(metadata, dict):
            raise TraceFormatError(file, f"line {number}: metadata is not a JSON object")
        payload = []
    if metadata is not None:
        yield Record(metadata, "\n".join(payload) if payload else None)


# --- records → tables ------------------------------------------------------------------------


def build_compile_log(records: Iterable[Record], *, source: str) -> CompileLog:
    """Tables from records (see :class:`CompileLog`)."""
    graphs: list[_Graph] = []
    latest: dict[str, _Graph] = {}  # compile id → its latest graph
    prefixes: dict[str, list[int | None]] = defaultdict(list)  # compile id → graph N per graph
    metrics: list[Record] = []
    breaks: dict[str, list[str]] = defaultdict(list)
    names: dict[str, int] = defaultdict(int)
    count = 0
    for record in records:
        count += 1
        name = record.name
        names[name] += 1
        cid = record.compile_id
        if name == NODE_MAPPINGS:
            index = sum(1 for g in graphs if g.compile_id == cid)
            graph = _Graph(cid, index, _json(record, source) or {})
            graphs.append(graph)
            latest[cid] = graph
        elif name == STACK_TRACES and cid in latest and latest[cid].stacks is None:
            latest[cid].stacks = _json(record, source) or {}
        elif name == NODE_BYTES and cid in latest:
            latest[cid].node_bytes = _json(record, source) or []
        elif name == OUTPUT_CODE:
            prefixes[cid].append(_graph_prefix(record.payload))
        elif name == METRICS:
            metrics.append(record)
        elif name == GRAPH_BREAK:
            breaks[cid].append(_break_reason(record.payload or ""))
    for graph in graphs:
        ids = prefixes.get(graph.compile_id, [])
        graph.graph = ids[graph.index] if graph.index < len(ids) else None
    return CompileLog(
        source=source,
        kernels=_kernels_table(graphs),
        lines=_lines_table(graphs),
        frames=_frames_table(metrics, breaks),
        records=count,
        names=dict(names),
    )


@dataclass
class _Graph:
    """One Inductor graph's provenance (forward, or backward, of one compile id)."""

    compile_id: str
    index: int
    mappings: dict[str, Any]
    stacks: dict[str, Any] | None = None
    node_bytes: list[Any] = field(default_factory=list)
    graph: int | None = None

    def prefix(self) -> str:
        return self.compile_id if self.index == 0 else f"{self.compile_id}[{self.index}]"

    def kernel_nodes(self) -> dict[str, list[str]]:
        """``kernel:handle`` → post-grad node names. Inductor logs an empty mapping for a
        backward graph (no pre-grad graph to map to): its kernels are then the keys of the
        stack-trace artifact, with no node names."""
        for key in ("cppCodeToPost", "tritonCodeToPost", "kernelToPost"):
            value = self.mappings.get(key)
            if isinstance(value, dict) and value:
                return {str(k): [str(n) for n in v] for k, v in value.items()}
        return {str(k): [] for k in (self.stacks or {})}


def _json(record: Record, source: str) -> Any:
    if record.payload is None or not record.payload.strip():
        return None
    try:
        return json.loads(record.payload)
    except ValueError as err:
        raise TraceFormatError(source, f"{record.name} payload is not JSON: {err}") from err


def _graph_prefix(code: str | None) -> int | None:
    """N of the ``graph_N_`` prefix Inductor baked into profiled C++ kernel names, if any."""
    match = _PREFIX.search(code or "")
    return int(match.group(1)) if match else None


def split_kernel_key(key: str) -> tuple[str, int | None]:
    """``"cpp_fused_cos_relu_0:1"`` → ``("cpp_fused_cos_relu_0", 1)``."""
    match = _KERNEL_KEY.match(key)
    return (match.group("kernel"), int(match.group("handle"))) if match else (key, None)


def is_extern(kernel: str) -> bool:
    """A library call Inductor made (``extern_kernels.addmm``, ``aten.convolution``…)."""
    return "." in kernel or not kernel.startswith(("cpp_", "triton_", "cuda_", "halide_"))


def _kernels_table(graphs: list[_Graph]) -> pd.DataFrame:
    rows = []
    for graph in graphs:
        post_to_pre = graph.mappings.get("postToPre") or {}
        kernel_nodes = graph.kernel_nodes()
        bytes_by_key = _kernel_bytes(kernel_nodes, graph.node_bytes)
        for key, nodes in kernel_nodes.items():
            kernel, handle = split_kernel_key(key)
            pre = dict.fromkeys(str(p) for n in nodes for p in post_to_pre.get(n, []))
            rows.append(
                {
                    P.prov_kernel: f"{graph.prefix()}:{key}",
                    P.compile_id: graph.compile_id,
                    P.graph_index: graph.index,
                    P.graph: graph.graph,
                    P.kernel: kernel,
                    P.handle: handle,
                    P.post_grad_nodes: ",".join(nodes),
                    P.pre_grad_nodes: ",".join(pre),
                    P.est_bytes: bytes_by_key.get(key),
                    P.extern: is_extern(kernel),
                }
            )
    return _table(rows, schema.PROVENANCE_KERNELS_DTYPES)


def _kernel_bytes(kernel_nodes: dict[str, list[str]], node_bytes: list[Any]) -> dict[str, int]:
    """Inductor's per-scheduler-node bytes, credited to the kernel that node became.

    Scheduler nodes come in code-generation order, and handles number the kernels in the same
    order. A library-call node (``extern``) goes to the next library call of the same op; any
    other node to the first generated kernel at or after the previous match whose FX nodes
    share one of its origins, else (several nodes in one kernel) to the generated kernel
    sharing the most. Each node is credited once; a node matching nothing is left out.
    """
    out: dict[str, int] = {}
    ordered = sorted(kernel_nodes, key=lambda k: (split_kernel_key(k)[1] or 0, k))
    generated = [k for k in ordered if not is_extern(split_kernel_key(k)[0])]
    calls = [k for k in ordered if is_extern(split_kernel_key(k)[0])]
    sets = [set(kernel_nodes[key]) for key in generated]  # empty: not known (backward)
    cursor = 0
    for item in node_bytes:
        if not isinstance(item, dict) or not isinstance(item.get("bytes"), int):
            continue
        origins = set(item.get("origins") or [])
        key: str | None
        if item.get("extern"):
            op = _call_op(str(item.get("kernel") or ""))
            key = next((k for k in calls if _call_op(split_kernel_key(k)[0]) == op), None)
            calls.remove(key) if key is not None else None
        else:
            found = next(
                (i for i in range(cursor, len(sets)) if origins & sets[i] or not sets[i]), None
            )
            if found is not None:
                cursor = found + 1
            else:
                overlaps = [len(origins & s) for s in sets]
                best = max(range(len(sets)), key=overlaps.__getitem__, default=None)
                found = best if best is not None and overlaps[best] > 0 else None
            key = generated[found] if found is not None else None
        if key is not None:
            out[key] = out.get(key, 0) + int(item["bytes"])
    return out


def _call_op(kernel: str) -> str:
    """``extern_kernels.addmm`` / ``torch.ops.aten.addmm.default`` → ``addmm``."""
    for prefix in ("extern_kernels.", "torch.ops.aten.", "aten."):
        kernel = kernel.removeprefix(prefix)
    return kernel.split(".")[0]


def _lines_table(graphs: list[_Graph]) -> pd.DataFrame:
    rows = []
    for graph in graphs:
        for key, traces in (graph.stacks or {}).items():
            kernel, handle = split_kernel_key(key)
            seen: set[tuple[str, int]] = set()
            for trace in traces if isinstance(traces, list) else [traces]:
                frame = user_frame(str(trace))
                if frame is None or (frame[0], frame[1]) in seen:
                    continue
                seen.add((frame[0], frame[1]))
                rows.append(
                    {
                        L.prov_kernel: f"{graph.prefix()}:{key}",
                        L.compile_id: graph.compile_id,
                        L.kernel: kernel,
                        L.handle: handle,
                        L.file: frame[0],
                        L.line: frame[1],
                        L.function: frame[2],
                        L.code: frame[3],
                    }
                )
    return _table(rows, schema.PROVENANCE_LINES_DTYPES)


def parse_frames(text: str) -> list[tuple[str, int, str, str | None]]:
    """``(file, line, function, code)`` of each ``File "…", line N, in f`` of a Python stack
    text, outermost first; ``code`` is the next line's text, stripped (None when absent)."""
    lines = text.splitlines()
    frames = []
    for i, line in enumerate(lines):
        match = _FRAME.match(line)
        if match is None:
            continue
        code = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if not code or _FRAME.match(lines[i + 1]) or set(code) <= set("^~ "):
            code = ""
        frames.append((match["file"], int(match["line"]), match["function"].strip(), code or None))
    return frames


def is_library(file: str) -> bool:
    """Whether a source file is library code (torch, Triton, the standard library; see
    :data:`LIBRARY_PARTS`); packages such as transformers count as model code."""
    path = "/" + file.replace("\\", "/")  # relative "torch/nn/…" frames (with_stack) too
    return (
        any(part in path for part in LIBRARY_PARTS)
        or _TORCH.search(path) is not None
        or _STDLIB.search(path) is not None
    )


def user_frame(text: str) -> tuple[str, int, str, str | None] | None:
    """The innermost user-code frame of a stack text: frames in library code are folded to
    the user frame that called them. None when every frame is library code."""
    frames = parse_frames(text)
    for frame in reversed(frames):
        if not is_library(frame[0]):
            return frame
    return None


def _lines(text: str) -> list[str]:
    """The text's non-blank lines, stripped."""
    return [line.strip() for line in text.splitlines() if line.strip()]


def _break_reason(text: str) -> str:
    """``"Data-dependent branching at /m.py:137"`` from Dynamo's graph-break text."""
    lines = _lines(text)
    reason = next(
        (x.split(":", 1)[1].strip() for x in lines if x.startswith("Graph Break Reason:")), ""
    )
    where = lines[0].split(" at ", 1)[1] if lines and " at " in lines[0] else ""
    if reason and where:
        return f"{reason} at {where}"[:300]
    return reason or (lines[0][:300] if lines else "")


def _frames_table(metrics: list[Record], breaks: dict[str, list[str]]) -> pd.DataFrame:
    rows = []
    for record in metrics:
        m = record.metadata.get(METRICS)
        if not isinstance(m, dict):
            continue
        cid = str(m.get("compile_id") or record.compile_id)
        hits = _num(m.get("inductor_fx_local_cache_hit_count")) or 0
        hits += _num(m.get("inductor_fx_remote_cache_hit_count")) or 0
        misses = _num(m.get("inductor_fx_local_cache_miss_count")) or 0
        misses += _num(m.get("inductor_fx_remote_cache_miss_count")) or 0
        rows.append(
            {
                F.compile_id: cid,
                F.function: m.get("co_name"),
                F.file: m.get("co_filename"),
                F.line: _num(m.get("co_firstlineno")),
                F.compile_time_s: _num(m.get("entire_frame_compile_time_s"), float),
                F.inductor_compile_time_s: _num(m.get("inductor_compile_time_s"), float),
                F.graph_ops: _num(m.get("graph_op_count")),
                F.graph_breaks: max(_num(m.get("num_graph_breaks")) or 0, len(breaks.get(cid, []))),
                F.break_reason: "; ".join(breaks[cid]) if breaks.get(cid) else None,
                F.recompile_reason: _text(m.get("recompile_reason")),
                F.fail_reason: _text(m.get("fail_reason")),
                F.cache_hit: hits > 0 and misses == 0,
            }
        )
    return _table(rows, schema.COMPILE_FRAMES_DTYPES)


def _table(rows: list[dict[str, Any]], dtypes: dict[str, str]) -> pd.DataFrame:
    if not rows:
        return schema.empty_table(dtypes)
    df = pd.DataFrame(rows, columns=list(dtypes))
    return schema.conform(df.astype({c: d for c, d in dtypes.items() if d != "object"}), dtypes)


def _num(value: Any, kind: type = int) -> Any:
    """``value`` as ``kind`` (int, or float) when it is a JSON number, else None."""
    return kind(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    """The first line of a metrics text, at most 300 characters."""
    if not value:
        return None
    lines = _lines(str(value))
    return lines[0][:300] if lines else ""
