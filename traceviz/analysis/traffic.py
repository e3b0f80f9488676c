"""Estimated memory traffic (bytes read + bytes written) of ops, from their recorded shapes.

Fusion pays off by not moving bytes, so the comparison needs bytes per eager op. The profiler
records each op's inputs (``Input Dims``, ``Input type``, ``Concrete Inputs``: JSON text as
stored in the ops table), not its outputs, so the output size follows from one rule per op
family. Every estimate names its rule (:class:`TrafficRule`); bytes are ``numel × itemsize``
(itemsize from the type string, :data:`DTYPE_BYTES`), with all inputs read once and every
output written once (caches, re-reads and strides are not modelled):

- ``pointwise``: output shape = broadcast of the tensor inputs; dtype = that of the
  highest-rank tensor input (bool for comparisons). In-place (``add_``) writes ``self``;
  ``fill_``/``zero_``/random fills only write.
- ``reduction`` (sum, mean, amax, …): reads the input; writes the reduced shape when
  ``Concrete Inputs`` give the dims, else nothing (``reduction_no_output``: the output is
  assumed small next to the input).
- ``matmul``: ``mm`` [m,k]·[k,n] → m·n; ``addmm`` (bias, a, b); ``bmm``/``baddbmm`` b·m·n;
  ``linear`` […,k]·[n,k]ᵀ → […,n]; ``matmul`` with batch broadcast; ``mv``; ``dot``. Tensor
  arguments past the op's operands (``out=``, as Inductor's extern calls pass them) are written,
  not read.
- ``conv``: output [N, C_out, spatial] with stride/padding/dilation from ``Concrete Inputs``;
  without them ``conv_approx`` assumes stride 1 and "same" padding (output spatial = input).
- ``norm`` (layer/batch/group/RMS norm) and ``softmax``: output = input size (mean/rstd and
  weight gradients are left out).
- ``attention`` (SDPA and its flash/efficient kernels): output = q's shape with v's last dim.
- ``copy`` (``copy_``, ``clone``, ``contiguous``, ``_to_copy``, ``to``): read source, write the
  copy (``_to_copy``/``to`` in the target dtype when ``Concrete Inputs`` give it).
- ``view`` and ``alloc`` (views, reshapes, ``empty``): 0 bytes.

Anything else, or inputs that cannot be read, gives no estimate (``None`` / ``<NA>``).

An estimate describes one op as a whole, children included: ``aten::linear`` and the
``aten::addmm`` it calls both get one. Sum over one level only (e.g. the ops that launch
kernels, or a CPU-only trace's kernel ops).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from traceviz.analysis.fusion_names import eager_op_base

__all__ = [
    "DTYPE_BYTES",
    "SCALAR_TYPE_BYTES",
    "Traffic",
    "TrafficEstimate",
    "TrafficRule",
    "dtype_bytes",
    "estimate_op",
    "estimate_op_bytes",
    "estimate_triton_bytes",
    "triton_args_bytes",
]

#: Bytes per element for the profiler's ``Input type`` strings of tensors.
DTYPE_BYTES: dict[str, int] = {
    "float": 4, "double": 8, "c10::Half": 2, "c10::BFloat16": 2, "long int": 8, "long": 8,
    "int": 4, "short int": 2, "signed char": 1, "unsigned char": 1, "bool": 1,
    "long unsigned int": 8, "unsigned int": 4, "short unsigned int": 2,
    "c10::complex<float>": 8, "c10::complex<double>": 16, "c10::complex<c10::Half>": 4,
    "c10::qint8": 1, "c10::quint8": 1, "c10::qint32": 4, "c10::quint4x2": 1,
    "c10::quint2x4": 1, "c10::bits16": 2,
}  # fmt: skip
_ONE_BYTE_TYPE = re.compile(r"c10::(Float8_\w+|Float4_\w+|bits\w+|dummy_u?int1_7_t<\d>)")

#: Bytes per element by c10 ScalarType code (as ``Concrete Inputs`` give a ``dtype=``).
SCALAR_TYPE_BYTES: tuple[int, ...] = (
    1, 1, 2, 4, 8, 2, 4, 8, 4, 8, 16, 1, 1, 1, 4, 2, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 2, 4, 8,
    *([1] * 14), 1, 1,
)  # fmt: skip


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


class Traffic:
    """Columns of the tables :func:`estimate_op_bytes` and :func:`estimate_triton_bytes` return."""

    est_bytes = "est_bytes"  # estimated bytes read + written (Int64; <NA>: no estimate)
    rule = "rule"  # TrafficRule value (category; <NA>: no estimate)


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


class _Unknown(Enum):
    """``Concrete Inputs`` were not recorded (as opposed to recorded empty, which is None)."""

    UNKNOWN = "unknown"


_UNKNOWN = _Unknown.UNKNOWN


@dataclass(frozen=True, slots=True)
class _Arg:
    """One op input: a tensor (``shape`` and ``itemsize`` set) or anything else.

    ``concrete`` is the parsed ``Concrete Inputs`` entry: a value, None when recorded empty,
    ``_UNKNOWN`` when the trace has no ``Concrete Inputs``.
    """

    shape: tuple[int, ...] | None
    itemsize: int | None
    concrete: Any = _UNKNOWN

    @property
    def is_tensor(self) -> bool:
        return self.shape is not None and self.itemsize is not None

    @property
    def nbytes(self) -> int:
        return _numel(self.shape or ()) * (self.itemsize or 0)


def dtype_bytes(type_str: str) -> int | None:
    """Bytes per element of a tensor ``Input type`` string, or None for non-tensors."""
    size = DTYPE_BYTES.get(type_str)
    if size is None and _ONE_BYTE_TYPE.fullmatch(type_str):
        return 1
    return size


def _numel(shape: Sequence[int]) -> int:
    return math.prod(shape)


def _shape(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, list) and all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in value
    ):
        return tuple(value)
    return None


def _load_list(text: str | None) -> list[Any] | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, list) else None


def _concrete(text: Any) -> Any:
    """A ``Concrete Inputs`` entry as a Python value: int, float, bool, list, or the string."""
    if not isinstance(text, str):
        return None
    if text in ("True", "False"):
        return text == "True"
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text or None


def _parse_args(dims: str | None, types: str | None, concrete: str | None) -> list[_Arg] | None:
    dims_list, types_list = _load_list(dims), _load_list(types)
    if dims_list is None or types_list is None:
        return None
    values = _load_list(concrete)
    args = []
    for i in range(max(len(dims_list), len(types_list))):
        t = types_list[i] if i < len(types_list) else ""
        size = dtype_bytes(t) if isinstance(t, str) else None
        shape = _shape(dims_list[i]) if i < len(dims_list) and size is not None else None
        known = values is not None and i < len(values)
        value = _concrete(values[i]) if values is not None and known else _UNKNOWN
        args.append(_Arg(shape, size if shape is not None else None, value))
    return args


def _tensors(args: list[_Arg]) -> list[_Arg]:
    return [a for a in args if a.is_tensor]


def _broadcast(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...] | None:
    """The broadcast shape, or None when the shapes do not broadcast."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(rank):
        sizes = {s[len(s) - rank + axis] for s in shapes if len(s) - rank + axis >= 0} - {1}
        if len(sizes) > 1:
            return None
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def _est(read: int, written: int, rule: TrafficRule) -> TrafficEstimate:
    return TrafficEstimate(int(read), int(written), rule)


