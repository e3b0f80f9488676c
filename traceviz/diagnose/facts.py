"""What the rules read about one trace: :class:`TraceFacts`, built once per trace.

Facts are always derived from a :class:`~traceviz.analysis.compare.Side` (the one analysed-trace
type, made by :func:`~traceviz.analysis.compare.analyze`) plus the trace's role: a side of a
comparison (:func:`facts_of_side`) or a lone trace (``traceviz summary``, :func:`facts_of_trace`)
get the very same analyses, so single-trace rules run the same way in both places. Helpers
turn totals into per-step figures and shares of the step.

Per step means per ``ProfilerStep#N`` window; a trace without steps is one window covering the
whole trace. Kernels belong to the step in which they were *issued* (their launch call, or
their own start for CPU kernels), since a GPU kernel may run after its step's CPU span ends.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec
import numpy as np
import numpy.typing as npt
import pandas as pd

from traceviz.analysis.compare import Side, analyze
from traceviz.analysis.fusion import chains as chain_analysis
from traceviz.analysis.fusion.chains import ChainGroup
from traceviz.analysis.kernel_kinds import INDUCTOR_SOURCES
from traceviz.analysis.kernels import Classified, issue_us
from traceviz.analysis.regions import RegionStats
from traceviz.analysis.summary import TraceSummary
from traceviz.analysis.timing.launch import LaunchOverhead, step_windows
from traceviz.analysis.timing.timeline import timeline
from traceviz.diagnose.finding import Finding, Unit, format_value
from traceviz.runs.runinfo import DynamoFacts, RunInfo, TimingStats
from traceviz.schema import ActivityKind, DeviceKind, Kernels, LaunchClass, Launches
from traceviz.trace import Trace

if TYPE_CHECKING:
    from traceviz.analysis.compare import Comparison

EAGER = "eager"
COMPILED = "compiled"
T = TypeVar("T")


@dataclass(frozen=True, eq=False)
class TraceFacts:
    """One trace and its analyses, plus what the rules need to know about its role.

    ``expect_compiled`` is True when the trace is labelled compiled (its name or file name says
    so, or run.json says it is the compiled trace); ``variant`` says which part of ``run_info``
    (run.json) describes this trace (``"eager"``/``"compiled"``, None without run.json).
    """

    name: str
    trace: Trace
    summary: TraceSummary
    kernels: pd.DataFrame  # Trace.kernels + kind/source/in_region (analysis.kernels.classify)
    launch: LaunchOverhead
    regions: RegionStats
    expect_compiled: bool = False
    variant: str | None = None
    run_info: RunInfo | None = None
    _memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(
        cls,
        side: Side,
        *,
        expect_compiled: bool,
        variant: str | None = None,
        run_info: RunInfo | None = None,
    ) -> TraceFacts:
        """The facts of an analysed ``side`` in a role (no analysis is repeated)."""
        return cls(
            name=side.name,
            trace=side.trace,
            summary=side.summary,
            kernels=side.kernels,
            launch=side.launch,
            regions=side.regions,
            expect_compiled=expect_compiled,
            variant=variant,
            run_info=run_info,
        )

    def memo(self, key: str, compute: Callable[[], T]) -> T:
        """``compute()`` once per facts object: tables several rules derive (the timeline,
        the chains) are built once. The facts themselves never change."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    @property
    def is_gpu(self) -> bool:
        """Device kernels exist (CUDA or ROCm), as opposed to a CPU-only trace."""
        return self.trace.device_kind in (DeviceKind.CUDA, DeviceKind.ROCM)

    @property
    def is_onnxruntime(self) -> bool:
        """An ONNX Runtime profile (:attr:`~traceviz.trace.TraceMeta.is_onnxruntime`): its
        kernels are graph nodes, its steps ``model_run`` calls; torch advice does not apply."""
        return self.trace.meta.is_onnxruntime

    @property
    def compiled(self) -> bool:
        """Compiled-region markers or Inductor kernels are present."""
        if self.regions.compiled:
            return True
        # on the categorical column itself: its codes, no object copy of every kernel's value
        return bool(self.kernels[Classified.source].isin(INDUCTOR_SOURCES).any())

    @property
    def uses_graphs(self) -> bool:
        """CUDA/HIP graphs replay kernels (graph launches, or kernels marked in_graph)."""
        launches = self.trace.launches[Launches.launch_class]  # (isin: by code when categorical)
        graph_launch = bool(launches.isin([LaunchClass.GRAPH_LAUNCH.value]).any())
        return graph_launch or bool(self.kernels[Kernels.in_graph].any())

    @property
    def shows_graph_breaks(self) -> bool:
        """Dynamo reported graph breaks for this trace, or the trace shows several compiled
        frames in a step (never an ONNX Runtime profile: it has no compiled graphs)."""
        if self.is_onnxruntime:
            return False
        return bool(self.dynamo().graph_break_count) or self.regions.graph_breaks != 0

    @property
    def n_steps(self) -> int:
        """Step windows (at least 1: a trace without steps is one window)."""
        return max(len(self.launch.per_step), 1)

    @property
    def step_us(self) -> float:
        """Mean step wall time, µs (the whole trace's span without steps; 0 if unknown)."""
        if self.summary.step_mean_us:
            return float(self.summary.step_mean_us)
        return self.launch.wall_us / self.n_steps if self.launch.wall_us > 0 else 0.0

    def per_step(self, total: float) -> float:
        """A trace total (over all steps) per step."""
        return total / self.n_steps

    def share(self, per_step_us: float) -> float | None:
        """A per-step time as a fraction of the mean step time (None without a step time)."""
        return per_step_us / self.step_us if self.step_us > 0 else None

    def dynamo(self) -> DynamoFacts:
        """Dynamo's own facts about this trace's compilation (run.json); empty facts (no
        counts, no breaks) without them."""
        if self.regions.dynamo is not None:
            return self.regions.dynamo
        if self.variant == COMPILED and self.run_info is not None:
            return self.run_info.dynamo
        return DynamoFacts()

    def timing(self) -> TimingStats | None:
        """run.json's timed step statistics of this variant (eager or compiled), if any."""
        if self.run_info is None or self.variant not in (EAGER, COMPILED):
            return None
        timing = self.run_info.timing
        return timing.eager if self.variant == EAGER else timing.compiled


