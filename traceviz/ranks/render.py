"""``summary --ranks`` and ``compare --ranks`` as text, JSON and Markdown.

The JSON forms are documented in ``docs/ranks.md`` and versioned by
:data:`~traceviz.ranks.analyse.RANKS_SCHEMA_VERSION`. Text and Markdown show the job's headline
figures, the stragglers, the ranks of interest (stragglers and the slowest steps first, up to
``top`` rows) and the findings; the JSON holds every rank. Text is ASCII, its glyphs spelled
out (:func:`~traceviz.units.ascii_text`) before it is laid out in 80 columns, as the other
commands' text is in a pipe.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from traceviz.diagnose.finding import Finding, Unit, format_value
from traceviz.errors import UsageError
from traceviz.ranks.analyse import RANKS_SCHEMA_VERSION, RanksAnalysis, RanksPair
from traceviz.ranks.collectives import Instance
from traceviz.ranks.compare import RankPair
from traceviz.ranks.reduce import RankSummary as S
from traceviz.ranks.stragglers import Lateness
from traceviz.records import plain, records
from traceviz.report.json_numbers import whole_counts
from traceviz.units import ascii_text

FORMATS = ("text", "json", "markdown")
#: Per-rank columns of the JSON ``ranks`` rows that come from the stragglers analysis.
LATENESS_COLUMNS = (
    Lateness.offset_us, Lateness.lateness_p50_us, Lateness.arrived_last_share,
    Lateness.transfer_us, Lateness.wait_us, Lateness.straggler,
)  # fmt: skip
#: Columns of the text / Markdown per-rank table: (header, column, unit); "/step" columns are
#: the rank's totals divided by its steps (the whole trace when it has none).
TABLE = (
    ("rank", S.rank, Unit.COUNT), ("node", S.node, Unit.TEXT),
    ("step p50", S.step_p50_us, Unit.US), ("compute", "compute_per_step_us", Unit.US),
    ("comm", "comm_per_step_us", Unit.US), ("waiting", "wait_per_step_us", Unit.US),
    ("late p50", Lateness.lateness_p50_us, Unit.US),
    ("last", Lateness.arrived_last_share, Unit.RATIO),
    ("breaks", S.graph_breaks, Unit.COUNT), ("", "flag", Unit.TEXT),
)  # fmt: skip


#: The width the text form keeps within (a terminal's 80 columns).
TEXT_WIDTH = 80


def render_ranks(analysis: RanksAnalysis, fmt: str, *, top: int = 10) -> str:
    """One job's ranks in ``fmt`` (``text``, ``json`` or ``markdown``)."""
    return _pick(fmt, ranks_text, ranks_json, ranks_markdown)(analysis, top)


def render_pair(pair: RanksPair, fmt: str, *, top: int = 10) -> str:
    """Two jobs' ranks compared, in ``fmt``."""
    return _pick(fmt, pair_text, pair_json, pair_markdown)(pair, top)


def _pick(
    fmt: str,
    text: Callable[[Any, int], str],
    json_form: Callable[[Any], dict[str, Any]],
    markdown: Callable[[Any, int], str],
) -> Callable[[Any, int], str]:
    check_format(fmt)
    if fmt == "json":
        return lambda value, _top: json.dumps(json_form(value), indent=1) + "\n"
    return text if fmt == "text" else markdown


def check_format(fmt: str) -> None:
    """A :class:`UsageError` when ``--ranks`` cannot render ``fmt``."""
    if fmt not in FORMATS:
        raise UsageError(f"--ranks renders --format {', '.join(FORMATS)}, not {fmt!r}")


# --- JSON -----------------------------------------------------------------------------------


