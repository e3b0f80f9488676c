"""The ranks dashboard (``traceviz dashboard DATASET [DATASET_B]``, ``traceviz.widgets.ranks``).

GIVEN ranks datasets ingested in the test from synthetic 4-rank jobs (tests/ranks_fixtures:
NCCL all-reduces, random clock offsets, rank 2 planted as a straggler in ``job``, none in
``other``)
WHEN the dashboard opens on one or two of them, a rank is selected and its trace tab opened
THEN the Ranks tab comes first and is the only one built, the straggler is the rank shown, a
rank's trace is read only when its tab is shown and its figures are that rank's own, and two
datasets open on the per-rank comparison.
"""

from __future__ import annotations

import html
import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.conftest import REPO, SAMPLES
from tests.ranks_fixtures import synthetic_job, write_ranks

pytest.importorskip("panel", reason="panel not installed (dashboard extra)")
pytest.importorskip("pyarrow", reason="pyarrow not installed (ranks extra)")

import traceviz
from traceviz.cli import main
from traceviz.dashboard import ranks_app
from traceviz.dashboard.ranks_app import RanksDashboard, ranks_args, ranks_data
from traceviz.errors import UsageError
from traceviz.ranks.load import load_rank_trace

WORLD, STRAGGLER = 4, 2
CLEAR = "rgba(0,0,0,0)"  # the figure's outline of a rank that is not a straggler


def make_dataset(root: Path, name: str, **options: Any) -> Path:
    job = synthetic_job(WORLD, **options)
    traceviz.load_ranks(write_ranks(root / f"{name}-traces", job.docs), root / name)
    return root / name


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_dataset(tmp_path_factory.mktemp("ranks"), "job", straggler=STRAGGLER, seed=5)


