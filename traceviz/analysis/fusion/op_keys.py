"""The op vocabulary both sides of a fusion map share: a key per op.

An op's key is its base name (``aten::add_.Tensor`` → ``add``) mapped through
:data:`OP_ALIASES` (names that do the same work: ``_softmax``/``softmax``,
``native_layer_norm``/``layer_norm``, ``addmm``/``mm``/``linear``, …). Views and other ops
that move no data (:data:`NO_WORK_OPS`, from :data:`traceviz.aten_ops.NO_DATA_OPS`) have
no key. An Inductor kernel's name stands for the
ops written into it (:func:`~traceviz.analysis.inductor_names.fused_kernel_ops`). Used by the
fusion map, its guard (:mod:`~traceviz.analysis.fusion.comparable`), the matcher and the by-line
view.
"""

from __future__ import annotations

from collections.abc import Iterable

from traceviz.analysis.inductor_names import eager_op_base, fused_kernel_ops
from traceviz.aten_ops import ATTENTION_OPS, NO_DATA_OPS, with_inplace

__all__ = ["NO_WORK_OPS", "OP_ALIASES", "keys_of", "name_keys", "op_key"]


def _aliases(groups: dict[str, str]) -> dict[str, str]:
    """``{canonical: "name name ..."}`` → ``{name: canonical}``."""
    return {name: key for key, names in groups.items() for name in names.split()}


#: Op base name → the key it matches under (names absent here are their own key).
OP_ALIASES: dict[str, str] = _aliases(
    {
        "mm": "mm addmm linear matmul _addmm_activation _linear_pointwise mkldnn_linear"
        " _mkl_linear",
        "bmm": "bmm baddbmm",
        "relu": "relu clamp_min",
        "softmax": "softmax _softmax _safe_softmax",
        "log_softmax": "log_softmax _log_softmax",
        "layer_norm": "layer_norm native_layer_norm",
        "batch_norm": "batch_norm native_batch_norm _native_batch_norm_legit"
        " _native_batch_norm_legit_no_training _native_batch_norm_legit_functional"
        " _batch_norm_impl_index _batch_norm_with_update cudnn_batch_norm miopen_batch_norm",
        "group_norm": "group_norm native_group_norm",
        "convolution": "convolution _convolution conv1d conv2d conv3d cudnn_convolution"
        " mkldnn_convolution miopen_convolution",
        "attention": " ".join(sorted(ATTENTION_OPS)),
        "copy": "copy clone contiguous _to_copy to convert_element_type",
        "fill": "fill zero full full_like zeros zeros_like ones ones_like new_zeros new_ones"
        " new_full scalar_tensor",
        "dropout": "dropout native_dropout",
        "embedding": "embedding index_select",
        "cat": "cat _cat",
        "pad": "pad constant_pad_nd",
        "max_pool2d": "max_pool2d max_pool2d_with_indices",
        "where": "where _s_where",
    }
)

#: Ops that move no data: views, reshapes, metadata and allocations (no key, match nothing).
NO_WORK_OPS: frozenset[str] = with_inplace(NO_DATA_OPS) - frozenset(OP_ALIASES)


def op_key(name: str) -> str | None:
    """The key an op or decoded fused-op name matches under; None for ops that move no data."""
    if not isinstance(name, str) or not name:
        return None
    base = eager_op_base(name, strip_inplace=True)
    if base in NO_WORK_OPS:
        return None
    return OP_ALIASES.get(base, base)


def name_keys(name: str) -> list[str]:
    """The keys a kernel or op name stands for: an Inductor kernel name's decoded ops (an
    eager trace can hold compiled kernels too), else the name's own :func:`op_key`."""
    fused = fused_kernel_ops(name)
    return keys_of(fused.ops if fused is not None else [name])


def keys_of(ops: Iterable[str]) -> list[str]:
    """The distinct keys of ``ops``, in order, leaving out ops that move no data."""
    keys = [op_key(op) for op in ops]
    return list(dict.fromkeys(k for k in keys if k is not None))
