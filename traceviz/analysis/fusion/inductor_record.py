"""Whether a compiled CPU trace recorded Inductor's own kernels.

On CPU, the C++ kernels Inductor generates (``graph_N_cpp_fused_…``) appear in a
``torch.profiler`` trace only when the model was compiled with
``torch._inductor.config.cpp.enable_kernel_profile = True`` (``traceviz run`` sets it; a user
profiling their own model usually does not). Without it the compiled graph's calls
(``## Call CompiledFxGraph … ##``) hold only the library calls Inductor left in place
(``aten::mm``, ``mkldnn_convolution``): the fused work runs in kernels the trace does not show,
and a fusion map by name can only guess where each eager op went.

:func:`unrecorded_inductor_kernels` says so, with what the trace measured around the missing
kernels; the fusion map labels its name-matched rows with :data:`NAME_MATCH_UNRECORDED_BASIS`
and a diagnosis rule words the finding. Nothing here imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from traceviz.analysis.traffic.memory import is_inductor_kernel
from traceviz.schema import ActivityKind, DeviceKind, Kernels, RegionKind, Regions
from traceviz.trace import Trace

__all__ = [
    "ENABLE_KERNEL_PROFILE",
    "NAME_MATCH_UNRECORDED_BASIS",
    "UnrecordedKernels",
    "unrecorded_inductor_kernels",
]

#: The Inductor setting that records the generated C++ kernels in a CPU trace.
ENABLE_KERNEL_PROFILE = "torch._inductor.config.cpp.enable_kernel_profile = True"
#: The fusion map's basis for rows matched by name while Inductor's kernels are unrecorded.
NAME_MATCH_UNRECORDED_BASIS = "name-match (no Inductor kernels recorded)"


@dataclass(frozen=True)
class UnrecordedKernels:
    """A compiled CPU trace whose Inductor graph calls ran no recorded Inductor kernel.

    ``graph_calls``: the Inductor graph calls (``## Call CompiledFxGraph ##`` spans);
    ``graph_time_us``: their wall time summed, µs (measured); ``recorded_time_us``: the time of
    the kernels the trace does record inside them (library calls), µs (measured);
    ``unrecorded_time_us``: the rest of the calls' time (``graph_time_us −
    recorded_time_us``, at least 0), µs: the unrecorded generated kernels plus the compiled
    wrapper's own work, so at most what the trace measured.
    """

    graph_calls: int
    graph_time_us: float
    recorded_time_us: float

    @property
    def unrecorded_time_us(self) -> float:
        return max(self.graph_time_us - self.recorded_time_us, 0.0)


def unrecorded_inductor_kernels(trace: Trace) -> UnrecordedKernels | None:
    """What the trace measured around Inductor kernels it did not record, or None when it
    is not such a trace: not CPU-only, no Inductor graph call (not compiled, or compiled by
    another backend), or at least one Inductor kernel recorded."""
    if trace.device_kind is not DeviceKind.CPU:
        return None
    regions = trace.regions
    calls = regions[(regions[Regions.kind] == RegionKind.FX_GRAPH_CALL.value).to_numpy(dtype=bool)]
    if calls.empty:
        return None
    kernels = trace.kernels
    is_kernel = (kernels[Kernels.activity] == ActivityKind.KERNEL.value).to_numpy(dtype=bool)
    if is_inductor_kernel(kernels[Kernels.name])[is_kernel].any():
        return None
    return UnrecordedKernels(
        graph_calls=len(calls),
        graph_time_us=float(np.nansum(np.asarray(calls[Regions.dur_us], dtype=float))),
        recorded_time_us=float(np.nansum(np.asarray(calls[Regions.kernel_time_us], dtype=float))),
    )
