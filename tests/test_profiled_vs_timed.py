"""Profiled figures that disagree with the timed ones never lead (issue 24 §2).

GIVEN a run directory whose profiled steps do not look like its timed steps (the sample
``pointwise`` run with its timed eager samples made 40× faster, as on a machine busy while
profiling: profiled eager ~95× its timed median), WHEN it is compared, THEN the comparison
holds the check (``Comparison.profiled_timing``, JSON ``profiled_vs_timed``) and every report
says first that the profiled times are not representative, then the timed verdict, and never
a device-time ratio.
"""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import msgspec
import numpy as np
import pytest
from rich.console import Console

from tests.conftest import SAMPLES
from traceviz.analysis.timing.profiled import (
    PROFILER_ALLOWANCE,
    ProfiledVsTimed,
    SideTiming,
    profiled_vs_timed,
)
from traceviz.analysis.timing.speed import median_interval
from traceviz.pipeline import open_report
from traceviz.report.bundle import Report
from traceviz.report.json_report import comparison_json
from traceviz.report.markdown import comparison_markdown
from traceviz.report.profiled_note import profiled_note
from traceviz.report.text import render_comparison
from traceviz.report.views import headline
from traceviz.runs.run import load_run
from traceviz.runs.runinfo import RUN_JSON, TimingStats, decode, encode

NOTE = "profiled times are not representative"
FASTER = 40.0  # the hand-made run's timed eager steps: the sample's divided by this


def _stats(samples: list[float]) -> TimingStats:
    """Timing statistics of ``samples`` (µs), as the runner writes them."""
    values = np.asarray(samples, dtype=float)
    q1, median, q3 = (float(v) for v in np.percentile(values, [25, 50, 75]))
    return TimingStats(
        iters=len(samples), median_us=median, q1_us=q1, q3_us=q3, iqr_us=q3 - q1,
        min_us=float(values.min()), max_us=float(values.max()),
        mean_us=float(values.mean()), samples_us=list(samples),
    )  # fmt: skip


