"""Which model to run: the built-in registry and ``MODEL`` specs.

A spec is a built-in name, ``path/to/file.py:factory`` or ``package.module:factory``.

A factory is any callable returning ``(model, example_inputs)``; ``example_inputs`` is a tuple of
positional arguments, a dict of keyword arguments, or a single tensor. The registry itself
imports no torch, so listing the models is instant.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from traceviz.errors import UsageError


@dataclass(frozen=True)
class BuiltinModel:
    """A built-in model: its name, the one fusion story it tells, and where its factory is.

    ``kernels`` is what `traceviz compare` counts on the model's sample run
    (``sample_traces/<name>``: CPU, float32, inference): kernels per step eager → compiled. A
    story states no count of its own; :attr:`line` adds this one (tests hold it to the sample).
    """

    name: str
    story: str
    extra: str | None = None  # the pip extra it needs, if any
    kernels: tuple[int, int] | None = None  # kernels per step on CPU, eager → compiled

    @property
    def factory(self) -> str:
        """``module:function``: the function of :mod:`traceviz.runner.zoo` named as the model."""
        return f"traceviz.runner.zoo:{self.name.replace('-', '_')}"

    @property
    def line(self) -> str:
        """The story with its kernel counts, as `traceviz models` prints it."""
        if self.kernels is None:
            return self.story
        eager, compiled = self.kernels
        return f"{self.story} ({eager} → {compiled} kernels per step on CPU)"


BUILTIN_MODELS: dict[str, BuiltinModel] = {
    m.name: m
    for m in (
        BuiltinModel(
            "block",
            "LayerNorm, matmul + bias, relu(cos)·GELU, residual add: the matmul stays a library "
            "call, the norm fuses, and so do the bias add, pointwise chain and residual",
            kernels=(8, 3),
        ),
        BuiltinModel(
            "pointwise",
            "cos→relu→mul→add→sin→sigmoid, and the scalar copies for its constants: all fused",
            kernels=(8, 1),
        ),
        BuiltinModel(
            "linear-add",
            "matmul then bias add: Inductor calls addmm instead, and adds an aten::copy_",
            kernels=(2, 2),
        ),
        BuiltinModel(
            "mlp",
            "Linear→GELU→Linear: the GEMMs stay library calls, only the GELU becomes generated",
            kernels=(5, 5),
        ),
        BuiltinModel(
            "layernorm-gelu",
            "LayerNorm then GELU: a reduction and a pointwise op fused",
            kernels=(2, 1),
        ),
        BuiltinModel(
            "attention",
            "pre-norm transformer block with softmax attention: norms, softmax and adds fuse, "
            "GEMMs stay library calls",
            kernels=(27, 17),
        ),
        BuiltinModel(
            "conv-bn-relu",
            "Conv2d→BatchNorm(eval)→ReLU: BatchNorm and ReLU fuse after the conv, which gains a "
            "layout kernel",
            kernels=(3, 3),
        ),
        BuiltinModel(
            "graph-break",
            "a data-dependent if: Dynamo splits the model into two compiled graphs",
            kernels=(12, 7),
        ),
        BuiltinModel(
            "gpt2",
            "a 2-layer GPT-2 causal LM with random weights (no download)",
            extra="gpt2",
        ),
    )
}


@dataclass(frozen=True)
class LoadedModel:
    """A model ready to profile: what the factory returned, plus its name."""

    name: str
    spec: str | None
    model: Any  # torch.nn.Module or any callable
    inputs: Any  # tuple of args, dict of kwargs, or a tensor


def load_model(spec: str, *, batch_size: int | None = None) -> LoadedModel:
    """Resolve ``spec`` (built-in name, ``path/to/file.py:factory``, ``package.module:factory``).

    Raises :class:`UsageError` with one line for an unknown name, a missing file, module or
    factory, a factory that fails, or one that returns something else than (model, inputs).
    """
    if spec in BUILTIN_MODELS:
        factory = _import_factory(BUILTIN_MODELS[spec].factory, spec)
        name = spec
    elif ":" in spec:
        factory = _import_factory(spec, spec)
        name = model_name(spec)
    else:
        raise UsageError(
            f"unknown model {spec!r}; built-in models are {', '.join(BUILTIN_MODELS)} "
            "(or give path/to/file.py:factory or package.module:factory)"
        )
    model, inputs = _call_factory(factory, spec, batch_size)
    return LoadedModel(name=name, spec=spec, model=model, inputs=inputs)


def model_name(spec: str) -> str:
    """A model's name from its spec: a built-in's own name, else the file or module the factory
    lives in (``models/my_model.py:build`` → ``my_model``, ``pkg.nets:build`` → ``nets``)."""
    if spec in BUILTIN_MODELS or ":" not in spec:
        return spec
    where = spec.rpartition(":")[0]
    if _is_path(where):
        return Path(where).stem or where
    return where.rpartition(".")[2] or where


def _import_factory(spec: str, label: str) -> Callable[..., Any]:
    """The callable named by ``module_or_file:attribute``."""
    where, _, attr = spec.rpartition(":")
    if not where or not attr:
        raise UsageError(f"model {label!r}: expected path/to/file.py:factory or module:factory")
    module = _import_file(where, label) if _is_path(where) else _import_module(where, label)
    factory = getattr(module, attr, None)
    if factory is None or not callable(factory):
        raise UsageError(f"model {label!r}: {where} has no callable {attr!r}")
    return factory


def _is_path(where: str) -> bool:
    return where.endswith(".py") or "/" in where or "\\" in where


def _import_module(name: str, label: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as err:
        raise UsageError(f"model {label!r}: cannot import module {name!r}: {err}") from err


def _import_file(path_text: str, label: str) -> Any:
    path = Path(path_text)
    if not path.is_file():
        raise UsageError(f"model {label!r}: no such file {path_text!r}")
    module_name = f"traceviz_user_model_{abs(hash(str(path.resolve())))}"
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    if module_spec is None or module_spec.loader is None:
        raise UsageError(f"model {label!r}: cannot import {path_text!r}")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module  # dataclasses and pickling look modules up here
    try:
        module_spec.loader.exec_module(module)
    except Exception as err:
        del sys.modules[module_name]
        reason = one_line(err)
        raise UsageError(f"model {label!r}: importing {path_text} failed: {reason}") from err
    return module


def _call_factory(factory: Callable[..., Any], label: str, batch_size: int | None) -> Any:
    kwargs: dict[str, Any] = {}
    if batch_size is not None:
        if not _accepts(factory, "batch_size"):
            raise UsageError(f"model {label!r}: its factory takes no batch_size argument")
        kwargs["batch_size"] = batch_size
    try:
        result = factory(**kwargs)
    except UsageError:
        raise
    except Exception as err:
        raise UsageError(f"model {label!r}: factory raised {one_line(err)}") from err
    if not (isinstance(result, tuple | list) and len(result) == 2 and callable(result[0])):
        raise UsageError(
            f"model {label!r}: the factory must return (model, example_inputs), "
            f"got {type(result).__name__}"
        )
    return result


def _accepts(func: Callable[..., Any], name: str) -> bool:
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return True
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def first_line(text: str) -> str:
    """The first line of ``text`` with content, stripped, cut to 300 characters."""
    lines = text.strip().splitlines()
    return lines[0].strip()[:300] if lines else ""


def one_line(err: BaseException) -> str:
    """``Type: first line of the message`` (:func:`first_line`), for one-line errors."""
    line = first_line(str(err))
    return f"{type(err).__name__}: {line}" if line else type(err).__name__
