"""What a user's own profile left out of Inductor's record, so the fusion map can only guess.

- **No Inductor kernels recorded** (``inductor-kernels-not-recorded``, warning): the
  compiled side is a CPU trace whose Inductor graph calls ran no recorded ``cpp_fused_*``
  kernel while eager work is left without a counterpart (the fusion map's ``unrecorded``,
  :mod:`~traceviz.analysis.fusion.inductor_record`): the model was compiled without
  ``torch._inductor.config.cpp.enable_kernel_profile = True``. Its fusion rows say basis
  ``name-match (no Inductor kernels recorded)``. Not raised when run.json says the kernel
  profile was on (the graphs then generated no kernel).
- **Compile log without provenance** (``compile-log-without-provenance``, warning): the
  compile log given for the compiled side (``--compile-log``, ``compile_log=``) holds no
  Inductor provenance record, so the fusion map stays a name-match: it was written without
  ``torch._inductor.config.trace.provenance_tracking_level = 1``. The pipeline adds it
  (:func:`compile_log_without_provenance`); it is no trace rule, as the log is no trace.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from traceviz.analysis.fusion.inductor_record import (
    ENABLE_KERNEL_PROFILE,
    NAME_MATCH_UNRECORDED_BASIS,
)
from traceviz.diagnose import docs
from traceviz.diagnose.finding import Evidence, Finding, Severity, Unit
from traceviz.parse.compile_log import NODE_MAPPINGS, PROVENANCE_SETTING, CompileLog

if TYPE_CHECKING:
    from traceviz.analysis.compare import Comparison

NOT_RECORDED_ID = "inductor-kernels-not-recorded"
NO_PROVENANCE_ID = "compile-log-without-provenance"


def inductor_kernels_not_recorded(comparison: Comparison) -> list[Finding]:
    """One warning when the compiled side (b) is a CPU trace whose Inductor kernels were not
    recorded while eager work is left without a counterpart (``fusion.unrecorded``)."""
    missing = comparison.fusion.unrecorded
    info = comparison.run_info
    if missing is None or (info is not None and info.profiler.cpp_kernel_profile):
        return []
    name = comparison.names[1]
    return [
        Finding(
            id=NOT_RECORDED_ID,
            severity=Severity.WARNING,
            title=f"{name}: Inductor's generated CPU kernels are not in the trace: the "
            "fusion map can only guess by op name",
            evidence=(
                Evidence("Inductor graph calls", missing.graph_calls, Unit.COUNT),
                Evidence("their time", missing.graph_time_us, Unit.US),
                Evidence("in recorded library calls", missing.recorded_time_us, Unit.US),
                Evidence("in kernels the trace does not show", missing.unrecorded_time_us, Unit.US),
                f"no cpp_fused_* kernel recorded; fusion rows have basis "
                f"`{NAME_MATCH_UNRECORDED_BASIS}`",
            ),
            next_step=f"Set `{ENABLE_KERNEL_PROFILE}` before the first call of the compiled "
            "model (it changes the generated code), then profile again; `traceviz run` sets "
            "it. README 'Profiling your own model'.",
            docs_url=docs.PROFILER,
            trace=name,
        )
    ]


def compile_log_without_provenance(log: CompileLog | None, trace: str) -> list[Finding]:
    """One warning when ``log`` (the compiled side ``trace``'s compile log) was given but
    holds no provenance record; nothing without a log or with one that has it."""
    if log is None or log.has_provenance:
        return []
    return [
        Finding(
            id=NO_PROVENANCE_ID,
            severity=Severity.WARNING,
            title=f"{trace}: the compile log holds no Inductor provenance: the fusion map is "
            "matched by name, not read from the compiler",
            evidence=(
                f"compile log: {log.source}",
                Evidence("structured-log records read", log.records, Unit.COUNT),
                f"no {NODE_MAPPINGS} record",
            ),
            next_step=f"Compile with `{PROVENANCE_SETTING}` and `TORCH_TRACE=DIR` set in the "
            "environment, run the model, and pass that DIR to --compile-log. README "
            "'Profiling your own model'.",
            docs_url=docs.TROUBLESHOOTING,
            trace=trace,
        )
    ]
