"""Traffic rules per op family: which bytes an op reads and writes, from its parsed inputs.

One rule function per family (pointwise, reduction, matmul, conv, norm, softmax, attention,
copy, view, alloc; the rules are described in :mod:`traceviz.analysis.traffic.estimates`), and
:data:`OP_RULES`, the table from op base name to rule. Bytes are ``numel × itemsize``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from traceviz.analysis.traffic.args import (
    SCALAR_TYPE_BYTES,
    UNKNOWN,
    Arg,
    broadcast,
    numel,
    tensor_args,
)
from traceviz.aten_ops import (
    ALLOC_OPS,
    ATTENTION_OPS,
    COPY_OPS,
    NORM_BACKWARD_OPS,
    NORM_OPS,
    SOFTMAX_BACKWARD_OPS,
    SOFTMAX_OPS,
    VIEW_OPS,
)

__all__ = ["ALLOC_OPS", "OP_RULES", "VIEW_OPS", "TrafficEstimate", "TrafficRule"]


class TrafficRule(str, Enum):
    """Which rule produced an estimate."""

    POINTWISE = "pointwise"
    REDUCTION = "reduction"
    REDUCTION_NO_OUTPUT = "reduction_no_output"
    MATMUL = "matmul"
    CONV = "conv"
    CONV_APPROX = "conv_approx"
    NORM = "norm"
    SOFTMAX = "softmax"
    ATTENTION = "attention"
    COPY = "copy"
    VIEW = "view"
    ALLOC = "alloc"
    TRITON_ARGS = "triton_args"  # sum of an Inductor kernel's tensor arguments
    INDUCTOR_NUM_GB = "inductor_num_gb"  # Inductor's own estimate (kernel_num_gb × 1e9)
    # the profiler's own tensor sizes of the kernel (ONNX Runtime: activation + parameter read,
    # output written; Kernels.bytes), each tensor once
    TENSOR_SIZES = "tensor_sizes"


@dataclass(frozen=True, slots=True)
class TrafficEstimate:
    """Estimated bytes one op reads and writes, and the rule that estimated them."""

    bytes_read: int
    bytes_written: int
    rule: TrafficRule

    @property
    def total_bytes(self) -> int:
        """Bytes read + bytes written."""
        return self.bytes_read + self.bytes_written


def _est(read: int, written: int, rule: TrafficRule) -> TrafficEstimate:
    return TrafficEstimate(int(read), int(written), rule)


# --- rules -------------------------------------------------------------------------------

_COMPARISONS = re.compile(r"eq|ne|lt|le|gt|ge|logical_\w+|isnan|isinf|isfinite|isneginf|isposinf")
_WRITE_ONLY = frozenset({"fill", "zero", "normal", "uniform", "bernoulli", "random", "exponential"})


def _pointwise(base: str, args: list[Arg], inplace: bool) -> TrafficEstimate | None:
    tensors = tensor_args(args)
    if not tensors:
        return None
    read = sum(t.nbytes for t in tensors)
    if inplace:
        if base in _WRITE_ONLY:
            return _est(0, tensors[0].nbytes, TrafficRule.POINTWISE)
        return _est(read, tensors[0].nbytes, TrafficRule.POINTWISE)
    shape = broadcast([t.shape or () for t in tensors])
    if shape is None:
        return None
    widest = max(tensors, key=lambda t: (len(t.shape or ()), t.itemsize or 0))
    itemsize = 1 if _COMPARISONS.fullmatch(base) else widest.itemsize or 0
    return _est(read, numel(shape) * itemsize, TrafficRule.POINTWISE)


def _reduced_numel(shape: tuple[int, ...], dims: Any) -> int | None:
    """Elements left after reducing ``shape`` over ``dims`` (None or [] = all), or None."""
    if dims is None or dims == []:
        return 1
    dims = [dims] if isinstance(dims, int) and not isinstance(dims, bool) else dims
    if not isinstance(dims, list) or not all(isinstance(d, int) for d in dims):
        return None
    try:
        reduced = {d % len(shape) for d in dims} if shape else set()
    except ZeroDivisionError:
        return None
    return numel([s for i, s in enumerate(shape) if i not in reduced])


_REDUCTION_DIM_ARG = {"norm": 2, "linalg_vector_norm": 2}  # others: dim is argument 1


def _reduction(base: str, args: list[Arg], inplace: bool) -> TrafficEstimate | None:
    tensors = tensor_args(args)
    if not tensors:
        return None
    if base in ("max", "min") and len(tensors) > 1:
        return _pointwise(base, args, inplace)  # max(a, b) is elementwise
    src = tensors[0]
    read = sum(t.nbytes for t in tensors)
    pos = _REDUCTION_DIM_ARG.get(base, 1)
    dims = args[pos].concrete if pos < len(args) else None
    numel = None if dims is UNKNOWN else _reduced_numel(src.shape or (), dims)
    if numel is None:
        return _est(read, 0, TrafficRule.REDUCTION_NO_OUTPUT)
    itemsize = 8 if base in ("argmax", "argmin") else src.itemsize or 0
    return _est(read, numel * itemsize, TrafficRule.REDUCTION)


def _matmul_shape(base: str, ops: list[tuple[int, ...]]) -> tuple[int, ...] | None:
    """Output shape of a matmul-family op from its operand shapes (bias/self first)."""
    if base in ("addmm", "baddbmm", "addbmm", "addmv"):
        ops = ops[1:]
    if len(ops) < 2:
        return None
    a, b = ops[0], ops[1]
    if base == "linear":
        return (*a[:-1], b[0]) if a and len(b) == 2 else None
    if base in ("dot", "vdot"):
        return ()
    if base in ("mv", "addmv"):
        return a[:1] if len(a) == 2 else None
    if base == "addbmm":
        return (a[1], b[2]) if len(a) == 3 and len(b) == 3 else None
    if len(a) == 1 and len(b) >= 2:
        return (*b[:-2], b[-1])
    if len(b) == 1 and len(a) >= 2:
        return a[:-1]
    if len(a) < 2 or len(b) < 2:
        return None
    batch = broadcast([a[:-2], b[:-2]])
    return None if batch is None else (*batch, a[-2], b[-1])


_MATMUL_ARITY = {
    "mm": 2, "bmm": 2, "matmul": 2, "mv": 2, "dot": 2, "vdot": 2, "_int_mm": 2,
    "addmm": 3, "baddbmm": 3, "addbmm": 3, "addmv": 3, "linear": 3,
}  # fmt: skip


def _matmul(base: str, args: list[Arg], inplace: bool) -> TrafficEstimate | None:
    tensors = tensor_args(args)
    arity = _MATMUL_ARITY[base]
    if base == "linear":  # bias is optional: an out= tensor would follow a None bias slot
        operands = [a for a in args[:3] if a.is_tensor]
        outs = tensors[len(operands) :]
    else:
        operands, outs = tensors[:arity], tensors[arity:]
    shape = _matmul_shape(base, [t.shape or () for t in operands])
    if shape is None:
        return None
    first = operands[1] if base in ("addmm", "baddbmm", "addbmm", "addmv") else operands[0]
    itemsize = 4 if base == "_int_mm" else first.itemsize or 0
    written = numel(shape) * itemsize
    if outs and numel(outs[0].shape or ()) == numel(shape):
        written = outs[0].nbytes
    return _est(sum(t.nbytes for t in operands), written, TrafficRule.MATMUL)


# Argument positions of (stride, padding, dilation, transposed, output_padding, groups)
_CONV_ARGS: dict[str, tuple[int, int, int, int | bool, int | None, int]] = {
    "convolution": (3, 4, 5, 6, 7, 8),
    "_convolution": (3, 4, 5, 6, 7, 8),
    "conv1d": (3, 4, 5, False, None, 6),
    "conv2d": (3, 4, 5, False, None, 6),
    "conv3d": (3, 4, 5, False, None, 6),
    "conv_transpose1d": (3, 4, 7, True, 5, 6),
    "conv_transpose2d": (3, 4, 7, True, 5, 6),
    "conv_transpose3d": (3, 4, 7, True, 5, 6),
    "cudnn_convolution": (3, 2, 4, False, None, 5),
    "cudnn_convolution_transpose": (4, 2, 5, True, 3, 6),
    "mkldnn_convolution": (4, 3, 5, False, None, 6),
    "miopen_convolution": (4, 3, 5, False, None, 6),
    "miopen_convolution_transpose": (5, 3, 6, True, 4, 7),
}


def _ints(value: Any, n: int) -> list[int] | None:
    """A per-spatial-dim int list (a single value is repeated), or None."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, int) for v in value):
        return None
    return value * n if len(value) == 1 else value if len(value) == n else None


