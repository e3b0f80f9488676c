"""DataFrames and values as plain JSON-ready Python (NaN/NA → None, numpy → builtins)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd


def plain(value: Any) -> Any:
    """One value as a JSON-ready builtin."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        number = float(value)
        return None if math.isnan(number) or math.isinf(number) else number
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def records(table: pd.DataFrame, *, limit: int | None = None) -> list[dict[str, Any]]:
    """Rows of ``table`` as dicts of plain values (first ``limit`` rows when given)."""
    rows = table if limit is None else table.head(limit)
    return [{str(k): plain(v) for k, v in row.items()} for row in rows.to_dict("records")]
