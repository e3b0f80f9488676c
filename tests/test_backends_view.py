"""Backends side by side on a run directory with ONNX Runtime levels: a sample run (linear-add)
exported with the dynamo exporter, optimized and profiled at every level here, with run.json's
``backends.onnxruntime`` and ``latency`` sections as the runner writes them. Checked: the rows
against independent counts of the profiles, the partitions, the JSON sections, every renderer,
the dashboard tab, the figures, bad files, and that plain runs are unchanged."""

from __future__ import annotations

import dataclasses
import io
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tests import ort_fixtures as fx
from tests.conftest import SAMPLES
from tests.light_import_fixtures import assert_imports_none
from traceviz.analysis.backends import ORT_PREFIX, BackendRow, backends_view
from traceviz.pipeline import compare_run
from traceviz.report.backends_views import backends_views

pytest.importorskip("onnxruntime")
pytest.importorskip("torch")


@pytest.fixture(scope="module")
def ort_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fx.make_ort_run(tmp_path_factory.mktemp("ort") / "run", sample=SAMPLES / "linear-add")


@pytest.fixture(scope="module")
def report(ort_run: Path) -> Any:
    return compare_run(ort_run)


def _run_json(run: Path) -> dict[str, Any]:
    return json.loads((run / "run.json").read_text())


def _profile_events(run: Path, relative: str) -> list[dict[str, Any]]:
    return json.loads((run / relative).read_text())


def test_one_row_per_backend_in_run_order(report: Any, ort_run: Path) -> None:
    levels = [lvl["name"] for lvl in _run_json(ort_run)["backends"]["onnxruntime"]["levels"]]
    rows = report.backends.rows
    assert list(rows[BackendRow.backend]) == ["eager", "compile"] + [
        ORT_PREFIX + name for name in levels
    ]
    assert report.backends.levels == levels
    by_backend = rows.set_index(BackendRow.backend)  # the torch rows: the comparison's own
    for backend, column in (("eager", "a"), ("compile", "b")):
        want = report.metric("kernels_per_step")[column]
        assert by_backend.loc[backend, BackendRow.kernels_per_step] == pytest.approx(want)
    assert by_backend.loc["compile", BackendRow.one_time_s] == pytest.approx(
        report.run_info.compile.time_s
    )


def test_ort_rows_agree_with_a_plain_count_of_each_profile(report: Any, ort_run: Path) -> None:
    rows = report.backends.rows.set_index(BackendRow.backend)
    latency = {r["backend"]: r for r in _run_json(ort_run)["latency"]["rows"]}
    for level in _run_json(ort_run)["backends"]["onnxruntime"]["levels"]:
        events = _profile_events(ort_run, level["profile"])
        runs = sum(e.get("name") == "model_run" for e in events)
        nodes = [e for e in events if e.get("cat") == "Node"]
        row = rows.loc[ORT_PREFIX + level["name"]]
        assert row[BackendRow.kernels_per_step] == pytest.approx(len(nodes) / runs)
        assert row[BackendRow.kernel_time_per_step_us] == pytest.approx(
            sum(e["dur"] for e in nodes) / runs
        )
        assert row[BackendRow.max_abs_diff] == pytest.approx(level["check"]["max_abs_diff"])
        assert row[BackendRow.nodes] == level["nodes"]
        timed = latency[ORT_PREFIX + level["name"]]
        assert row[BackendRow.step_median_us] == timed["median_us"]
        assert row[BackendRow.ratio_to_eager] == pytest.approx(timed["ratio_to_eager"])


def test_the_fused_gemm_names_its_aten_ops_and_the_inductor_kernel(report: Any) -> None:
    fusion = report.backends.fusion
    assert len(fusion), "ORT fuses linear-add's MatMul+Add from level basic up"
    compiled = set(report.fusion.ops["kernel"])
    for row in fusion.to_dict("records"):
        assert row["exported_count"] >= 2 and row["aten_ops"].startswith("aten::")
        assert row["inductor_kernels"] and set(row["inductor_kernels"].split(", ")) <= compiled
        assert row["time_us"] > 0


def test_json_sections(report: Any) -> None:
    from traceviz.report.json_report import comparison_json

    data = json.loads(json.dumps(comparison_json(report)))
    assert [r["backend"] for r in data["backends"]] == list(report.backends.rows["backend"])
    ort = data["onnxruntime"]
    assert ort["export"]["exporter"] == "dynamo" and ort["levels"] == report.backends.levels
    assert {r["graph"] for r in ort["op_counts"]} == {"exported", *report.backends.levels}
    assert len(ort["fusion"]) == len(report.backends.fusion)
    assert all(isinstance(r["exported_count"], int) for r in ort["fusion"])
    assert ort["folded"] == [] and ort["problems"] == []
    fastest = report.backends.fastest
    assert ort["fastest"]["backend"] == fastest.backend
    medians = [r["step_median_us"] for r in data["backends"] if r["step_median_us"] is not None]
    assert ort["fastest"]["median_us"] == min(medians)  # every level's outputs passed here