def ranks_json(analysis: RanksAnalysis) -> dict[str, Any]:
    """The documented JSON form of one job's ranks (docs/ranks.md)."""
    return whole_counts(
        {
            "schema_version": RANKS_SCHEMA_VERSION,
            "label": analysis.label,
            "ranks": records(per_rank_table(analysis)),
            "stragglers": analysis.stragglers.to_json(),
            "straggler_threshold_us": plain(analysis.stragglers.threshold_us),
            "collectives": collective_totals(analysis),
            "step_spread": {
                "median_us": plain(analysis.steps.median_us),
                "min_us": plain(analysis.steps.min_us),
                "max_us": plain(analysis.steps.max_us),
                "slow_ranks": analysis.steps.slow_ranks,
            },
            "slow_kernels": records(analysis.slow_kernels),
            "by_node": records(analysis.stragglers.by_node),
            "failed": records(analysis.failed.loc[:, ["source", "rank", "error"]]),
            "findings": [f.to_json() for f in analysis.findings],
        }
    )


def pair_json(pair: RanksPair) -> dict[str, Any]:
    """The documented JSON form of two jobs' ranks compared (docs/ranks.md)."""
    cmp = pair.comparison
    low, high = cmp.speedup_range()
    return whole_counts(
        {
            "schema_version": RANKS_SCHEMA_VERSION,
            "names": list(cmp.names),
            "median_speedup": plain(cmp.median_speedup),
            "speedup_min": plain(low),
            "speedup_max": plain(high),
            "ranks": records(cmp.per_rank),
            "only_a": cmp.only_a,
            "only_b": cmp.only_b,
            "odd_compile": {k: records(v) for k, v in cmp.odd.items()},
            "a": _side_json(pair.a),
            "b": _side_json(pair.b),
            "findings": [f.to_json() for f in pair.findings],
        }
    )


def _side_json(analysis: RanksAnalysis) -> dict[str, Any]:
    return {
        k: v for k, v in ranks_json(analysis).items() if k not in ("findings", "schema_version")
    }


def per_rank_table(analysis: RanksAnalysis) -> pd.DataFrame:
    """The summary rows with each rank's lateness, waiting and flags (``straggler``,
    ``slow_step``); ``collective_wait_us`` is the stragglers analysis' ``wait_us``."""
    late = analysis.stragglers.per_rank.loc[:, [Lateness.rank, *LATENESS_COLUMNS]]
    late = late.rename(columns={Lateness.wait_us: "collective_wait_us",
                                Lateness.transfer_us: "collective_transfer_us"})  # fmt: skip
    table = analysis.summary.merge(late, on=S.rank, how="left")
    table["slow_step"] = table[S.rank].isin(analysis.steps.slow_ranks)
    return table.sort_values(S.rank, ignore_index=True)


def collective_totals(analysis: RanksAnalysis) -> dict[str, Any]:
    """Collective time of all ranks split into transfer and waiting (µs), instances matched,
    and per collective: instances, median message bytes, median busbw (GB/s)."""
    per = analysis.stragglers.per_rank
    inst = analysis.stragglers.match.instances
    by_name = []
    for name, rows in inst.groupby(Instance.name, sort=True):
        by_name.append(
            {
                "name": str(name),
                "instances": len(rows),
                "transfer_us": plain(rows[Instance.transfer_us].sum()),
                "wait_us": plain(rows[Instance.wait_us].sum()),
                "median_bytes": plain(rows[Instance.bytes].median()),
                "median_busbw_gbps": plain(rows[Instance.busbw_gbps].median()),
            }
        )
    return {
        "instances": len(inst),
        "comm_us": plain(per[Lateness.comm_us].sum()),
        "transfer_us": plain(per[Lateness.transfer_us].sum()),
        "wait_us": plain(per[Lateness.wait_us].sum()),
        "by_name": by_name,
    }


# --- text and Markdown ----------------------------------------------------------------------


def ranks_text(analysis: RanksAnalysis, top: int = 10) -> str:
    lines = _headline(analysis)
    lines += ["", "per rank (compute, comm and waiting: per step)"]
    lines += _table_lines(_interesting(analysis, top), markdown=False)
    lines += _failed_lines(analysis)
    lines += _findings_text(analysis.findings)
    return ascii_text("\n".join(lines) + "\n")


