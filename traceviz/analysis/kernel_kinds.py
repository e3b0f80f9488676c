"""What a kernel does (:class:`KernelKind`) and who made it (:class:`KernelSource`), by name.

Both classifiers work on each *distinct* name once and map the result back through category
codes, so a million-row kernels table with a thousand distinct names costs a thousand regex
evaluations.

**Kinds.** ``memcpy``/``memset`` activities are :attr:`KernelKind.MEMCPY`/``MEMSET`` whatever
their name. Inductor kernels (see :mod:`traceviz.analysis.inductor_names`) are classified by
their decoded ops (:func:`_inductor_kind`). Every other name goes through :data:`KIND_RULES`, a
table of case-insensitive regexes tried in order, the first match winning; names of the form
``namespace::op`` (CPU ops: kernels of CPU-only traces) first through :data:`OP_KIND_RULES` on
the op's base name. Anything unmatched is :attr:`KernelKind.OTHER`. Softmax counts as
normalization; layout transforms, gathers, scatters and casts count as copies.

**Sources**, first rule that applies:

1. replayed by a CUDA/HIP graph (``in_graph``) → ``cuda_graph``, whoever generated it;
2. an Inductor Triton name (descriptive or old mangled ``triton__0d1d``) → ``inductor_triton``;
   an Inductor C++ name (``cpp_fused_…``, ``graph_N_cpp_fused_…``) → ``inductor_cpp``;
3. inside a compiled region → ``extern``: Inductor called a library (cuBLAS, cutlass,
   hipBLASLt, cuDNN, flash attention, oneDNN) or fell back to an ATen kernel;
4. a CPU op of a library namespace (``mkldnn::``, ``mkl::``, ``onednn::``) → ``extern``;
5. everything else → ``eager_aten``: what eager PyTorch ran, including cuBLAS/cuDNN kernels
   called by eager ops and, on CPU-only traces, ``aten::`` ops such as ``aten::addmm``.

Nodes of an ONNX Runtime profile are all ``onnxruntime`` (:func:`trace_sources`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from enum import Enum
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
import pandas as pd

from traceviz.analysis.inductor_names import (
    FusedName,
    TritonSubkind,
    eager_op_base,
    fused_kernel_ops,
)
from traceviz.aten_ops import CONV_OPS, MATMUL_OPS, NORM_OPS, SOFTMAX_OPS
from traceviz.schema import ActivityKind, Kernels
from traceviz.trace import Trace

__all__ = [
    "KIND_RULES",
    "OP_KIND_RULES",
    "ORT_OP_KIND_RULES",
    "KernelKind",
    "KernelSource",
    "KindRule",
    "TritonSubkind",
    "classify_kind",
    "classify_kinds",
    "classify_ort_kind",
    "classify_ort_kinds",
    "classify_sources",
    "name_source",
    "trace_kinds",
    "triton_subkind",
]


class KernelKind(str, Enum):
    """What a kernel does."""

    GEMM = "gemm"
    CONV = "conv"
    ATTENTION = "attention"
    POINTWISE = "pointwise"
    REDUCTION = "reduction"
    NORMALIZATION = "normalization"  # layer/RMS/batch/group norm, softmax
    COPY = "copy"  # copies, casts, layout transforms, cat, gather/scatter/index
    MEMCPY = "memcpy"
    MEMSET = "memset"
    COMMUNICATION = "communication"
    OTHER = "other"


class KernelSource(str, Enum):
    """Who produced the kernel."""

    EAGER_ATEN = "eager_aten"
    INDUCTOR_TRITON = "inductor_triton"
    INDUCTOR_CPP = "inductor_cpp"
    EXTERN = "extern"
    CUDA_GRAPH = "cuda_graph"
    ONNXRUNTIME = "onnxruntime"  # a node of an ONNX Runtime profile


#: The sources of kernels Inductor generated (Triton on GPUs, C++ on CPUs), as values.
INDUCTOR_SOURCES = (KernelSource.INDUCTOR_TRITON.value, KernelSource.INDUCTOR_CPP.value)


class KindRule(NamedTuple):
    """One row of a kind table: names matching ``pattern`` are ``kind``."""

    kind: KernelKind
    pattern: re.Pattern[str]
    examples: str


def _rule(kind: KernelKind, pattern: str, examples: str) -> KindRule:
    return KindRule(kind, re.compile(pattern, re.IGNORECASE), examples)


K = KernelKind

#: Device kernel names (and namespaced names not caught by OP_KIND_RULES), first match wins.
KIND_RULES: tuple[KindRule, ...] = (
    _rule(K.MEMCPY, r"^memcpy\b", "Memcpy HtoD (Pageable -> Device)"),
    _rule(K.MEMSET, r"^memset\b", "Memset (Device)"),
    _rule(K.COMMUNICATION,
          r"nccl|rccl|msccl|c10d|cross_device_reduce|all_?reduce|all_?gather|reduce_?scatter"
          r"|all_?to_?all|sendrecv",
          "ncclKernel_AllReduce_RING_LL_Sum_float(…), ncclDevKernel_…"),
    _rule(K.ATTENTION,
          r"attention|attn|fmha|flash_fwd|flash_bwd|flash::|sdpa|xformers|\bsage_(fwd|bwd)"
          r"|_efficient_attention",
          "attn_fwd, flash_fwd_kernel<…>, fmha_cutlassF_…, kernel_unified_attention_2d"),
    _rule(K.NORMALIZATION,
          r"layer_?norm|rms_?norm|group_?norm|batch_?norm|instance_?norm|\bbn_(fw|bw)"
          r"|GammaBetaBackward|softmax",
          "vectorized_layer_norm_kernel, cudnn::bn_fw_tr_1C11_…, softmax_warp_forward, "
          "ck_tile Rmsnorm2dFwd"),
    _rule(K.COPY,
          r"nchwToNhwc|nhwcToNchw|batched_transpose|transpose_kernel",
          "cudnn::ops::nchwToNhwcKernel, batched_transpose_32x32_half"),
    _rule(K.CONV,
          r"conv(?!ert)|scudnn|cudnn::cnn|cudnn_(infer|train)|cask_cudnn|implicit_?gemm"
          r"|igemm_(fwd|bwd|wrw)|im2col|im2d2col|winograd|wgrad|dgrad|fprop|miopen",
          "volta_scudnn_128x64_relu_…, sm80_xmma_fprop_implicit_gemm_…, "
          "implicit_convolve_sgemm, ck kernel_grouped_conv_fwd_…, Im2d2Col_v2"),
    _rule(K.GEMM,
          r"(?<!fb)gemm|gemv|cublas|cutlass|^Cijk_|matmul|magma_|splitKreduce|wmma|hipblaslt|rocblas"
          r"|\b(mm|bmm|addmm|baddbmm|linear)\b|_mm_|_linear_|mkl_linear",
          "ampere_sgemm_128x64_nn, cutlass::Kernel<…gemm…>, Cijk_Alik_Bljk_…, gemv2T_kernel"),
    _rule(K.COPY,
          r"copy|CatArray|\bcat_|\bcat\b|\bstack\b|gather|scatter|index_?(select|copy|put|"
          r"elementwise|kernel|func|add)|indexSelect|indexFunc|(?<!rotary_)embedding|upsample|permute"
          r"|transpose|contiguous|clone|\bpad\b|reflection_pad|replication_pad",
          "direct_copy_kernel_cuda, CatArrayBatchedCopy, index_elementwise_kernel, "
          "vectorized_gather_kernel"),
    _rule(K.REDUCTION,
          r"reduce|reduction|ReduceOp|MeanOps|sum_functor|norm_kernel|cub::Device(Reduce|"
          r"SegmentedReduce|Scan)|scan|cumsum|cumprod|arg_?max|arg_?min|topk|nll|criterion"
          r"|_loss|logsumexp|max_?pool|avg_?pool",
          "at::native::reduce_kernel<…>, cub::DeviceScanKernel, cunn_ClassNLLCriterion_…"),
    _rule(K.POINTWISE,
          r"elementwise|pointwise|Functor|multi_tensor_apply|foreach|SubTensorOp"
          r"|scalePackedTensor|fill|rotary|dropout|distribution|_kernel_cuda|activation",
          "vectorized_elementwise_kernel<4, CUDAFunctor_add<float>…>, multi_tensor_apply_kernel"),
)  # fmt: skip

#: Base names of namespaced CPU ops (``aten::addmm`` → ``addmm``), full match, first wins.
OP_KIND_RULES: tuple[KindRule, ...] = (
    _rule(K.COMMUNICATION, r".*(all_?reduce|all_?gather|reduce_?scatter|all_?to_?all).*"
          r"|broadcast|send|recv|barrier|monitored_barrier", "c10d::allreduce_"),
    _rule(K.ATTENTION, r".*(attention|_flash_|sdpa).*",
          "_scaled_dot_product_flash_attention_for_cpu, _flash_attention_forward"),
    _rule(K.GEMM, "|".join(sorted(MATMUL_OPS)) + r"|.*gemm.*",
          "aten::addmm, aten::mm, mkldnn::_linear_pointwise"),
    _rule(K.CONV, r".*conv(?!ert).*", "aten::mkldnn_convolution, aten::cudnn_convolution"),
    _rule(K.NORMALIZATION, r".*(layer_norm|rms_norm|group_norm|batch_norm|instance_norm"
          r"|softmax).*", "aten::native_layer_norm, aten::_softmax"),
    _rule(K.COPY, r"copy|_to_copy|to|clone|contiguous|cat|_cat|stack|hstack|vstack|index"
          r"|index_select|index_put|_index_put_impl|index_add|index_copy|gather|scatter"
          r"|scatter_add|scatter_reduce|embedding|embedding_dense_backward|masked_select"
          r"|take|repeat|tile|flip|roll|constant_pad_nd|pad|reflection_pad\dd"
          r"|replication_pad\dd|upsample_.*|pixel_shuffle|narrow_copy|slice_scatter"
          r"|select_scatter|unfold_copy|type_as|.*_copy",
          "aten::copy_, aten::_to_copy, aten::cat, aten::index_select"),
    _rule(K.REDUCTION, r"sum|nansum|mean|nanmean|amax|amin|max|min|aminmax|prod|var|std"
          r"|var_mean|std_mean|norm|linalg_vector_norm|frobenius_norm|argmax|argmin|all|any"
          r"|logsumexp|cumsum|cumprod|cummax|cummin|count_nonzero|topk|sort|argsort|kthvalue"
          r"|median|nanmedian|mode|.*_loss.*|nll_loss.*|.*cross_entropy.*|.*pool\dd.*"
          r"|_adaptive_avg_pool\dd|bincount|histc|unique.*",
          "aten::sum, aten::mean, aten::max_pool2d_with_indices, aten::nll_loss_forward"),
    _rule(K.POINTWISE, r"add|sub|rsub|mul|div|true_divide|floor_divide|remainder|fmod|pow"
          r"|neg|abs|sgn|sign|exp|exp2|expm1|log|log2|log10|log1p|sqrt|rsqrt|reciprocal"
          r"|sin|cos|tan|sinh|cosh|tanh|asin|acos|atan|atan2|erf|erfc|erfinv|sigmoid"
          r"|logit|relu|relu6|gelu|silu|mish|elu|selu|celu|leaky_relu|hardtanh|hardswish"
          r"|hardsigmoid|softplus|softshrink|threshold|clamp|clamp_min|clamp_max|clip"
          r"|where|_s_where|masked_fill|fill|zero|zeros|zeros_like|ones|ones_like|full|full_like"
          r"|new_zeros|new_ones|new_full|scalar_tensor"
          r"|arange|linspace|eq|ne|lt|le|gt|ge|logical_\w+|bitwise_\w+|maximum|minimum"
          r"|lerp|addcmul|addcdiv|floor|ceil|round|trunc|frac|nan_to_num|isnan|isinf"
          r"|isfinite|square|_foreach_\w+|dropout|native_dropout|bernoulli|uniform|normal"
          r"|rand|randn|randint|rand_like|randn_like|tril|triu|_?\w+_backward",
          "aten::add, aten::relu, aten::clamp_min, aten::threshold_backward, aten::fill_"),
)  # fmt: skip

_NAMESPACED = re.compile(r"^[A-Za-z_]\w*::")
_EXTERN_NAMESPACE = re.compile(r"^(mkldnn|mkl|onednn|mkldnn_prepacked)::")
_NORM_OPS = NORM_OPS | SOFTMAX_OPS | {"var_mean", "rsqrt"}  # rsqrt: RMS norm
_REDUCTION_OPS = frozenset(
    {"sum", "mean", "amax", "amin", "max", "min", "prod", "var", "std", "argmax", "argmin",
     "any", "all", "logsumexp", "linalg_vector_norm", "norm", "cumsum", "cumprod",
     "nll_loss_forward", "nll_loss2d_forward", "mse_loss", "l1_loss", "count_nonzero",
     "max_pool2d_with_indices", "avg_pool2d", "_adaptive_avg_pool2d"}
)  # fmt: skip
_COPY_OPS = frozenset(
    {"_to_copy", "clone", "copy", "cat", "constant_pad_nd", "slice", "select", "transpose",
     "permute", "view", "_unsafe_view", "expand", "unsqueeze", "squeeze", "split",
     "split_with_sizes", "unbind", "stack", "t", "reshape", "as_strided", "index", "gather",
     "embedding", "slice_scatter", "select_scatter", "alias", "repeat", "flip",
     "index_select", "empty", "empty_like", "empty_strided", "convert_element_type"}
)  # fmt: skip
_TEMPLATE_CONV = CONV_OPS
_ATTENTION_OPS = re.compile(r"attention|flex|sdpa|_flash_|_efficient_")


def _inductor_kind(fused: FusedName) -> KernelKind:
    """Kind of an Inductor kernel from its subkind and decoded ops.

    Templates are GEMMs (conv when they fuse a convolution, attention for flex attention);
    a non-template kernel named after an attention op only prepares its inputs and is
    classified by its other ops;
    reductions that contain a norm, ``rsqrt`` (RMS norm) or softmax are normalization; kernels
    whose ops are all copies/views are copies; mangled names (ops unknown) are ``other``.
    """
    if not fused.descriptive:
        return KernelKind.OTHER
    ops = set(fused.ops)
    attention = {op for op in ops if _ATTENTION_OPS.search(op)}
    if attention and (
        fused.subkind is TritonSubkind.TEMPLATE or any("flex" in op for op in attention)
    ):
        return KernelKind.ATTENTION
    # a pointwise kernel named after the attention whose inputs (mask, layout) it prepares
    # (GPT-2 on an H200: triton_poi_fused__scaled_dot_product_efficient_attention_..._where_2);
    # the attention itself runs in a library kernel
    ops -= attention
    if fused.subkind is TritonSubkind.TEMPLATE:
        return KernelKind.CONV if ops & _TEMPLATE_CONV else KernelKind.GEMM
    reduces = fused.subkind in (TritonSubkind.REDUCTION, TritonSubkind.PERSISTENT_REDUCTION)
    if fused.subkind is None:  # C++ kernels carry no subkind: look at the ops
        reduces = bool(ops & (_REDUCTION_OPS | _NORM_OPS))
    if reduces:
        return KernelKind.NORMALIZATION if ops & _NORM_OPS else KernelKind.REDUCTION
    if ops and ops <= _COPY_OPS:
        return KernelKind.COPY
    return KernelKind.POINTWISE


def _lowered(rule: KindRule) -> re.Pattern[str]:
    """``rule``'s pattern matching lower-cased ASCII names without IGNORECASE (several times
    faster on long kernel names), the same matches: its text lower-cased, when that text has
    no character class or upper-case escape whose meaning lower-casing would change; else the
    rule's own pattern."""
    text = rule.pattern.pattern
    if "[" in text or re.search(r"\\[A-Z]", text):
        return rule.pattern
    return re.compile(text.lower())