# --- rules -------------------------------------------------------------------------------

_COMPARISONS = re.compile(r"eq|ne|lt|le|gt|ge|logical_\w+|isnan|isinf|isfinite|isneginf|isposinf")
_WRITE_ONLY = frozenset({"fill", "zero", "normal", "uniform", "bernoulli", "random", "exponential"})


def _pointwise(base: str, args: list[_Arg], inplace: bool) -> TrafficEstimate | None:
    tensors = _tensors(args)
    if not tensors:
        return None
    read = sum(t.nbytes for t in tensors)
    if inplace:
        if base in _WRITE_ONLY:
            return _est(0, tensors[0].nbytes, TrafficRule.POINTWISE)
        return _est(read, tensors[0].nbytes, TrafficRule.POINTWISE)
    shape = _broadcast([t.shape or () for t in tensors])
    if shape is None:
        return None
    widest = max(tensors, key=lambda t: (len(t.shape or ()), t.itemsize or 0))
    itemsize = 1 if _COMPARISONS.fullmatch(base) else widest.itemsize or 0
    return _est(read, _numel(shape) * itemsize, TrafficRule.POINTWISE)


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
    return _numel([s for i, s in enumerate(shape) if i not in reduced])


_REDUCTION_DIM_ARG = {"norm": 2, "linalg_vector_norm": 2}  # others: dim is argument 1


