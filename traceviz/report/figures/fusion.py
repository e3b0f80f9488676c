"""The fusion map: which eager kernels each compiled kernel replaced (a partition)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from traceviz.analysis.compare import Comparison
from traceviz.analysis.fusion.fusion_map import FusionKernels
from traceviz.report.figures.fast import figure
from traceviz.report.figures.style import (
    SIDE_COLORS,
    _records,
    empty_spec,
    layout_spec,
    template_spec,
)
from traceviz.report.views import ops_by_kernel
from traceviz.units import fmt_count, fmt_name, fmt_us

#: Above this share of the fusion kernels' device time in kernels whose names carry no op
#: names, a name match cannot tell what they replaced: the figure says so instead.
OPAQUE_SHARE = 0.5


def opaque_fusions(kernels: pd.DataFrame) -> str | None:
    """Why the fusion figure cannot be drawn when the compiled kernels' names say nothing (old
    Triton ``triton__0d1d2d…``: Inductor-made, no op names) and no compiler record stands in
    for them; None when the names, or the compile log, are enough. ``kernels``:
    ``FusionMap.kernels`` (columns :class:`~traceviz.analysis.fusion.fusion_map.FusionKernels`)."""
    fusions = kernels[kernels[FusionKernels.is_fusion].astype(bool)]
    if fusions.empty:
        return None
    time = fusions[FusionKernels.time_us].astype(float).fillna(0.0)
    blind = (fusions[FusionKernels.fused_ops].fillna("") == "") & (
        fusions[FusionKernels.basis].astype(str) != "compiler"
    )
    total = float(time.sum())
    share = float(time[blind].sum()) / total if total > 0 else float(blind.mean())
    if share <= OPAQUE_SHARE:
        return None
    example = fmt_name(str(fusions.loc[blind, FusionKernels.kernel].iloc[0]), 32)
    return (
        f"{int(blind.sum())} of {len(fusions)} fused kernels ({share:.0%} of their device time) "
        f"have names without op names (e.g. {example}),<br>so what they replaced cannot be "
        "matched by name. Profile with `traceviz run` (Inductor's own record) or pass "
        "--compile-log (a TORCH_TRACE log)."
    )


def fusion_figure(c: Comparison, *, top: int = 15) -> go.Figure:
    """Sankey: a's ops → the b kernels that replaced them; link width = a's device time."""
    a, b = c.names
    title = (
        f"Fusion: {a} ops → the {b} kernels that replaced them (link width: {a} device time, "
        f"measured, split over a kernel's ops by their kernel counts; top {top} {b} kernels)"
    )
    fusion = c.fusion
    if fusion.comparability.withheld:
        return figure(
            [], empty_spec(title, f"no fusion map: {a} and {b} are not one workload (see findings)")
        )
    opaque = opaque_fusions(fusion.kernels)
    if opaque is not None:
        return figure([], empty_spec(title, opaque, height=300))
    kernels = fusion.kernels.sort_values("eager_time_us", ascending=False)
    matched = kernels[kernels["eager_time_us"].fillna(0) > 0].head(top)
    only = fusion.eager_only.sort_values("time_us", ascending=False).head(top)
    only = only[only["time_us"].fillna(0) > 0]
    if matched.empty and only.empty:
        return figure([], empty_spec(title, f"no {b} kernel could be matched to {a} ops"))
    labels: list[str] = []
    hover: list[str] = []
    colors: list[str] = []
    index: dict[tuple[str, str], int] = {}

    shown: dict[str, int] = {}

    def node(key: tuple[str, str], text: str, color: str) -> int:
        if key not in index:
            index[key] = len(labels)
            label = fmt_name(key[1], 48)
            shown[label] = shown.get(label, 0) + 1
            if shown[label] > 1:  # two names cut to one label: number them (hover: full name)
                label = f"{label} #{shown[label]}"
            labels.append(label)
            hover.append(text)
            colors.append(color)
        return index[key]

    credited = ops_by_kernel(fusion.ops)
    src, dst, values, link_hover = [], [], [], []
    for r in _records(matched):
        ops = credited.get(str(r["kernel"]), [])
        total = sum(n for _, n in ops) or 1
        target = node(
            ("b", str(r["kernel"])),
            f"{b} kernel {r['kernel']}<br>{fmt_count(r['calls'])} calls, "
            f"{fmt_us(r['time_us'])} ({b}, measured)",
            SIDE_COLORS[1],
        )
        for op, n in ops:
            value = float(r["eager_time_us"]) * n / total
            src.append(node(("a", op), f"{a} op {op}", SIDE_COLORS[0]))
            dst.append(target)
            values.append(value)
            link_hover.append(
                f"{op} → {fmt_name(str(r['kernel']), 60)}<br>{a}: {fmt_count(n)} "
                f"kernels, ≈ {fmt_us(value)}"
            )
    if not only.empty:
        sink = node(
            ("b", f"(no counterpart in {b})"), f"{a} ops with no {b} counterpart", "#BAB0AC"
        )
        for r in _records(only):
            src.append(node(("a", str(r["op"])), f"{a} op {r['op']}", SIDE_COLORS[0]))
            dst.append(sink)
            values.append(float(r["time_us"]))
            link_hover.append(
                f"{r['op']}: {fmt_count(r['kernels'])} kernels, {fmt_us(r['time_us'])}"
            )
    sankey = {
        "arrangement": "snap",
        "link": {
            "customdata": link_hover,
            "hovertemplate": "%{customdata}<extra></extra>",
            "source": src,
            "target": dst,
            "value": values,
        },
        "node": {
            "color": colors,
            "customdata": hover,
            "hovertemplate": "%{customdata}<extra></extra>",
            "label": labels,
            "pad": 12,
        },
        "type": "sankey",
    }
    layout = {
        "template": template_spec(),
        **layout_spec(title, height=max(360, 24 * len(labels) // 2 + 160)),
    }
    return figure([sankey], layout)