#: (kind, pattern for lower-cased ASCII names) per row of KIND_RULES, in order.
_KIND_RULES_LOWER: tuple[tuple[KernelKind, re.Pattern[str]], ...] = tuple(
    (rule.kind, _lowered(rule)) for rule in KIND_RULES
)


def classify_kind(name: str) -> KernelKind:
    """The kind of one kernel or CPU-op name (activity not considered)."""
    if not isinstance(name, str):
        return KernelKind.OTHER
    return _kind_of_name(name)


@functools.lru_cache(maxsize=8192)
def _kind_of_name(name: str) -> KernelKind:
    """:func:`classify_kind` of a str, remembered: both sides of a comparison and every
    analysis that asks share most kernel names."""
    fused = fused_kernel_ops(name)
    if fused is not None:
        return _inductor_kind(fused)
    if _NAMESPACED.match(name):
        base = eager_op_base(name, strip_inplace=True)
        for rule in OP_KIND_RULES:
            if rule.pattern.fullmatch(base):
                return rule.kind
        if name.startswith("aten::"):
            return KernelKind.OTHER  # views, allocations, ops the table does not know
    if name.isascii():  # lower-casing keeps every position and IGNORECASE's matches
        lowered = name.lower()
        for kind, pattern in _KIND_RULES_LOWER:
            if pattern.search(lowered):
                return kind
        return KernelKind.OTHER
    for rule in KIND_RULES:
        if rule.pattern.search(name):
            return rule.kind
    return KernelKind.OTHER


