"""Inputs and outputs: describing tensors, moving them, and checking compiled against eager."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch.utils import _pytree as pytree

from traceviz.runner.options import tolerance_for
from traceviz.runs.runinfo import Correctness, TensorSpec


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
    """Check compiled outputs against eager ones elementwise (see :class:`Correctness`), each
    output with the tolerances of its own dtype (a float32 output beside a bfloat16 one keeps
    float32's bounds); ``tf32``: float32 outputs get TF32's (:func:`tf32_in_effect`)."""
    e_leaves, e_spec = pytree.tree_flatten_with_path(eager)
    c_leaves, c_spec = pytree.tree_flatten_with_path(compiled)
    if pytree.treespec_dumps(e_spec) != pytree.treespec_dumps(c_spec):
        return Correctness(checked=True, passed=False, note="output structures differ")
    pairs = [
        ("out" + pytree.keystr(path), e, c)
        for (path, e), (_, c) in zip(e_leaves, c_leaves, strict=True)
        if isinstance(e, torch.Tensor)
    ]
    tf32 = tf32 and any(e.dtype == torch.float32 for _, e, _ in pairs)
    used: dict[str, tuple[float, float]] = {}  # floating dtype -> its (rtol, atol)
    total = Elements()
    mismatched = []
    for path, e, c in pairs:
        kind = "tf32" if tf32 and e.dtype == torch.float32 else dtype_name(e.dtype)
        bounds = tolerance_for([kind])  # float32's for a dtype without its own (ints: exact)
        if e.is_floating_point():
            used[kind] = bounds
        found = _compare_tensor(e, c, rtol=bounds[0], atol=bounds[1], path=path)
        total = total.plus(found)
        if found.failed:
            mismatched.append(path)
    rtol, atol = tolerance_for(list(used))  # the loosest used, for a one-line summary
    return Correctness(
        checked=True,
        passed=not mismatched,
        outputs_compared=len(pairs),
        max_abs_error=total.max_abs,
        max_rel_error=total.max_rel,
        rtol=rtol,
        atol=atol,
        tolerances={kind: list(bounds) for kind, bounds in used.items()},
        mismatched=mismatched,
        tf32=tf32,
        elements_compared=total.count,
        over_rtol=total.over_rtol,
        failed_elements=total.failed,
        worst=total.worst,
        note="" if pairs else "the model returned no tensors",
    )


@dataclass(frozen=True)
class Elements:
    """What the elementwise check found in one output tensor (or several, summed)."""

    count: int = 0
    failed: int = 0  # outside atol + rtol·|eager| (or a shape/type/integer mismatch)
    over_rtol: int = 0  # relative error |c − e| / max(|e|, atol) above rtol
    max_abs: float = 0.0
    max_rel: float = 0.0
    worst: str | None = None  # where max_rel is, with both values

    def plus(self, other: Elements) -> Elements:
        top = other if other.max_rel > self.max_rel else self
        return Elements(
            count=self.count + other.count,
            failed=self.failed + other.failed,
            over_rtol=self.over_rtol + other.over_rtol,
            max_abs=max(self.max_abs, other.max_abs),
            max_rel=top.max_rel,
            worst=top.worst,
        )


def _compare_tensor(
    eager: torch.Tensor, compiled: Any, *, rtol: float, atol: float, path: str
) -> Elements:
    """The elementwise check of one output tensor."""
    inf = float("inf")
    if not isinstance(compiled, torch.Tensor) or compiled.shape != eager.shape:
        return Elements(count=eager.numel(), failed=max(eager.numel(), 1), max_abs=inf, max_rel=inf)
    if not eager.is_floating_point():
        unequal = int((eager.cpu() != compiled.cpu().to(eager.dtype)).sum())
        bad = inf if unequal else 0.0
        return Elements(count=eager.numel(), failed=unequal, max_abs=bad, max_rel=bad)
    e = eager.detach().to(device="cpu", dtype=torch.float64)
    c = compiled.detach().to(device="cpu", dtype=torch.float64)
    same = (c == e) | (e.isnan() & c.isnan())  # equal infinities and matching NaNs agree
    diff = torch.where(same, 0.0, (c - e).abs().nan_to_num(nan=float("inf")))
    if diff.numel() == 0:
        return Elements()
    ref = e.abs().nan_to_num(nan=0.0, posinf=0.0)
    rel = diff / ref.clamp_min(atol)
    at = int(rel.argmax())
    index = ", ".join(str(int(i)) for i in torch.unravel_index(torch.tensor(at), e.shape))
    where = f"{path}[{index}]" if index else path
    values = f"eager {e.flatten()[at].item():.6g}, compiled {c.flatten()[at].item():.6g}"
    return Elements(
        count=diff.numel(),
        failed=int((diff > atol + rtol * ref).sum()),
        over_rtol=int((rel > rtol).sum()),
        max_abs=float(diff.max()),
        max_rel=float(rel.max()),
        worst=f"{where}: {values}",
    )