def facts_of_trace(
    trace: Trace,
    *,
    name: str | None = None,
    run_info: RunInfo | None = None,
    variant: str | None = None,
) -> TraceFacts:
    """Analyse ``trace`` (:func:`~traceviz.analysis.compare.analyze`, as for a side of a
    comparison) for the single-trace rules (``variant`` as in :class:`TraceFacts`)."""
    label = name or Path(trace.meta.source).name
    dynamo = run_info.dynamo if variant == COMPILED and run_info is not None else None
    return TraceFacts.of(
        analyze(trace, name=label, dynamo=dynamo),
        expect_compiled=variant == COMPILED or labelled_compiled(label, trace.meta.source),
        variant=variant,
        run_info=run_info,
    )


def facts_of_side(comparison: Comparison, which: str) -> TraceFacts:
    """The facts of side ``"a"`` or ``"b"`` of a comparison (no analysis is repeated).

    With run.json, a is the eager trace and b the compiled one (as ``traceviz compare RUN_DIR``
    builds them). The facts of one analysed side in one role are built once and shared by every
    comparison that holds it (``compare_sides`` over many pairs), so the tables rules derive
    from a trace are derived once; the cache entry goes when the side does.
    """
    return side_facts(comparison.side(which), which, run_info=comparison.run_info)


