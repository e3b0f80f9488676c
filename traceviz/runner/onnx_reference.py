"""ONNX Runtime's fused (contrib) ops for ``onnx.reference``, and an ORT-free evaluation of a graph.

ORT's graph optimizer replaces groups of standard nodes by its own fused nodes (domain
``com.microsoft``): SkipLayerNormalization, FastGelu, BiasGelu, Gelu, FusedMatMul, QuickGelu,
FusedConv, FusedGemm. ``onnx.reference.ReferenceEvaluator`` knows none of them. The
:class:`OpRun` classes here implement each one in NumPy from ORT's documented semantics
(float64 inside, the input dtype out), so that :func:`reference_outputs` can evaluate an
*optimized* graph without ORT: a second, independent check that ORT's fused graph still
computes what the exported graph did.

Each class is tested against ORT itself on a one-node graph (``tests/test_onnx_reference.py``).
A graph holding a non-standard op that is not here raises :class:`UnsupportedOpError` naming
the op, before anything runs: for example the NCHWc layout ops (``com.microsoft.nchwc``) that
level ALL puts around convolutions on x86 (their weights are stored in a CPU-specific
layout). Needs the ``onnx`` extra (``pip install 'traceviz[onnx]'``); never imports torch
or onnxruntime.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from traceviz.errors import UsageError

if TYPE_CHECKING:
    import onnx

MS_DOMAIN = "com.microsoft"
# Domains onnx.reference evaluates itself ("" and "ai.onnx" are the standard operator set).
STANDARD_DOMAINS = frozenset({"", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training"})
EXTRA_HINT = "pip install 'traceviz[onnx]'"
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_ERF = np.vectorize(math.erf, otypes=[np.float64])


class UnsupportedOpError(UsageError):
    """A graph holds a node no reference implementation exists for; ``op`` is "domain:op_type"."""

    def __init__(self, op: str, node: str) -> None:
        self.op = op
        self.node = node
        super().__init__(
            f"no reference implementation of {op} (node {node!r}); traceviz implements "
            f"{', '.join(sorted(f'{MS_DOMAIN}:{cls.__name__}' for cls in contrib_ops()))}"
        )


def _onnx() -> Any:
    try:
        import onnx
        import onnx.reference
        import onnx.reference.op_run
        import onnx.reference.ops.op_conv
    except ImportError as err:  # pragma: no cover - the extra is installed in CI
        raise UsageError(f"the ONNX reference check needs the onnx package: {EXTRA_HINT}") from err
    return onnx


def _gelu_exact(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    return 0.5 * x64 * (1.0 + _ERF(x64 / math.sqrt(2.0)))


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    return 0.5 * x64 * (1.0 + np.tanh(SQRT_2_OVER_PI * (x64 + 0.044715 * x64**3)))


def _plus(x: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    return x if bias is None else x + bias


def _batch_first_last(a: np.ndarray) -> np.ndarray:
    """FusedMatMul's transBatch: the first axis moves to just before the last one."""
    rank = a.ndim
    return a.transpose([*range(1, rank - 1), 0, rank - 1]) if rank > 2 else a


def _swap_last(a: np.ndarray) -> np.ndarray:
    return np.swapaxes(a, -1, -2) if a.ndim >= 2 else a


def _activation(
    y: np.ndarray, name: str, alpha: float | None = None, beta: float | None = None
) -> np.ndarray:
    """ORT's fused activations (``activation`` of FusedConv/FusedGemm), in float64."""
    if isinstance(name, bytes):
        name = name.decode()
    if name == "Relu":
        return np.maximum(y, 0.0)
    if name == "Tanh":
        return np.tanh(y)
    if name == "Sigmoid":
        return 1.0 / (1.0 + np.exp(-y))
    if name == "LeakyRelu":
        return np.where(y >= 0, y, (0.01 if alpha is None else alpha) * y)
    if name == "Clip":
        low = -np.inf if alpha is None else alpha
        return np.clip(y, low, np.inf if beta is None else beta)
    if name == "HardSigmoid":
        a, b = (0.2 if alpha is None else alpha), (0.5 if beta is None else beta)
        return np.clip(a * y + b, 0.0, 1.0)
    raise UsageError(f"FusedConv/FusedGemm activation {name!r} has no reference implementation")