def _reduction(base: str, args: list[_Arg], inplace: bool) -> TrafficEstimate | None:
    tensors = _tensors(args)
    if not tensors:
        return None
    if base in ("max", "min") and len(tensors) > 1:
        return _pointwise(base, args, inplace)  # max(a, b) is elementwise
    src = tensors[0]
    read = sum(t.nbytes for t in tensors)
    pos = _REDUCTION_DIM_ARG.get(base, 1)
    dims = args[pos].concrete if pos < len(args) else None
    numel = None if dims is _UNKNOWN else _reduced_numel(src.shape or (), dims)
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
    batch = _broadcast([a[:-2], b[:-2]])
    return None if batch is None else (*batch, a[-2], b[-1])


_MATMUL_ARITY = {
    "mm": 2, "bmm": 2, "matmul": 2, "mv": 2, "dot": 2, "vdot": 2, "_int_mm": 2,
    "addmm": 3, "baddbmm": 3, "addbmm": 3, "addmv": 3, "linear": 3,
}  # fmt: skip


def _matmul(base: str, args: list[_Arg], inplace: bool) -> TrafficEstimate | None:
    tensors = _tensors(args)
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
    written = _numel(shape) * itemsize
    if outs and _numel(outs[0].shape or ()) == _numel(shape):
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
    base: str, args: list[_Arg], spatial: tuple[int, ...], kernel: tuple[int, ...]
) -> tuple[tuple[int, ...], bool, int] | None:
    """(output spatial size, transposed, groups) from Concrete Inputs, or None if unknown."""
    s_i, p_i, d_i, t_i, op_i, g_i = _CONV_ARGS[base]

    def value(i: int | None) -> Any:
        known = i is not None and i < len(args) and args[i].concrete is not _UNKNOWN
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


def _conv(base: str, args: list[_Arg], inplace: bool) -> TrafficEstimate | None:
    tensors = _tensors(args)
    if len(tensors) < 2 or not args[0].is_tensor or not args[1].is_tensor:
        return None
    x, w = args[0].shape or (), args[1].shape or ()
    if len(w) < 3 or len(x) not in (len(w), len(w) - 1):
        return None
    batch = x[0] if len(x) == len(w) else 1
    spatial, kernel = x[-(len(w) - 2) :], w[2:]
    known = _conv_spatial(base, args, spatial, kernel)
    rule = TrafficRule.CONV if known is not None else TrafficRule.CONV_APPROX
    out_spatial, transposed, groups = known or (spatial, _CONV_ARGS[base][3] is True, 1)
    channels = w[1] * groups if transposed else w[0]
    written = batch * channels * _numel(out_spatial) * (args[0].itemsize or 0)
    return _est(sum(t.nbytes for t in tensors), written, rule)


def _same_as_first(rule: TrafficRule) -> Callable[[str, list[_Arg], bool], TrafficEstimate | None]:
    """Rule: read every tensor input, write one tensor the size of the first."""

    def estimate(base: str, args: list[_Arg], inplace: bool) -> TrafficEstimate | None:
        tensors = _tensors(args)
        if not tensors:
            return None
        return _est(sum(t.nbytes for t in tensors), tensors[0].nbytes, rule)

    return estimate


def _attention(base: str, args: list[_Arg], inplace: bool) -> TrafficEstimate | None:
    tensors = _tensors(args)
    if len(tensors) < 3:
        return None
    q, v = tensors[0], tensors[2]
    if not q.shape or not v.shape:
        return None
    written = _numel((*q.shape[:-1], v.shape[-1])) * (q.itemsize or 0)
    return _est(sum(t.nbytes for t in tensors), written, TrafficRule.ATTENTION)


def _target_itemsize(args: list[_Arg]) -> int | None:
    """Itemsize of the ``dtype=`` of ``_to_copy``/``to``: the first ScalarType code among
    arguments 1–2 (``to(self, dtype, …)``, ``to(self, device, dtype, …)``), or None."""
    for arg in args[1:3]:
        code = arg.concrete
        if isinstance(code, int) and not isinstance(code, bool):
            return SCALAR_TYPE_BYTES[code] if 0 <= code < len(SCALAR_TYPE_BYTES) else None
    return None