def ranks_markdown(analysis: RanksAnalysis, top: int = 10) -> str:
    lines = ["# Ranks", "", *[f"- {line}" for line in _headline(analysis)], ""]
    lines += _table_lines(_interesting(analysis, top), markdown=True)
    failed = _failed_lines(analysis)
    if failed:
        lines += ["", "## Failed", "", *[f"- {line}" for line in failed[2:]]]
    lines += ["", "## Findings", ""]
    lines += [f.to_markdown() for f in analysis.findings] or ["No findings."]
    return "\n".join(lines) + "\n"


def pair_text(pair: RanksPair, top: int = 10) -> str:
    cmp = pair.comparison
    a, b = cmp.names
    low, high = cmp.speedup_range()
    lines = [
        f"{a}: {len(pair.a.summary)} ranks; {b}: {len(pair.b.summary)} ranks; "
        f"{len(cmp.per_rank)} in both",
        f"speedup ({a} step / {b} step): median {_x(cmp.median_speedup)}, "
        f"lowest {_x(low)}, highest {_x(high)}",
        "",
        *_pair_table(cmp.per_rank, top, cmp.names, markdown=False),
    ]
    lines += _findings_text(pair.findings)
    return ascii_text("\n".join(lines) + "\n")


def pair_markdown(pair: RanksPair, top: int = 10) -> str:
    cmp = pair.comparison
    low, high = cmp.speedup_range()
    lines = [
        f"# Ranks: {cmp.names[1]} vs {cmp.names[0]}",
        "",
        f"- median speedup {_x(cmp.median_speedup)}, lowest {_x(low)}, highest {_x(high)}",
        "",
        *_pair_table(cmp.per_rank, top, cmp.names, markdown=True),
        "",
        "## Findings",
        "",
    ]
    lines += [f.to_markdown() for f in pair.findings] or ["No findings."]
    return "\n".join(lines) + "\n"


def _headline(analysis: RanksAnalysis) -> list[str]:
    s = analysis.summary
    totals = collective_totals(analysis)
    steps = analysis.steps
    stragglers = analysis.stragglers.ranks
    nodes = s[S.node].astype(str)
    out = [
        f"{len(s)} ranks on {nodes[nodes != ''].nunique() or 'unknown'} node(s); "
        f"{len(analysis.failed)} failed",
        f"median step {_us(steps.median_us)} (fastest rank {_us(steps.min_us)}, slowest "
        f"{_us(steps.max_us)})",
    ]
    if totals["instances"]:
        comm = totals["comm_us"] or 0.0
        wait = totals["wait_us"] or 0.0
        out.append(
            f"collectives: {totals['instances']} matched across ranks; {_us(comm)} in all, "
            f"{_us(wait)} of it waiting ({100 * wait / comm if comm else 0:.0f}%)"
        )
    else:
        out.append("collectives: none matched across ranks (no lateness, no waiting measured)")
    out.append(
        "stragglers: " + (", ".join(f"rank {r}" for r in stragglers) if stragglers else "none")
        + f" (threshold {_us(analysis.stragglers.threshold_us)})"
    )  # fmt: skip
    return out