@functools.cache
def contrib_ops() -> tuple[type, ...]:
    """The ``OpRun`` classes of ORT's fused ops, for ``ReferenceEvaluator(new_ops=...)`` (built
    on first use: OpRun lives in the optional onnx package)."""
    op_run = _onnx().reference.op_run.OpRun

    class Gelu(op_run):  # type: ignore[misc, valid-type]
        """``Y = X · Φ(X)`` (erf form). onnx.reference lends it the ONNX Gelu's schema, whose
        ``approximate`` attribute ("none" | "tanh") is honoured."""

        op_domain = MS_DOMAIN

        def _run(self, x: np.ndarray, approximate: str = "none") -> tuple[np.ndarray]:
            gelu = _gelu_tanh if approximate == "tanh" else _gelu_exact
            return (gelu(x).astype(x.dtype),)

    class BiasGelu(op_run):  # type: ignore[misc, valid-type]
        """``Y = Gelu(A + B)`` (erf form)."""

        op_domain = MS_DOMAIN

        def _run(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray]:
            return (_gelu_exact(a + b).astype(a.dtype),)

    class FastGelu(op_run):  # type: ignore[misc, valid-type]
        """``Y = Gelu_tanh(X + bias)``, bias optional."""

        op_domain = MS_DOMAIN

        def _run(self, x: np.ndarray, bias: np.ndarray | None = None) -> tuple[np.ndarray]:
            return (_gelu_tanh(_plus(x, bias)).astype(x.dtype),)

    class QuickGelu(op_run):  # type: ignore[misc, valid-type]
        """``Y = X · sigmoid(alpha · X)``, alpha 1.702 by default."""

        op_domain = MS_DOMAIN

        def _run(self, x: np.ndarray, alpha: float = 1.702) -> tuple[np.ndarray]:
            x64 = x.astype(np.float64)
            return ((x64 / (1.0 + np.exp(-alpha * x64))).astype(x.dtype),)

    class FusedMatMul(op_run):  # type: ignore[misc, valid-type]
        """``Y = alpha · op(A) @ op(B)``: op transposes the last two axes (transA/transB)
        after moving the first axis next to the last (transBatchA/transBatchB)."""

        op_domain = MS_DOMAIN

        def _run(
            self,
            a: np.ndarray,
            b: np.ndarray,
            alpha: float = 1.0,
            transA: int = 0,  # ONNX attribute names, as the node spells them
            transB: int = 0,
            transBatchA: int = 0,
            transBatchB: int = 0,
        ) -> tuple[np.ndarray]:
            if transBatchA:
                a = _batch_first_last(a)
            if transBatchB:
                b = _batch_first_last(b)
            if transA:
                a = _swap_last(a)
            if transB:
                b = _swap_last(b)
            out = np.matmul(a.astype(np.float64), b.astype(np.float64)) * alpha
            return (out.astype(a.dtype),)

    class SkipLayerNormalization(op_run):  # type: ignore[misc, valid-type]
        """``s = input + skip (+ bias)``; ``output = (s − mean) / √(var + ε) · gamma (+ beta)``
        over the last axis. Optional outputs: mean, inverse std (shape ``[..., 1]``) and ``s``."""

        op_domain = MS_DOMAIN

        def _run(
            self,
            x: np.ndarray,
            skip: np.ndarray,
            gamma: np.ndarray,
            beta: np.ndarray | None = None,
            bias: np.ndarray | None = None,
            epsilon: float = 1e-12,
        ) -> tuple[np.ndarray, ...]:
            total = _plus(x + skip, bias)
            s64 = total.astype(np.float64)
            mean = s64.mean(axis=-1, keepdims=True)
            inv_std = 1.0 / np.sqrt(((s64 - mean) ** 2).mean(axis=-1, keepdims=True) + epsilon)
            out = _plus((s64 - mean) * inv_std * gamma, beta)
            results = (
                out.astype(x.dtype),
                mean.astype(np.float32),
                inv_std.astype(np.float32),
                total.astype(x.dtype),
            )
            return results[: max(1, len(self.output))]

    conv = _onnx().reference.ops.op_conv.Conv

    class FusedConv(conv):  # type: ignore[misc, valid-type]
        """``Y = activation(Conv(X, W, B) + Z)``: ONNX Conv's attributes plus ``activation``
        (Relu, Tanh, Sigmoid, LeakyRelu, Clip, HardSigmoid) and ``activation_params``."""

        op_domain = MS_DOMAIN

        def _run(
            self,
            x: np.ndarray,
            w: np.ndarray,
            b: np.ndarray | None = None,
            z: np.ndarray | None = None,
            activation: str = "",
            activation_params: list[float] | None = None,
            auto_pad: str = "NOTSET",
            dilations: list[int] | None = None,
            group: int = 1,
            kernel_shape: list[int] | None = None,
            pads: list[int] | None = None,
            strides: list[int] | None = None,
        ) -> tuple[np.ndarray]:
            (y,) = conv._run(
                self, x, w, b, auto_pad=auto_pad, dilations=dilations, group=group,
                kernel_shape=kernel_shape, pads=pads, strides=strides,
            )  # fmt: skip
            y64 = _plus(y.astype(np.float64), z)
            params = list(activation_params or [])
            if activation:
                y64 = _activation(y64, activation, *params[:2])
            return (y64.astype(x.dtype),)

    class FusedGemm(op_run):  # type: ignore[misc, valid-type]
        """``Y = activation(alpha · op(A) @ op(B) + beta · C)`` (Gemm's attributes plus
        ``activation`` and ``activation_alpha``/``activation_beta``)."""

        op_domain = MS_DOMAIN

        def _run(
            self,
            a: np.ndarray,
            b: np.ndarray,
            c: np.ndarray | None = None,
            alpha: float = 1.0,
            beta: float = 1.0,
            transA: int = 0,
            transB: int = 0,
            activation: str = "",
            activation_alpha: float | None = None,
            activation_beta: float | None = None,
            activation_gamma: float | None = None,
        ) -> tuple[np.ndarray]:
            a64 = (a.T if transA else a).astype(np.float64)
            b64 = (b.T if transB else b).astype(np.float64)
            y = alpha * (a64 @ b64)
            if c is not None:
                y = y + beta * c.astype(np.float64)
            if activation:
                y = _activation(y, activation, activation_alpha, activation_beta)
            return (y.astype(a.dtype),)

    return (
        Gelu, BiasGelu, FastGelu, QuickGelu, FusedMatMul, SkipLayerNormalization, FusedConv,
        FusedGemm,
    )  # fmt: skip


