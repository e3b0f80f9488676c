"""Floating-point operations of one op, from its recorded shapes (``Input Dims``/``Input type``).

The roofline (:mod:`traceviz.analysis.roofline.per_kernel`) needs the arithmetic of the work a
kernel does. The profiler records each op's inputs; for the families whose arithmetic follows from
them, one rule each (a multiply-add counts 2 FLOPs; bias adds, scaling and softmax are left out as
small next to the products):

- ``gemm``: ``mm`` [m,k]·[k,n] and ``addmm`` (bias, a, b): 2·m·n·k; ``bmm``/``baddbmm``
  2·b·m·n·k; ``linear`` […,k]·[n,k]ᵀ: 2·numel(…)·n·k; ``matmul`` with batch broadcast;
- ``conv``: 2·N·C_out·numel(output spatial)·(C_in / groups)·numel(kernel); output size from
  stride/padding/dilation in ``Concrete Inputs`` (as the traffic rule reads them), without them
  stride 1 and "same" padding (rule ``conv_approx``); transposed convolutions count the input
  side instead (2·N·C_in·numel(input spatial)·(C_out / groups)·numel(kernel));
- ``attention`` (SDPA and its flash / memory-efficient / cuDNN kernels): q·kᵀ and p·v,
  2·B·H·L·S·(E + E_v), halved when ``is_causal`` is recorded true (rule ``attention``; without
  ``Concrete Inputs`` saying so, ``attention_causal_unknown``: counted as not causal); the
  backward ops 2.5× the forward (two recomputed and three gradient products of the five);
  ``_efficient_attention_*``/``_flash_attention_*`` take q as [B, L, H, E], the ``_scaled_dot_
  product_*`` ops as [B, H, L, E].

``precision`` is what the kernel computes in, from the first tensor input's type: ``fp32``
(float), ``bf16``, ``fp16``, ``fp8`` (any Float8 type). A float32 convolution is ``tf32``: cuDNN
uses TF32 for float32 convolutions by default (``torch.backends.cudnn.allow_tf32``); a float32
matmul is ``fp32`` (``torch.backends.cuda.matmul.allow_tf32`` defaults to off).

Every other op (pointwise, reductions, norms, copies) gives no FLOP count: its roof is memory.
Never raises on malformed input: what cannot be read gives None.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from traceviz.analysis.inductor_names import eager_op_base
from traceviz.analysis.traffic.args import UNKNOWN, Arg, broadcast, numel, parse_args
from traceviz.analysis.traffic.rules import _CONV_ARGS, conv_shapes  # the traffic rule's reading
from traceviz.aten_ops import CONV_OPS

__all__ = ["FlopRule", "OpFlops", "op_flops", "precision_of"]


class FlopRule(str, Enum):
    """Which rule counted an op's FLOPs."""

    GEMM = "gemm"
    CONV = "conv"
    CONV_APPROX = "conv_approx"
    ATTENTION = "attention"
    ATTENTION_CAUSAL_UNKNOWN = "attention_causal_unknown"


@dataclass(frozen=True, slots=True)
class OpFlops:
    """One op's FLOPs, the precision it computes in (None: unknown) and the rule."""

    flops: int
    precision: str | None
    rule: FlopRule


_GEMM_OPS = frozenset({"mm", "addmm", "bmm", "baddbmm", "linear", "matmul", "_addmm_activation"})
_BIAS_FIRST = frozenset({"addmm", "baddbmm", "_addmm_activation"})

#: Attention ops: (layout "bhle" or "blhe", index of is_causal in the args, backward, index of q)
_ATTENTION: dict[str, tuple[str, int | None, bool, int]] = {
    "scaled_dot_product_attention": ("bhle", 5, False, 0),
    "_scaled_dot_product_flash_attention": ("bhle", 4, False, 0),
    "_scaled_dot_product_efficient_attention": ("bhle", 6, False, 0),
    "_scaled_dot_product_cudnn_attention": ("bhle", 6, False, 0),
    "_scaled_dot_product_fused_attention_overrideable": ("bhle", 5, False, 0),
    "_flash_attention_forward": ("blhe", 8, False, 0),
    "_efficient_attention_forward": ("blhe", None, False, 0),  # custom_mask_type, read below
    "_cudnn_attention_forward": ("bhle", 10, False, 0),
    "_scaled_dot_product_flash_attention_backward": ("bhle", 8, True, 1),
    "_scaled_dot_product_efficient_attention_backward": ("bhle", None, True, 1),
    "_scaled_dot_product_cudnn_attention_backward": ("bhle", None, True, 1),
    "_flash_attention_backward": ("blhe", None, True, 1),
    "_efficient_attention_backward": ("blhe", None, True, 1),
}
_EFFICIENT_MASK_ARG = 9  # _efficient_attention_forward's custom_mask_type: 0 none, 1/2 causal
BACKWARD_FACTOR = 2.5


def precision_of(type_str: str | None, *, conv: bool = False) -> str | None:
    """The compute precision of a tensor ``Input type`` string (see the module docstring)."""
    if type_str == "float":
        return "tf32" if conv else "fp32"
    if type_str == "c10::BFloat16":
        return "bf16"
    if type_str == "c10::Half":
        return "fp16"
    if isinstance(type_str, str) and type_str.startswith("c10::Float8"):
        return "fp8"
    return None


