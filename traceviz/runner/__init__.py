"""The runner: profile a model eagerly and under torch.compile into a run directory.

The only part of traceviz that imports torch, and only when a model is actually run:
reading a run directory (:func:`load_run`, :class:`Run`) and listing the built-in models
(:data:`BUILTIN_MODELS`) work without it.

A run directory holds ``eager.pt.trace.json.gz``, ``compiled.pt.trace.json.gz`` and
``run.json`` (:class:`~traceviz.runs.runinfo.RunInfo`, documented in ``docs/run-json.md``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from traceviz.runner.models import BUILTIN_MODELS, BuiltinModel, LoadedModel, load_model
from traceviz.runner.options import DEFAULT_MODEL, Options
from traceviz.runs.run import Run, load_run
from traceviz.runs.runinfo import SCHEMA_VERSION, RunInfo

if TYPE_CHECKING:
    from traceviz.runner.profile import profile_model

__all__ = [
    "BUILTIN_MODELS",
    "DEFAULT_MODEL",
    "SCHEMA_VERSION",
    "BuiltinModel",
    "LoadedModel",
    "Options",
    "Run",
    "RunInfo",
    "load_model",
    "load_run",
    "profile_model",
]


def __getattr__(name: str) -> Any:
    if name == "profile_model":  # imports torch: only on first use
        from traceviz.runner.profile import profile_model

        return profile_model
    raise AttributeError(f"module 'traceviz.runner' has no attribute {name!r}")