def unsupported_ops(model: onnx.ModelProto, extra: Sequence[type] = ()) -> list[tuple[str, str]]:
    """``(domain:op_type, node name)`` of each node (of the main graph and of the subgraphs of
    If/Loop/Scan, in order) that neither onnx.reference nor these classes (plus ``extra``)
    implement; the model's local functions count as implemented."""
    onnx = _onnx()
    known = {(getattr(cls, "op_domain", ""), cls.__name__) for cls in (*contrib_ops(), *extra)}
    known |= {(f.domain, f.name) for f in model.functions}
    missing = []
    for node in _nodes(onnx, model.graph):
        key = (node.domain, node.op_type)
        if key in known:
            continue
        domain = "" if node.domain == "ai.onnx" else node.domain
        if node.domain in STANDARD_DOMAINS and onnx.defs.has(node.op_type, domain):
            continue
        missing.append((f"{node.domain}:{node.op_type}", node.name or node.output[0]))
    return missing


def _nodes(onnx: Any, graph: Any) -> Iterator[Any]:
    """The graph's nodes, each followed by the nodes of its subgraphs."""
    for node in graph.node:
        yield node
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                yield from _nodes(onnx, attribute.g)
            elif attribute.type == onnx.AttributeProto.GRAPHS:
                for sub in attribute.graphs:
                    yield from _nodes(onnx, sub)


def reference_outputs(
    model: onnx.ModelProto | str | Path,
    feeds: Mapping[str, np.ndarray],
    *,
    extra_ops: Sequence[type] = (),
) -> list[np.ndarray]:
    """Evaluate ``model`` (a ``ModelProto`` or an ``.onnx`` path) on ``feeds`` (graph input name
    → array) with ``onnx.reference.ReferenceEvaluator`` and ORT's fused ops implemented here;
    ONNX Runtime is not used. Returns the graph outputs, in graph order.

    ``extra_ops`` adds user ``OpRun`` classes (a custom fusion's op). A node no implementation
    exists for raises :class:`UnsupportedOpError` (a :class:`~traceviz.errors.UsageError`)
    naming ``domain:op_type`` and the node, before evaluation starts.
    """
    onnx = _onnx()
    proto = onnx.load(str(model)) if isinstance(model, (str, Path)) else model
    missing = unsupported_ops(proto, extra_ops)
    if missing:
        raise UnsupportedOpError(*missing[0])
    evaluator = onnx.reference.ReferenceEvaluator(proto, new_ops=[*contrib_ops(), *extra_ops])
    wanted = {inp.name for inp in proto.graph.input}
    inputs = {name: np.asarray(value) for name, value in feeds.items() if name in wanted}
    return [np.asarray(out) for out in evaluator.run(None, inputs)]