@pytest.fixture(scope="module")
def busy_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample pointwise run, its timed eager steps ``FASTER`` × faster: the profiled
    eager steps then took ~95× the timed median, as on a machine busy while profiling."""
    directory = tmp_path_factory.mktemp("profiled-vs-timed") / "busy-run"
    shutil.copytree(SAMPLES / "pointwise", directory)
    info = decode((directory / RUN_JSON).read_bytes(), source=directory / RUN_JSON)
    eager = _stats([v / FASTER for v in info.timing.eager.samples_us])
    assert info.timing.compiled is not None
    timing = msgspec.structs.replace(
        info.timing, eager=eager, speedup=eager.median_us / info.timing.compiled.median_us
    )
    (directory / RUN_JSON).write_bytes(encode(msgspec.structs.replace(info, timing=timing)))
    return directory


@pytest.fixture(scope="module")
def busy(busy_run: Path) -> Report:
    return open_report(busy_run)


def _side(profiled: float, timed: float, *, name: str = "eager") -> SideTiming:
    return SideTiming(
        name=name, profiled_median_us=profiled, profiled_steps=5, timed_median_us=timed,
        timed_low_us=0.95 * timed, timed_high_us=1.05 * timed, timed_steps=20,
    )  # fmt: skip


# --- the check (analysis) -------------------------------------------------------------------


def test_a_side_disagrees_beyond_the_profilers_allowance_either_way() -> None:
    high = 1.05 * 100 * PROFILER_ALLOWANCE
    assert not _side(high, 100).disagrees
    assert _side(high * 1.01, 100).disagrees
    assert not _side(95 / PROFILER_ALLOWANCE, 100).disagrees
    assert _side(0.99 * 95 / PROFILER_ALLOWANCE, 100).disagrees
    assert _side(6_400, 109).inflation == pytest.approx(6_400 / 109)


def test_sides_stretched_unalike_are_skewed_even_when_neither_disagrees() -> None:
    check = ProfiledVsTimed(_side(250, 100), _side(110, 100, name="compiled"))
    assert not any(side.disagrees for side in check.sides)
    assert check.skew == pytest.approx(250 / 110)
    assert check.skewed and check.disagrees
    note = profiled_note(check)
    assert note is not None and "eager's profiled steps stretched 2.3× more than compiled's" in note
    alike = ProfiledVsTimed(_side(250, 100), _side(200, 100, name="compiled"))
    assert not alike.disagrees and profiled_note(alike) is None


def test_median_interval_holds_the_median() -> None:
    interval = median_interval([10.0, 11.0, 12.0, 13.0, 50.0])
    assert interval is not None
    median, low, high = interval
    assert median == 12.0 and low <= median <= high
    assert median_interval([1.0, 2.0]) is None


def test_the_busy_run_disagrees_on_eager_only(busy: Report) -> None:
    check = busy.profiled_timing
    assert check is not None
    eager, compiled = check.sides
    assert (eager.name, compiled.name) == ("eager", "compiled")
    assert eager.disagrees and not compiled.disagrees and check.disagrees
    assert eager.inflation > 50
    assert eager.timed_low_us <= eager.timed_median_us <= eager.timed_high_us
    assert eager.scale == pytest.approx(1 / eager.inflation)


@pytest.mark.parametrize("run", ["pointwise", "mlp", "h200/gpt2", "h200/attention-train"])
def test_sample_runs_made_on_a_quiet_machine_agree(run: str) -> None:
    check = open_report(SAMPLES / run).profiled_timing
    assert check is not None and not check.disagrees, check


def test_two_plain_traces_have_no_check() -> None:
    report = open_report(
        SAMPLES / "pointwise" / "eager.pt.trace.json.gz",
        SAMPLES / "pointwise" / "compiled.pt.trace.json.gz",
    )
    assert report.profiled_timing is None
    assert comparison_json(report)["profiled_vs_timed"] is None


def test_no_check_without_enough_timed_steps(busy: Report) -> None:
    assert busy.run_info is not None
    info = busy.run_info
    few = msgspec.structs.replace(
        info.timing, eager=msgspec.structs.replace(info.timing.eager, samples_us=[1.0, 2.0])
    )
    short = msgspec.structs.replace(info, timing=few)
    assert profiled_vs_timed(busy.a.trace, busy.b.trace, names=busy.names, run_info=short) is None


# --- what the reports say first -------------------------------------------------------------


def test_text_says_first_that_profiled_times_are_not_representative(busy: Report) -> None:
    buffer = io.StringIO()
    render_comparison(busy, Console(file=buffer, width=2000, color_system=None))
    lines = buffer.getvalue().splitlines()
    assert lines[0].startswith(f"{NOTE}: profiled eager steps took 543 µs (median of 3) ")
    assert "vs 5.73 µs timed (95% interval" in lines[0]
    assert lines[1].startswith("Compiled is 22.19× slower than eager (95% interval")
    assert "median step 5.73 µs → 127 µs, timed" in lines[1]
    kernel_line = next(line for line in lines if line.startswith("kernels "))
    assert "device time withheld" in kernel_line and "1.75 ms" not in kernel_line


def test_markdown_html_json_lead_with_the_note(busy: Report) -> None:
    """Must show (issue 24): no kernel-time ratio between profiled sides above 3× is shown as
    a saving without the disagreement note, which comes before everything."""
    time = busy.metric("kernel_time_us")
    assert time["a"] / time["b"] > 3  # the profiled sides' device time: eager 3× compiled's
    lines = headline(busy)
    first = lines[0]
    assert first.startswith(NOTE)
    assert not any(re.search(r"device time [\d.]+ [µm]?s →", line) for line in lines)
    markdown = comparison_markdown(busy)
    bullets = [line for line in markdown.splitlines() if line.startswith("- ")]
    assert bullets[0] == f"- {first}"
    data = json.loads(json.dumps(comparison_json(busy)))
    check = data["profiled_vs_timed"]
    assert check["disagrees"] is True and check["a"]["disagrees"] is True
    assert check["b"]["disagrees"] is False and check["a"]["name"] == "eager"
    assert check["a"]["inflation"] > 50


def test_html_summary_leads_with_the_note(busy: Report) -> None:
    pytest.importorskip("plotly", reason="the HTML report needs the dashboard extra")
    from traceviz.report.html import comparison_html

    page = comparison_html(busy)
    assert f"<div class='tv-note'>{NOTE}" in page  # the first screen opens on the note
    assert page.index("tv-note'>") < page.index("id='tv-verdict'")


def test_a_quiet_run_leads_with_the_timed_verdict_and_shows_device_time() -> None:
    lines = headline(open_report(SAMPLES / "pointwise"))
    assert lines[0].startswith("Compiled is 1.80× faster than eager (95% interval")
    assert not any(NOTE in line for line in lines)
    assert any("device time 1.75 ms → 398 µs" in line for line in lines), lines


# --- traceviz run ---------------------------------------------------------------------------


def test_run_output_leads_with_the_note(busy_run: Path) -> None:
    from traceviz.commands.speed_line import profiled_line
    from traceviz.runner.display import print_run

    run = load_run(busy_run)
    notice = profiled_line(run)
    assert notice is not None and notice.startswith(NOTE)
    buffer = io.StringIO()
    print_run(run, Console(file=buffer, width=400, color_system=None), notice=notice)
    assert buffer.getvalue().startswith(NOTE)
    assert profiled_line(load_run(SAMPLES / "pointwise")) is None
