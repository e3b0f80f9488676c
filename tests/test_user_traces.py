"""Traces a user profiled themselves (issue 24 §4): what traceviz says when the trace or the
compile log lacks what makes the fusion map exact, and the Python entry for a run directory.

- A compiled CPU trace without Inductor's kernels (compiled without
  ``cpp.enable_kernel_profile``): made from a real sample run by removing its
  ``graph_N_cpp_fused_*`` ops, exactly what such a profile records around the graph calls.
- A compile log without provenance: a sample run's real log without its provenance records,
  as JSON lines and as a ``TORCH_TRACE`` (glog) file.
- ``traceviz.compare(RUN_DIR)`` / ``traceviz.compare(a, b)``.

The README's "Profiling your own model" snippet is run for real in
``tests/test_user_traces_snippet.py``.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import traceviz
from tests.conftest import SAMPLES
from traceviz.analysis.fusion.inductor_record import (
    NAME_MATCH_UNRECORDED_BASIS,
    unrecorded_inductor_kernels,
)
from traceviz.analysis.fusion.match import Credits, Outcome
from traceviz.diagnose.rules.inductor_kernels import NO_PROVENANCE_ID, NOT_RECORDED_ID
from traceviz.parse.compile_log import NODE_MAPPINGS, PROVENANCE_SETTING, STACK_TRACES
from traceviz.pipeline import compare_run
from traceviz.schema import Kernels, RegionKind, Regions

# CPU sample runs whose compiled graphs hold Inductor kernels (and library calls but for
# pointwise); linear-add's graph is one library call (addmm), no Inductor kernel
RUNS = ["block", "mlp", "conv-bn-relu", "pointwise"]


def _load(path: Path) -> traceviz.Trace:
    return traceviz.load(path, cache=False)


def without_inductor_kernels(run: str, out: Path) -> Path:
    """The run's compiled trace as a profile without ``cpp.enable_kernel_profile`` records
    it: the same events minus Inductor's ``cpp_fused_*`` ops."""
    data = json.loads(gzip.decompress((SAMPLES / run / "compiled.pt.trace.json.gz").read_bytes()))
    events = data["traceEvents"]
    data["traceEvents"] = [e for e in events if "cpp_fused_" not in str(e.get("name", ""))]
    assert len(data["traceEvents"]) < len(events)
    path = out / f"{run}-compiled-no-kernel-profile.json.gz"
    path.write_bytes(gzip.compress(json.dumps(data).encode()))
    return path


def _compare(run: str, compiled: Path | str) -> traceviz.Report:
    eager = SAMPLES / run / "eager.pt.trace.json.gz"
    return traceviz.compare(eager, compiled, names=("eager", "compiled"), load=_load)


# --- a compiled CPU trace without Inductor's kernels ---------------------------------------


@pytest.mark.parametrize("run", RUNS)
def test_no_kernel_profile_says_so_and_claims_no_part_at_full_confidence(
    run: str, tmp_path: Path
) -> None:
    """One finding saying how to record the kernels; every name-matched row says they were
    not recorded; no eager op is credited to a library call as one of its parts at confidence
    1 (the issue: ``aten::mul`` in ``aten::addmm`` at 1.00), and the partition still holds."""
    report = _compare(run, without_inductor_kernels(run, tmp_path))
    found = [f for f in report.findings if f.id == NOT_RECORDED_ID]
    assert len(found) == 1, [f.id for f in report.findings]
    assert found[0].trace == "compiled"
    assert "cpp.enable_kernel_profile = True" in found[0].next_step
    assert NAME_MATCH_UNRECORDED_BASIS in " ".join(found[0].evidence_lines())
    kernels = report.fusion.kernels
    assert len(kernels) or run == "pointwise"  # pointwise's graph left no library call
    assert set(kernels["basis"].astype(str)) <= {NAME_MATCH_UNRECORDED_BASIS}
    credits = report.fusion.credits
    matched = credits[credits[Credits.outcome] == Outcome.MATCHED.value]
    parts = matched[matched[Credits.how].isin(["part", "fused"])]
    assert not (parts[Credits.confidence] >= 1.0).any(), parts
    same_call = matched[matched[Credits.how].isin(["identical", "alias"])]
    assert (same_call[Credits.confidence] == 1.0).all()
    assert set(matched[Credits.basis].astype(str)) <= {NAME_MATCH_UNRECORDED_BASIS}
    eager = _load(SAMPLES / run / "eager.pt.trace.json.gz")
    assert credits[Credits.eager_row].is_unique  # one credit per eager kernel at most
    assert matched[Credits.time_us].sum() <= eager.kernels[Kernels.excl_dur_us].sum() + 1e-6
    # what the graph calls measured less their library calls is the unrecorded time
    trace = report.b.trace
    missing = unrecorded_inductor_kernels(trace)
    assert missing is not None
    calls = trace.regions[trace.regions[Regions.kind] == RegionKind.FX_GRAPH_CALL.value]
    assert missing.graph_calls == len(calls) > 0
    assert missing.graph_time_us == pytest.approx(calls[Regions.dur_us].sum())
    assert missing.recorded_time_us == pytest.approx(calls[Regions.kernel_time_us].sum())
    assert 0 < missing.unrecorded_time_us <= missing.graph_time_us
    # the sample itself (kernel profile on) and its eager trace are not such traces
    assert unrecorded_inductor_kernels(_load(SAMPLES / run / "compiled.pt.trace.json.gz")) is None
    assert unrecorded_inductor_kernels(eager) is None


