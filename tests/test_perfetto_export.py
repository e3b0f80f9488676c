"""`traceviz export --perfetto` (report.perfetto): both traces in one Chrome trace, aligned per
step, with the fusion credits, flows, blocking calls, graph-break gaps and findings overlaid.

Each export is checked against what the analysis computed for the same inputs (the
comparison built the way `traceviz compare` builds it), never against hard-coded numbers."""

from __future__ import annotations

import argparse
import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import traceviz
from tests.conftest import CORPUS, SAMPLES, kernel, launch, op, read_json
from traceviz.analysis.compare import Comparison
from traceviz.analysis.fusion.fusion_map import FusionKernels
from traceviz.analysis.fusion.match import Credits
from traceviz.analysis.roofline.per_kernel import RooflineColumns
from traceviz.cli import main
from traceviz.commands import compare as compare_command
from traceviz.report.perfetto import FLOW_CAT, KERNEL_ARGS, OVERLAY, ROOFLINE_ARGS
from traceviz.report.roofline_report import roofline_of
from traceviz.schema import Kernels

GPU_SELF = CORPUS / "nvidia" / "a100_eager_train_control.json.gz"
TINY_COMPILED = CORPUS / "nvidia" / "a100_compiled_triton_tiny.json.gz"


def _comparison(a: Path, b: Path | None = None, *, force: bool = False) -> Comparison:
    """The comparison exactly as the export command builds it."""
    args = argparse.Namespace(
        a=str(a), b=None if b is None else str(b), names=None, compile_log=None, force=force,
        top=0,
    )  # fmt: skip
    return compare_command.build(args)


def _export(tmp_path: Path, *inputs: Path, name: str = "out.json.gz", extra=()) -> dict:
    out = tmp_path / name
    code = main(["export", *map(str, inputs), "--perfetto", "-o", str(out), *extra])
    assert code == 0
    opener: Any = gzip.open if name.endswith(".gz") else open
    with opener(out, "rt") as handle:
        data = json.load(handle)  # valid JSON, whole
    assert isinstance(data["traceEvents"], list) and data["displayTimeUnit"] in ("ms", "ns")
    return data


def _info(data: dict) -> dict:
    return data["otherData"][OVERLAY]


def _side_pids(data: dict, side: int) -> set[int]:
    return set(_info(data)["pids"][side])


def _input_events(path: Path) -> list[dict]:
    doc = read_json(path)
    return doc if isinstance(doc, list) else doc["traceEvents"]


def _key(event: dict) -> tuple:
    return (event.get("ph"), event.get("cat"), event.get("name"), str(event.get("tid")))


def _assert_conserved(data: dict, inputs: tuple[Path, Path]) -> None:
    """Every input event appears once, on its side's processes; the rest is traceviz's own."""
    copied = [e for e in data["traceEvents"] if e.get("cat") != FLOW_CAT]
    for side, path in enumerate(inputs):
        pids = _side_pids(data, side)
        mine = Counter(_key(e) for e in copied if e.get("pid") in pids)
        assert mine == Counter(_key(e) for e in _input_events(path))
    assert len(copied) == sum(len(_input_events(p)) for p in inputs)


def _assert_flows_pair(data: dict) -> list[tuple[dict, dict]]:
    """Each ``s`` has exactly one ``f`` (same id), from side a to side b; returns the pairs."""
    flows = [e for e in data["traceEvents"] if e.get("cat") == FLOW_CAT and e["ph"] in "sf"]
    starts = {e["id"]: e for e in flows if e["ph"] == "s"}
    ends = {e["id"]: e for e in flows if e["ph"] == "f"}
    assert len(starts) + len(ends) == len(flows)  # ids unique per phase
    assert starts.keys() == ends.keys()
    assert all(e.get("bp") == "e" for e in ends.values())
    a, b = _side_pids(data, 0), _side_pids(data, 1)
    assert all(starts[i]["pid"] in a and ends[i]["pid"] in b for i in starts)
    return [(starts[i], ends[i]) for i in starts]


def _annotated(data: dict) -> list[dict]:
    b = _side_pids(data, 1)
    return [
        e
        for e in data["traceEvents"]
        if e.get("pid") in b and "eager_ops" in (e.get("args") or {}).get(OVERLAY, {})
    ]