def name_source(name: str) -> KernelSource | None:
    """The source implied by the name alone, or None when it depends on where the kernel ran.

    Inductor Triton and C++ kernel names, and library CPU namespaces (``mkldnn::``, ``mkl::``,
    ``onednn::`` → extern).
    """
    if not isinstance(name, str):
        return None
    fused = fused_kernel_ops(name)
    if fused is not None:
        return (
            KernelSource.INDUCTOR_TRITON if fused.prefix == "triton" else KernelSource.INDUCTOR_CPP
        )
    if _EXTERN_NAMESPACE.match(name):
        return KernelSource.EXTERN
    return None


def triton_subkind(name: str) -> TritonSubkind | None:
    """``poi``/``red``/``per``/``tem``/``for`` of a descriptive Inductor Triton name, else None."""
    fused = fused_kernel_ops(name)
    return fused.subkind if fused is not None and fused.prefix == "triton" else None


def _per_unique(
    names: pd.Series, classify: Callable[[str], str], values: list[str]
) -> npt.NDArray[np.int64]:
    """Classify each distinct name once; return the index into ``values`` per row (−1: NA)."""
    codes, uniques = pd.factorize(names, use_na_sentinel=True)
    lookup = {v: i for i, v in enumerate(values)}
    per_unique = np.fromiter(
        (lookup[classify(str(u))] for u in uniques), dtype=np.int64, count=len(uniques)
    )
    out = np.full(len(codes), -1, dtype=np.int64)
    known = codes >= 0
    out[known] = per_unique[codes[known]]
    return out