def test_block_multiply_is_not_credited_to_the_matmul(tmp_path: Path) -> None:
    """The block's eager ``mm`` output flows through add, cos, relu, gelu, mul into
    Inductor's unrecorded C++ kernels; none of them is the library matmul's work."""
    report = _compare("block", without_inductor_kernels("block", tmp_path))
    ops = report.fusion.ops
    on_mm = ops[ops["kernel"] == "aten::mm"]
    assert set(on_mm["op"]) == {"aten::mm"}, on_mm


@pytest.mark.parametrize("run", [*RUNS, "linear-add"])
def test_with_the_kernel_profile_no_finding_and_no_unrecorded_basis(run: str) -> None:
    """Also linear-add, whose graph generated no Inductor kernel (one ``addmm``): nothing of
    the eager side is left without a counterpart, so nothing is missing."""
    report = _compare(run, SAMPLES / run / "compiled.pt.trace.json.gz")
    assert NOT_RECORDED_ID not in {f.id for f in report.findings}
    assert NAME_MATCH_UNRECORDED_BASIS not in set(report.fusion.kernels["basis"].astype(str))


def test_run_json_saying_the_profile_was_on_keeps_the_finding_off(tmp_path: Path) -> None:
    """A run directory whose run.json says the kernel profile was on: its graphs simply
    generated no kernel; a user's pair without run.json gets the finding."""
    compiled = without_inductor_kernels("block", tmp_path)
    info = traceviz.load_run(SAMPLES / "block").info
    assert info.profiler.cpp_kernel_profile
    eager = SAMPLES / "block" / "eager.pt.trace.json.gz"
    report = traceviz.compare(eager, compiled, names=("eager", "compiled"), run_info=info,
                              load=_load)  # fmt: skip
    assert NOT_RECORDED_ID not in {f.id for f in report.findings}


# --- a compile log without provenance ----------------------------------------------------


def _records(run: str, *, provenance: bool) -> list[dict[str, object]]:
    lines = gzip.decompress((SAMPLES / run / "compile_log.jsonl.gz").read_bytes()).splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    if provenance:
        return records
    dropped = {NODE_MAPPINGS, STACK_TRACES}  # the provenance artifacts
    kept = [r for r in records if (r["metadata"].get("artifact") or {}).get("name") not in dropped]
    assert len(kept) < len(records)
    return kept


def jsonl_log(run: str, out: Path, *, provenance: bool) -> Path:
    path = out / "compile_log.jsonl.gz"
    text = "".join(json.dumps(r) + "\n" for r in _records(run, provenance=provenance))
    path.write_bytes(gzip.compress(text.encode()))
    return path


