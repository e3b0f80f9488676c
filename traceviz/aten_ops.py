"""The aten op vocabulary: which op base names belong to which family.

One place for the op-name sets that the CPU-kernel rule (:mod:`traceviz.parse.cpu_kernels`),
the traffic rules (:mod:`traceviz.analysis.traffic.rules`), the op keys of the fusion map
(:mod:`traceviz.analysis.fusion.op_keys`) and the kernel kinds
(:mod:`traceviz.analysis.kernel_kinds`) share. Names are base names without namespace or overload
(``aten::add_.Tensor`` → ``add_``; in-place forms are listed only where a user needs them, see
:func:`with_inplace`).

Ops that move no data, in three groups (their union is :data:`NO_DATA_OPS`):

- :data:`VIEW_OPS`: views, reshapes and other aliasing ops (``view``, ``t``, ``expand``, …);
- :data:`ALLOC_OPS`: allocations without initialisation (``empty``, ``resize_``, …);
- :data:`METADATA_OPS`: queries and checks that read sizes or a scalar (``size``, ``item``, …).

Compute families: :data:`MATMUL_OPS`, :data:`CONV_OPS`, :data:`ATTENTION_OPS`,
:data:`NORM_OPS` (+ :data:`NORM_BACKWARD_OPS`), :data:`SOFTMAX_OPS`
(+ :data:`SOFTMAX_BACKWARD_OPS`), :data:`COPY_OPS`. Per-op details that only one rule needs
(argument positions of a convolution, a matmul's operand count) stay with that rule.

A leaf module: it imports nothing from traceviz, so every layer may use it.
"""

from __future__ import annotations

__all__ = [
    "ALLOC_OPS",
    "ATTENTION_OPS",
    "CONV_OPS",
    "COPY_OPS",
    "MATMUL_OPS",
    "METADATA_OPS",
    "NORM_BACKWARD_OPS",
    "NORM_OPS",
    "NO_DATA_OPS",
    "SOFTMAX_BACKWARD_OPS",
    "SOFTMAX_OPS",
    "VIEW_OPS",
    "with_inplace",
]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def with_inplace(ops: frozenset[str]) -> frozenset[str]:
    """``ops`` and their in-place forms (``view`` → ``view``, ``view_``)."""
    return ops | {op + "_" for op in ops}


#: Views, reshapes and aliasing ops: no data moved, no kernel launched.
VIEW_OPS: frozenset[str] = _words(
    """
    view _unsafe_view reshape _reshape_alias as_strided transpose t permute expand expand_as
    squeeze unsqueeze slice select narrow alias detach unbind split split_with_sizes chunk
    unfold flatten unflatten view_as diagonal numpy_T lift_fresh resolve_conj resolve_neg
    movedim swapaxes conj _conj view_as_real view_as_complex _reinterpret_tensor"""
)

#: Allocations (no initialisation) and allocator bookkeeping: no data moved.
ALLOC_OPS: frozenset[str] = _words(
    """
    empty empty_like empty_strided new_empty new_empty_strided resize resize_as set
    record_stream _alloc_from_pool"""
)

#: Size/metadata queries, checks and scalar reads: no tensor data moved.
METADATA_OPS: frozenset[str] = _words(
    """
    size stride dim numel sym_size sym_stride sym_numel is_nonzero is_same_size is_pinned
    result_type item _local_scalar_dense _nnpack_available _has_compatible_shallow_copy_type
    _assert_async _assert_tensor_metadata lift_fresh_copy"""
)

#: Every op that moves no data.
NO_DATA_OPS: frozenset[str] = VIEW_OPS | ALLOC_OPS | METADATA_OPS

#: Matrix products (GEMM/GEMV/dot), including the fused-epilogue and CPU library forms.
MATMUL_OPS: frozenset[str] = _words(
    """
    mm bmm addmm baddbmm addbmm matmul linear mv addmv dot vdot inner outer einsum tensordot
    _int_mm _scaled_mm _addmm_activation _linear_pointwise _mkl_linear mkldnn_linear
    _weight_int4pack_mm _weight_int8pack_mm"""
)

#: Convolutions, transposed ones included.
CONV_OPS: frozenset[str] = _words(
    """
    convolution _convolution conv1d conv2d conv3d conv_transpose1d conv_transpose2d
    conv_transpose3d cudnn_convolution cudnn_convolution_transpose mkldnn_convolution
    miopen_convolution miopen_convolution_transpose"""
)

#: Scaled dot-product attention and its fused kernels.
ATTENTION_OPS: frozenset[str] = _words(
    """
    scaled_dot_product_attention _scaled_dot_product_flash_attention
    _scaled_dot_product_flash_attention_for_cpu _scaled_dot_product_efficient_attention
    _scaled_dot_product_cudnn_attention _flash_attention_forward _efficient_attention_forward
    _cudnn_attention_forward _scaled_dot_product_fused_attention_overrideable"""
)

#: Normalizations (layer, batch, group, instance, RMS), forward.
NORM_OPS: frozenset[str] = _words(
    """
    layer_norm native_layer_norm batch_norm native_batch_norm _batch_norm_impl_index
    cudnn_batch_norm miopen_batch_norm _native_batch_norm_legit
    _native_batch_norm_legit_no_training _native_batch_norm_legit_functional
    _batch_norm_with_update group_norm native_group_norm instance_norm rms_norm
    _fused_rms_norm"""
)

#: Normalization backward ops.
NORM_BACKWARD_OPS: frozenset[str] = _words(
    """
    native_layer_norm_backward native_batch_norm_backward cudnn_batch_norm_backward
    native_group_norm_backward"""
)

#: Softmax and log-softmax, forward.
SOFTMAX_OPS: frozenset[str] = _words("softmax _softmax _safe_softmax log_softmax _log_softmax")

#: Softmax backward ops.
SOFTMAX_BACKWARD_OPS: frozenset[str] = _words("_softmax_backward_data _log_softmax_backward_data")

#: Ops that copy a tensor (possibly converting its dtype or device).
COPY_OPS: frozenset[str] = _words("copy clone contiguous _to_copy to")
