"""Inputs and outputs: describing tensors, moving them, and checking compiled against eager."""

from __future__ import annotations

from typing import Any

import torch
from torch.utils import _pytree as pytree

from traceviz.runner.options import tolerance_for
from traceviz.runner.runinfo import Correctness, TensorSpec


def tensor_specs(tree: Any, prefix: str) -> list[TensorSpec]:
    """Shape, dtype and device of every tensor in a nested structure, with its path."""
    leaves, _ = pytree.tree_flatten_with_path(tree)
    return [
        TensorSpec(
            path=prefix + pytree.keystr(path),
            shape=list(leaf.shape),
            dtype=dtype_name(leaf.dtype),
            device=str(leaf.device),
        )
        for path, leaf in leaves
        if isinstance(leaf, torch.Tensor)
    ]


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.float32`` → ``"float32"``."""
    return str(dtype).removeprefix("torch.")


def move_inputs(tree: Any, device: torch.device, dtype: torch.dtype | None) -> Any:
    """Tensors to ``device``; floating tensors also to ``dtype`` when given."""

    def move(leaf: Any) -> Any:
        if not isinstance(leaf, torch.Tensor):
            return leaf
        if dtype is not None and leaf.is_floating_point():
            return leaf.to(device=device, dtype=dtype)
        return leaf.to(device=device)

    return pytree.tree_map(move, tree)


def snapshot(tree: Any) -> Any:
    """A detached copy of every tensor (outputs may be overwritten by later calls, e.g.
    CUDA-graph replays)."""
    return pytree.tree_map(lambda t: t.detach().clone() if isinstance(t, torch.Tensor) else t, tree)


def tf32_in_effect(model: Any, device: torch.device) -> bool:
    """Whether this model's float32 GEMMs or convolutions run in TF32 on ``device``: on CUDA
    when float32 matmul precision is not "highest", or when cuDNN may use TF32 (its default)
    and the model has convolution layers."""
    if device.type != "cuda":
        return False
    if torch.get_float32_matmul_precision() != "highest" or torch.backends.cuda.matmul.allow_tf32:
        return True
    convs = isinstance(model, torch.nn.Module) and any(
        isinstance(m, torch.nn.modules.conv._ConvNd) for m in model.modules()
    )
    return bool(torch.backends.cudnn.allow_tf32 and convs)


def compare_outputs(eager: Any, compiled: Any, *, tf32: bool = False) -> Correctness:
    """Check compiled outputs against eager ones elementwise (see :class:`Correctness`);
    ``tf32``: float32 outputs get TF32's tolerances (:func:`tf32_in_effect`)."""
    e_leaves, e_spec = pytree.tree_flatten_with_path(eager)
    c_leaves, c_spec = pytree.tree_flatten_with_path(compiled)
    if pytree.treespec_dumps(e_spec) != pytree.treespec_dumps(c_spec):
        return Correctness(checked=True, passed=False, note="output structures differ")
    pairs = [
        ("out" + pytree.keystr(path), e, c)
        for (path, e), (_, c) in zip(e_leaves, c_leaves, strict=True)
        if isinstance(e, torch.Tensor)
    ]
    dtypes = [dtype_name(e.dtype) for _, e, _ in pairs if e.is_floating_point()]
    tf32 = tf32 and "float32" in dtypes
    rtol, atol = tolerance_for(["tf32" if d == "float32" and tf32 else d for d in dtypes])
    max_abs, max_rel, mismatched = 0.0, 0.0, []
    for path, e, c in pairs:
        abs_err, rel_err, ok = _compare_tensor(e, c, rtol=rtol, atol=atol)
        max_abs, max_rel = max(max_abs, abs_err), max(max_rel, rel_err)
        if not ok:
            mismatched.append(path)
    return Correctness(
        checked=True,
        passed=not mismatched,
        outputs_compared=len(pairs),
        max_abs_error=max_abs,
        max_rel_error=max_rel,
        rtol=rtol,
        atol=atol,
        mismatched=mismatched,
        tf32=tf32,
        note="" if pairs else "the model returned no tensors",
    )


def _compare_tensor(
    eager: torch.Tensor, compiled: Any, *, rtol: float, atol: float
) -> tuple[float, float, bool]:
    """(max abs error, max rel error, within tolerance) of one output tensor."""
    if not isinstance(compiled, torch.Tensor) or compiled.shape != eager.shape:
        return float("inf"), float("inf"), False
    if not eager.is_floating_point():
        equal = bool(torch.equal(eager.cpu(), compiled.cpu().to(eager.dtype)))
        return (0.0, 0.0, True) if equal else (float("inf"), float("inf"), False)
    e = eager.detach().to(device="cpu", dtype=torch.float64)
    c = compiled.detach().to(device="cpu", dtype=torch.float64)
    same = (c == e) | (e.isnan() & c.isnan())  # equal infinities and matching NaNs agree
    diff = torch.where(same, 0.0, (c - e).abs().nan_to_num(nan=float("inf")))
    if diff.numel() == 0:
        return 0.0, 0.0, True
    ref = e.abs().nan_to_num(nan=0.0, posinf=0.0)
    rel = diff / ref.clamp_min(atol)
    ok = bool((diff <= atol + rtol * ref).all())
    return float(diff.max()), float(rel.max()), ok