def _traceviz_spans(data: dict, tid: int) -> list[dict]:
    pid = _info(data)["traceviz_pid"]
    return [e for e in data["traceEvents"] if e.get("pid") == pid and e.get("tid") == tid
            and e.get("ph") == "X"]  # fmt: skip


def _assert_credits_bounded(data: dict, comparison: Comparison) -> dict[str, dict]:
    """What the compiled kernels' args credit adds up to at most what the eager trace measured:
    kernels, exclusive kernel time, estimated bytes. Returns ``args.traceviz`` per name."""
    per_name = {e["name"]: e["args"][OVERLAY] for e in _annotated(data)}
    fusion = comparison.fusion
    assert sum(x["eager_kernels"] for x in per_name.values()) <= fusion.eager_kernel_count
    measured_us = comparison.a.kernels["excl_dur_us"].sum()
    assert sum(x["eager_time_us"] for x in per_name.values()) <= measured_us * (1 + 1e-9)
    saved = [x["est_bytes_saved"] for x in per_name.values() if x["est_bytes_saved"] is not None]
    assert sum(saved) <= (fusion.eager_traffic.total_bytes or 0)
    return per_name


def _reload(tmp_path: Path, data: dict) -> traceviz.Trace:
    path = tmp_path / "reloaded.json"
    path.write_text(json.dumps(data))
    return traceviz.load(path)


# --- a sample run: eager vs compiled on CPU --------------------------------------------------


def test_sample_run_export_holds_both_sides_and_the_credits(tmp_path: Path) -> None:
    run = SAMPLES / "pointwise"
    comparison = _comparison(run)
    data = _export(tmp_path, run)
    inputs = (run / "eager.pt.trace.json.gz", run / "compiled.pt.trace.json.gz")
    _assert_conserved(data, inputs)

    back = traceviz.load(tmp_path / "out.json.gz")
    assert len(back.kernels) == len(comparison.a.trace.kernels) + len(comparison.b.trace.kernels)
    assert len(back.steps) == len(comparison.a.trace.steps) + len(comparison.b.trace.steps)

    fusion = comparison.fusion
    credited = fusion.credits[fusion.credits[Credits.kernel].notna()]
    pairs = _assert_flows_pair(data)
    assert len(pairs) == len(credited) > 0  # one flow per credited eager kernel
    # each flow ends on a compiled kernel of the name the partition credits its eager kernel to
    base = _info(data)["fusion"]["flow_id_base"]
    credited_to = dict(zip(credited[Credits.eager_row], credited[Credits.kernel], strict=True))
    slice_names = {(e["pid"], e.get("tid"), e["ts"]): e["name"] for e in data["traceEvents"]
                   if e.get("ph") == "X" and e.get("cat") != FLOW_CAT}  # fmt: skip
    for start, end in pairs:
        assert slice_names[(end["pid"], end["tid"], end["ts"])] == credited_to[start["id"] - base]
    assert len(pairs) <= fusion.eager_kernel_count  # credits ≤ what was measured

    by_name = fusion.kernels.set_index(FusionKernels.kernel)
    annotated = _annotated(data)
    assert annotated
    names = {e["name"] for e in annotated}
    assert names == set(credited[Credits.kernel])
    for event in annotated:
        extra = event["args"][OVERLAY]
        assert set(KERNEL_ARGS) <= extra.keys()
        row = by_name.loc[event["name"]]
        assert extra["eager_ops"] == row[FusionKernels.eager_ops]
        assert extra["eager_kernels"] == row[FusionKernels.eager_kernels]
    per_name = _assert_credits_bounded(data, comparison)
    saved = [x["est_bytes_saved"] for x in per_name.values() if x["est_bytes_saved"] is not None]
    assert saved, "the pointwise run has byte estimates on both sides"
    if not fusion.by_line.empty:
        assert any(x["source_lines"] for x in per_name.values())
        assert all(":" in line for x in per_name.values() for line in x["source_lines"])

    findings = [e for e in data["traceEvents"] if e.get("cat") == FLOW_CAT and e["ph"] == "i"]
    assert [e["args"][OVERLAY]["title"] for e in findings] == [f.title for f in comparison.findings]
    assert all(e["s"] == "g" for e in findings)