def _categorical(idx: npt.NDArray[np.int64], values: list[str], index: pd.Index) -> pd.Series:
    """A categorical Series with every value of ``values`` as a category."""
    codes = pd.Categorical.from_codes(idx, categories=pd.Index(values))
    return pd.Series(codes, index=index, dtype="category")


def classify_kinds(names: pd.Series, activity: pd.Series) -> pd.Series:
    """:class:`KernelKind` value per row, as a categorical aligned with ``names``.

    ``activity`` holds :class:`~traceviz.schema.ActivityKind` values; memcpy and memset rows
    take their kind from it. Each distinct name is classified once (:func:`classify_kind`).
    Missing names are ``other``.
    """
    if len(activity) != len(names):
        raise ValueError(f"activity has {len(activity)} rows, names {len(names)}")
    values = [k.value for k in KernelKind]
    idx = _per_unique(names, lambda name: classify_kind(name).value, values)
    idx[idx < 0] = values.index(KernelKind.OTHER.value)
    act_codes, act_values = pd.factorize(activity, use_na_sentinel=True)
    for activity_kind, kind in ((ActivityKind.MEMCPY, K.MEMCPY), (ActivityKind.MEMSET, K.MEMSET)):
        hits = [i for i, v in enumerate(act_values) if str(v) == activity_kind.value]
        idx[np.isin(act_codes, hits)] = values.index(kind.value)
    return _categorical(idx, values, names.index)


