"""traceviz: what did kernel fusion (torch.compile) do to my model, and why is it faster or not?

The flow, left to right::

    model --runner--> run dir (eager + compiled traces, run.json)
    trace file --parse--> Trace (typed tables) --analysis--> Side, Comparison
        --diagnose--> findings; comparison + findings = Report --> renderers / dashboard / widgets

:mod:`traceviz.pipeline` is the front door that runs those stages for every front end;
``traceviz.compare(a, b)`` (two traces) and ``traceviz.compare(RUN_DIR)`` (a run directory
made by ``traceviz run``) are its :func:`~traceviz.pipeline.compare` (a :class:`Report`, which
is a :class:`Comparison` with ``findings``). Layers only import downwards (README "Layout").

``import traceviz`` is light: torch, plotly and panel are imported only by the parts that need
them (the runner, the figures, the dashboard).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from traceviz._version import __version__
from traceviz.errors import TraceFormatError, TraceVizError, UsageError

if TYPE_CHECKING:
    from traceviz.analysis.compare import Comparison
    from traceviz.pipeline import compare
    from traceviz.ranks import Ranks, load_ranks
    from traceviz.ranks.compare import compare_ranks
    from traceviz.report.bundle import Report
    from traceviz.runner import Run, load_run, profile_model
    from traceviz.trace import Trace

__all__ = [
    "Comparison",
    "Ranks",
    "Report",
    "Run",
    "Trace",
    "TraceFormatError",
    "TraceVizError",
    "UsageError",
    "__version__",
    "compare",
    "compare_ranks",
    "load",
    "load_ranks",
    "load_run",
    "profile_model",
]


def load(
    path: str | Any,
    *,
    max_bytes: int | None = None,
    cache: bool | str | Any = True,
    rank: int | None = None,
) -> Trace:
    """Parse a Chrome/Kineto trace (``.json``, ``.json.gz``), an ONNX Runtime profile
    (``docs/onnxruntime-profile.md``) or a saved cache directory.

    ``max_bytes`` caps the trace's JSON size after gzip (default: the ``TRACEVIZ_MAX_BYTES``
    environment variable, else 4 GiB); a larger trace raises :class:`TraceFormatError`.
    ``cache``: a parsed trace is kept (NumPy columns, :mod:`traceviz.table_store`) and read
    back on the next load of the same unchanged file: ``True`` (default; in
    ``$TRACEVIZ_CACHE_DIR``, else
    ``~/.cache/traceviz``; ``TRACEVIZ_NO_CACHE=1`` turns it off), ``False``, or a directory.
    ``rank``: ``path`` is a ranks dataset (``traceviz ingest``) and this rank's Trace is read
    from it (:func:`traceviz.ranks.load_rank_trace`).
    """
    if rank is not None or _is_ranks_dataset(path):
        from traceviz.ranks.load import load_rank_trace

        if rank is None:
            raise UsageError(
                f"{path} is a ranks dataset: load one rank with traceviz.load(path, rank=N), "
                "all of them with traceviz.load_ranks(path) or `traceviz summary PATH --ranks`"
            )
        return load_rank_trace(path, rank)
    from traceviz.parse import load_trace

    return load_trace(path, max_bytes=max_bytes, cache=cache)


def _is_ranks_dataset(path: Any) -> bool:
    """A directory written by ``traceviz ingest`` (its marker file), told without pandas."""
    import os

    try:
        return os.path.isfile(os.path.join(os.fspath(path), "_dataset.json"))
    except TypeError:  # not a path
        return False


_LAZY = {
    "Trace": ("traceviz.trace", "Trace"),
    "Comparison": ("traceviz.analysis.compare", "Comparison"),
    "Report": ("traceviz.report.bundle", "Report"),
    "compare": ("traceviz.pipeline", "compare"),
    "Run": ("traceviz.runner", "Run"),
    "profile_model": ("traceviz.runner", "profile_model"),
    "load_run": ("traceviz.runner", "load_run"),
    "Ranks": ("traceviz.ranks.load", "Ranks"),
    "load_ranks": ("traceviz.ranks.load", "load_ranks"),
    "compare_ranks": ("traceviz.ranks.compare", "compare_ranks"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        from traceviz.gc_pause import collector_paused

        module_name, attr = _LAZY[name]
        with collector_paused():  # the first may import pandas (traceviz.gc_pause)
            module = importlib.import_module(module_name)
        return getattr(module, attr)
    raise AttributeError(f"module 'traceviz' has no attribute {name!r}")
