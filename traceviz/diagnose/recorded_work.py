"""What a profile recorded, read by the profiling rules and the speed verdict: whether it
holds any work at all (:func:`has_recorded_work`), and which of its ops are torch.compile's own
compile-time spans (:func:`compile_name_mask`).
"""

from __future__ import annotations

import re

import numpy as np
import numpy.typing as npt
import pandas as pd

from traceviz.analysis.timing.blocking import is_step_span
from traceviz.schema import Ops
from traceviz.trace import Trace

#: Names of Dynamo/Inductor compile-time spans (torch 2.1 … 2.13 record_function names).
COMPILE_EVENT = re.compile(
    r"\(dynamo_timed\)$|^(entire_frame_compile|backend_compile|_compile\.compile_inner|"
    r"OutputGraph\.call_user_compiler|create_aot_dispatcher_function|compile_fx_inner|"
    r"fx_codegen_and_compile|GraphLowering\.compile_to_module|async_compile\.wait|"
    r"TorchDynamo Compile|compile_attempt_\d+|bytecode_tracing)$"
)


def has_recorded_work(trace: Trace) -> bool:
    """The trace records some work: a kernel (device activity, or a CPU trace's computing op)
    or a CPU op, annotation or Python frame other than the ``ProfilerStep#`` spans."""
    if len(trace.kernels):
        return True
    ops = trace.ops
    return bool(len(ops)) and bool((~is_step_span(ops[Ops.name])).any())


def compile_name_mask(names: pd.Series) -> npt.NDArray[np.bool_]:
    """Per op, its name is a compile-time span (each distinct name matched once; a
    categorical column's categories, looked up by code)."""
    codes, uniques = pd.factorize(names)
    hits = np.array([bool(COMPILE_EVENT.search(str(u))) for u in uniques], dtype=bool)
    out = np.zeros(len(names), dtype=bool)
    known = codes >= 0
    out[known] = hits[codes[known]]
    return out
