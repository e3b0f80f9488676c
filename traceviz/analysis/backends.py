"""Every backend of a run side by side: eager, torch.compile and each ONNX Runtime level.

:func:`backends_view` reads a run directory made with ``traceviz run MODEL --backends
eager,compile,onnxruntime`` (its run.json ``latency`` and ``backends.onnxruntime`` sections,
``docs/run-json.md``; its ``onnx/`` graphs and profiles) next to the eager-vs-compiled
comparison, and gives a :class:`BackendsView`:

- ``rows`` (:class:`BackendRow`): one row per backend or level;
- ``op_counts``: nodes per ``domain:op_type`` of the exported graph and of each level
  (:func:`~traceviz.analysis.onnx.graph.op_counts`);
- ``fusion``: each node group ORT fused, mapped back to the exported nodes and aten ops it
  replaced, its time, and the Inductor kernels that fused the same ops
  (:func:`~traceviz.analysis.onnx.fusion.cross_fusion`);
- ``folded``: exported nodes no optimized node stands for (constant-folded, removed).

A run without ONNX Runtime data has no view (None). A level whose files are missing or
unreadable is left out of the graph tables and named in ``problems``; it keeps its row.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import msgspec
import numpy as np
import pandas as pd

from traceviz import schema
from traceviz.analysis.compare import Comparison, Metric
from traceviz.analysis.onnx.fusion import CROSS_FUSION_DTYPES, cross_fusion
from traceviz.analysis.onnx.graph import (
    EXPORTED,
    FOLDED_DTYPES,
    GraphMapping,
    map_graph,
    op_counts,
)
from traceviz.analysis.onnx.nodes import Graph, read_graph
from traceviz.analysis.onnx.profile_nodes import ProfileNodes, read_profile_nodes
from traceviz.errors import TraceFormatError, UsageError
from traceviz.schema import Float, Int, Text, dtypes

__all__ = [
    "BACKEND_DTYPES",
    "BackendRow",
    "BackendsView",
    "Fastest",
    "backends_view",
    "fastest_backend",
    "has_backends",
]

ORT_PREFIX = "onnxruntime:"
EXPORTED_GRAPH = "onnx/model.onnx"
LEVEL_ORDER = ("disable", "basic", "extended", "layout", "all")


Flag = Annotated[str, "boolean"]  # a column of nullable booleans (others: traceviz.schema)


class BackendRow:
    """Columns of :attr:`BackendsView.rows`: one row per backend (eager, compile,
    ``onnxruntime:<level>``). Step times are measured outside any profiler (round-robin
    rounds when run.json has them, else its eager/compiled timing); kernels and kernel time
    are measured in the traces (Kineto; an ORT level's profile: its node events); bytes are
    estimated."""

    backend: Text = "backend"  # "eager", "compile", "onnxruntime:<level>" (str)
    step_median_us: Float = "step_median_us"  # median step time, µs (float64; NaN: not timed)
    step_iqr_us: Float = "step_iqr_us"  # its interquartile range, µs (float64)
    step_q1_us: Float = "step_q1_us"  # 25th and 75th percentiles of the step times, µs (float64;
    step_q3_us: Float = "step_q3_us"  # NaN where run.json kept no samples)
    ratio_to_eager: Float = "ratio_to_eager"  # median / eager's median (> 1: slower) (float64)
    timing: Text = "timing"  # "round-robin" (run.json latency) or "timed" (run.json timing) (str)
    kernels_per_step: Float = "kernels_per_step"  # kernels (ORT: node runs) per step (float64)
    kernel_time_per_step_us: Float = "kernel_time_per_step_us"  # their time per step, µs (float64)
    est_bytes_per_step: Float = "est_bytes_per_step"  # estimated traffic per step, bytes (float64)
    max_abs_diff: Float = "max_abs_diff"  # largest |output − eager output| (float64; NaN: eager)
    check_passed: Flag = "check_passed"  # outputs allclose to eager's (boolean; NA: not checked)
    one_time_s: Float = "one_time_s"  # compile (first call), or export + session creation, s
    one_time: Text = "one_time"  # what one_time_s counts (str)
    nodes: Int = "nodes"  # nodes in the ORT level's graph (Int64; NA for eager/compile)
    error: Text = "error"  # the level failed: its error ("" none) (str)
    culprit: Text = "culprit"  # its output check failed: the node isolated as wrong, "node (op):
    # error", or the reference evaluator's disagreement ("" none) (str)


BACKEND_DTYPES: dict[str, str] = dtypes(BackendRow)


@dataclass(frozen=True)
class BackendsView:
    """The backends of a run side by side (module docstring). ``export`` is run.json's
    export record (exporter, opset, seconds, fallback_reason) as a dict; ``mappings`` each
    level's :class:`~traceviz.analysis.onnx.graph.GraphMapping`; ``profiles`` each level's
    :class:`~traceviz.analysis.onnx.profile_nodes.ProfileNodes`."""

    rows: pd.DataFrame
    op_counts: pd.DataFrame
    fusion: pd.DataFrame
    folded: pd.DataFrame
    export: dict[str, Any] = field(default_factory=dict)
    ort_version: str | None = None
    threads: int | None = None
    latency_method: str | None = None
    problems: tuple[str, ...] = ()
    mappings: dict[str, GraphMapping] = field(default_factory=dict)
    profiles: dict[str, ProfileNodes] = field(default_factory=dict)

    @property
    def fastest(self) -> Fastest | None:
        """The backend with the lowest median step time (:func:`fastest_backend`)."""
        return fastest_backend(self.rows)

    @property
    def levels(self) -> list[str]:
        """The ORT levels, in run order."""
        rows = self.rows[BackendRow.backend]
        return [str(b)[len(ORT_PREFIX) :] for b in rows if str(b).startswith(ORT_PREFIX)]


@dataclass(frozen=True)
class Fastest:
    """The fastest backend whose outputs did not fail their check, and the next one.

    ``clear`` is a rough separation test on the medians and IQRs measured: the gap between
    the two medians is larger than half the sum of their IQRs (None without a runner-up).
    """

    backend: str
    median_us: float
    ratio_to_eager: float | None
    runner_up: str | None
    runner_up_median_us: float | None
    clear: bool | None

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def fastest_backend(rows: pd.DataFrame) -> Fastest | None:
    """:class:`Fastest` among ``rows`` (:class:`BackendRow`) with a median step time and an
    output check that did not fail (eager, the reference, always qualifies); None when none."""
    timed = rows[rows[BackendRow.step_median_us].notna()]
    timed = timed[timed[BackendRow.check_passed].fillna(True).astype(bool)]
    timed = timed[timed[BackendRow.error] == ""]
    if timed.empty:
        return None
    ordered = timed.sort_values(BackendRow.step_median_us, kind="stable").to_dict("records")
    best = ordered[0]
    ratio = best[BackendRow.ratio_to_eager]
    if len(ordered) == 1:
        return Fastest(best[BackendRow.backend], best[BackendRow.step_median_us],
                       None if _nan(ratio) else ratio, None, None, None)  # fmt: skip
    second = ordered[1]
    gap = second[BackendRow.step_median_us] - best[BackendRow.step_median_us]
    spread = (_zero(best[BackendRow.step_iqr_us]) + _zero(second[BackendRow.step_iqr_us])) / 2
    return Fastest(
        backend=str(best[BackendRow.backend]),
        median_us=float(best[BackendRow.step_median_us]),
        ratio_to_eager=None if _nan(ratio) else float(ratio),
        runner_up=str(second[BackendRow.backend]),
        runner_up_median_us=float(second[BackendRow.step_median_us]),
        clear=bool(gap > spread),
    )


def _zero(value: Any) -> float:
    return 0.0 if _nan(value) else float(value)


def has_backends(value: object) -> bool:
    """Whether ``value`` (a report) carries a :class:`BackendsView`."""
    return isinstance(getattr(value, "backends", None), BackendsView)


def backends_view(directory: str | Path, comparison: Comparison) -> BackendsView | None:
    """The backends of the run directory ``directory`` beside its ``comparison`` (eager vs
    compiled); None when the run has no ONNX Runtime data."""
    root = Path(directory)
    sections = _sections(root, comparison.run_info)
    ort, latency = sections.get("onnxruntime") or {}, sections.get("latency") or {}
    levels = _levels(root, ort)
    if not levels and not ort and not latency:
        return None
    problems: list[str] = []
    export = ort.get("export") or {}
    exported = _graph(root, export.get("path") if export else EXPORTED_GRAPH, problems)
    graphs, profiles = _read_levels(root, levels, problems)
    mappings = {
        name: map_graph(exported, graph, level=name) for name, graph in graphs.items()
    } if exported is not None else {}  # fmt: skip
    return BackendsView(
        rows=_rows(comparison, ort, latency, levels, profiles),
        op_counts=op_counts({EXPORTED: exported, **graphs} if exported else graphs),
        fusion=_fusion(comparison, mappings, profiles),
        folded=_concat([m.folded for m in mappings.values()], FOLDED_DTYPES),
        export=dict(export),
        ort_version=ort.get("ort_version"),
        threads=ort.get("threads") or latency.get("threads"),
        latency_method=latency.get("method"),
        problems=tuple(problems),
        mappings=mappings,
        profiles=profiles,
    )


def _read_levels(
    root: Path, levels: list[dict[str, Any]], problems: list[str]
) -> tuple[dict[str, Graph], dict[str, ProfileNodes]]:
    """Each level's optimized graph and profile that could be read (the others named in
    ``problems``)."""
    graphs: dict[str, Graph] = {}
    profiles: dict[str, ProfileNodes] = {}
    for level in levels:
        name = str(level["name"])
        graph = _graph(root, level.get("graph"), problems)
        if graph is not None:
            graphs[name] = graph
        profile = _profile(root, level.get("profile"), problems)
        if profile is not None:
            profiles[name] = profile
    return graphs, profiles


def _sections(root: Path, info: Any) -> dict[str, Any]:
    """run.json's ``backends.onnxruntime`` and ``latency`` as plain dicts: from the typed
    RunInfo when it has them, else from the file itself (run.json written by a newer runner)."""
    backends = getattr(info, "backends", None)
    if info is not None and hasattr(info, "latency"):
        ort = getattr(backends, "onnxruntime", None)
        return {
            "onnxruntime": msgspec.to_builtins(ort) if ort is not None else None,
            "latency": msgspec.to_builtins(info.latency) if info.latency is not None else None,
        }
    path = root / "run.json"
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    raw_backends = raw.get("backends") if isinstance(raw, dict) else None
    ort = raw_backends.get("onnxruntime") if isinstance(raw_backends, dict) else None
    latency = raw.get("latency") if isinstance(raw, dict) else None
    return {
        "onnxruntime": ort if isinstance(ort, dict) else None,
        "latency": latency if isinstance(latency, dict) else None,
    }


def _levels(root: Path, ort: dict[str, Any]) -> list[dict[str, Any]]:
    """run.json's level records; without them, the ``onnx/ort_<level>.onnx`` files found."""
    listed = [lvl for lvl in ort.get("levels") or [] if isinstance(lvl, dict) and lvl.get("name")]
    if listed or ort:
        return listed
    found = sorted(
        (p.name[len("ort_") : -len(".onnx")] for p in (root / "onnx").glob("ort_*.onnx")),
        key=lambda n: (LEVEL_ORDER.index(n) if n in LEVEL_ORDER else len(LEVEL_ORDER), n),
    )
    return [
        {
            "name": name,
            "graph": f"onnx/ort_{name}.onnx",
            "profile": f"onnx/ort_{name}.profile.json"
            if (root / "onnx" / f"ort_{name}.profile.json").is_file()
            else None,
        }
        for name in found
    ]