def _conv_spatial(
    base: str, args: list[Arg], spatial: tuple[int, ...], kernel: tuple[int, ...]
) -> tuple[tuple[int, ...], bool, int] | None:
    """(output spatial size, transposed, groups) from Concrete Inputs, or None if unknown."""
    s_i, p_i, d_i, t_i, op_i, g_i = _CONV_ARGS[base]

    def value(i: int | None) -> Any:
        known = i is not None and i < len(args) and args[i].concrete is not UNKNOWN
        return args[i].concrete if known and i is not None else None

    transposed = bool(value(t_i)) if not isinstance(t_i, bool) else t_i
    g = value(g_i)
    groups = g if isinstance(g, int) and not isinstance(g, bool) and g > 0 else 1
    n = len(spatial)
    pad = value(p_i)
    if pad in ("same", "valid"):
        pad = [0] * n if pad == "valid" else None
        if pad is None:
            return spatial, transposed, groups
    stride, padding, dilation = _ints(value(s_i), n), _ints(pad, n), _ints(value(d_i), n)
    if stride is None or padding is None or dilation is None:
        return None
    out_pad = _ints(value(op_i), n) or [0] * n
    if transposed:
        out = [
            (x - 1) * s - 2 * p + d * (k - 1) + o + 1
            for x, s, p, d, k, o in zip(
                spatial, stride, padding, dilation, kernel, out_pad, strict=True
            )
        ]
    else:
        out = [
            (x + 2 * p - d * (k - 1) - 1) // max(s, 1) + 1
            for x, s, p, d, k in zip(spatial, stride, padding, dilation, kernel, strict=True)
        ]
    return tuple(max(o, 0) for o in out), transposed, groups