def test_a_plain_run_has_no_backends() -> None:
    from traceviz.report.json_report import comparison_json

    plain = compare_run(SAMPLES / "linear-add")
    assert plain.backends is None and backends_views(plain) == []
    data = comparison_json(plain)
    assert data["backends"] is None and data["onnxruntime"] is None


def test_every_renderer_shows_the_backends(report: Any) -> None:
    from rich.console import Console

    from traceviz.report.html import comparison_html
    from traceviz.report.markdown import comparison_markdown
    from traceviz.report.text import render_comparison

    console = Console(width=200, record=True)
    render_comparison(report, console)
    text = console.export_text()
    markdown = comparison_markdown(report)
    html = comparison_html(report)
    for out in (text, markdown, html):
        assert "Backends side by side" in out and "ONNX Runtime fusion" in out
        for backend in report.backends.rows["backend"]:
            assert backend in out
    assert 'id="backends"' in html and len(set(re.findall(r"fig-backends-\d+", html))) == 3


def test_dashboard_tab_only_for_runs_with_ort_its_tables_as_csv(report: Any) -> None:
    pytest.importorskip("panel")
    from traceviz.dashboard.views import VIEWS, views_for

    assert "Backends" in views_for(report)
    assert "Backends" not in views_for(compare_run(SAMPLES / "linear-add"))
    tab = list(VIEWS["Backends"](report))
    downloads = [o for o in tab if type(o).__name__ == "FileDownload"]
    (fusion,) = [o for o in tab if type(o).__name__ == "Tabulator"]
    shown = [o for o in tab if type(o).__name__ == "Column"]  # view_table: HTML table + CSV
    tables = backends_views(report, top=20)
    assert len(shown) == len(tables) - 1  # every table but the fusion one (a Tabulator)
    for column, view in zip(shown, tables[:2] + tables[3:], strict=True):
        frame = _csv(column[1])
        assert list(frame.columns) == view.columns and len(frame) == len(view.rows)
    fusion_csv = _csv(downloads[0])
    assert len(fusion_csv) == len(report.backends.fusion) == len(fusion.value)
    assert fusion_csv["time_us"].to_numpy() == pytest.approx(fusion.value["time_us"].to_numpy())


def _csv(download: Any) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(download.callback().getvalue()), keep_default_na=False)


def test_figures(report: Any, ort_run: Path) -> None:
    pytest.importorskip("plotly")
    from traceviz.report.figures.backends import (
        kernels_per_step_figure,
        latency_figure,
        op_counts_figure,
    )

    rows = report.backends.rows
    (bar,) = latency_figure(report).data
    assert list(bar.x) == list(rows["backend"])
    assert list(bar.y) == pytest.approx(list(rows["step_median_us"]))
    samples = {r["backend"]: r["samples_us"] for r in _run_json(ort_run)["latency"]["rows"]}
    q1 = [float(np.percentile(samples[b], 25)) for b in rows["backend"]]
    q3 = [float(np.percentile(samples[b], 75)) for b in rows["backend"]]
    assert list(bar.error_y.array) == pytest.approx([h - m for h, m in zip(q3, bar.y, strict=True)])
    assert list(bar.error_y.arrayminus) == pytest.approx(
        [m - low for low, m in zip(q1, bar.y, strict=True)]
    )
    (kernels,) = kernels_per_step_figure(report).data
    assert list(kernels.y) == pytest.approx(list(rows["kernels_per_step"]))
    assert {t.name for t in op_counts_figure(report).data} == {"exported", *report.backends.levels}
    plain = compare_run(SAMPLES / "linear-add")
    assert not latency_figure(plain).data  # an empty figure that says why


def test_run_json_read_raw_when_the_typed_record_lacks_the_sections(
    report: Any, ort_run: Path
) -> None:
    raw = backends_view(ort_run, dataclasses.replace(report, run_info=None))
    assert raw is not None
    typed = report.backends
    ort_rows = typed.rows[typed.rows["backend"].str.startswith(ORT_PREFIX)].reset_index(drop=True)
    raw_rows = raw.rows[raw.rows["backend"].str.startswith(ORT_PREFIX)].reset_index(drop=True)
    assert ort_rows.equals(raw_rows)
    assert raw.fusion.equals(typed.fusion)


