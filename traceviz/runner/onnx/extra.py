"""The ``onnx`` extra: import onnx / onnxruntime, or say which extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from traceviz.errors import UsageError

INSTALL = "pip install 'traceviz[onnx]'"


def require(name: str) -> ModuleType:
    """Import ``name`` (onnx, onnxruntime, onnxscript); a :class:`UsageError` naming the extra
    when it is missing."""
    try:
        return importlib.import_module(name)
    except ImportError as err:
        raise UsageError(f"--backends onnxruntime needs {name} ({err}); {INSTALL}") from err