def torch_trace_dir(run: str, out: Path, *, provenance: bool) -> Path:
    """The records as a ``TORCH_TRACE`` directory: glog-prefixed metadata lines, payload lines
    indented by a tab (torch/_logging/_internal.py's format)."""
    folder = out / "torch_trace"
    folder.mkdir()
    lines = []
    for record in _records(run, provenance=provenance):
        lines.append(
            f"V1202 03:00:00.000000 1234 torch/_logging/x.py:1] {json.dumps(record['metadata'])}"
        )
        payload = record.get("payload")
        if isinstance(payload, str):
            lines += ["\t" + line for line in payload.splitlines()]
    (folder / "dedicated_log_torch_trace_abc.log").write_text("\n".join(lines) + "\n")
    return folder


@pytest.mark.parametrize("provenance", [False, True])
@pytest.mark.parametrize("form", [jsonl_log, torch_trace_dir])
def test_compile_log_says_when_it_has_no_provenance(form, provenance: bool, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Without provenance: one warning naming the setting, and the fusion map is the
    name-match it would be without the log (said, not silent); with it: no warning."""
    log = form("block", tmp_path, provenance=provenance)
    block = SAMPLES / "block"
    report = traceviz.compare(
        block / "eager.pt.trace.json.gz",
        block / "compiled.pt.trace.json.gz",
        names=("eager", "compiled"),
        compile_log=log,
        load=_load,
        eager_lines=block / "eager_lines.pt.trace.json.gz" if provenance else None,
    )
    found = [f for f in report.findings if f.id == NO_PROVENANCE_ID]
    bases = set(report.fusion.kernels["basis"].astype(str))
    if provenance:
        assert not found and "compiler" in bases
        return
    assert len(found) == 1 and found[0].severity == "warning"
    assert PROVENANCE_SETTING in found[0].next_step and "TORCH_TRACE" in found[0].next_step
    assert bases == {"name-match"}


def test_cli_compile_log_without_provenance_prints_the_setting(tmp_path: Path) -> None:
    log = torch_trace_dir("block", tmp_path, provenance=False)
    result = subprocess.run(
        [sys.executable, "-m", "traceviz.cli", "compare",
         str(SAMPLES / "block" / "eager.pt.trace.json.gz"),
         str(SAMPLES / "block" / "compiled.pt.trace.json.gz"),
         "--compile-log", str(log), "--format", "json", "--no-cache"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    findings = json.loads(result.stdout)["findings"]
    ids = [f["id"] for f in findings]
    assert NO_PROVENANCE_ID in ids
    assert "provenance_tracking_level = 1" in findings[ids.index(NO_PROVENANCE_ID)]["next_step"]


# --- traceviz.compare(RUN_DIR) -----------------------------------------------------------


def test_compare_takes_a_run_directory() -> None:
    """``traceviz.compare(RUN_DIR)`` (a TypeError before) is the run's report: labels eager
    and compiled, run.json read, the same fusion map as compare_run."""
    report = traceviz.compare(SAMPLES / "block", load=_load)
    assert report.names == ("eager", "compiled")
    assert report.run_info is not None
    expected = compare_run(SAMPLES / "block", load=_load)
    pd.testing.assert_frame_equal(report.fusion.kernels, expected.fusion.kernels)
    assert [f.id for f in report.findings] == [f.id for f in expected.findings]
    by_run = traceviz.compare(traceviz.load_run(SAMPLES / "block"), load=_load)
    assert by_run.names == ("eager", "compiled")
    renamed = traceviz.compare(str(SAMPLES / "block"), names=("before", "after"), load=_load)
    assert renamed.names == ("before", "after")


def test_compare_of_two_traces_still_works() -> None:
    eager, compiled = (SAMPLES / "block" / f"{s}.pt.trace.json.gz" for s in ("eager", "compiled"))
    assert traceviz.compare(eager, compiled, load=_load).names == ("a", "b")
    report = traceviz.compare(str(eager), str(compiled), names=("eager", "compiled"))
    assert report.names == ("eager", "compiled")
    assert report.run_info is None


def test_compare_of_one_trace_is_a_usage_error() -> None:
    with pytest.raises(traceviz.UsageError, match="run directory"):
        traceviz.compare(SAMPLES / "block" / "eager.pt.trace.json.gz")
    with pytest.raises(traceviz.UsageError, match="run_info"):
        traceviz.compare(SAMPLES / "block", run_info={})