#: ONNX Runtime op types (``op_name`` of a profile's nodes, any domain), full match, first wins.
ORT_OP_KIND_RULES: tuple[KindRule, ...] = (
    _rule(K.MEMCPY, r"Memcpy(FromHost|ToHost)?", "MemcpyFromHost (CUDA provider)"),
    _rule(K.COMMUNICATION, r"(Nccl)?(AllReduce|AllGather|ReduceScatter|AllToAll|Send|Recv)",
          "com.microsoft NcclAllReduce"),
    _rule(K.ATTENTION, r".*Attention.*",
          "Attention, MultiHeadAttention, GroupQueryAttention"),
    _rule(K.CONV, r"(Fused|Nchwc|QLinear|Int|DynamicQuantize)?Conv(Transpose|Integer)?"
          r"|ConvInteger|NhwcConv|NhwcFusedConv",
          "Conv, FusedConv, com.microsoft.nchwc Conv"),
    _rule(K.GEMM, r".*(MatMul|Gemm|Gemv).*|Einsum|Linear",
          "MatMul, Gemm, FusedMatMul, MatMulNBits, QGemm, DynamicQuantizeMatMul"),
    _rule(K.NORMALIZATION, r".*(LayerNormalization|Softmax|BatchNormalization|GroupNorm"
          r"|InstanceNormalization|RMSNorm|LpNormalization|MeanVarianceNormalization).*"
          r"|LRN",
          "LayerNormalization, SkipLayerNormalization, SimplifiedLayerNormalization, Softmax"),
    _rule(K.REDUCTION, r"Reduce\w*|ArgMax|ArgMin|TopK|CumSum|\w*Pool",
          "ReduceMean, ReduceSum, ArgMax, GlobalAveragePool, MaxPool"),
    _rule(K.COPY, r"Transpose|Reshape|Flatten|Squeeze|Unsqueeze|Expand|Gather\w*|Scatter\w*"
          r"|Concat|Split|Slice|Cast|CastLike|Identity|Pad|Tile|Shape|Size|Resize|Upsample"
          r"|DepthToSpace|SpaceToDepth|ReorderInput|ReorderOutput|Trilu|Compress|NonZero"
          r"|OneHot|Range|ConstantOfShape|EyeLike|Constant|ReverseSequence|Col2Im"
          r"|(Dequantize|Quantize)Linear|DynamicQuantizeLinear",
          "Transpose, Reshape, Gather, Concat, Slice, Cast"),
    _rule(K.POINTWISE, r"Add|Sub|Mul|Div|Pow|Neg|Abs|Sign|Exp|Log|Sqrt|Reciprocal|Floor|Ceil"
          r"|Round|Mod|Erf|Sin|Cos|Tan|Sinh|Cosh|Tanh|Asin|Acos|Atan|Asinh|Acosh|Atanh"
          r"|Sigmoid|HardSigmoid|HardSwish|Relu|LeakyRelu|PRelu|Elu|Selu|Celu|Gelu|FastGelu"
          r"|BiasGelu|QuickGelu|GeluGrad|Mish|Softplus|Softsign|ThresholdedRelu|Clip"
          r"|Where|Equal|Greater|GreaterOrEqual|Less|LessOrEqual|Not|And|Or|Xor|IsNaN|IsInf"
          r"|BitShift|Bitwise\w+|Shrink|Dropout|BiasDropout|BiasAdd|BiasSplitGelu"
          r"|Max|Min|Sum|Mean|RotaryEmbedding|Affine|Scale|ScaledTanh|ParametricSoftplus"
          r"|Random\w*|Bernoulli|Fused(Add|Mul)\w*",
          "Add, Mul, Gelu, FastGelu, BiasGelu, Relu, Where, RotaryEmbedding"),
)  # fmt: skip