def _graph(root: Path, relative: str | None, problems: list[str]) -> Graph | None:
    if not relative:
        return None
    try:
        return read_graph(root / relative)
    except (TraceFormatError, UsageError) as err:
        problems.append(str(err))
        return None


def _profile(root: Path, relative: str | None, problems: list[str]) -> ProfileNodes | None:
    if not relative:
        return None
    try:
        return read_profile_nodes(root / relative)
    except TraceFormatError as err:
        problems.append(str(err))
        return None


def _fusion(
    comparison: Comparison,
    mappings: dict[str, GraphMapping],
    profiles: dict[str, ProfileNodes],
) -> pd.DataFrame:
    fusion = comparison.fusion
    tables = [
        cross_fusion(m, profile=profiles.get(n), kernel_ops=fusion.ops, by_line=fusion.by_line)
        for n, m in mappings.items()
    ]
    return _concat(tables, CROSS_FUSION_DTYPES)


def _concat(tables: list[pd.DataFrame], dtypes: dict[str, str]) -> pd.DataFrame:
    tables = [t for t in tables if not t.empty]
    if not tables:
        return schema.conform(pd.DataFrame(columns=list(dtypes)), dtypes)
    return schema.conform(pd.concat(tables, ignore_index=True), dtypes)


def _rows(
    comparison: Comparison,
    ort: dict[str, Any],
    latency: dict[str, Any],
    levels: list[dict[str, Any]],
    profiles: dict[str, ProfileNodes],
) -> pd.DataFrame:
    timed = {str(r.get("backend")): r for r in latency.get("rows") or [] if isinstance(r, dict)}
    rows = [
        _torch_row(comparison, "eager", "a", timed),
        _torch_row(comparison, "compile", "b", timed),
    ]
    export_s = (ort.get("export") or {}).get("seconds")
    for level in levels:
        rows.append(_ort_row(level, timed, profiles.get(str(level["name"])), export_s))
    eager_median = rows[0][BackendRow.step_median_us]
    for row in rows:  # a ratio run.json did not give: from the medians
        if _nan(row[BackendRow.ratio_to_eager]) and eager_median and not _nan(eager_median):
            row[BackendRow.ratio_to_eager] = row[BackendRow.step_median_us] / eager_median
    table = pd.DataFrame(rows, columns=list(BACKEND_DTYPES))
    return schema.conform(table, BACKEND_DTYPES)