def test_unreadable_files_are_named_and_the_rest_still_shown(ort_run: Path, tmp_path: Path) -> None:
    import shutil

    broken = shutil.copytree(ort_run, tmp_path / "broken")
    (broken / "onnx" / "ort_all.onnx").write_bytes(b"not onnx")
    (broken / "onnx" / "ort_basic.profile.json").write_text("{")
    report = compare_run(broken)
    problems = " | ".join(report.backends.problems)
    assert "ort_all.onnx" in problems and "ort_basic.profile.json" in problems
    assert "all" not in report.backends.mappings and "basic" in report.backends.mappings
    rows = report.backends.rows.set_index("backend")
    assert rows.loc[ORT_PREFIX + "all", "step_median_us"] > 0  # the row stays


def test_an_onnx_folder_without_run_json_sections_is_found(ort_run: Path, tmp_path: Path) -> None:
    import shutil

    bare = shutil.copytree(ort_run, tmp_path / "bare")
    info = _run_json(bare)
    info.pop("backends"), info.pop("latency")
    (bare / "run.json").write_text(json.dumps(info))
    view = compare_run(bare).backends
    assert view is not None and view.levels == list(fx.LEVELS)
    assert len(view.fusion) and view.rows["step_median_us"].iloc[2:].isna().all()


def test_plain_compare_does_not_import_onnx() -> None:
    code = (
        f"from traceviz.pipeline import compare_run; compare_run({str(SAMPLES / 'linear-add')!r})"
    )
    assert_imports_none(code, ("onnx", "onnxruntime", "torch"))


ORT_SAMPLES = sorted(p.parent for p in SAMPLES.glob("*/onnx") if (p.parent / "run.json").is_file())


def check_real_ort_run(run: Path) -> None:
    """On a run the runner made: every level with a graph is mapped, each exported node is
    claimed at most once, fused time per run is at most the profile's node time per run, and
    the rows' node runs per step are the profile's own count."""
    report = compare_run(run)
    view = report.backends
    assert view is not None and view.levels
    levels = {lvl["name"]: lvl for lvl in _run_json(run)["backends"]["onnxruntime"]["levels"]}
    rows = view.rows.set_index(BackendRow.backend)
    for name, mapping in view.mappings.items():
        claimed = [n for s in mapping.nodes["exported_nodes"] for n in s.split(", ") if n]
        assert len(claimed) == len(set(claimed)) <= mapping.exported_nodes
        assert not set(claimed) & set(mapping.folded["node"])
        assert mapping.optimized_nodes == levels[name]["nodes"]
        profile = view.profiles.get(name)
        if profile is not None and profile.runs:
            fused = view.fusion[view.fusion["level"] == name]
            assert fused["time_us"].sum() <= profile.time_us / profile.runs + 1e-6
            events = _profile_events(run, levels[name]["profile"])
            nodes = sum(e.get("cat") == "Node" and e["name"].endswith("_kernel_time")
                        for e in events)  # fmt: skip
            runs = sum(e.get("name") == "model_run" for e in events)
            assert rows.loc[ORT_PREFIX + name, BackendRow.kernels_per_step] == pytest.approx(
                nodes / runs
            )


@pytest.mark.parametrize("run", [None, *ORT_SAMPLES], ids=["made", *(p.name for p in ORT_SAMPLES)])
def test_sample_runs_with_ort(run: Path | None, ort_run: Path) -> None:
    check_real_ort_run(run or ort_run)


def test_a_failed_export_is_said_and_the_torch_rows_stay(tmp_path: Path) -> None:
    import shutil

    run = shutil.copytree(SAMPLES / "linear-add", tmp_path / "failed")
    info = _run_json(run)
    info["backends"] = {"onnxruntime": {"export": {"error": "RuntimeError: cannot export"}}}
    (run / "run.json").write_text(json.dumps(info))
    report = compare_run(run)
    assert list(report.backends.rows["backend"]) == ["eager", "compile"]
    notes = " ".join(v.note for v in backends_views(report))
    assert "The export failed: RuntimeError: cannot export" in notes
    assert report.backends.problems == ()  # no graph was written, none is missing


def _rows(*rows: tuple[str, float, float, bool | None, str]) -> Any:
    import pandas as pd

    from traceviz.analysis.backends import BACKEND_DTYPES
    from traceviz.schema import conform

    table = pd.DataFrame(
        [
            {**dict.fromkeys(BACKEND_DTYPES), "backend": b, "step_median_us": m,
             "step_iqr_us": q, "check_passed": ok, "error": e, "ratio_to_eager": m / rows[0][1]}
            for b, m, q, ok, e in rows
        ]
    )  # fmt: skip
    return conform(table, BACKEND_DTYPES)


