"""Figures from finished specs, without plotly's per-property validation.

Building a figure through plotly's API (``add_bar``, ``update_layout``, ``make_subplots``…)
validates and copies every property on every call. The builders of
:mod:`traceviz.report.figures` instead write each figure's final properties as plain dicts — in
the key order and with the value types plotly's own calls would have stored (lists of Python
scalars, numpy arrays copied) — and :func:`figure` makes the ``go.Figure`` from them at once.

The result is a valid figure: rebuilt through ``go.Figure``, every property validated, it
holds the same JSON (``tests/test_figure_specs.py``, every builder on real traces of each
device kind). The returned figure validates as usual from then on (``update_layout`` etc.).
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import plotly.graph_objects as go

Spec = dict[str, Any]


def figure(data: list[Spec], layout: Spec, *, grid: tuple[Any, Any] | None = None) -> go.Figure:
    """A ``go.Figure`` holding exactly ``data`` (one dict per trace, with its ``type``) and
    ``layout`` (its ``template`` included), in their key order; ``grid``: the subplot grid
    (``_grid_str``, ``_grid_ref``) of a :func:`subplots` skeleton, so ``row=``/``col=``
    keep working on the figure. The dicts become the figure's own: pass fresh ones."""
    # only the trace types go through plotly's constructor; numbered subplot axes are named so
    # that the layout registers them (fig.layout.xaxis2)
    numbered: Spec = {key: {} for key in layout if key[-1].isdigit()}
    skeleton = {"data": [{"type": d["type"]} for d in data], "layout": {"template": {}, **numbered}}
    fig = go.Figure(skeleton, _validate=False)
    fig._layout = layout
    fig._data = data
    fig._validate = True
    fig._layout_obj._validate = True
    for trace in fig._data_objs:
        trace._validate = True
    if grid is not None:
        fig._grid_str, fig._grid_ref = grid[0], copy.deepcopy(grid[1])
    return fig


@functools.cache
def _skeleton(key: tuple[tuple[str, Any], ...]) -> go.Figure:
    from plotly.subplots import make_subplots

    return make_subplots(**dict(key))


def subplots(**options: Any) -> tuple[Spec, tuple[Any, Any]]:
    """``make_subplots(**options)``'s layout (a fresh copy: template, axes, subplot-title
    annotations) and grid, computed once per set of options. List options must be tuples
    (they are a cache key); subplot titles are placeholders to overwrite."""
    fig = _skeleton(tuple(sorted(options.items())))
    return copy.deepcopy(fig._layout), (fig._grid_str, fig._grid_ref)


def scalars(values: Any) -> list[Any]:
    """An array-like as plotly stores a list it is given: Python scalars (numpy's unwrapped)."""
    return [v.item() if hasattr(v, "item") else v for v in values]
