"""Source-line markers in the eager trace: which user line called each torch function.

Python frames in a trace (``with_stack=True``) name a function's *first* line, not the line
that made the call. While :func:`mark_lines` is active, each torch function called from user
code runs inside a ``record_function`` span named ``traceviz line <file>(<line>): <function>``
(:data:`traceviz.parse.compile_log.LINE_MARK`), where the frame is the innermost caller outside
torch, Triton and the standard library (model libraries such as transformers count as model
code: their lines are where the ops are written). Only the profiled eager steps are marked:
timing is measured in separate, unmarked steps.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from traceviz.parse.compile_log import LINE_MARK_PREFIX, is_library

_SKIPPED = frozenset(("__get__", "__set__", "size", "dim", "__len__", "__format__", "__repr__"))


def user_frame(frame: FrameType | None) -> FrameType | None:
    """The innermost frame, from ``frame`` outwards, that is user code."""
    while frame is not None:
        if _is_user(frame.f_code.co_filename):
            return frame
        frame = frame.f_back
    return None


# torch where it really is, for a source build that no path pattern would recognise
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep


@functools.lru_cache(maxsize=4096)
def _is_user(file: str) -> bool:
    return (
        file != __file__
        and not file.startswith("<")
        and not file.startswith(_TORCH_DIR)
        and not is_library(file)
    )


class _LineMarks(TorchFunctionMode):
    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        if getattr(func, "__name__", "") in _SKIPPED:
            return func(*args, **kwargs)
        frame = user_frame(sys._getframe(1))
        if frame is None:
            return func(*args, **kwargs)
        code = frame.f_code
        mark = f"{LINE_MARK_PREFIX}{code.co_filename}({frame.f_lineno}): {code.co_name}"
        with torch.profiler.record_function(mark):
            return func(*args, **kwargs)


@contextmanager
def mark_lines() -> Iterator[None]:
    """Mark every torch function call from user code with its source line (see module doc)."""
    with _LineMarks():
        yield