def side_facts(side: Side, which: str, *, run_info: RunInfo | None) -> TraceFacts:
    """The facts of ``side`` as side ``which`` (``"a"``/``"b"``) of a comparison made with
    ``run_info``: what :func:`facts_of_side` gives for that comparison, the very same object
    (built once per side and role, kept while the side lives). A caller that holds a side
    before its comparison exists (the pipeline, on the side's own thread) fills it ahead."""
    if which not in ("a", "b"):
        raise ValueError(f"side must be 'a' or 'b', not {which!r}")
    variant = (EAGER if which == "a" else COMPILED) if run_info is not None else None
    key = (variant, side.name, msgspec.json.encode(run_info))
    cached = _SIDE_FACTS.get(id(side))
    if cached is not None and cached[0]() is side and cached[1] == key:
        return cached[2]
    compiled_by_run = (
        variant == COMPILED and run_info is not None and bool(run_info.traces.compiled)
    )
    labelled = variant != EAGER and labelled_compiled(side.name, side.trace.meta.source)
    facts = TraceFacts.of(
        side, expect_compiled=compiled_by_run or labelled, variant=variant, run_info=run_info
    )
    forget = functools.partial(_SIDE_FACTS.pop, id(side), None)  # when the side goes
    _SIDE_FACTS[id(side)] = (weakref.ref(side, lambda _: forget()), key, facts)
    return facts


#: id(side) -> (weak reference to the side, its role key, its facts)
_SIDE_FACTS: dict[int, tuple[weakref.ref[Any], tuple[Any, ...], TraceFacts]] = {}


def labelled_compiled(name: str, source: str) -> bool:
    """The label or the file name says the trace is of a compiled model."""
    return "compiled" in name.lower() or "compiled" in Path(source).name.lower()


#: Why a CPU-side figure of a profiled step overstates the same figure of a plain step.
PROFILER_NOTE = "the profiler's own overhead lengthens CPU-side time"


def timed_step_us(facts: TraceFacts) -> float | None:
    """run.json's median step time of this trace's variant, µs (measured outside the
    profiler); None without one."""
    timing = facts.timing()
    return float(timing.median_us) if timing is not None and timing.median_us > 0 else None


def step_limit_us(facts: TraceFacts) -> float | None:
    """The step a gain is saved from, µs: the timed median step when run.json has one, else
    the profiled mean step (:attr:`TraceFacts.step_us`); None when neither is known."""
    timed = timed_step_us(facts)
    if timed is not None:
        return timed
    return facts.step_us if facts.step_us > 0 else None


@dataclass(frozen=True)
class CpuSideGain:
    """A gain made of CPU-side time (a wait for the CPU, a sync, the wall time between
    compiled graphs) measured per profiled step, made fit for a plain step.

    ``us``: the gain per step, µs; ``scale``: the factor applied to the profiled figure
    (1 when it stays profiled); ``basis``: how, for a finding's ``gain_basis``."""

    us: float
    scale: float
    basis: str


def cpu_side_gain(facts: TraceFacts, profiled_us: float, basis: str) -> CpuSideGain:
    """``profiled_us`` (µs per profiled step of CPU-side time: device idle waiting for or
    blocked by the CPU, or CPU wall time) made honest for the timed step, with ``basis``
    (what it is) extended by how.

    The profiler lengthens CPU-side time but not the device's kernels. With run.json's timed
    median step: on a GPU trace, the timed step less the device's busy time per profiled step
    (:attr:`~traceviz.analysis.timing.launch.LaunchOverhead.wall_us` less ``idle_us``, per step) is
    the idle a timed step has at most; the figure is scaled by that over the profiled step's
    device idle. On a CPU trace (its compute ops are CPU time, lengthened alike) it is scaled
    by the timed step over the profiled one. Neither scale exceeds 1. Without a timed step
    the figure stays per profiled step and the basis says so (an empty ``basis`` gives the
    how alone)."""
    timed = timed_step_us(facts)
    profiled = facts.step_us
    if timed is None or profiled <= 0:
        return CpuSideGain(profiled_us, 1.0, _joined(basis, f"per profiled step ({PROFILER_NOTE})"))
    if facts.is_gpu:
        idle = facts.per_step(facts.launch.idle_us)
        busy = max(facts.per_step(facts.launch.wall_us - facts.launch.idle_us), 0.0)
        timed_idle = max(timed - busy, 0.0)
        scale = min(timed_idle / idle, 1.0) if idle > 0 else 1.0
        how = (
            f"scaled by {scale:.2f} to the timed step: run.json's median step {us(timed)} less "
            f"the device's busy time per profiled step {us(busy)} leaves {us(timed_idle)} of "
            f"the profiled step's {us(idle)} device idle ({PROFILER_NOTE})"
        )
    else:
        scale = min(timed / profiled, 1.0)
        how = (
            f"scaled by {scale:.2f} to the timed step: run.json's median step {us(timed)} over "
            f"the profiled mean step {us(profiled)} ({PROFILER_NOTE})"
        )
    if scale >= 1.0:
        how = f"as profiled: run.json's median step {us(timed)} has room for all of it"
    return CpuSideGain(profiled_us * scale, scale, _joined(basis, how))


