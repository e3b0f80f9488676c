"""The text renderer in a pipe or a file: names are never cut at any width, metric rows read as
display names with their units, shares as %, and metrics a CPU trace cannot have say n/a (null
in the JSON); with COLUMNS=80 (a standard terminal, or a pipe told its width) no line of a
command's text is wider than 80 bytes (mawk's ``length``: a pipe or file gets ASCII, glyphs
spelled out before the layout): compare and summary on a sample run, the ranks summary and
comparison of a job (whose findings wrap under their own indent)."""

from __future__ import annotations

import io
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

import traceviz
from tests.conftest import CORPUS, REPO, SAMPLES, load_trace
from traceviz.analysis.compare import DEVICE_ONLY_METRICS, NOT_APPLICABLE, Metric
from traceviz.analysis.summary import summarize
from traceviz.commands.output import console as pipe_console
from traceviz.commands.output import emit
from traceviz.pipeline import compare
from traceviz.report.formats import renderer
from traceviz.report.json_report import comparison_json
from traceviz.report.metric_names import METRIC_LABELS, metric_label
from traceviz.report.text import render_comparison, render_summary, render_view
from traceviz.report.views import View, metrics_view
from traceviz.rundir import read_run_dir
from traceviz.units import ascii_text

GPU_TRACE = CORPUS / "nvidia" / "v100_resnet50_eager_train_2021.json.gz"
WIDTHS = (40, 80, 140)
COLUMNS = 80


def _squash(text: str) -> str:
    """Text without any whitespace: a name wrapped over lines reads back whole."""
    return re.sub(r"\s+", "", text)


def _printed(draw, width: int) -> str:  # type: ignore[no-untyped-def]
    buffer = io.StringIO()
    draw(Console(file=buffer, width=width, color_system=None))
    return buffer.getvalue()


def _sample(name: str):  # type: ignore[no-untyped-def]
    run_dir = SAMPLES / name
    if not (run_dir / "run.json").is_file():
        pytest.skip(f"sample run {run_dir} not found")
    run = read_run_dir(run_dir)
    return compare(
        run.eager,
        run.compiled,
        names=("eager", "compiled"),
        run_info=run.info,
        compile_log=run.compile_log,
    )


@pytest.fixture(scope="module")
def attention():  # type: ignore[no-untyped-def]
    return _sample("attention")


def _gpu_trace():  # type: ignore[no-untyped-def]
    if not GPU_TRACE.is_file():
        pytest.skip(f"corpus trace {GPU_TRACE} not found (corpus looked for at {CORPUS})")
    return load_trace(GPU_TRACE)


@pytest.mark.parametrize("width", WIDTHS)
def test_summary_prints_the_longest_gpu_kernel_name_whole(width: int) -> None:
    """The longest name among a real GPU trace's top kernels (cuDNN templates, > 150
    characters with spaces) is in the output whole, at every width: wrapped, never cut."""
    summary = summarize(_gpu_trace(), top=10)
    names = [str(n) for n in summary.top_kernels["name"]]
    longest = max(names, key=len)
    assert len(longest) > 140  # longer than any width tried
    text = _printed(lambda c: render_summary(summary, c), width)
    for name in names:
        assert _squash(name) in _squash(text), name
    assert "…" not in text.split("Top 10 kernels")[1].split("Runtime/driver")[0]
    assert max(len(line) for line in text.splitlines()) <= width


def test_piped_cli_summary_is_80_columns_with_names_whole() -> None:
    """`traceviz summary TRACE | cat`: rich's 80 columns, the longest kernel name whole,
    no trailing blanks."""
    trace = _gpu_trace()
    longest = max(map(str, summarize(trace, top=5).top_kernels["name"]), key=len)
    done = subprocess.run(
        [str(Path(sys.executable).with_name("traceviz")), "summary", str(GPU_TRACE), "--top", "5"],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin", "TRACEVIZ_NO_CACHE": "1"},
    )
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert _squash(longest) in _squash(done.stdout)
    assert not any(line.endswith(" ") for line in lines)


@pytest.mark.parametrize("width", WIDTHS)
def test_compare_prints_every_compiled_kernel_and_source_whole(attention, width: int) -> None:  # type: ignore[no-untyped-def]
    text = _squash(_printed(lambda c: render_comparison(attention, c, top=10), width))
    kernels = [str(k) for k in attention.fusion.kernels["kernel"]]
    assert max(map(len, kernels)) > 80  # the softmax kernel: longer than a pipe's width
    top = attention.fusion.kernels.sort_values("time_us", ascending=False).head(10)
    for kernel in top["kernel"]:
        assert _squash(str(kernel)) in text, kernel
    for code in attention.fusion.by_line.head(10)["code"]:
        assert _squash(str(code)) in text, code


