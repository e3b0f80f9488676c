"""What a tab derives from a report, worked out once per report.

A served dashboard builds each browser session's Panel objects afresh (they belong to that
session's document), but the tables behind them are the same for every session of one
report: :func:`per_report` keeps them, so a second session (a reload, another browser) skips
the pandas work. An entry is keyed by the report's identity and dropped when the report is
garbage-collected. Callers get a shallow copy of a kept frame (pandas' copy-on-write: a
session that changes its frame changes only its own).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Any

import pandas as pd

__all__ = ["per_report"]

_MEMO: dict[int, dict[Hashable, Any]] = {}
_LOCK = threading.Lock()


def per_report(report: object, key: Hashable, build: Callable[[], pd.DataFrame]) -> pd.DataFrame:
    """``build()`` for ``report`` and ``key``, built on the first call only; each call gets
    its own shallow copy."""
    rid = id(report)
    with _LOCK:
        entry = _MEMO.get(rid)
        if entry is None:
            entry = _MEMO[rid] = {}
            weakref.finalize(report, _MEMO.pop, rid, None)
        kept = entry.get(key)
    if kept is None:
        kept = build()
        with _LOCK:
            kept = entry.setdefault(key, kept)
    return kept.copy(deep=False)