def test_sample_run_sides_are_aligned_per_step(tmp_path: Path) -> None:
    data = _export(tmp_path, SAMPLES / "pointwise", name="out.json")
    steps: dict[int, list[float]] = {0: [], 1: []}
    for side in (0, 1):
        pids = _side_pids(data, side)
        steps[side] = sorted(
            e["ts"] for e in data["traceEvents"]
            if e.get("pid") in pids and str(e.get("name", "")).startswith("ProfilerStep#")
        )  # fmt: skip
    n = _info(data)["alignment"]["steps_aligned"]
    assert n == min(len(steps[0]), len(steps[1])) > 0
    assert steps[0][:n] == pytest.approx(steps[1][:n], abs=1e-3)


def test_graph_break_gaps_are_marked(tmp_path: Path) -> None:
    run = SAMPLES / "graph-break"
    comparison = _comparison(run)
    data = _export(tmp_path, run)
    for side, name in enumerate(("a", "b")):
        gaps = comparison.side(name).regions.gaps
        spans = _traceviz_spans(data, 3 + side)
        assert len(spans) == len(gaps)
        assert sorted(s["args"][OVERLAY]["wall_us"] for s in spans) == pytest.approx(
            sorted(gaps["wall_us"])
        )
    assert len(comparison.b.regions.gaps) > 0, "the graph-break run has gaps to mark"
    _assert_credits_bounded(data, comparison)
    _assert_flows_pair(data)


def _process_names(data: dict) -> dict[int, str]:
    """New pid → its ``process_name`` in the export."""
    return {e["pid"]: e["args"]["name"] for e in data["traceEvents"]
            if e.get("ph") == "M" and e.get("name") == "process_name"}  # fmt: skip


def _input_devices(path: Path) -> list[str]:
    """What each named process of an input trace is, read straight from the JSON: its
    ``process_labels`` ("CPU", "GPU 3"), else its ``process_name``; one per pid."""
    labels, names = {}, {}
    for e in _input_events(path):
        if e.get("ph") == "M" and e.get("name") == "process_labels":
            labels[e["pid"]] = e["args"]["labels"]
        elif e.get("ph") == "M" and e.get("name") == "process_name":
            names[e["pid"]] = e["args"]["name"]
    return [labels.get(pid, name) for pid, name in names.items()]


def test_h200_process_names_say_side_rank_and_device(tmp_path: Path) -> None:
    """17 processes per side (CPU, GPU 0–15, Spans), all named "python3" in the input: each
    export name is distinct and says side, rank and device."""
    run = SAMPLES / "h200" / "pointwise"
    data = _export(tmp_path, run)
    names = _process_names(data)
    for side, (label, file) in enumerate((("eager", "eager"), ("compiled", "compiled"))):
        mine = [names[pid] for pid in sorted(_side_pids(data, side))]
        assert len(mine) == len(set(mine)) == len(_side_pids(data, side)) > 2
        devices = _input_devices(run / f"{file}.pt.trace.json.gz")
        assert {f"{label} · rank 0 · {d}" for d in devices} < set(mine)
        assert "GPU 0" in devices and f"{label} · rank 0 · CPU" in mine
        assert all(n.startswith(f"{label} · rank 0 · ") for n in mine)


def test_process_names_carry_the_distributed_rank(tmp_path: Path) -> None:
    a = tmp_path / "a.json"
    doc = {"distributedInfo": {"rank": 3, "world_size": 4}, "traceEvents": _gpu_steps([1000], 100)}
    a.write_text(json.dumps(doc))
    data = _export(tmp_path, a, a, name="rank.json", extra=["--force", "--names", "x", "y"])
    names = sorted(_process_names(data).values())
    # pid 1 is named "py" in the input; pid 0 (the kernels' device) is named by traceviz
    assert names == [
        "traceviz", "x · rank 3 · pid 0", "x · rank 3 · py", "y · rank 3 · pid 0",
        "y · rank 3 · py",
    ]  # fmt: skip


# --- each kernel event's own roofline (H200) ---------------------------------------------------