def test_fastest_skips_failed_outputs_and_says_whether_it_is_clear() -> None:
    from traceviz.analysis.backends import fastest_backend

    rows = _rows(
        ("eager", 100.0, 10.0, None, ""),
        ("compile", 80.0, 10.0, True, ""),
        ("onnxruntime:all", 50.0, 4.0, False, ""),  # fastest, but its outputs are wrong
        ("onnxruntime:basic", 60.0, 4.0, True, ""),
        ("onnxruntime:x", 10.0, 1.0, None, "session failed"),
    )
    best = fastest_backend(rows)
    assert best is not None and best.backend == "onnxruntime:basic"
    assert best.runner_up == "compile" and best.clear is True  # 20 µs apart, spreads 4 and 10
    assert best.ratio_to_eager == pytest.approx(0.6)
    close = fastest_backend(
        _rows(("eager", 100.0, 30.0, None, ""), ("compile", 90.0, 30.0, True, ""))
    )
    assert close is not None and close.backend == "compile" and close.clear is False


@pytest.fixture(scope="module")
def culprit_report(ort_run: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, str]:
    """The report of a copy of ``ort_run`` whose last ORT level failed its output check (max
    |diff| 3.5, culprit node N, a Gemm), and that level's name."""
    import shutil

    run = shutil.copytree(ort_run, tmp_path_factory.mktemp("culprit") / "run")
    info = _run_json(run)
    level = info["backends"]["onnxruntime"]["levels"][-1]
    level["check"].update(passed=False, max_abs_diff=3.5)
    level["check"]["culprit"] = {"node": "N", "op_type": "ai.onnx:Gemm", "error": "off by 3.5"}
    (run / "run.json").write_text(json.dumps(info))
    return compare_run(run), level["name"]


def test_a_level_whose_outputs_fail_names_its_culprit(culprit_report: tuple[Any, str]) -> None:
    report, name = culprit_report
    rows = report.backends.rows.set_index("backend")
    assert rows.loc[ORT_PREFIX + name, "culprit"] == "N (ai.onnx:Gemm): off by 3.5"
    assert report.backends.fastest.backend != ORT_PREFIX + name
    (table,) = [v for v in backends_views(report) if v.title == "Backends side by side"]
    assert f"{ORT_PREFIX}{name} outputs: N (ai.onnx:Gemm): off by 3.5" in table.note
    assert "FAILED (3.5)" in [r[7] for r in table.rows]


def _view_of(rows: Any) -> Any:
    import pandas as pd

    from traceviz.analysis.backends import BackendsView

    return BackendsView(rows=rows, op_counts=pd.DataFrame(), fusion=pd.DataFrame(),
                        folded=pd.DataFrame())  # fmt: skip


def test_findings_on_hand_made_rows() -> None:
    from traceviz.diagnose.backends import backend_findings

    rows = _rows(
        ("eager", 100.0, 10.0, None, ""),
        ("compile", 80.0, 10.0, True, ""),
        ("onnxruntime:all", 50.0, 4.0, True, ""),
        ("onnxruntime:basic", 60.0, 4.0, False, ""),
        ("onnxruntime:t", float("nan"), float("nan"), None, "IndexError: list index"),
    )
    by_id = {f.id: f for f in backend_findings(_view_of(rows))}
    assert set(by_id) == {"faster-backend", "backend-outputs-differ", "backend-failed"}
    assert by_id["faster-backend"].est_gain_us == pytest.approx(80.0 - 50.0)
    assert "basic" in by_id["backend-outputs-differ"].title
    assert by_id["backend-outputs-differ"].severity.value == "error"
    assert "IndexError" in by_id["backend-failed"].evidence_lines()[0]
    close = _rows(("eager", 100.0, 10.0, None, ""), ("compile", 80.0, 40.0, True, ""),
                  ("onnxruntime:all", 70.0, 30.0, True, ""))  # fmt: skip
    assert backend_findings(_view_of(close)) == []  # 10 µs apart, spreads 40 and 30


def test_report_carries_the_backend_findings(culprit_report: tuple[Any, str]) -> None:
    report, name = culprit_report
    (differ,) = [f for f in report.findings if f.id == "backend-outputs-differ"]
    assert name in differ.title and "culprit: N (ai.onnx:Gemm): off by 3.5" in differ.evidence
    assert report.findings[0].severity.value == "error"  # sorted in with the others
    plain = compare_run(SAMPLES / "linear-add")
    assert not [f for f in plain.findings if f.id.startswith(("backend-", "faster-backend"))]


@pytest.mark.parametrize(("threads", "said"), [(1, ", 1 thread)"), (4, ", 4 threads)"), (None, "")])
def test_the_caption_counts_threads_in_words(report: Any, threads: int | None, said: str) -> None:
    from traceviz.report.backends_views import backends_table

    note = backends_table(dataclasses.replace(report.backends, threads=threads)).note
    timing = note[note.index("Step time:") :].split(";")[0]
    assert timing.endswith(said or ")")
    assert ("thread" in timing) == (threads is not None)