@dataclass(frozen=True)
class ConvShapes:
    """A convolution's geometry read from its op's arguments: ``batch`` (1 when unbatched),
    ``weight`` shape, input ``spatial`` sizes, ``kernel`` sizes, ``out_spatial`` sizes,
    ``transposed``, ``groups``, and ``exact`` (False: stride/padding/dilation not read, the
    output taken as the input's size)."""

    batch: int
    weight: tuple[int, ...]
    spatial: tuple[int, ...]
    kernel: tuple[int, ...]
    out_spatial: tuple[int, ...]
    transposed: bool
    groups: int
    exact: bool


def conv_shapes(base: str, args: list[Arg]) -> ConvShapes | None:
    """:class:`ConvShapes` of a convolution op ``base`` (a key of ``_CONV_ARGS``); None when
    its input and weight are not tensors of a convolution's ranks. Shared by the traffic and
    the FLOP rules (:mod:`traceviz.analysis.roofline.flops`)."""
    if len(args) < 2 or not args[0].is_tensor or not args[1].is_tensor:
        return None
    x, w = tuple(args[0].shape or ()), tuple(args[1].shape or ())
    if len(w) < 3 or len(x) not in (len(w), len(w) - 1):
        return None
    batch = x[0] if len(x) == len(w) else 1
    spatial, kernel = x[-(len(w) - 2) :], w[2:]
    known = _conv_spatial(base, args, spatial, kernel)
    out_spatial, transposed, groups = known or (spatial, _CONV_ARGS[base][3] is True, 1)
    return ConvShapes(
        batch, w, spatial, kernel, tuple(out_spatial), transposed, groups, known is not None
    )


def _conv(base: str, args: list[Arg], inplace: bool) -> TrafficEstimate | None:
    tensors = tensor_args(args)
    shapes = conv_shapes(base, args) if len(tensors) >= 2 else None
    if shapes is None:
        return None
    batch, w, out_spatial = shapes.batch, shapes.weight, shapes.out_spatial
    rule = TrafficRule.CONV if shapes.exact else TrafficRule.CONV_APPROX
    channels = w[1] * shapes.groups if shapes.transposed else w[0]
    written = batch * channels * numel(out_spatial) * (args[0].itemsize or 0)
    return _est(sum(t.nbytes for t in tensors), written, rule)


def _same_as_first(rule: TrafficRule) -> Callable[[str, list[Arg], bool], TrafficEstimate | None]:
    """Rule: read every tensor input, write one tensor the size of the first."""

    def estimate(base: str, args: list[Arg], inplace: bool) -> TrafficEstimate | None:
        tensors = tensor_args(args)
        if not tensors:
            return None
        return _est(sum(t.nbytes for t in tensors), tensors[0].nbytes, rule)

    return estimate