def _expected_roofline(row: dict, basis: str) -> dict:
    """What ``args.traceviz.roofline`` must hold for one roofline row: its known figures."""
    c = RooflineColumns
    expected: dict[str, Any] = {"peaks_basis": basis}
    for key, column in (("flops", c.flops), ("bytes", c.bytes), ("achieved_tbps", c.achieved_tbps),
                        ("achieved_tflops", c.achieved_tflops), ("intensity", c.intensity),
                        ("pct_of_roof", c.pct_of_roof)):  # fmt: skip
        value = row[column]
        if value is not None and value is not pd.NA and value == value:
            expected[key] = int(value) if key == "bytes" else pytest.approx(float(value))
    for key, column in (("bytes_basis", c.bytes_basis), ("bound", c.bound),
                        ("precision", c.precision)):  # fmt: skip
        if isinstance(row[column], str):
            expected[key] = row[column]
    if "bytes" not in expected:  # unknown bytes: no basis either
        assert expected.pop("bytes_basis") == "none"
    return expected


def test_h200_kernel_events_carry_their_own_roofline_row(tmp_path: Path) -> None:
    """Every kernel event of both sides has its execution's roofline: the k-th event of a name
    (in time order: the alignment keeps order) is the k-th kernels-table row of that name."""
    run = SAMPLES / "h200" / "gpt2"
    comparison = _comparison(run)
    data = _export(tmp_path, run, name="gpt2.json")
    info = _info(data)["roofline"]
    for side, which in enumerate(("a", "b")):
        roofline = roofline_of(comparison, which)
        assert roofline is not None and roofline.peaks.peaks is not None
        peak_tbps = roofline.peaks.peaks.hbm_tbps
        assert peak_tbps == 4.8 and info["peaks"][side]["peaks"]["hbm_tbps"] == peak_tbps
        kernels = comparison.side(which).trace.kernels
        rows = roofline.per_kernel.assign(ts=kernels[Kernels.ts_us].to_numpy())
        pids = _side_pids(data, side)
        events = sorted(
            (e for e in data["traceEvents"]
             if e.get("pid") in pids and "roofline" in e.get("args", {}).get(OVERLAY, {})),
            key=lambda e: e["ts"],
        )  # fmt: skip
        assert len(events) == len(kernels) == info["annotated_kernel_events"][side] > 100
        by_name: dict[str, list[dict]] = {}
        for event in events:
            by_name.setdefault(event["name"], []).append(event["args"][OVERLAY]["roofline"])
        basis = roofline.peaks.basis.value
        for name, group in rows.sort_values("ts", kind="stable").groupby("name", observed=True):
            expected = [_expected_roofline(r, basis) for r in group.to_dict("records")]
            assert by_name[str(name)] == expected
        figures = [e["args"][OVERLAY]["roofline"] for e in events]
        assert all(set(f) <= set(ROOFLINE_ARGS) for f in figures)
        tbps = [f["achieved_tbps"] for f in figures if "achieved_tbps" in f]
        assert tbps and max(tbps) <= peak_tbps  # no kernel beats the H200's bandwidth
        assert any("achieved_tflops" in f and f["precision"] == "fp32" for f in figures)
        assert all(isinstance(v, str) or np.isfinite(v) for f in figures for v in f.values())


# --- a real GPU trace against itself -----------------------------------------------------------


@pytest.fixture(scope="module")
def gpu_self(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Comparison, Path]:
    if not GPU_SELF.is_file():
        pytest.skip(f"corpus not found at {CORPUS}")
    tmp = tmp_path_factory.mktemp("perfetto")
    data = _export(tmp, GPU_SELF, GPU_SELF)
    return data, _comparison(GPU_SELF, GPU_SELF), tmp


def test_gpu_trace_export_conserves_events_flows_credits_and_blocking_calls(gpu_self) -> None:
    data, comparison, tmp = gpu_self
    _assert_conserved(data, (GPU_SELF, GPU_SELF))
    back = traceviz.load(tmp / "out.json.gz")
    assert back.device_kind == comparison.a.trace.device_kind
    assert len(back.kernels) == 2 * len(comparison.a.trace.kernels)
    assert _info(data)["fusion"]["unmatched_kernel_rows"] == [0, 0]
    # flows and credits
    credits = comparison.fusion.credits
    pairs = _assert_flows_pair(data)
    assert len(pairs) == int(credits[Credits.kernel].notna().sum()) > 0
    assert len(pairs) <= comparison.fusion.eager_kernel_count
    # a flow's ends are real kernel events: each binds to a copied slice that starts there
    slices = {(e["pid"], str(e.get("tid")), e["ts"]) for e in data["traceEvents"]
              if e.get("ph") == "X" and e.get("cat") != FLOW_CAT}  # fmt: skip
    for start, end in pairs[:500]:
        assert (start["pid"], str(start["tid"]), start["ts"]) in slices
        assert (end["pid"], str(end["tid"]), end["ts"]) in slices
    assert len(_assert_credits_bounded(data, comparison)) > 0
    # the blocking calls are marked
    for side, name in enumerate(("a", "b")):
        calls = comparison.side(name).launch.blocking.calls
        spans = _traceviz_spans(data, 1 + side)
        assert len(spans) == len(calls) > 0
        assert Counter(s["name"] for s in spans) == Counter(calls["name"].astype(str))
        assert sum(s["args"][OVERLAY]["dur_us"] for s in spans) == pytest.approx(
            calls["dur_us"].sum()
        )