def _copy(base: str, args: list[_Arg], inplace: bool) -> TrafficEstimate | None:
    tensors = _tensors(args)
    if not tensors:
        return None
    if base == "copy" and len(tensors) >= 2:  # copy_(self=dst, src)
        return _est(tensors[1].nbytes, tensors[0].nbytes, TrafficRule.COPY)
    src = tensors[0]
    itemsize = src.itemsize or 0
    if base in ("_to_copy", "to"):
        itemsize = _target_itemsize(args) or itemsize
    return _est(src.nbytes, _numel(src.shape or ()) * itemsize, TrafficRule.COPY)


def _zero(rule: TrafficRule) -> Callable[[str, list[_Arg], bool], TrafficEstimate | None]:
    """Rule: the op moves no data (views, allocations)."""

    def estimate(base: str, args: list[_Arg], inplace: bool) -> TrafficEstimate | None:
        return _est(0, 0, rule)

    return estimate


_Rule = Callable[[str, list[_Arg], bool], TrafficEstimate | None]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_VIEW_OPS = _words(
    """
    view _unsafe_view reshape _reshape_alias as_strided transpose t permute expand expand_as
    squeeze unsqueeze slice select narrow alias detach unbind split split_with_sizes chunk
    unfold flatten unflatten view_as diagonal numpy_T lift_fresh resolve_conj resolve_neg
    movedim swapaxes conj _conj view_as_real view_as_complex"""
)
_ALLOC_OPS = _words(
    """
    empty empty_like empty_strided new_empty new_empty_strided resize resize_as set
    record_stream"""
)


def _table(rule: _Rule, names: str) -> dict[str, _Rule]:
    return dict.fromkeys(names.split(), rule)


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
    **_table(_matmul, " ".join(_MATMUL_ARITY)),
    **_table(_conv, " ".join(_CONV_ARGS)),
    **_table(_same_as_first(TrafficRule.NORM), """
        layer_norm native_layer_norm batch_norm native_batch_norm _batch_norm_impl_index
        cudnn_batch_norm miopen_batch_norm _native_batch_norm_legit
        _native_batch_norm_legit_no_training _batch_norm_with_update group_norm
        native_group_norm instance_norm rms_norm _fused_rms_norm native_layer_norm_backward
        native_batch_norm_backward cudnn_batch_norm_backward native_group_norm_backward"""),
    **_table(_same_as_first(TrafficRule.SOFTMAX), """
        softmax _softmax log_softmax _log_softmax _safe_softmax _softmax_backward_data
        _log_softmax_backward_data"""),
    **_table(_attention, """
        scaled_dot_product_attention _scaled_dot_product_flash_attention
        _scaled_dot_product_flash_attention_for_cpu _scaled_dot_product_efficient_attention
        _scaled_dot_product_cudnn_attention _flash_attention_forward
        _efficient_attention_forward _scaled_dot_product_fused_attention_overrideable"""),
    **_table(_copy, "copy clone contiguous _to_copy to _pin_memory pin_memory"),
    **_table(_zero(TrafficRule.VIEW), " ".join(_VIEW_OPS)),
    **_table(_zero(TrafficRule.ALLOC), " ".join(_ALLOC_OPS)),
}  # fmt: skip


def estimate_op(
    name: str,
    input_dims: str | None,
    input_types: str | None,
    concrete_inputs: str | None = None,
) -> TrafficEstimate | None:
    """Estimate one eager op's traffic from its ops-table row (JSON text), or None.

    ``name`` is the trace op name (``aten::addmm``); the rules are in the module docstring.
    Never raises on malformed input: what cannot be read gives None.
    """
    if not isinstance(name, str):
        return None
    raw = eager_op_base(name)
    base = eager_op_base(name, strip_inplace=True)
    rule = OP_RULES.get(base)
    if rule is None:
        return None
    if base in _VIEW_OPS or base in _ALLOC_OPS:
        return rule(base, [], False)
    args = _parse_args(input_dims, input_types, concrete_inputs)
    return None if args is None else rule(base, args, raw != base)


def triton_args_bytes(input_dims: str | None, input_types: str | None) -> int | None:
    """Bytes of an Inductor kernel launch's tensor arguments (inputs and outputs), or None.

    Each argument is counted once: a buffer the kernel reads and writes in place
    (``in_out_ptr``) appears once in the argument list and is counted once; one passed twice
    is counted twice. Broadcast (stride-0) arguments count their own size.
    """
    args = _parse_args(input_dims, input_types, None)
    if args is None:
        return None
    tensors = _tensors(args)
    return sum(t.nbytes for t in tensors) if tensors else None