def _interesting(analysis: RanksAnalysis, top: int) -> pd.DataFrame:
    """Stragglers, then slow-step ranks, then the rest by step time, ``top`` rows at most."""
    table = per_rank_table(analysis)
    steps = pd.to_numeric(table[S.steps], errors="coerce").to_numpy(dtype=float)
    per_step = np.where(steps > 0, steps, 1.0)
    for column, total in (("compute_per_step_us", S.compute_time_us),
                          ("comm_per_step_us", S.comm_time_us),
                          ("wait_per_step_us", "collective_wait_us")):  # fmt: skip
        table[column] = pd.to_numeric(table[total], errors="coerce").to_numpy(float) / per_step
    table["flag"] = np.where(table[Lateness.straggler].fillna(False).astype(bool), "straggler",
                             np.where(table["slow_step"], "slow step", ""))  # fmt: skip
    order = table.assign(
        _s=~table[Lateness.straggler].fillna(False).astype(bool),
        _t=~table["slow_step"],
        _p=-pd.to_numeric(table[S.step_p50_us], errors="coerce").fillna(0.0),
    ).sort_values(["_s", "_t", "_p", S.rank])
    return order.head(max(top, 0))


def _table_lines(table: pd.DataFrame, *, markdown: bool) -> list[str]:
    cells = [[h for h, _, _ in TABLE]]
    for _, row in table.iterrows():
        cells.append([_cell(row.get(col), unit) for _, col, unit in TABLE])
    return _grid(cells, markdown)


def _pair_table(
    per: pd.DataFrame, top: int, names: tuple[str, str], *, markdown: bool
) -> list[str]:
    a, b = names
    spec = (
        ("rank", RankPair.rank, Unit.COUNT),
        (f"kernels {a}", RankPair.kernels_a, Unit.COUNT),
        (f"kernels {b}", RankPair.kernels_b, Unit.COUNT),
        (f"step {a}", RankPair.step_a_us, Unit.US), (f"step {b}", RankPair.step_b_us, Unit.US),
        ("speedup", RankPair.speedup, Unit.FACTOR),
        (f"breaks {b}", RankPair.graph_breaks_b, Unit.COUNT),
    )  # fmt: skip
    rows = per.sort_values([RankPair.speedup, RankPair.rank]).head(max(top, 0))
    cells = [[h for h, _, _ in spec] + [""]]
    for _, row in rows.iterrows():
        odd = "odd compile" if bool(row[RankPair.odd_a]) or bool(row[RankPair.odd_b]) else ""
        cells.append([_cell(row[c], u) for _, c, u in spec] + [odd])
    return _grid(cells, markdown)


def _grid(cells: list[list[str]], markdown: bool) -> list[str]:
    if markdown:
        head, *body = cells
        return [
            "| " + " | ".join(head) + " |",
            "|" + "---|" * len(head),
            *["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in body],
        ]
    keep = [i for i in range(len(cells[0])) if any(r[i] for r in cells[1:]) or len(cells) == 1]
    cells = [[r[i] for i in keep] for r in cells]  # a column no row fills (no node names)
    widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
    gap = "  " if sum(widths) + 2 * (len(widths) - 1) <= TEXT_WIDTH else " "
    return [gap.join(c.rjust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]


def _failed_lines(analysis: RanksAnalysis) -> list[str]:
    failed = analysis.failed
    if failed.empty:
        return []
    return ["", "failed:"] + [f"  {row['source']}: {row['error']}" for _, row in failed.iterrows()]


def _findings_text(findings: list[Finding]) -> list[str]:
    if not findings:
        return ["", "findings: none"]
    return ["", "findings:", *[_wrapped(ascii_text(str(f))) + "\n" for f in findings]]


def _wrapped(text: str) -> str:
    """Each line of ``text`` within :data:`TEXT_WIDTH`, continued under its own indent."""
    out = []
    for line in text.splitlines():
        indent = " " * (len(line) - len(line.lstrip(" -")))
        out.extend(
            textwrap.wrap(line, TEXT_WIDTH, subsequent_indent=indent + "  ", break_on_hyphens=False)
            or [""]
        )
    return "\n".join(out)


def _cell(value: Any, unit: str) -> str:
    value = plain(value)
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else ""
    return format_value(value, unit) if unit else str(value)


def _us(value: float) -> str:
    return format_value(value, Unit.US)


def _x(value: float) -> str:
    return format_value(value, Unit.FACTOR)