def test_withheld_fusion_map_says_so_and_force_overlays_it(tmp_path: Path) -> None:
    if not TINY_COMPILED.is_file():
        pytest.skip(f"corpus not found at {CORPUS}")
    withheld = _export(tmp_path, TINY_COMPILED, TINY_COMPILED, name="w.json")
    assert _info(withheld)["fusion"]["overlay"].startswith("absent")
    assert "--force" in _info(withheld)["fusion"]["overlay"]
    assert not _annotated(withheld)
    assert not [e for e in withheld["traceEvents"] if e.get("ph") in ("s", "f")
                and e.get("cat") == FLOW_CAT]  # fmt: skip
    forced = _export(tmp_path, TINY_COMPILED, TINY_COMPILED, name="f.json", extra=["--force"])
    assert _info(forced)["fusion"]["overlay"].startswith("present")
    assert _assert_flows_pair(forced)
    assert _annotated(forced)
    _assert_conserved(forced, (TINY_COMPILED, TINY_COMPILED))
    _assert_credits_bounded(forced, _comparison(TINY_COMPILED, TINY_COMPILED, force=True))


# --- tiny hand-made traces -----------------------------------------------------------------


def _gpu_steps(starts: list[float], step_us: float, *, bare: bool = False) -> list[dict]:
    """ProfilerStep spans, each with an aten::add that launches one kernel, a sync call."""
    events: list[dict] = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "py"}}]
    for k, t in enumerate(starts):
        corr = 10 + k
        events += [
            op(f"ProfilerStep#{k}", t, step_us, cat="user_annotation"),
            op("aten::add", t + 1, 20, **{"External id": corr}),
            launch("cudaLaunchKernel", t + 2, 3, corr, **{"External id": corr}),
            kernel("add_kernel", t + 10, 5, corr, **{"External id": corr}),
            launch("cudaDeviceSynchronize", t + 30, 10, 100 + k),
        ]
    return events


def test_hand_made_pair_aligns_steps_keeps_order_and_marks_syncs(tmp_path: Path) -> None:
    a = tmp_path / "a.json"
    loop = op("train loop", 990, 360, tid=2, cat="user_annotation")  # spans the 3 steps
    a.write_text(json.dumps({"traceEvents": [*_gpu_steps([1000, 1100, 1200], 100), loop]}))
    b = tmp_path / "b.json"  # longer steps, elsewhere on the clock, the oldest bare-array form
    b.write_text(json.dumps(_gpu_steps([50_000, 50_300, 50_600], 300)))
    data = _export(tmp_path, a, b, name="pair.json", extra=["--force"])
    _assert_conserved(data, (a, b))
    for side in (0, 1):
        pids = _side_pids(data, side)
        mine = [e for e in data["traceEvents"] if e.get("pid") in pids and e.get("ph") == "X"]
        steps = sorted(e["ts"] for e in mine if e["name"].startswith("ProfilerStep"))
        kernels = sorted(e["ts"] for e in mine if e["name"] == "add_kernel")
        assert steps == [1000, 1300, 1600]  # grid: the longer step of each pair
        assert [k - s for k, s in zip(kernels, steps, strict=True)] == [10, 10, 10]
    # only the span across the steps is stretched, by the 2 × 200 µs inserted; it says so
    stretched = [e for e in data["traceEvents"] if "dur_us" in e.get("args", {}).get(OVERLAY, {})
                 and e.get("cat") != FLOW_CAT]  # fmt: skip
    assert [(e["name"], e["dur"], e["args"][OVERLAY]["dur_us"]) for e in stretched] == [
        ("train loop", 760, 360)
    ]
    pids = _info(data)["pids"]
    assert not set(pids[0]) & set(pids[1]) and _info(data)["traceviz_pid"] not in pids[0] + pids[1]
    process_names = [e["args"]["name"] for e in data["traceEvents"]
                     if e.get("ph") == "M" and e.get("name") == "process_name"]  # fmt: skip
    assert sum(n.endswith("· py") for n in process_names) == 2
    assert all(len(_traceviz_spans(data, 1 + side)) == 3 for side in (0, 1))
    back = _reload(tmp_path, data)
    assert len(back.kernels) == 6