def _attention(base: str, args: list[Arg], inplace: bool) -> TrafficEstimate | None:
    tensors = tensor_args(args)
    if len(tensors) < 3:
        return None
    q, v = tensors[0], tensors[2]
    if not q.shape or not v.shape:
        return None
    written = numel((*q.shape[:-1], v.shape[-1])) * (q.itemsize or 0)
    return _est(sum(t.nbytes for t in tensors), written, TrafficRule.ATTENTION)


def _target_itemsize(args: list[Arg]) -> int | None:
    """Itemsize of the ``dtype=`` of ``_to_copy``/``to``: the first ScalarType code among
    arguments 1–2 (``to(self, dtype, …)``, ``to(self, device, dtype, …)``), or None."""
    for arg in args[1:3]:
        code = arg.concrete
        if isinstance(code, int) and not isinstance(code, bool):
            return SCALAR_TYPE_BYTES[code] if 0 <= code < len(SCALAR_TYPE_BYTES) else None
    return None


def _copy(base: str, args: list[Arg], inplace: bool) -> TrafficEstimate | None:
    tensors = tensor_args(args)
    if not tensors:
        return None
    if base == "copy" and len(tensors) >= 2:  # copy_(self=dst, src)
        return _est(tensors[1].nbytes, tensors[0].nbytes, TrafficRule.COPY)
    src = tensors[0]
    itemsize = src.itemsize or 0
    if base in ("_to_copy", "to"):
        itemsize = _target_itemsize(args) or itemsize
    return _est(src.nbytes, numel(src.shape or ()) * itemsize, TrafficRule.COPY)


def _zero(rule: TrafficRule) -> Callable[[str, list[Arg], bool], TrafficEstimate | None]:
    """Rule: the op moves no data (views, allocations)."""

    def estimate(base: str, args: list[Arg], inplace: bool) -> TrafficEstimate | None:
        return _est(0, 0, rule)

    return estimate


_Rule = Callable[[str, list[Arg], bool], TrafficEstimate | None]


def _table(rule: _Rule, names: str | Iterable[str]) -> dict[str, _Rule]:
    return dict.fromkeys(names.split() if isinstance(names, str) else sorted(names), rule)


#: Op base name (``aten::add_`` → ``add``) → rule.
OP_RULES: dict[str, _Rule] = {
    **_table(_pointwise, """
        add sub rsub mul div true_divide floor_divide remainder fmod pow neg abs sgn sign exp
        exp2 expm1 log log2 log10 log1p sqrt rsqrt reciprocal sin cos tan sinh cosh tanh asin
        acos atan atan2 erf erfc erfinv sigmoid logit relu relu6 gelu silu mish elu selu celu
        leaky_relu hardtanh hardswish hardsigmoid softplus threshold clamp clamp_min clamp_max
        clip where _s_where masked_fill lerp addcmul addcdiv floor ceil round trunc frac
        nan_to_num square maximum minimum eq ne lt le gt ge logical_and logical_or logical_xor
        logical_not bitwise_and bitwise_or bitwise_xor bitwise_not isnan isinf isfinite fill
        zero normal uniform bernoulli random exponential dropout native_dropout
        threshold_backward sigmoid_backward tanh_backward gelu_backward silu_backward
        hardtanh_backward leaky_relu_backward elu_backward softplus_backward mish_backward"""),
    **_table(_reduction, """
        sum nansum mean nanmean amax amin max min prod var std var_mean std_mean norm
        linalg_vector_norm argmax argmin all any logsumexp count_nonzero"""),
    **_table(_matmul, _MATMUL_ARITY),
    **_table(_conv, _CONV_ARGS),
    **_table(_same_as_first(TrafficRule.NORM), NORM_OPS | NORM_BACKWARD_OPS),
    **_table(_same_as_first(TrafficRule.SOFTMAX), SOFTMAX_OPS | SOFTMAX_BACKWARD_OPS),
    **_table(_attention, ATTENTION_OPS),
    **_table(_copy, COPY_OPS | {"_pin_memory", "pin_memory"}),
    **_table(_zero(TrafficRule.VIEW), VIEW_OPS),
    **_table(_zero(TrafficRule.ALLOC), ALLOC_OPS),
}  # fmt: skip
