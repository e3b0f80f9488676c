"""Many ranks: per rank, the step and where its device time per step goes, stragglers marked.

Drawn from a plain per-rank table (the rows of ``traceviz.ranks.render.per_rank_table``, whose
columns are named below), so this module does not depend on the ranks package above it. Bars
per rank, stacked, µs per step: compute (kernel time outside collectives), collective transfer,
waiting for other ranks inside collectives; a marker for the median step. Collectives may
overlap compute on another stream, so a stack may pass the step time. Stragglers are outlined
in red and named in the title.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from traceviz.report.figures.fast import figure
from traceviz.report.figures.style import (
    KIND_COLORS,
    SIDE_COLORS,
    empty_spec,
    layout_spec,
    template_spec,
)

#: Columns read from the per-rank table (µs unless stated).
RANK, STEPS, STEP_P50 = "rank", "steps", "step_p50_us"
COMPUTE, TRANSFER, WAIT = "compute_time_us", "collective_transfer_us", "collective_wait_us"
STRAGGLER, NODE = "straggler", "node"
PARTS = (
    (COMPUTE, "compute", KIND_COLORS["gemm"]),
    (TRANSFER, "collective transfer", KIND_COLORS["communication"]),
    (WAIT, "waiting for other ranks", "#E45756"),
)
#: Ranks drawn at most (the slowest steps and every straggler first).
MAX_RANKS = 256
STRAGGLER_COLOR = "#D62728"


def ranks_figure(per_rank: pd.DataFrame, *, title: str = "Ranks") -> go.Figure:
    """Per-rank stacked bars of compute, collective transfer and waiting per step (µs, measured)
    with each rank's median step as a marker; stragglers outlined."""
    if per_rank.empty:
        return figure([], empty_spec(title, "no ranks"))
    table = _shown(per_rank)
    steps = pd.to_numeric(table[STEPS], errors="coerce").to_numpy(dtype=float)
    per_step = np.where(steps > 0, steps, 1.0)
    x = [str(int(r)) for r in table[RANK]]
    late = table[STRAGGLER].fillna(False).astype(bool).to_numpy() if STRAGGLER in table else None
    outline = [STRAGGLER_COLOR if s else "rgba(0,0,0,0)" for s in (late if late is not None
               else np.zeros(len(table), dtype=bool))]  # fmt: skip
    data: list[dict[str, Any]] = []
    stack = np.zeros(len(table))
    for column, label, color in PARTS:
        if column not in table:
            continue
        values = pd.to_numeric(table[column], errors="coerce")
        if values.isna().all():
            continue
        stack += values.fillna(0.0).to_numpy(dtype=float) / per_step / 1e3
        data.append(
            {
                "hovertemplate": f"rank %{{x}}<br>{label}: %{{y:.3f}} ms per step<extra></extra>",
                "marker": {"color": color, "line": {"color": list(outline), "width": 2}},
                "name": label,
                "x": list(x),
                "y": values.fillna(0.0).to_numpy(dtype=float) / per_step / 1e3,
                "type": "bar",
            }
        )
    median = pd.to_numeric(table[STEP_P50], errors="coerce").to_numpy(dtype=float) / 1e3
    data.append(
        {
            "hovertemplate": "rank %{x}<br>median step: %{y:.3f} ms<extra></extra>",
            "marker": {"color": "#2F2F2F", "size": 14, "symbol": "line-ew-open"},
            "mode": "markers",
            "name": "median step",
            "x": x,
            "y": median,
            "type": "scatter",
        }
    )
    flagged = [x[i] for i in np.flatnonzero(late)] if late is not None else []
    note = f"stragglers: {', '.join(flagged)}" if flagged else "no straggler"
    shown = "" if len(table) == len(per_rank) else f"; {len(table)} of {len(per_rank)} ranks"
    layout = {
        "template": template_spec(),
        "xaxis": {"type": "category", "title": {"text": "rank"}},
        "barmode": "stack",
        "yaxis": {"title": {"text": "ms per step"}, "range": [0, _top(stack, median)]},
        **layout_spec(f"{title} — device time per step (measured), {note}{shown}", height=400),
    }
    return figure(data, layout)


def _top(stack: np.ndarray, median: np.ndarray) -> float:
    """The y-axis top (ms): the highest stack or median-step marker and 8% headroom, so
    every marker is drawn inside the plot (plotly's autorange left the markers above it)."""
    values = np.concatenate([stack, median])
    values = values[np.isfinite(values)]
    return float(values.max()) * 1.08 if len(values) and values.max() > 0 else 1.0


def _shown(per_rank: pd.DataFrame) -> pd.DataFrame:
    """Every rank, or at most :data:`MAX_RANKS`: stragglers first, then the slowest steps;
    drawn in rank order."""
    table = per_rank.sort_values(RANK)
    if len(table) <= MAX_RANKS:
        return table
    late = table[STRAGGLER].fillna(False).astype(bool) if STRAGGLER in table else False
    order = table.assign(_late=~late, _step=-pd.to_numeric(table[STEP_P50], errors="coerce"))
    keep = order.sort_values(["_late", "_step"]).head(MAX_RANKS).index
    return table.loc[table.index.isin(keep)]


#: Columns read from a rank-by-rank comparison table (``traceviz.ranks.compare.RankPair``).
STEP_A, STEP_B = "step_a_us", "step_b_us"


def rank_pair_figure(per_rank: pd.DataFrame, names: tuple[str, str]) -> go.Figure:
    """Two sets of ranks side by side: each rank's median step on side a and on side b
    (grouped bars, ms, measured), one colour per side (:data:`SIDE_COLORS`)."""
    a, b = names
    title = f"{a} vs {b}: median step per rank (measured, ms)"
    if per_rank.empty:
        return figure([], empty_spec(title, "no rank on both sides"))
    table = per_rank.sort_values(RANK)
    x = [str(int(r)) for r in table[RANK]]
    data = [
        {
            "hovertemplate": f"rank %{{x}}<br>{name}: %{{y:.3f}} ms<extra></extra>",
            "marker": {"color": color},
            "name": name,
            "x": x,
            "y": pd.to_numeric(table[column], errors="coerce").to_numpy(dtype=float) / 1e3,
            "type": "bar",
        }
        for column, name, color in ((STEP_A, a, SIDE_COLORS[0]), (STEP_B, b, SIDE_COLORS[1]))
    ]
    layout = {
        "template": template_spec(),
        "barmode": "group",
        "xaxis": {"type": "category", "title": {"text": "rank"}},
        "yaxis": {"title": {"text": "median step (ms)"}},
        **layout_spec(title, height=320),
    }
    return figure(data, layout)
