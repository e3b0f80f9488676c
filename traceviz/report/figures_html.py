"""Figures as HTML ``<div>``s for the offline HTML report (:mod:`traceviz.report.html`), which
embeds plotly.js once for the whole page."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio


def figures_html(
    builders: Iterable[Callable[[Any], go.Figure]], subject: Any, id_prefix: str
) -> str:
    """Each ``build(subject)`` as a responsive ``<div id="{id_prefix}-{i}">`` (i from 0), without
    plotly.js and the plotly logo, concatenated in order."""
    return "".join(
        pio.to_html(
            build(subject),
            full_html=False,
            include_plotlyjs=False,
            config={"displaylogo": False, "responsive": True},
            div_id=f"{id_prefix}-{i}",
        )
        for i, build in enumerate(builders)
    )