def test_input_flow_ids_stay_apart_per_side(tmp_path: Path) -> None:
    flow = [{"ph": "s", "id": 7, "cat": "ac2g", "name": "ac2g", "pid": 1, "tid": 1, "ts": 1002},
            {"ph": "f", "id": 7, "cat": "ac2g", "name": "ac2g", "pid": 0, "tid": 7, "ts": 1010,
             "bp": "e"}]  # fmt: skip
    a = tmp_path / "a.json"
    a.write_text(json.dumps({"traceEvents": _gpu_steps([1000], 100) + flow}))
    data = _export(tmp_path, a, a, name="ids.json", extra=["--force", "--names", "x", "x"])
    _assert_conserved(data, (a, a))  # one label for both sides: still two sets of processes
    ids = {(e["pid"] in _side_pids(data, 0), e["id"]) for e in data["traceEvents"]
           if e.get("cat") == "ac2g"}  # fmt: skip
    assert ids == {(True, 14), (False, 15)}
    base = _info(data)["fusion"]["flow_id_base"]
    assert base > 15
    assert all(e["id"] >= base for e in data["traceEvents"]
               if e.get("cat") == FLOW_CAT and e["ph"] in "sf")  # fmt: skip


def test_stdout_output(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    a = tmp_path / "a.json"
    a.write_text(json.dumps({"traceEvents": _gpu_steps([1000], 100)}))
    assert main(["export", str(a), str(a), "--perfetto", "-o", "-"]) == 0
    data = json.loads(capsysbinary.readouterr().out)
    assert data["displayTimeUnit"] == "ms" and len(data["traceEvents"]) > 10


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ("missing/out.json", "no such directory"),
        ("out.txt", "must end in .json or .json.gz"),
        (".", "is a directory"),
        ("a.json", "is an input trace"),
    ],
)
def test_bad_output_path_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    output: str, message: str,
) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    a = tmp_path / "a.json"
    a.write_text(json.dumps({"traceEvents": _gpu_steps([1000], 100)}))
    before = a.read_bytes()
    assert main(["export", str(a), str(a), "--perfetto", "-o", output]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and err.startswith("traceviz export: error:")
    assert a.read_bytes() == before  # an input is never written over


def test_missing_format_and_output_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    run = str(SAMPLES / "pointwise")
    assert main(["export", run, "-o", "x.json"]) == 2
    assert "--perfetto" in capsys.readouterr().err
    assert main(["export", run, "--perfetto"]) == 2
    assert "-o" in capsys.readouterr().err


# --- the dashboard's download ------------------------------------------------------------------


def test_dashboard_timeline_offers_the_export(tmp_path: Path) -> None:
    pn = pytest.importorskip("panel")
    from traceviz.dashboard.download import LABEL, perfetto_download
    from traceviz.dashboard.views import TimelineView

    comparison = _comparison(SAMPLES / "pointwise")
    layout = TimelineView(comparison=comparison).__panel__()
    buttons = [w for w in layout.select(pn.widgets.FileDownload) if w.label == LABEL]
    assert len(buttons) == 1 and not buttons[0].disabled
    data = json.loads(gzip.decompress(buttons[0].callback().getvalue()))
    assert len(_annotated(data)) == len(_annotated(_export(tmp_path, SAMPLES / "pointwise")))
    _assert_flows_pair(data)

    # an uploaded trace whose temp file is gone: the button is disabled and says why
    gone = tmp_path / "gone.json"
    gone.write_text(json.dumps({"traceEvents": _gpu_steps([1000], 100)}))
    orphan = _comparison(gone, gone, force=True)
    gone.unlink()
    view = perfetto_download(orphan)
    (button,) = view.select(pn.widgets.FileDownload)
    assert button.disabled
    assert any("gone" in str(p.object) for p in view.select(pn.pane.Markdown))