def kernel_time_gain(facts: TraceFacts, profiled_us: float, basis: str) -> CpuSideGain:
    """A gain made of kernel time per profiled step (``profiled_us``, µs): on a GPU trace
    device time, which the profiler does not lengthen, kept as it is; on a CPU trace its
    kernels are CPU ops, lengthened like any CPU time: :func:`cpu_side_gain`."""
    if facts.is_gpu:
        return CpuSideGain(profiled_us, 1.0, basis)
    return cpu_side_gain(facts, profiled_us, basis)


def _joined(basis: str, how: str) -> str:
    return f"{basis}; {how}" if basis else how


def within_step(facts: TraceFacts, finding: Finding) -> Finding:
    """``finding`` with its gain capped at the step it is saved from (:func:`step_limit_us`):
    no finding promises more than the whole step; the basis says when it was capped."""
    gain, limit = finding.est_gain_us, step_limit_us(facts)
    if gain is None or limit is None or gain <= limit:
        return finding
    which = "run.json's median step" if timed_step_us(facts) is not None else "the mean step"
    basis = f"{finding.gain_basis}; capped at the whole step ({which}, {us(limit)})"
    return replace(finding, est_gain_us=limit, gain_basis=basis.lstrip("; "))


def window_bounds(facts: TraceFacts) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """(start, end) µs of each step window, in ``launch.per_step`` order (at least one)."""
    windows = step_windows(facts.trace)
    return windows.start_us, windows.end_us


def kernel_steps(facts: TraceFacts) -> npt.NDArray[np.int64]:
    """Per kernel row, the index of the step window it was issued in (−1: outside all);
    worked out once per facts object (several rules ask; read-only)."""
    return facts.memo("kernel_steps", lambda: points_in_windows(facts, issue_us(facts.kernels)))


def timeline_of(facts: TraceFacts) -> pd.DataFrame:
    """The kernels of ``facts`` in lane order (:func:`~traceviz.analysis.timing.timeline.timeline`),
    built once per facts (the matmul-add rule and the chains share it); without the shape keys
    (``key`` None), which neither reads: they parse every launching op's shapes."""
    return facts.memo(
        "timeline", lambda: timeline(facts.trace, facts.kernels, kernel_steps(facts), keys=False)
    )


def chain_groups(facts: TraceFacts) -> list[ChainGroup]:
    """Every chain of ``facts``'s trace (:mod:`traceviz.analysis.fusion.chains`), grouped by op
    sequence, largest time first; derived once per facts object (the unfused-chain and
    large-intermediates rules read them, and the already-fused pass)."""

    def groups() -> list[ChainGroup]:
        steps, lanes = kernel_steps(facts), timeline_of(facts)
        members = chain_analysis.chain_members(facts.trace, facts.kernels, steps, lanes=lanes)
        return chain_analysis.chain_groups(facts.trace, members)

    return facts.memo("chain_groups", groups)