@pytest.fixture(scope="module")
def other(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ranks")
    return make_dataset(root, "other", straggler=None, seed=6, compute_us=500.0)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The ranks whose full trace the dashboard read (an empty trace cache to start)."""
    calls: list[int] = []

    def counted(path: Any, rank: int, **kw: Any) -> Any:
        calls.append(rank)
        return load_rank_trace(path, rank, **kw)

    monkeypatch.setattr(ranks_app, "load_rank_trace", counted)
    monkeypatch.setattr(ranks_app, "RANK_TRACES", ranks_app.TraceCache(entries=4))
    return calls


def csv_of(download: Any) -> pd.DataFrame:
    payload = download.callback()
    return pd.read_csv(io.StringIO(payload.getvalue()))


def test_datasets_are_told_from_trace_files(job: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = SAMPLES / "mlp" / "eager.pt.trace.json.gz"
    assert ranks_args([str(job)]) and ranks_args([job, job])
    assert not ranks_args([str(trace)]) and not ranks_args([])
    with pytest.raises(UsageError, match="not a mix"):
        ranks_args([str(job), str(trace)])
    assert main(["dashboard", str(job), str(trace)]) == 2  # the command: one line, no traceback
    err = capsys.readouterr().err
    assert "not a mix" in err and "Traceback" not in err


def test_help_shows_the_dataset_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["dashboard", "--help"])
    out = capsys.readouterr().out
    assert "traceviz dashboard job42.ds" in out and "eager.ds compiled.ds" in out


def test_one_dataset_opens_on_the_ranks_tab_with_the_straggler(job: Path, reads: list[int]) -> None:
    app = RanksDashboard(ranks_data(job))
    assert list(app._slots) == ["Ranks", "Rank trace"]
    assert app.built_tabs == ["Ranks"] and reads == []  # no rank trace read yet
    view = app._views["job"]
    assert view.analysis.stragglers.ranks == [STRAGGLER] and app.rank == STRAGGLER
    table = view._table.set_index("rank")
    assert bool(table.loc[STRAGGLER, "straggler"]) and int(table["straggler"].sum()) == 1
    # the figure outlines the straggler's bars, and only them
    fig = view.__panel__()[0].object
    bars = [bar for bar in fig.data if bar.type == "bar"]
    outlined = {
        x for bar in bars for x, c in zip(bar.x, bar.marker.line.color, strict=True) if c != CLEAR
    }
    assert outlined == {str(STRAGGLER)}


def test_selecting_a_rank_shows_its_trace_when_the_tab_opens(job: Path, reads: list[int]) -> None:
    app = RanksDashboard(ranks_data(job))
    view = app._views["job"]
    row = int(view._grid.value.index[view._grid.value["rank"] == 1][0])
    view._grid.selection = [row]
    assert app.rank == 1 and reads == []  # chosen, not read: the tab is not shown
    app._tabs.active = 1
    assert reads == [1] and app.trace_shown == ("job", 1)
    summary = app._trace[0]
    trace = traceviz.load(job, rank=1)
    cards = summary[0].object
    assert "Rank 1" in cards and f"{len(trace.kernels):,}" in cards
    top = summary[3].value  # the top kernels table: at most what was measured
    assert top["time_us"].sum() <= trace.kernels["excl_dur_us"].sum() * (1 + 1e-9)
    app._rank_select.value = 3  # choosing in the tab reads that rank, and the view follows
    assert reads == [1, 3] and view.rank == 3 and app.trace_shown == ("job", 3)
    view.rank = 1  # back to a rank read before: from the cache
    assert reads == [1, 3] and app.trace_shown == ("job", 1)


def test_two_datasets_open_on_the_comparison(job: Path, other: Path, reads: list[int]) -> None:
    app = RanksDashboard(ranks_data(job, other, names=("slow", "fast")))
    assert list(app._slots) == ["Compare ranks", "Ranks: slow", "Ranks: fast", "Rank trace"]
    assert app.built_tabs == ["Compare ranks"]
    grid = app._slots["Compare ranks"][0][3]  # after the heading, the chart, the findings
    a, b = traceviz.load_ranks(job).summary, traceviz.load_ranks(other).summary
    expected = a["step_p50_us"].to_numpy() / b["step_p50_us"].to_numpy()
    assert grid.value["speedup"].to_numpy() == pytest.approx(expected)
    assert list(csv_of(app._slots["Compare ranks"][0][4])["rank"]) == list(range(WORLD))
    app._tabs.active = 2
    app._views["fast"].rank = 0  # a rank picked on side b is the trace shown
    app._tabs.active = 3
    assert app.trace_shown == ("fast", 0) and reads == [0]


def test_ranks_tables_download_as_csv(job: Path) -> None:
    app = RanksDashboard(ranks_data(job))
    view = app._views["job"]
    panel = view.__panel__()
    (download,) = [o for o in panel if type(o).__name__ == "FileDownload"]
    frame = csv_of(download)
    assert list(frame["rank"]) == list(range(WORLD)) and frame["straggler"].sum() == 1
    detail = [o for o in view._detail if type(o).__name__ == "FileDownload"]
    kernels = csv_of(detail[0])
    summary = view.analysis.summary.set_index("rank")
    assert kernels["total_us"].sum() == pytest.approx(summary.loc[STRAGGLER, "kernel_time_us"])
    comms = csv_of(detail[1])
    assert len(comms) == int(summary.loc[STRAGGLER, "comm_kernels"])


def test_widgets_and_panel_app_take_a_path_or_ranks(job: Path) -> None:
    import traceviz.widgets as tw
    from traceviz.dashboard.panel_app import app

    assert isinstance(tw.ranks(job), RanksDashboard)
    assert tw.ranks(traceviz.load_ranks(job)).rank == STRAGGLER
    with pytest.raises(UsageError, match="not a ranks dataset"):
        tw.ranks(SAMPLES / "mlp")
    assert isinstance(app([str(job)]), RanksDashboard)


def test_a_failed_rank_is_a_finding_not_a_crash(tmp_path: Path) -> None:
    job = synthetic_job(WORLD, straggler=None, seed=2)
    paths = write_ranks(tmp_path / "traces", job.docs)
    paths[3].write_text("{ not json")
    ranks = traceviz.load_ranks(paths, tmp_path / "ds")
    app = RanksDashboard(ranks_data(ranks))
    text = str(app._views["ds"].__panel__()[1].object)
    (failed,) = [f for f in app._views["ds"].analysis.findings if f.id == "ranks-failed"]
    assert html.escape(failed.title) in text
    assert list(app._views["ds"]._table["rank"]) == [0, 1, 2]


def test_a_dataset_with_no_readable_rank_still_opens(tmp_path: Path) -> None:
    path = tmp_path / "rank0.json"
    path.write_text("{ not json")
    ranks = traceviz.load_ranks([path], tmp_path / "ds")
    app = RanksDashboard(ranks_data(ranks))
    assert app.rank is None
    app._tabs.active = 1
    assert "Select a rank" in app._trace[0].object and app.trace_shown is None


def test_the_ranks_front_ends_import_no_optional_extra(job: Path) -> None:
    """Opening a dataset in the dashboard or a widget needs neither Dask (the ingest's) nor the
    ONNX or transformers extras."""
    extras = ("dask", "distributed", "onnx", "onnxruntime", "onnxscript", "transformers", "torch")
    code = (
        "import sys, traceviz.widgets as tw\n"
        "from traceviz.commands import dashboard\n"
        f"app = tw.ranks({str(job)!r}); app._tabs.active = 1\n"
        "assert app.trace_shown is not None\n"
        f"print(sorted(m for m in {extras!r} if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