# --- vectorised entry points -------------------------------------------------------------


def _group_rows(columns: Sequence[pd.Series]) -> tuple[npt.NDArray[np.int64], list[list[Any]]]:
    """Group id per row over the distinct value combinations, and each group's values."""
    codes_uniques = [pd.factorize(c, use_na_sentinel=True) for c in columns]
    key = np.zeros(len(columns[0]), dtype=np.int64)
    for codes, uniques in codes_uniques:
        key, _ = pd.factorize(key * (len(uniques) + 1) + (np.asarray(codes) + 1))
    key = np.asarray(key, dtype=np.int64)
    _, first = np.unique(key, return_index=True)
    groups = [
        [uniques[codes[row]] if codes[row] >= 0 else None for codes, uniques in codes_uniques]
        for row in first
    ]
    return key, groups


_INT64_MAX = 2**63 - 1


def _result_frame(
    key: npt.NDArray[np.int64], results: list[tuple[int, str] | None], index: pd.Index
) -> pd.DataFrame:
    """The per-row frame from one result per group (None: no estimate)."""
    results = [r if r is None or r[0] <= _INT64_MAX else None for r in results]
    rules = [r.value for r in TrafficRule]
    est = np.array([r[0] if r else 0 for r in results], dtype=np.int64)
    has = np.array([r is not None for r in results], dtype=bool)
    rule_code = np.array([rules.index(r[1]) if r else -1 for r in results], dtype=np.int64)
    if not results:
        est, has, rule_code = (np.zeros(0, np.int64), np.zeros(0, bool), np.zeros(0, np.int64))
    row_est = pd.array(est[key], dtype="Int64")
    row_est[~has[key]] = pd.NA
    return pd.DataFrame(
        {
            Traffic.est_bytes: row_est,
            Traffic.rule: pd.Categorical.from_codes(rule_code[key], categories=pd.Index(rules)),
        },
        index=index,
    )


def estimate_op_bytes(
    names: pd.Series,
    input_dims: pd.Series,
    input_types: pd.Series,
    *,
    concrete_inputs: pd.Series | None = None,
) -> pd.DataFrame:
    """Estimated traffic per op row, aligned with ``names``.

    Columns (:class:`Traffic`): ``est_bytes`` (Int64, bytes read + written; <NA> without an
    estimate) and ``rule`` (category of :class:`TrafficRule` values). Each distinct
    (name, dims, types, concrete inputs) combination is estimated once (:func:`estimate_op`).
    """
    columns = [names, input_dims, input_types]
    if concrete_inputs is not None:
        columns.append(concrete_inputs)
    if any(len(c) != len(names) for c in columns):
        raise ValueError("names, input_dims, input_types and concrete_inputs differ in length")
    key, groups = _group_rows(columns)
    results: list[tuple[int, str] | None] = []
    for values in groups:
        name, dims, types, *rest = [v if isinstance(v, str) else None for v in values]
        est = estimate_op(name or "", dims, types, rest[0] if rest else None)
        results.append((est.total_bytes, est.rule.value) if est else None)
    return _result_frame(key, results, names.index)


def estimate_triton_bytes(
    input_dims: pd.Series, input_types: pd.Series, kernel_num_gb: pd.Series
) -> pd.DataFrame:
    """Estimated traffic per Inductor kernel launch op (the ``triton_…`` CPU-side op).

    Uses Inductor's own ``kernel_num_gb × 1e9`` where present (``inductor_num_gb``), else
    the sum of the launch's tensor arguments (``triton_args``, :func:`triton_args_bytes`).
    Columns as :func:`estimate_op_bytes`.
    """
    key, groups = _group_rows([input_dims, input_types])
    results: list[tuple[int, str] | None] = []
    for values in groups:
        dims, types = [v if isinstance(v, str) else None for v in values]
        total = triton_args_bytes(dims, types)
        results.append((total, TrafficRule.TRITON_ARGS.value) if total is not None else None)
    frame = _result_frame(key, results, input_dims.index)
    gb = pd.to_numeric(pd.Series(kernel_num_gb), errors="coerce").to_numpy(dtype=float)
    use = np.isfinite(gb) & (gb >= 0)
    if use.any():
        frame.loc[use, Traffic.est_bytes] = np.round(gb[use] * 1e9).astype(np.int64)
        frame.loc[use, Traffic.rule] = TrafficRule.INDUCTOR_NUM_GB.value
    return frame