def points_in_windows(facts: TraceFacts, points: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """Per time point (µs), the index of the step window holding it (−1: outside all)."""
    starts, ends = window_bounds(facts)
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    pos = np.searchsorted(starts, points, side="right") - 1
    safe = np.clip(pos, 0, max(len(starts) - 1, 0))
    inside = (pos >= 0) & np.isfinite(points) & (points <= ends[safe])
    return np.where(inside, order[safe], -1).astype(np.int64)


def is_kernel(kernels: pd.DataFrame) -> npt.NDArray[np.bool_]:
    """Rows that are kernels (not memcpy/memset)."""
    return (kernels[Kernels.activity] == ActivityKind.KERNEL.value).to_numpy(dtype=bool)


def durations(kernels: pd.DataFrame) -> npt.NDArray[np.float64]:
    """Kernel durations as the trace gives them, µs (0 where the trace has none): for drawing
    and ordering; sums of kernel time use :func:`kernel_times`."""
    return np.nan_to_num(kernels[Kernels.dur_us].to_numpy(dtype=float, na_value=np.nan))


def kernel_times(kernels: pd.DataFrame) -> npt.NDArray[np.float64]:
    """Kernel time counted once, µs (0 where unknown): ``excl_dur_us``, a CPU kernel's time less
    the kernels nested in it, so sums never count nested work twice."""
    return np.nan_to_num(kernels[Kernels.excl_dur_us].to_numpy(dtype=float, na_value=np.nan))


def top_names(
    names: pd.Series, durs: npt.NDArray[np.float64], n_steps: int, *, top: int = 3
) -> list[tuple[str, float, float]]:
    """The ``top`` names by summed time: (name, calls per step, µs per step)."""
    if len(names) == 0:
        return []
    frame = pd.DataFrame({"name": names.astype(object).astype(str).to_numpy(), "dur": durs})
    grouped = frame.groupby("name", sort=False)["dur"].agg(["size", "sum"])
    grouped = grouped.sort_values("sum", ascending=False, kind="stable").head(top)
    return [
        (str(name), float(row["size"]) / n_steps, float(row["sum"]) / n_steps)
        for name, row in grouped.iterrows()
    ]


def us(value: float) -> str:
    """A duration in µs for evidence text (``"12.3 µs"``, ``"4.56 ms"``)."""
    return format_value(value, Unit.US)


def short_name(name: str, width: int = 70) -> str:
    """A long kernel name cut to ``width`` characters, keeping its start."""
    return name if len(name) <= width else name[: width - 1] + "…"


def middle_name(name: str, width: int = 90) -> str:
    """A long kernel name cut in the middle (library GEMM names differ at their end)."""
    if len(name) <= width:
        return name
    half = (width - 1) // 2
    return name[:half] + "…" + name[-half:]


def autotuned(run_info: RunInfo | None) -> bool:
    """run.json says the compile already used max-autotune (its mode, or Inductor's
    ``max_autotune``/``max_autotune_gemm`` config)."""
    if run_info is None:
        return False
    config, mode = run_info.compile.inductor_config, run_info.compile.mode
    options = run_info.compile.mode_options
    return "max-autotune" in mode or any(
        bool(c.get(key)) for c in (config, options) for key in ("max_autotune", "max_autotune_gemm")
    )


def graphs_requested(run_info: RunInfo | None) -> bool:
    """run.json says the compile asked for CUDA graphs: ``mode="reduce-overhead"`` or
    ``"max-autotune"`` (both turn on ``triton.cudagraphs``), or that config set."""
    if run_info is None:
        return False
    mode = run_info.compile.mode
    options, config = run_info.compile.mode_options, run_info.compile.inductor_config
    return (
        mode in ("reduce-overhead", "max-autotune")
        or bool(options.get("triton.cudagraphs"))
        or bool(config.get("triton.cudagraphs"))
    )
