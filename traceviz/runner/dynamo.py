"""What Dynamo and Inductor say about a compilation, from their own records.

Graph breaks come from ``torch._dynamo.explain``; compilations, recompiles and their reasons
from ``torch._dynamo.utils.get_compilation_metrics()``; raw counts from
``torch._dynamo.utils.counters``. Nothing here is guessed from the trace.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch._dynamo
import torch._functorch.config as functorch_config
import torch._inductor
import torch._inductor.config as inductor_config
from torch._dynamo import utils as dynamo_utils

from traceviz.runner.models import first_line
from traceviz.runs.runinfo import CompileRecord, DynamoFacts, GraphBreak, RunError

# torch._inductor.config values worth recording with a run (flat "section.name" keys).
RECORDED_INDUCTOR_CONFIG = (
    "cpp.enable_kernel_profile",
    "max_autotune",
    "max_autotune_gemm",
    "max_autotune_pointwise",
    "coordinate_descent_tuning",
    "triton.cudagraphs",
    "freezing",
    "epilogue_fusion",
    "aggressive_fusion",
    "combo_kernels",
    "layout_optimization",
    "shape_padding",
    "fx_graph_cache",
    "cpp_wrapper",
    "cpp.threads",
    "cpp.simdlen",
    "triton.unique_kernel_names",
    "triton.descriptive_names",
)
_MAX_DETAIL = 4000


@contextmanager
def inductor_settings(device: torch.device) -> Iterator[bool]:
    """Config for the compiled phase, restored on exit; yields whether C++ kernels are profiled.

    On CPU, ``cpp.enable_kernel_profile`` makes Inductor wrap each generated C++ kernel in a
    profiler record (``graph_N_cpp_fused_…``); without it fused CPU kernels are invisible in
    the trace. It must be set before the first compile: it changes the generated code.

    The FX-graph and AOTAutograd caches are bypassed: a graph served from the cache skips
    Inductor's per-kernel byte estimate (the compile log would lack it, see
    :mod:`traceviz.runner.compile_log`), and ``compile.time_s`` is then always a cold compile.
    """
    patch: dict[str, Any] = {"fx_graph_cache": False}
    if device.type == "cpu":
        patch["cpp.enable_kernel_profile"] = True
    with inductor_config.patch(patch), functorch_config.patch(enable_autograd_cache=False):
        yield device.type == "cpu"


def inductor_config_in_effect(mode: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(recorded config values with the mode's options applied, the mode's options)."""
    mode_options = dict(torch._inductor.list_mode_options(mode))
    current = inductor_config.get_config_copy()
    effective = {k: current[k] for k in RECORDED_INDUCTOR_CONFIG if k in current}
    effective.update({k: v for k, v in mode_options.items() if k in effective})
    return _jsonable(effective), _jsonable(mode_options)


def reset() -> None:
    """Forget compiled code and Dynamo's statistics (before and after each model)."""
    torch._dynamo.reset()
    dynamo_utils.counters.clear()
    dynamo_utils.clear_compilation_metrics()


def graph_breaks(explained: Any) -> list[GraphBreak]:
    """The graph breaks of an explain result, each with its user-code location.

    Where explain's own reason is terse (e.g. ``generic_jump TensorVariable()`` for a
    data-dependent branch), the matching message Dynamo counted for that location is used.
    """
    messages = [m for cat in ("graph_break", "unimplemented") for m in _counter(cat)]
    breaks = []
    for reason in explained.break_reasons:
        frame = reason.user_stack[-1] if reason.user_stack else None
        text = str(reason.reason)
        if frame is not None:
            location = f'"{frame.filename}", line {frame.lineno}'
            text = next((m for m in messages if location in m), text)
        breaks.append(
            GraphBreak(
                reason=first_line(text),
                detail=text[:_MAX_DETAIL],
                file=frame.filename if frame else None,
                line=frame.lineno if frame else None,
                function=frame.name if frame else None,
            )
        )
    return breaks


def facts(explained: Any, breaks: list[GraphBreak], explain_error: RunError | None) -> DynamoFacts:
    """Dynamo's facts about the compilation that just ran (call after the compiled phase)."""
    compiles = [_compile_record(m) for m in dynamo_utils.get_compilation_metrics()]
    return DynamoFacts(
        graphs=explained.graph_count if explained is not None else None,
        graph_break_count=explained.graph_break_count if explained is not None else None,
        graph_breaks=breaks,
        unique_graphs=_counter("stats").get("unique_graphs"),
        recompiles=sum(1 for c in compiles if _recompile_index(c.compile_id) > 0),
        compiles=compiles,
        counters={cat: _first_lines(_counter(cat)) for cat in sorted(dynamo_utils.counters)},
        explain_error=explain_error,
    )


def cache_counts() -> dict[str, int]:
    """Compile-cache hits and misses since the last :func:`reset`, as CompileInfo fields."""
    inductor, aot = _counter("inductor"), _counter("aot_autograd")
    return {
        "fx_graph_cache_hits": int(inductor.get("fxgraph_cache_hit", 0)),
        "fx_graph_cache_misses": int(inductor.get("fxgraph_cache_miss", 0)),
        "aot_autograd_cache_hits": int(aot.get("autograd_cache_hit", 0)),
        "aot_autograd_cache_misses": int(aot.get("autograd_cache_miss", 0)),
    }


def _compile_record(metrics: Any) -> CompileRecord:
    return CompileRecord(
        compile_id=str(metrics.compile_id),
        function=metrics.co_name,
        file=metrics.co_filename,
        line=metrics.co_firstlineno,
        graph_ops=metrics.graph_op_count,
        compile_time_s=metrics.entire_frame_compile_time_s,
        recompile_reason=metrics.recompile_reason,
        fail_type=metrics.fail_type,
        fail_reason=first_line(metrics.fail_reason) if metrics.fail_reason else None,
    )


def _recompile_index(compile_id: str) -> int:
    """Y of a compile id "X/Y" (0 when it has another form)."""
    parts = compile_id.strip("[]!").split("/")
    try:
        return int(parts[1])
    except (IndexError, ValueError):
        return 0


def _counter(category: str) -> dict[str, int]:
    return dict(dynamo_utils.counters.get(category, {}))


def _first_lines(counts: dict[str, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for message, count in counts.items():
        key = first_line(str(message))
        out[key] = out.get(key, 0) + int(count)
    return out


def _jsonable(values: dict[str, Any]) -> dict[str, Any]:
    """Config values as JSON-friendly scalars (anything else as its repr)."""
    simple = (bool, int, float, str, type(None))
    return {k: v if isinstance(v, simple) else repr(v) for k, v in values.items()}
