"""The dashboard's tables: the side-by-side kernel table (analysis.kernel_diff and its view),
fixed-width name columns, and a CSV download under every table."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.conftest import CORPUS, SAMPLES, kernel, launch, load_trace, op

pytest.importorskip("panel", reason="panel not installed (dashboard extra)")

import panel as pn

from traceviz.analysis.kernel_diff import NO_OP, KernelDiff, kernel_diff
from traceviz.dashboard.tabs.common import NAME_WIDTH, csv_download
from traceviz.dashboard.views import VIEWS, KernelDiffView, KernelsView, views_for
from traceviz.errors import UsageError
from traceviz.pipeline import compare
from traceviz.report.bundle import Report
from traceviz.schema import Kernels

A100_PAIR = (
    CORPUS / "nvidia" / "a100_eager_train_control.json.gz",
    CORPUS / "nvidia" / "a100_compiled_cudagraph_train_2023.json.gz",
)


def pair(a: Path, b: Path) -> Report:
    for path in (a, b):
        if not path.is_file():
            pytest.skip(f"{path} not found (corpus at {CORPUS})")
    return compare(load_trace(a), load_trace(b))


@pytest.fixture(scope="module")
def a100() -> Report:
    return pair(*A100_PAIR)


@pytest.fixture(scope="module")
def sample() -> Report:
    run = SAMPLES / "graph-break"
    return pair(run / "eager.pt.trace.json.gz", run / "compiled.pt.trace.json.gz")


# --- kernel_diff ---------------------------------------------------------------------------


def assert_adds_up(report: Report, by: str) -> None:
    """``kernel_diff`` by ``by``: unique keys, each side's columns adding up to its measured
    device time and activity count, the largest change first."""
    table = kernel_diff(report.a.kernels, report.b.kernels, by=by)  # type: ignore[arg-type]
    assert table[KernelDiff.key].is_unique
    for side, calls, time in (
        (report.a, KernelDiff.a_calls, KernelDiff.a_time_us),
        (report.b, KernelDiff.b_calls, KernelDiff.b_time_us),
    ):
        measured = float(np.nansum(side.kernels[Kernels.excl_dur_us].to_numpy(dtype=float)))
        assert table[time].sum() == pytest.approx(measured, rel=1e-9, abs=1e-9), by
        assert int(table[calls].sum()) == len(side.kernels), by
    delta = table[KernelDiff.b_time_us] - table[KernelDiff.a_time_us]
    assert np.allclose(table[KernelDiff.delta_time_us], delta)
    order = table[KernelDiff.delta_time_us].abs().to_numpy()
    assert (np.diff(order) <= 1e-9).all()  # largest change first


@pytest.mark.parametrize("by", ["kernel", "op", "kind"])
def test_each_side_of_the_a100_pair_adds_up(by: str, a100: Report) -> None:
    assert_adds_up(a100, by)


RUNS = sorted(p.parent for p in [*SAMPLES.glob("*/run.json"), *SAMPLES.glob("*/*/run.json")])


@pytest.mark.parametrize(
    "run", RUNS or [None], ids=lambda p: str(p.relative_to(SAMPLES)) if p else "none"
)
def test_every_sample_run_adds_up(run: Path | None) -> None:
    """On every sample run (CPU and the H200 runs), by kernel, op and kind."""
    if run is None:
        pytest.skip(f"no sample runs in {SAMPLES}")
    from traceviz.pipeline import open_report

    report = open_report(run)
    for by in ("kernel", "op", "kind"):
        assert_adds_up(report, by)


def test_kernel_diff_on_a_tiny_pair(tmp_trace) -> None:  # type: ignore[no-untyped-def]
    import traceviz

    eager = tmp_trace(
        [
            op("aten::add", 0, 10),
            launch("cudaLaunchKernel", 1, 2, 1),
            kernel("add_kernel", 5, 4, 1),
            launch("cudaLaunchKernel", 11, 1, 2),  # a launch outside any op
            kernel("mul_kernel", 13, 6, 2),
        ]
    )
    compiled = tmp_trace(
        [
            op("triton_poi_fused_add_mul_0", 0, 10),
            launch("cuLaunchKernel", 1, 2, 1),
            kernel("triton_poi_fused_add_mul_0", 5, 3, 1),
        ]
    )
    report = compare(traceviz.load(eager), traceviz.load(compiled))
    table = kernel_diff(report.a.kernels, report.b.kernels).set_index(KernelDiff.key)
    assert table.loc["mul_kernel", KernelDiff.a_time_us] == 6
    assert table.loc["mul_kernel", KernelDiff.b_calls] == 0
    fused = table.loc["triton_poi_fused_add_mul_0"]
    assert (fused[KernelDiff.a_calls], fused[KernelDiff.b_time_us]) == (0, 3)
    assert np.isnan(fused[KernelDiff.ratio])
    by_op = kernel_diff(report.a.kernels, report.b.kernels, by="op").set_index(KernelDiff.key)
    assert by_op.loc["aten::add", KernelDiff.a_time_us] == 4
    assert by_op.loc[NO_OP, KernelDiff.a_calls] == 1  # not dropped
    with pytest.raises(UsageError):
        kernel_diff(report.a.kernels, report.b.kernels, by="line")  # type: ignore[arg-type]


# --- the views -----------------------------------------------------------------------------


def csv_of(button: pn.widgets.FileDownload) -> pd.DataFrame:
    payload = button.callback()
    return pd.read_csv(io.StringIO(payload.getvalue()))


def test_diff_view_regroups_and_downloads_what_it_shows(sample: Report) -> None:
    view = KernelDiffView(comparison=sample)
    assert view._table.titles[KernelDiff.a_time_us] == "A µs"
    assert sample.names[0] in view._table.header_tooltips[KernelDiff.a_time_us]
    view.group = "kind"
    assert view._table.titles[KernelDiff.key] == "kind"
    kinds = set(view._table.value[KernelDiff.key])
    assert kinds == set(sample.a.kernels["kind"].astype(str)) | set(
        sample.b.kernels["kind"].astype(str)
    )
    layout = view.__panel__()
    button = next(o for o in layout.select(pn.widgets.FileDownload))
    shown = csv_of(button)
    assert set(shown[KernelDiff.key]) == kinds


def test_name_columns_have_a_fixed_width_and_a_tooltip(a100: Report) -> None:
    table = KernelsView(comparison=a100)._table
    longest = max(table.value["kernel"].str.len())
    assert longest > 200  # real GPU kernel names are long: the reason for the width
    assert table.widths["kernel"] == NAME_WIDTH
    columns = {c["field"]: c for c in table._get_configuration(table._get_columns())["columns"]}
    assert columns["kernel"]["tooltip"] is True  # the full name on hover


def test_kernel_search_is_in_the_download(sample: Report) -> None:
    view = KernelsView(comparison=sample, search="fused")
    button = next(o for o in view.__panel__().select(pn.widgets.FileDownload))
    rows = csv_of(button)
    assert len(rows) and rows["kernel"].str.contains("fused").all()
    assert len(rows) < len(view._data)


def test_every_table_has_a_csv_download(sample: Report) -> None:
    from bokeh.document import Document

    for title in views_for(sample):
        layout = pn.panel(VIEWS[title](sample))
        layout.get_root(Document())  # Viewers lay themselves out when rendered
        tables = list(layout.select(pn.widgets.Tabulator)) + [
            p for p in layout.select(pn.pane.HTML) if "<table>" in str(p.object)
        ]
        buttons = [b for b in layout.select(pn.widgets.FileDownload) if b.label == "CSV"]
        assert len(buttons) == len(tables), title
        for button in buttons:
            assert len(csv_of(button).columns) > 1, title


def test_csv_download_of_a_frame() -> None:
    frame = pd.DataFrame({"name": ["a,b", "c"], "us": [1.5, 2.0]})
    assert csv_of(csv_download(frame, "x.csv")).equals(frame)