def test_file_output_keeps_names_whole(attention, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`-o FILE` (140 columns): names whole, lines within 140 columns, no trailing blanks."""
    out = tmp_path / "report.txt"
    emit(renderer("text").comparison(attention, top=10), str(out))
    text = out.read_text()
    longest = max(map(str, attention.fusion.kernels["kernel"]), key=len)
    assert longest in text  # 82 characters fit 140 columns: one line, unbroken
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 140
    assert not any(line.endswith(" ") for line in lines)


def test_a_wide_view_becomes_one_block_per_row_and_a_narrow_one_a_table() -> None:
    name = "graph_0_cpp_fused_" + "_".join(f"op{i}" for i in range(30))
    view = View("t", ["kernel", "calls", "time"], [[name, "3", "1.2 ms"]], names=(0,))
    narrow = _printed(lambda c: render_view(view, c), 80)
    assert "┃" not in narrow and _squash(name) in _squash(narrow)
    wide = _printed(lambda c: render_view(view, c), 400)
    assert "┃" in wide and name in wide


def test_metric_rows_read_as_display_names_with_units(attention) -> None:  # type: ignore[no-untyped-def]
    view = metrics_view(attention)
    rows = {row[0]: row for row in view.rows}
    assert not any(name.endswith(("_us", "_bytes", "_count")) for name in rows)
    assert set(rows) == {metric_label(n) for n in attention.metrics[Metric.name]}
    time = rows["kernel time"]
    assert time[1].endswith(("µs", "ms", " s")) and time[2].endswith(("µs", "ms", " s"))
    share = rows[METRIC_LABELS["unestimated_time_share"]]
    value = attention.metric("unestimated_time_share")[Metric.a]
    assert share[1] == f"{100 * value:.1f}%"
    assert share[3].endswith(" pp")
    per = rows["eager kernels per compiled kernel"]
    assert per[2] == f"{attention.metric('eager_kernels_per_compiled_kernel')[Metric.b]:.3g}"


def test_metrics_not_applicable_to_a_cpu_trace_print_n_a_and_are_null_in_json(
    attention,  # type: ignore[no-untyped-def]
) -> None:
    rows = {row[0]: row for row in metrics_view(attention).rows}
    for name in DEVICE_ONLY_METRICS:
        row = rows[metric_label(name)]
        assert row[1:3] == ["n/a", "n/a"] and row[5] == NOT_APPLICABLE, row
    data = json.loads(json.dumps(comparison_json(attention, top=5)))
    by_name = {m["name"]: m for m in data["metrics"]}
    for name in DEVICE_ONLY_METRICS:
        assert by_name[name]["a"] is None and by_name[name]["b"] is None, name
        assert by_name[name]["basis"] == NOT_APPLICABLE
    assert by_name["kernel_count"]["a"] > 0  # what applies is still a number
    text = _printed(lambda c: render_comparison(attention, c, top=3), 80)
    assert re.search(r"│ launch calls\s+│\s+n/a\s+│\s+n/a", text)


def test_a_gpu_trace_keeps_its_launch_and_memcpy_numbers() -> None:
    trace = _gpu_trace()
    report = compare(trace, trace, names=("a", "b"), force=True)
    for name in DEVICE_ONLY_METRICS - {"launch_delay_p50_us"}:
        row = report.metric(name)
        assert row[Metric.basis] != NOT_APPLICABLE and not math.isnan(row[Metric.a]), name
    assert report.metric("launch_count")[Metric.a] > 0


def test_summary_of_a_cpu_trace_says_n_a_for_copies_and_launches() -> None:
    path = SAMPLES / "attention" / "eager.pt.trace.json.gz"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    text = _printed(lambda c: render_summary(summarize(load_trace(path)), c), 100)
    for row in ("memcpy", "memset", "launch API calls"):
        assert re.search(rf"│ {row}\s+│ n/a ", text), row
    assert re.search(r"│ kernels\s+│ \d", text)


def test_pipe_console_strips_trailing_blanks_only_off_a_terminal() -> None:
    buffer = io.StringIO()
    console = pipe_console(file=buffer, width=60)
    console.print("a table title", justify="center")
    assert buffer.getvalue() == " " * 23 + "a table title\n"


def test_a_pipe_spells_glyphs_out_before_the_layout_and_a_terminal_keeps_them() -> None:
    """``→`` is ``->`` in a pipe, and a padded line or a table cell is measured with it spelled:
    the line stays one line and the table's rows stay the width of its rules."""
    line = Text("• matmul → add pairs per step: 1 (1.28× faster, 5 µs)", style="bold")
    table = Table("kernel", "Δ")
    table.add_row(Text("aten::add → aten::cos …"), Text("−5 µs"))
    drawn, width = {}, len(ascii_text(line.plain)) + 4
    for terminal in (False, True):
        buffer = io.StringIO()
        console = pipe_console(file=buffer, width=width, force_terminal=terminal, color_system=None)
        console.print(Padding(line.copy(), (0, 0, 0, 4), expand=False))
        console.print(table)
        drawn[terminal] = buffer.getvalue().splitlines()
    pipe, terminal = drawn[False], drawn[True]
    assert pipe[0] == "    * matmul -> add pairs per step: 1 (1.28x faster, 5 us)"
    assert terminal[0].strip() == line.plain
    assert "\n".join(pipe).isascii() and not "\n".join(terminal).isascii()
    rows = pipe[1:]
    assert rows[0].startswith("+-") and len({len(row) for row in rows}) == 1
    assert any("| aten::add -> aten::cos ... | -5 us |" in row for row in rows)
    assert any("| diff " in row for row in rows)


def test_blocks_label_each_cell_when_the_cells_do_not_fit_side_by_side() -> None:
    name = "void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int)"
    columns = ["kernel", "a rather long first trace label time", "another long label time"]
    view = View("t", columns, [[name, "80.8 ms (162)", "74.1 ms (162)"]], names=(0,))
    text = _printed(lambda c: render_view(view, c), 60)
    assert _squash(f"{columns[1]}: 80.8 ms (162)") in _squash(text)
    assert _squash(f"{columns[2]}: 74.1 ms (162)") in _squash(text)
    assert max(len(line) for line in text.splitlines()) <= 60


def test_metrics_view_picks_rows_by_metric_id(attention) -> None:  # type: ignore[no-untyped-def]
    """Front ends that show some metrics (the dashboard's launch and memory tabs) select them
    by id; the rows carry display names."""
    only = ("launch_count", "est_bytes", "no_such_metric")
    view = metrics_view(attention, only=only, title="Some")
    assert view.title == "Some"
    assert [row[0] for row in view.rows] == [metric_label("launch_count"), "memory traffic"]


# --- COLUMNS=80: no line wider -------------------------------------------------------


def _text_of(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "traceviz.cli", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=REPO,
        env={**{k: v for k, v in os.environ.items() if k != "LINES"}, "COLUMNS": str(COLUMNS)},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def _too_wide(text: str) -> list[str]:
    """Lines over 80 bytes, as ``awk 'length > 80'`` counts them with mawk; a pipe is ASCII."""
    assert text.isascii(), [line for line in text.splitlines() if not line.isascii()][:3]
    return [line for line in text.splitlines() if len(line.encode()) > COLUMNS]


@pytest.mark.parametrize("run", ["block", "graph-break", "h200/gpt2"])  # h200: ↔ spelled
def test_compare_of_a_sample_run_fits_80_columns(run: str) -> None:
    assert not _too_wide(_text_of("compare", str(Path("sample_traces") / run), "--no-cache"))


def test_models_fit_80_columns() -> None:
    listed = _text_of("models")
    assert "->" in listed and not _too_wide(listed)  # "8 -> 3 kernels", spelled in a pipe


def test_summary_of_a_sample_trace_fits_80_columns() -> None:
    trace = SAMPLES / "block" / "compiled.pt.trace.json.gz"
    assert not _too_wide(_text_of("summary", str(trace), "--no-cache"))


def test_ranks_text_fits_80_columns(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow", reason="pyarrow not installed (ranks extra)")
    from tests.ranks_fixtures import synthetic_job, write_ranks

    traces = write_ranks(tmp_path / "traces", synthetic_job(8, steps=3).docs)
    dataset = tmp_path / "job"
    traceviz.load_ranks(traces, dataset)
    summary = _text_of("summary", str(dataset), "--ranks")
    assert "straggler" in summary and not _too_wide(summary)
    pair = _text_of("compare", str(dataset), str(dataset), "--ranks")
    assert "speedup" in pair and not _too_wide(pair)