def op_flops(
    name: str, input_dims: str | None, input_types: str | None, concrete: str | None = None
) -> OpFlops | None:
    """One op's FLOPs from its ops-table row (JSON text), or None (rules: module docstring)."""
    if not isinstance(name, str):
        return None
    base = eager_op_base(name, strip_inplace=True)
    family = _family(base)
    if family is None:
        return None
    args = parse_args(input_dims, input_types, concrete)
    if args is None:
        return None
    types = _types(input_types)
    return family(base, args, types)


_Family = Callable[[str, list[Arg], list[str]], "OpFlops | None"]


def _family(base: str) -> _Family | None:
    """The rule of an op base name (``addmm``), or None for ops without a FLOP rule."""
    if base in _GEMM_OPS:
        return _gemm
    if base in CONV_OPS and base in _CONV_ARGS:
        return _conv
    return _attention if base in _ATTENTION else None


def _types(text: str | None) -> list[str]:
    """The ``Input type`` list (non-strings as "")."""
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except (ValueError, RecursionError):
        return []
    return [t if isinstance(t, str) else "" for t in value] if isinstance(value, list) else []


def _first_tensor_type(args: list[Arg], types: list[str], start: int = 0) -> str | None:
    for i in range(start, len(args)):
        if args[i].is_tensor and i < len(types):
            return types[i]
    return None


def _gemm(base: str, args: list[Arg], types: list[str]) -> OpFlops | None:
    first = 1 if base in _BIAS_FIRST else 0
    shapes = [a.shape for a in args[first : first + 2] if a.is_tensor]
    if len(shapes) < 2 or not all(s for s in shapes):
        return None
    a, b = shapes[0] or (), shapes[1] or ()
    if base == "linear":
        ok = len(b) == 2 and a[-1] == b[1]
        products = numel(a[:-1]) * b[0] * a[-1] if ok else None
    else:
        products = _matmul_products(a, b)
    if products is None:
        return None
    precision = precision_of(_first_tensor_type(args, types, first))
    return OpFlops(2 * products, precision, FlopRule.GEMM)


def _matmul_products(a: tuple[int, ...], b: tuple[int, ...]) -> int | None:
    """Multiply-adds of ``a @ b`` (matmul semantics, batch broadcast), or None if they clash."""
    if len(a) == 1 and len(b) == 1:
        return a[0] if a == b else None
    if len(a) == 1:
        return numel(b[:-2]) * b[-1] * a[0] if a[0] == b[-2] else None
    if len(b) == 1:
        return numel(a[:-1]) * a[-1] if a[-1] == b[0] else None
    if a[-1] != b[-2]:
        return None
    batch = broadcast([a[:-2], b[:-2]])
    return None if batch is None else numel(batch) * a[-2] * b[-1] * a[-1]


def _conv(base: str, args: list[Arg], types: list[str]) -> OpFlops | None:
    shapes = conv_shapes(base, args)
    if shapes is None:
        return None
    batch, w, kernel = shapes.batch, shapes.weight, shapes.kernel
    rule = FlopRule.CONV if shapes.exact else FlopRule.CONV_APPROX
    if shapes.transposed:  # w: [C_in, C_out / groups, *k]
        products = batch * w[0] * numel(shapes.spatial) * w[1] * numel(kernel)
    else:  # w: [C_out, C_in / groups, *k]
        products = batch * w[0] * numel(shapes.out_spatial) * w[1] * numel(kernel)
    precision = precision_of(types[0] if types else None, conv=True)
    return OpFlops(2 * products, precision, rule)


def _attention(base: str, args: list[Arg], types: list[str]) -> OpFlops | None:
    layout, causal_at, backward, q_at = _ATTENTION[base]
    qkv = args[q_at : q_at + 3]
    if len(qkv) < 3 or not all(a.is_tensor and len(a.shape or ()) == 4 for a in qkv):
        return None
    q, k, v = (a.shape or () for a in qkv)
    if layout == "bhle":
        batch_heads, length, source, depth = q[0] * q[1], q[2], k[2], q[3]
    else:
        batch_heads, length, source, depth = q[0] * q[2], q[1], k[1], q[3]
    products = batch_heads * length * source * (depth + v[3])
    causal = _causal(base, args, causal_at)
    rule = FlopRule.ATTENTION if causal is not None else FlopRule.ATTENTION_CAUSAL_UNKNOWN
    flops = 2 * products // (2 if causal else 1)
    if backward:
        flops = flops * 5 // 2  # BACKWARD_FACTOR
    precision = precision_of(_first_tensor_type(args, types, q_at))
    return OpFlops(flops, precision, rule)


def _causal(base: str, args: list[Arg], causal_at: int | None) -> bool | None:
    """Whether the attention is causal, as ``Concrete Inputs`` record it (None: not recorded)."""
    if base == "_efficient_attention_forward":
        mask = _concrete(args, _EFFICIENT_MASK_ARG)
        return None if not isinstance(mask, int) else mask in (1, 2)
    value = _concrete(args, causal_at)
    return value if isinstance(value, bool) else None


def _concrete(args: list[Arg], at: int | None) -> object:
    if at is None or at >= len(args) or args[at].concrete is UNKNOWN:
        return None
    return args[at].concrete
