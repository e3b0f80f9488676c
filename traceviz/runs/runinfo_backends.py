"""run.json's sections for backends beyond eager/compiled: ONNX Runtime, and round-robin latency.

``RunInfo.backends.onnxruntime`` (an :class:`OnnxRuntimeInfo`, None when the run had no
``--backends ...,onnxruntime``) records the export and one :class:`OrtLevel` per ONNX Runtime
optimization level; ``RunInfo.latency`` (a :class:`Latency`, None without extra backends) holds
step times measured round-robin across eager, compiled and every level. Files are named
relative to the run directory; times are ``_us`` microseconds or ``seconds``. Documented in
``docs/run-json.md`` and ``docs/onnxruntime.md``. No torch or onnx is needed to read them.
"""

from __future__ import annotations

import msgspec

ONNX_DIR = "onnx"  # the run directory's sub-directory for the ONNX files
EXPORTED_GRAPH = "onnx/model.onnx"


class ExportInfo(msgspec.Struct, frozen=True, kw_only=True):
    """How the model became an ONNX graph."""

    exporter: str | None = (
        None  # "dynamo" (torch.onnx.export(dynamo=True)) | "legacy"; None: failed
    )
    opset: int | None = None  # the default-domain opset of the written graph
    seconds: float | None = None  # wall time of the export that succeeded (the failed try excluded)
    path: str | None = None  # "onnx/model.onnx"; None when both exporters failed
    fallback_reason: str | None = None  # why the dynamo exporter was not used (its error's line)
    inputs: list[str] = []  # the graph's input names, in feed order
    attention_mask: bool = False  # an all-ones attention_mask input was added (HF models)
    error: str | None = None  # both exporters failed: the legacy exporter's error


class ReferenceCheck(msgspec.Struct, frozen=True, kw_only=True):
    """The optimized graph evaluated by onnx.reference (with traceviz's contrib ops), vs eager."""

    passed: bool | None = None  # None: the evaluator could not run the graph (see error)
    max_abs_diff: float | None = None
    error: str | None = None  # e.g. an op the reference evaluator has no implementation of


class Culprit(msgspec.Struct, frozen=True, kw_only=True):
    """The first node of an optimized graph that is wrong when run alone on exported values."""

    node: str  # the node's name in the optimized graph
    op_type: str  # "domain:op_type" for non-default domains, e.g. "com.microsoft:FastGelu"
    error: str  # what went wrong: the exception, or the difference at which output


class LevelCheck(msgspec.Struct, frozen=True, kw_only=True):
    """One level's outputs against eager's (same inputs, same weights).

    An element passes when ``|ort - eager| <= atol + rtol * |eager|``; tolerances by dtype as in
    ``correctness`` (traceviz.runner.options.TOLERANCES). ``culprit`` is set when the check
    failed and isolation found a node; ``reference`` is the second, ORT-independent check.
    """

    passed: bool | None = None
    max_abs_diff: float | None = None
    max_rel_diff: float | None = None
    atol: float | None = None
    rtol: float | None = None
    reference: ReferenceCheck | None = None
    culprit: Culprit | None = None


class OrtLevel(msgspec.Struct, frozen=True, kw_only=True):
    """One ONNX Runtime optimization level (or the offline optimizer's graph)."""

    name: str  # "disable", "basic", "extended", "layout", "all", "transformers-<model_type>"
    graph: str | None = None  # "onnx/ort_<name>.onnx": the graph ORT optimized to and ran
    profile: str | None = None  # "onnx/ort_<name>.profile.json": ORT's profile, steps only
    session_seconds: float | None = None  # wall time to create the (timed) session
    nodes: int | None = None  # nodes in ``graph``
    check: LevelCheck | None = None
    error: str | None = None  # the level failed (session, run or optimizer): its error


class OnnxRuntimeInfo(msgspec.Struct, frozen=True, kw_only=True):
    """The ONNX Runtime backend: export, then one row per optimization level."""

    export: ExportInfo
    ort_version: str | None = None
    providers: list[str] = []  # execution providers the sessions ran with
    threads: int | None = None  # SessionOptions.intra_op_num_threads (= torch threads)
    levels: list[OrtLevel] = []


class Backends(msgspec.Struct, frozen=True, kw_only=True):
    """Backends beyond eager and compiled (empty for ``--backends eager,compile``)."""

    onnxruntime: OnnxRuntimeInfo | None = None


class LatencyRow(msgspec.Struct, frozen=True, kw_only=True):
    """Step time of one backend, from the round-robin rounds."""

    backend: str  # "eager" | "compile" | "onnxruntime:<level>"
    median_us: float
    iqr_us: float  # 75th - 25th percentile
    samples_us: list[float]
    ratio_to_eager: float  # median_us / eager's median_us (> 1: slower than eager)


class Latency(msgspec.Struct, frozen=True, kw_only=True):
    """Step times taken round-robin: each round calls every backend once, in turn, so drift
    (frequency, other load) hits them all alike. All backends run at ``threads`` threads."""

    method: str
    threads: int  # torch.get_num_threads() == ORT intra_op_num_threads while timing
    rows: list[LatencyRow] = []