def classify_ort_kind(op_type: str) -> KernelKind:
    """The kind of one ONNX Runtime node from its op type (``Kernels.op_name`` of an ORT
    profile, such as ``FusedMatMul``; a ``domain:`` prefix is dropped); the table is
    :data:`ORT_OP_KIND_RULES`, unknown op types are ``other``."""
    if not isinstance(op_type, str) or not op_type:
        return KernelKind.OTHER
    base = op_type.rsplit(":", 1)[-1]
    for rule in ORT_OP_KIND_RULES:
        if rule.pattern.fullmatch(base):
            return rule.kind
    return KernelKind.OTHER


def classify_ort_kinds(op_types: pd.Series) -> pd.Series:
    """:class:`KernelKind` value per ORT node, as a categorical aligned with ``op_types``
    (each distinct op type classified once by :func:`classify_ort_kind`; missing → other)."""
    values = [k.value for k in KernelKind]
    idx = _per_unique(op_types, lambda op: classify_ort_kind(op).value, values)
    idx[idx < 0] = values.index(KernelKind.OTHER.value)
    return _categorical(idx, values, op_types.index)


def trace_kinds(trace: Trace) -> pd.Series:
    """:class:`KernelKind` value per row of ``trace.kernels``: an ONNX Runtime profile's nodes
    by their op type (:func:`classify_ort_kinds`; node names are the exporter's, such as
    ``node_scaled_dot_product_attention`` for a MatMul), every other trace by kernel name and
    activity (:func:`classify_kinds`)."""
    kernels = trace.kernels
    if trace.meta.is_onnxruntime:
        return classify_ort_kinds(kernels[Kernels.op_name])
    return classify_kinds(kernels[Kernels.name], kernels[Kernels.activity])


