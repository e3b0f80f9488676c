"""Export the model to ONNX: the dynamo exporter first (opset 18), the legacy one as fallback.

``torch.onnx.export(..., dynamo=True)`` tags every node with its aten op and module scope in
metadata; when it fails, the TorchScript-based exporter (``dynamo=False``) is tried, and the
reason is recorded. Hugging Face language models get an explicit all-ones ``attention_mask``
input, so the exported graph has the mask an inference server would feed.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import logging
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils import _pytree as pytree

from traceviz.runner.models import one_line
from traceviz.runs.runinfo_backends import EXPORTED_GRAPH, ExportInfo

OPSET = 18


@dataclass(frozen=True)
class Exported:
    """The export's record, and the graph's inputs as numpy arrays by input name."""

    info: ExportInfo
    path: Path | None = None  # the written graph; None when both exporters failed
    feeds: dict[str, np.ndarray] = field(default_factory=dict)


def export_model(
    fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], directory: Path, *, opset: int = OPSET
) -> Exported:
    """Write ``fn(*args, **kwargs)`` as an ONNX graph to ``directory/onnx/model.onnx``; never
    raises for an exporter failure (``info.error`` says what happened)."""
    fn, args, kwargs, masked = with_attention_mask(fn, args, kwargs)
    try:
        arrays = input_arrays(args, kwargs)
    except (TypeError, RuntimeError) as err:  # e.g. bfloat16, which numpy has no dtype for
        error = f"the inputs cannot be fed to ONNX Runtime as numpy arrays: {one_line(err)}"
        return Exported(info=ExportInfo(attention_mask=masked, error=error))
    path = directory / EXPORTED_GRAPH
    path.parent.mkdir(parents=True, exist_ok=True)
    fallback: str | None = None
    for exporter in ("dynamo", "legacy"):
        path.unlink(missing_ok=True)
        start = time.perf_counter()
        try:
            with _quiet(), torch.no_grad():
                _export(fn, args, kwargs, path, dynamo=exporter == "dynamo", opset=opset)
            seconds = time.perf_counter() - start
            _weights_beside(path)
            feeds = _feeds(path, arrays)
        except Exception as err:
            if exporter == "dynamo":
                fallback = one_line(err)
                continue
            info = ExportInfo(fallback_reason=fallback, attention_mask=masked, error=one_line(err))
            return Exported(info=info)
        import onnx

        opsets = onnx.load(str(path), load_external_data=False).opset_import
        info = ExportInfo(
            exporter=exporter,
            opset=next((o.version for o in opsets if o.domain in ("", "ai.onnx")), None),
            seconds=seconds,
            path=EXPORTED_GRAPH,
            fallback_reason=fallback,
            inputs=list(feeds),
            attention_mask=masked,
        )
        return Exported(info=info, path=path, feeds=feeds)
    raise AssertionError("unreachable")


def _export(
    fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], path: Path, *, dynamo: bool, opset: int
) -> None:
    if dynamo:
        torch.onnx.export(
            fn, args, str(path), kwargs=kwargs, dynamo=True, opset_version=opset,
            external_data=True, verbose=False,
        )  # fmt: skip
        return
    names = input_names(fn, args, kwargs)
    flat = tuple(args) + ((kwargs,) if kwargs else ())
    torch.onnx.export(
        fn, flat, str(path), dynamo=False, opset_version=opset, input_names=names,
        do_constant_folding=True,
    )  # fmt: skip


def input_names(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[str]:
    """Names for the tensor inputs: the forward's parameter names, kwargs keys, else input_<i>."""
    try:
        target = fn.forward if isinstance(fn, torch.nn.Module) else fn
        params = list(inspect.signature(target).parameters)
    except (TypeError, ValueError):
        params = []
    names = [params[i] if i < len(params) else f"input_{i}" for i in range(len(args))]
    return [n for n, a in zip(names, args, strict=True) if isinstance(a, torch.Tensor)] + [
        k for k, v in kwargs.items() if isinstance(v, torch.Tensor)
    ]


def input_arrays(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[np.ndarray]:
    """The input tensors of ``args`` then ``kwargs``, in order, as numpy arrays (on the CPU)."""
    tensors = [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
    return [t.detach().cpu().numpy() for t in tensors]


def _feeds(path: Path, arrays: list[np.ndarray]) -> dict[str, np.ndarray]:
    """The graph's inputs matched, in order, to ``arrays``."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in initializers]
    if len(names) != len(arrays):
        raise ValueError(f"the exported graph has {len(names)} inputs for {len(arrays)} tensors")
    return dict(zip(names, arrays, strict=True))


def _weights_beside(path: Path) -> None:
    """Rewrite the graph at ``path`` with its initializers of 1 KiB and more in
    ``<name>.data`` beside it (the structure alone stays small and readable without them)."""
    import onnx

    from traceviz.runner.onnx.sessions import EXTERNAL_BYTES, weights_file

    model = onnx.load(str(path))  # external data, if any, is read in here
    data = path.with_name(weights_file(path))
    data.unlink(missing_ok=True)
    onnx.save_model(
        model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
        location=data.name, size_threshold=EXTERNAL_BYTES,
    )  # fmt: skip


class _MaskedLM(torch.nn.Module):
    """A Hugging Face LM called with an explicit ``attention_mask``; returns what ``outer``
    returns: the model's outputs when ``outer`` is the model, else its logits."""

    def __init__(self, outer: torch.nn.Module, hf: torch.nn.Module) -> None:
        super().__init__()
        self.outer, self.hf = outer, hf

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> Any:
        out = self.hf(input_ids=input_ids, attention_mask=attention_mask)
        return out if self.outer is self.hf else out.logits


def with_attention_mask(
    fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Any, tuple[Any, ...], dict[str, Any], bool]:
    """For a Hugging Face model (or a module whose ``lm`` is one, like the built-in ``gpt2``)
    called on token ids alone: a wrapper taking ``(input_ids, attention_mask)`` and an all-ones
    mask, and True. Anything else comes back unchanged, with False."""
    hf = fn if _is_hf(fn) else getattr(fn, "lm", None)
    if not isinstance(hf, torch.nn.Module) or not _is_hf(hf) or "attention_mask" in kwargs:
        return fn, args, kwargs, False
    tensors = [t for t in (*args, *kwargs.values()) if isinstance(t, torch.Tensor)]
    if len(tensors) != 1 or tensors[0].is_floating_point():
        return fn, args, kwargs, False
    ids = tensors[0]
    return _MaskedLM(fn, hf), (ids, torch.ones_like(ids)), {}, True


def _is_hf(obj: Any) -> bool:
    """A transformers PreTrainedModel, recognised without importing transformers."""
    return isinstance(obj, torch.nn.Module) and any(
        c.__name__ == "PreTrainedModel" and c.__module__.startswith("transformers.")
        for c in type(obj).__mro__
    )


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The exporters' console chatter (progress lines, warnings, logging) off."""
    logger = logging.getLogger("torch.onnx")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)
