"""The fusion map as every front end shows it: basis and confidence, the by-line table, the
guard's note, and the dashboard's line view (select a line → its kernels on both sides). The
by-line ``code`` is read from the user's file when the report is built: a cached report or
output whose source files changed is a miss."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

import traceviz
from tests.conftest import SAMPLES
from traceviz import settings
from traceviz.analysis.compare import Comparison
from traceviz.cli import main
from traceviz.report.json_report import comparison_json
from traceviz.report.markdown import comparison_markdown
from traceviz.report.views import by_line_view, comparison_views, fusion_view, headline


def run_dir(name: str = "graph-break") -> Path:
    path = SAMPLES / name
    if not (path / "compile_log.jsonl.gz").is_file():
        pytest.skip(f"sample run {name} with a compile log not found")
    return path


@pytest.fixture(scope="module")
def with_lines() -> Comparison:
    from traceviz.dashboard import loading

    found = loading.comparison_from_args([str(run_dir())])  # the dashboard's own loader
    assert found is not None
    return found


@pytest.fixture(scope="module")
def withheld() -> Comparison:
    compiled = run_dir() / "compiled.pt.trace.json.gz"
    return traceviz.compare(compiled, compiled, names=("x", "y"))


def test_run_dir_loader_uses_the_compile_log_and_the_table_says_basis_and_confidence(
    with_lines: Comparison,
) -> None:
    fusion = with_lines.fusion
    assert not fusion.by_line.empty
    assert set(fusion.kernels["basis"]) == {"compiler"}
    view = fusion_view(with_lines, top=20)
    assert view.columns[-1] == "basis (confidence)"
    assert all(row[-1].startswith(("compiler ", "name-match ")) for row in view.rows)
    assert "at most one" in view.note


def test_by_line_is_in_every_renderer(with_lines: Comparison) -> None:
    view = by_line_view(with_lines, top=20)
    assert len(view.rows) == len(with_lines.fusion.by_line)
    first = with_lines.fusion.by_line.iloc[0]
    spot = f"{Path(str(first['file'])).parent.name}/{Path(str(first['file'])).name}:{first['line']}"
    assert view.rows[0][0] == spot
    titles = [v.title for v in comparison_views(with_lines)]
    assert any(t.startswith("Fusion by source line") for t in titles)
    assert "Fusion by source line" in comparison_markdown(with_lines)
    doc = json.loads(json.dumps(comparison_json(with_lines)))
    rows = doc["fusion"]["by_line"]
    keys = {"file", "line", "code", "eager_kernels", "eager_time_us", "compiled_kernels",
            "compiled_time_us", "fused_with"}  # fmt: skip
    assert rows and set(rows[0]) >= keys
    assert doc["fusion"]["comparable"]["comparable"] is True


def test_withheld_pair_says_why_everywhere(withheld: Comparison) -> None:
    assert withheld.fusion.comparability.withheld
    view = fusion_view(withheld, top=10)
    assert not view.rows and "not one workload" in view.note
    assert view in comparison_views(withheld)  # the note is shown although the table is empty
    assert any("no fusion figures" in line for line in headline(withheld))
    doc = comparison_json(withheld)
    assert doc["fusion"]["kernels"] == [] and doc["fusion"]["est_bytes_saved"] is None
    assert doc["fusion"]["comparable"]["reasons"]
    markdown = comparison_markdown(withheld)
    assert "traces-not-comparable" in markdown
    saved = next(m for m in doc["metrics"] if m["name"] == "est_bytes_saved")
    assert saved["b"] is None


def test_html_report_has_the_line_table(with_lines: Comparison) -> None:
    pytest.importorskip("plotly")
    from traceviz.report.html import comparison_html

    page = comparison_html(with_lines)
    assert "Fusion by source line" in page
    code = str(with_lines.fusion.by_line.iloc[0]["code"])
    assert code.split("(")[0].strip() in page


def test_dashboard_line_view_explains_a_selected_line(with_lines: Comparison) -> None:
    pytest.importorskip("panel")
    from traceviz.dashboard.views import VIEWS, LinesView

    view = LinesView(comparison=with_lines)
    shared = with_lines.fusion.by_line
    index = (
        int(shared.index[shared["fused_with"] != ""][0])
        if (shared["fused_with"] != "").any()
        else 0
    )
    view._table.selection = [index]
    text = view._detail.object
    row = shared.iloc[index]
    assert f"{row['file']}:{row['line']}" in text
    for kernel in str(row["compiled_kernels"]).split(", "):
        assert kernel in text  # the compiled side
    assert str(row["eager_ops"]).split(" (")[0] in text  # the eager side
    layout = VIEWS["Fusion"](with_lines)
    assert any(getattr(part, "name", "") == "lines" for part in layout.objects)


def test_dashboard_fusion_tab_shows_the_guard(withheld: Comparison) -> None:
    pytest.importorskip("panel")
    from traceviz.dashboard.views import VIEWS

    layout = VIEWS["Fusion"](withheld)
    html = " ".join(str(getattr(part, "object", "")) for part in layout.objects)
    assert "not one workload" in html


def test_widgets_take_a_compile_log_for_two_traces() -> None:
    pytest.importorskip("panel")
    from traceviz import widgets

    run = run_dir("pointwise")
    # the run's lines trace as a: two plain traces get lines only from a's own marks
    board = widgets.compare(run / "eager_lines.pt.trace.json.gz", run / "compiled.pt.trace.json.gz",
                            compile_log=run / "compile_log.jsonl.gz")  # fmt: skip
    fusion = board.comparison.fusion
    assert not fusion.by_line.empty and set(fusion.kernels["basis"]) == {"compiler"}


RUN = SAMPLES / "pointwise"
MARKED = "../../traceviz/runner/zoo.py"  # the file the run's line marks name (relative to it)


@pytest.fixture
def run_with_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The pointwise sample run with its line marks pointing at a model file of our own."""
    lines = RUN / "eager_lines.pt.trace.json.gz"
    if not lines.is_file():
        pytest.skip("sample run missing")
    with gzip.open(lines, "rt", encoding="utf-8") as source:
        text = source.read()
    if MARKED not in text:
        pytest.skip("the sample's line marks name another file")
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    model = tmp_path / "model.py"
    with gzip.open(run / lines.name, "wt", encoding="utf-8") as out:
        out.write(text.replace(MARKED, str(model)))
    model.write_text("\n" * 35 + "        return before(x)\n")
    monkeypatch.setenv(settings.CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(settings.NO_CACHE_ENV, raising=False)
    return run, model


def _codes(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    # one process for every look, as a notebook or the dashboard: linecache's copy of an
    # edited file must not be read either
    assert main(["compare", *argv, "--format", "json"]) == 0
    return [row["code"] for row in json.loads(capsys.readouterr().out)["fusion"]["by_line"]]


def test_an_edited_model_file_is_seen_by_a_second_look(
    run_with_model: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    run, model = run_with_model
    assert _codes(capsys, str(run)) == ["return before(x)"]
    assert _codes(capsys, str(run)) == ["return before(x)"]  # unchanged: the stored output
    model.write_text("\n" * 35 + "        return after(x)\n")
    # other options: no stored output, only the stored report (made before the edit) read back
    assert _codes(capsys, str(run), "--top", "5") == ["return after(x)"]
    assert _codes(capsys, str(run)) == ["return after(x)"]  # the stored output misses
    model.unlink()  # a line no longer readable: no text, as without a cache
    assert _codes(capsys, str(run)) == [""]
    assert _codes(capsys, str(run), "--no-cache") == [""]
