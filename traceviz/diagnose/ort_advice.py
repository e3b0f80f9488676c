"""ONNX Runtime profiles: what the rules say instead of torch advice.

An ORT profile (:attr:`~traceviz.trace.TraceMeta.is_onnxruntime`) holds graph nodes run by a
session, not kernels launched by PyTorch: ``torch.compile``, ``torch.profiler`` schedules,
``torch.cuda.set_sync_debug_mode`` or DataLoader pinning do not apply to it. Rules whose finding
still holds (unfused chains, time outside nodes, too few or noisy runs, host-device copies of a
GPU provider) take their next step and docs link from here; rules about compiled regions,
graph breaks, launches, syncs and allocator memory stay silent on ORT profiles (the profile
records none of them).

The first ``model_run`` of a session is where ORT allocates and pre-packs weights: it is often
many times slower than the others. :func:`warmup_factor` says by how much, so the step
findings can name it a warm-up instead of calling the machine noisy; the run stays in every
measured figure.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = [
    "CHAIN_STEP",
    "GRAPH_OPTIMIZATIONS",
    "IO_BINDING",
    "IO_BINDING_STEP",
    "NOISY_STEP",
    "OVERHEAD_STEP",
    "PROFILING",
    "STEPS_STEP",
    "THREADING",
    "TRANSFORMERS_OPTIMIZER",
    "WARMUP_FACTOR",
    "warmup_factor",
]

GRAPH_OPTIMIZATIONS = (
    "https://onnxruntime.ai/docs/performance/model-optimizations/graph-optimizations.html"
)
TRANSFORMERS_OPTIMIZER = "https://onnxruntime.ai/docs/performance/transformers-optimization.html"
THREADING = "https://onnxruntime.ai/docs/performance/tune-performance/threading.html"
IO_BINDING = "https://onnxruntime.ai/docs/performance/tune-performance/iobinding.html"
PROFILING = "https://onnxruntime.ai/docs/performance/tune-performance/profiling-tools.html"

#: The first run is a warm-up when it takes this many times the median of the others.
WARMUP_FACTOR = 3.0

CHAIN_STEP = (
    "ONNX Runtime ran these nodes one by one. Below ORT_ENABLE_ALL, raise "
    "`SessionOptions.graph_optimization_level` (ALL fuses Gelu, LayerNormalization, "
    "MatMul+Add and more); at ALL, ORT has no fusion for this pattern: the offline "
    "transformers optimizer (`onnxruntime.transformers.optimizer.optimize_model(path, "
    "model_type=...)`) fuses more (attention, SkipLayerNormalization, BiasGelu), or export "
    "the op as one node. Check the fused graph's outputs."
)
OVERHEAD_STEP = (
    "Between nodes ORT schedules, allocates and wakes its thread pool. Fewer, larger nodes "
    "help (a higher `graph_optimization_level`, the transformers optimizer); set "
    "`SessionOptions.intra_op_num_threads` to the physical cores (1 for a tiny model: "
    "thread-pool wake-ups cost more than they save) and give each run more work (a batch)."
)
STEPS_STEP = (
    "Call `session.run()` at least 3 times before `session.end_profiling()`: the first run "
    "allocates and pre-packs weights, so keep at least 2 after it to measure."
)
NOISY_STEP = (
    "Measure on an idle machine with more runs; fix the thread counts "
    "(`SessionOptions.intra_op_num_threads`, `inter_op_num_threads`) and compare medians, "
    "not single runs."
)
IO_BINDING_STEP = (
    "ONNX Runtime copies the inputs to the device and the outputs back on every run "
    "(MemcpyFromHost/MemcpyToHost nodes). Bind them on the device with IOBinding "
    "(`session.io_binding()`, `bind_ortvalue_input`/`bind_output` with an `OrtValue` on "
    "'cuda'), and keep data on the device between runs."
)


def warmup_factor(durs: npt.NDArray[np.float64]) -> float | None:
    """How many times the median of the other runs the first run took, when that is at least
    :data:`WARMUP_FACTOR` and at least two other runs exist; None otherwise."""
    if len(durs) < 3:
        return None
    rest = float(np.median(durs[1:]))
    if not rest > 0 or not np.isfinite(durs[0]):
        return None
    factor = float(durs[0]) / rest
    return factor if factor >= WARMUP_FACTOR else None
