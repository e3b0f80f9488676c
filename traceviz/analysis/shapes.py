"""Tensor shapes from a CPU op's ``Input Dims`` (the JSON text ``record_shapes=True`` writes).

One parser for every analysis that compares shapes (chains, the comparability guard, the
diagnosis timeline): ``"[[64, 1024], [], [1024]]"`` → ``((64, 1024), (1024,))``. Entries that are
not tensors (scalars ``[]``, ``None``, lists of tensors) are left out; bad or over-deep JSON gives
no shapes. Cached per distinct text: traces repeat the same few shapes.
"""

from __future__ import annotations

import json
from functools import lru_cache

__all__ = ["tensor_shapes"]


@lru_cache(maxsize=2**16)  # distinct shape strings; bounded for long-lived processes
def tensor_shapes(dims: str) -> tuple[tuple[int, ...], ...]:
    """The shapes (at least one dimension, integer sizes) in ``dims``, in order."""
    try:
        parsed = json.loads(dims)
    except (ValueError, RecursionError):
        return ()
    if not isinstance(parsed, list):
        return ()
    return tuple(
        tuple(entry)
        for entry in parsed
        if isinstance(entry, list) and entry and all(type(d) is int for d in entry)
    )