def _torch_row(
    comparison: Comparison, backend: str, side: str, timed: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    info = comparison.run_info
    row = _blank(backend)
    _timing(row, timed.get(backend))
    if row[BackendRow.timing] == "" and info is not None:
        stats = info.timing.eager if side == "a" else info.timing.compiled
        if stats is not None:
            row.update(step_median_us=stats.median_us, step_iqr_us=stats.iqr_us, timing="timed",
                       step_q1_us=stats.q1_us, step_q3_us=stats.q3_us)  # fmt: skip
    column = Metric.a if side == "a" else Metric.b
    steps = comparison.metric("step_count")[column]
    row[BackendRow.kernels_per_step] = comparison.metric("kernels_per_step")[column]
    row[BackendRow.kernel_time_per_step_us] = comparison.metric("kernel_time_per_step_us")[column]
    est = comparison.metric("est_bytes")[column]
    row[BackendRow.est_bytes_per_step] = est / steps if steps and not _nan(steps) else math.nan
    if side == "b" and info is not None:
        row[BackendRow.max_abs_diff] = _float(info.correctness.max_abs_error)
        row[BackendRow.check_passed] = info.correctness.passed
        row[BackendRow.one_time_s] = _float(info.compile.time_s)
        row[BackendRow.one_time] = "compile (first call)"
    return row


def _ort_row(
    level: dict[str, Any],
    timed: dict[str, dict[str, Any]],
    profile: ProfileNodes | None,
    export_s: Any,
) -> dict[str, Any]:
    row = _blank(ORT_PREFIX + str(level["name"]))
    _timing(row, timed.get(row[BackendRow.backend]))
    if profile is not None and profile.runs:
        row[BackendRow.kernels_per_step] = profile.calls / profile.runs
        row[BackendRow.kernel_time_per_step_us] = profile.time_us / profile.runs
        row[BackendRow.est_bytes_per_step] = profile.est_bytes / profile.runs
    check = level.get("check") or {}
    row[BackendRow.max_abs_diff] = _float(check.get("max_abs_diff"))
    row[BackendRow.check_passed] = check.get("passed")
    session = _float(level.get("session_seconds"))
    if not _nan(session):
        export = _float(export_s)
        row[BackendRow.one_time_s] = session + (0.0 if _nan(export) else export)
        row[BackendRow.one_time] = "session" if _nan(export) else "export + session"
    row[BackendRow.nodes] = level.get("nodes")
    row[BackendRow.error] = str(level.get("error") or "")
    row[BackendRow.culprit] = _culprit(check)
    return row


def _blank(backend: str) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(BACKEND_DTYPES, math.nan)
    row.update(backend=backend, timing="", one_time="", nodes=None, check_passed=None, error="")
    row[BackendRow.culprit] = ""
    return row


def _culprit(check: dict[str, Any]) -> str:
    """What the runner found wrong in a level's outputs: the isolated node, else a failed
    reference evaluation (ORT-independent) of the optimized graph."""
    culprit = check.get("culprit") or {}
    if culprit.get("node"):
        return f"{culprit['node']} ({culprit.get('op_type', '?')}): {culprit.get('error', '')}"
    reference = check.get("reference") or {}
    if reference.get("passed") is False:
        return f"reference evaluator disagrees (max |Δ| {reference.get('max_abs_diff')})"
    return ""


def _timing(row: dict[str, Any], record: dict[str, Any] | None) -> None:
    if record is None:
        return
    row[BackendRow.step_median_us] = _float(record.get("median_us"))
    row[BackendRow.step_iqr_us] = _float(record.get("iqr_us"))
    samples = [v for v in record.get("samples_us") or [] if isinstance(v, int | float)]
    if samples:
        q1, q3 = np.percentile(samples, [25, 75])
        row[BackendRow.step_q1_us], row[BackendRow.step_q3_us] = float(q1), float(q3)
    row[BackendRow.ratio_to_eager] = _float(record.get("ratio_to_eager"))
    row[BackendRow.timing] = "round-robin"


def _float(value: Any) -> float:
    try:
        return math.nan if value is None else float(value)
    except (TypeError, ValueError):
        return math.nan


def _nan(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))