def trace_sources(trace: Trace, in_region: pd.Series | np.ndarray | bool) -> pd.Series:
    """:class:`KernelSource` value per row of ``trace.kernels``: ``onnxruntime`` for every node
    of an ONNX Runtime profile, else :func:`classify_sources` (``in_region``: rows launched
    inside a compiled region)."""
    kernels = trace.kernels
    if trace.meta.is_onnxruntime:
        values = [s.value for s in KernelSource]
        idx = np.full(len(kernels), values.index(KernelSource.ONNXRUNTIME.value))
        return _categorical(idx, values, kernels.index)
    return classify_sources(
        kernels[Kernels.name],
        in_graph=kernels[Kernels.in_graph].to_numpy(),
        in_compiled_region=in_region,
    )


def _as_bool(flags: pd.Series | np.ndarray | bool, n: int) -> np.ndarray:
    """A length-``n`` bool array from a scalar, an array or a (nullable) Series; NA is False."""
    if isinstance(flags, bool | np.bool_):
        return np.full(n, bool(flags))
    arr = pd.Series(flags).astype("boolean").fillna(False).to_numpy(dtype=bool)
    if len(arr) != n:
        raise ValueError(f"flag length {len(arr)} does not match {n} names")
    return arr


def classify_sources(
    names: pd.Series,
    *,
    in_graph: pd.Series | np.ndarray | bool,
    in_compiled_region: pd.Series | np.ndarray | bool,
) -> pd.Series:
    """:class:`KernelSource` value per row, as a categorical aligned with ``names``.

    ``in_graph`` marks rows replayed by a CUDA/HIP graph (``Kernels.in_graph``);
    ``in_compiled_region`` marks rows launched inside a compiled region. Either may be a
    scalar. The rules are in the module docstring; each distinct name is looked at once.
    """
    values = [s.value for s in KernelSource]
    n = len(names)
    graph = _as_bool(in_graph, n)
    compiled = _as_bool(in_compiled_region, n)
    by_name = _per_unique(names, _name_source_value, [*values, "none"])
    none_code = len(values)
    by_name[by_name < 0] = none_code
    idx = np.where(by_name != none_code, by_name, values.index(KernelSource.EAGER_ATEN.value))
    idx[(by_name == none_code) & compiled] = values.index(KernelSource.EXTERN.value)
    idx[graph] = values.index(KernelSource.CUDA_GRAPH.value)
    return _categorical(idx, values, names.index)


def _name_source_value(name: str) -> str:
    source = name_source(name)
    return "none" if source is None else source.value
