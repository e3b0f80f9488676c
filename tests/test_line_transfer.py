"""Source lines carried from a run's lines trace to its measured eager trace.

GIVEN a measured eager trace without marks and a lines trace of the same steps under the
``traceviz line`` marks (hand-made: slower, shifted, sometimes with a kernel missing or
renamed) WHEN ``transfer_lines`` aligns them THEN each measured kernel gets the line of its
twin (same step, stream, name and occurrence), a kernel without a twin gets none, and the
coverage says how many had one. On real traces (the samples, the GPU corpus) every kernel is
its own twin, and a run directory with a lines trace gets the same by-line table through the
pipeline as the old single-trace path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import traceviz
from tests.conftest import SAMPLES, corpus_params, kernel, launch, load_trace, op, write_trace
from tests.test_fusion_by_line import assert_lines_conserve
from traceviz.analysis.fusion.line_transfer import transfer_lines, twin_rows
from traceviz.analysis.fusion.lines import fusion_evidence
from traceviz.analysis.provenance import eager_kernel_lines
from traceviz.parse.compile_log import LINE_MARK_PREFIX
from traceviz.pipeline import compare, compare_run
from traceviz.rundir import read_run_dir
from traceviz.runner import load_run
from traceviz.schema import KERNEL_LINES_DTYPES
from traceviz.schema import KernelLines as KL
from traceviz.schema import Kernels as K

MODEL = "/src/model.py"

# one step: (op, kernel name, stream, source line)
STEP = [
    ("aten::relu", "relu_kernel", 7, 3),
    ("aten::add", "add_kernel", 7, 4),
    ("aten::mm", "gemm_kernel", 8, 5),
    ("aten::relu", "relu_kernel", 7, 6),  # a second relu, another line: occurrence k = 1
]


def step_events(
    step: int, start: float, calls: list[tuple[str, str, int, int]], *, marks: bool, scale: float
) -> list[dict[str, Any]]:
    """One ProfilerStep of ``calls``: each an op launching one kernel; ``marks`` wraps each op
    in its line mark; ``scale`` stretches the CPU side (the marks' overhead)."""
    span = 100.0 * scale
    events = [op(f"ProfilerStep#{step}", start, span * len(calls), cat="user_annotation")]
    for i, (name, kname, stream, line) in enumerate(calls):
        at = start + i * span + 1
        corr = step * 100 + i + 1
        if marks:
            mark = f"{LINE_MARK_PREFIX}{MODEL}({line}): forward"
            events.append(op(mark, at, 40 * scale, cat="user_annotation"))
        events += [
            op(name, at + 1, 30 * scale),
            launch("cudaLaunchKernel", at + 2, 5, corr),
            kernel(kname, at + 10, 20, corr, stream=stream),
        ]
    return events


def trace_of(
    tmp_path: Path,
    name: str,
    steps: list[list[tuple[str, str, int, int]]],
    *,
    marks: bool,
    scale: float = 1.0,
    start: float = 0.0,
) -> traceviz.Trace:
    events: list[dict[str, Any]] = []
    at = start
    for n, calls in enumerate(steps):
        events += step_events(n + 5, at, calls, marks=marks, scale=scale)
        at += 100.0 * scale * len(calls) + 50
    return traceviz.load(write_trace(tmp_path / name, events), cache=False)


def lines_by_kernel(trace: traceviz.Trace, lines: pd.DataFrame) -> dict[int, int]:
    return dict(zip(lines[KL.kernel_row], lines[KL.line], strict=True))


def expected(trace: traceviz.Trace, steps: list[list[tuple[str, str, int, int]]]) -> list[int]:
    """The line of each kernel row of ``trace`` as written (kernels in issue order per step)."""
    order = np.argsort(trace.kernels[K.launch_ts_us].to_numpy(dtype=float), kind="stable")
    written = [line for calls in steps for (*_, line) in calls]
    out = [0] * len(written)
    for line, row in zip(written, order, strict=True):
        out[int(row)] = line
    return out


def test_each_kernel_takes_its_twins_line(tmp_path: Path) -> None:
    steps = [STEP, STEP]
    measured = trace_of(tmp_path, "m.json", steps, marks=False)
    marked = trace_of(tmp_path, "l.json", steps, marks=True, scale=4.0, start=7_000)
    assert eager_kernel_lines(measured).empty  # the measured trace has no lines of its own
    got = transfer_lines(measured, marked)
    assert (got.kernels, got.matched, got.located, got.coverage) == (8, 8, 8, 1.0)
    assert dict(got.lines.dtypes.astype(str)) == KERNEL_LINES_DTYPES
    want = expected(measured, steps)
    assert lines_by_kernel(measured, got.lines) == dict(enumerate(want))
    assert set(got.lines[KL.file]) == {MODEL} and got.lines[KL.exact].all()
    # the twins' names are the same kernel's
    twins = twin_rows(measured, marked)
    names = measured.kernels[K.name].astype(str).to_numpy()
    assert (marked.kernels[K.name].astype(str).to_numpy()[twins] == names).all()


def test_a_kernel_without_twin_gets_no_line(tmp_path: Path) -> None:
    measured = trace_of(tmp_path, "m.json", [STEP, STEP], marks=False)
    short = STEP[:3]  # the lines trace's second step lacks the second relu
    marked = trace_of(tmp_path, "l.json", [STEP, short], marks=True, scale=3.0)
    got = transfer_lines(measured, marked)
    assert (got.matched, got.coverage) == (7, 7 / 8)
    located = lines_by_kernel(measured, got.lines)
    want = expected(measured, [STEP, STEP])
    missing = [r for r in range(8) if r not in located]
    assert len(missing) == 1
    # the one without a line is step 2's second relu, never given the first relu's line
    (row,) = missing
    assert want[row] == 6 and measured.kernels[K.name].iloc[row] == "relu_kernel"
    assert all(located[r] == want[r] for r in located)


def test_a_renamed_kernel_has_no_twin(tmp_path: Path) -> None:
    measured = trace_of(tmp_path, "m.json", [STEP], marks=False)
    renamed = [(o, "add_kernel_v2" if k == "add_kernel" else k, s, n) for o, k, s, n in STEP]
    marked = trace_of(tmp_path, "l.json", [renamed], marks=True, scale=2.0)
    got = transfer_lines(measured, marked)
    located = lines_by_kernel(measured, got.lines)
    names = measured.kernels[K.name].astype(str)
    assert (got.matched, got.located) == (3, 3)
    assert set(names[list(located)]) == {"relu_kernel", "gemm_kernel"}  # both relus, the gemm
    want = expected(measured, [STEP])
    assert all(located[r] == want[r] for r in located)


def test_occurrences_count_per_stream(tmp_path: Path) -> None:
    # the same kernel name on two streams: the k-th on each stream is its own twin
    calls = [("aten::relu", "relu_kernel", 7, 3), ("aten::relu", "relu_kernel", 8, 4),
             ("aten::relu", "relu_kernel", 7, 5)]  # fmt: skip
    measured = trace_of(tmp_path, "m.json", [calls], marks=False)
    swapped = [calls[1], calls[0], calls[2]]  # the lines trace issues them in another order
    marked = trace_of(tmp_path, "l.json", [swapped], marks=True)
    got = transfer_lines(measured, marked)
    streams = measured.kernels[K.stream].to_numpy(dtype=np.int64)
    located = lines_by_kernel(measured, got.lines)
    assert got.coverage == 1.0
    assert {streams[r]: line for r, line in located.items() if streams[r] == 8} == {8: 4}
    on_7 = sorted((measured.kernels[K.launch_ts_us].iloc[r], line)
                  for r, line in located.items() if streams[r] == 7)  # fmt: skip
    assert [line for _, line in on_7] == [3, 5]


def test_fewer_steps_in_the_lines_trace(tmp_path: Path) -> None:
    measured = trace_of(tmp_path, "m.json", [STEP, STEP, STEP], marks=False)
    marked = trace_of(tmp_path, "l.json", [STEP, STEP], marks=True)
    got = transfer_lines(measured, marked)
    assert (got.kernels, got.matched, got.located) == (12, 8, 8)
    late = measured.kernels[K.launch_ts_us].to_numpy(dtype=float) > 850  # the third step
    assert not set(np.flatnonzero(late)) & set(got.lines[KL.kernel_row])


def test_cpu_trace_aligns_its_ops(tmp_path: Path) -> None:
    """A CPU-only trace: the computing ops are the kernels; no device or stream."""

    def cpu(marks: bool, scale: float) -> Path:
        events = [op("ProfilerStep#2", 0, 1000 * scale, cat="user_annotation")]
        for i, (name, line) in enumerate([("aten::mul", 3), ("aten::add", 4), ("aten::mul", 5)]):
            at = 10 + i * 100 * scale
            if marks:
                events.append(op(f"{LINE_MARK_PREFIX}{MODEL}({line}): f", at, 50 * scale,
                                 cat="user_annotation"))  # fmt: skip
            events.append(op(name, at + 1, 20 * scale))
        return write_trace(tmp_path / f"cpu{marks}.json", events)

    measured = traceviz.load(cpu(False, 1.0), cache=False)
    marked = traceviz.load(cpu(True, 5.0), cache=False)
    got = transfer_lines(measured, marked)
    names = measured.kernels[K.name].astype(str)
    located = lines_by_kernel(measured, got.lines)
    assert got.coverage == 1.0
    assert sorted((names[r], line) for r, line in located.items()) == [
        ("aten::add", 4), ("aten::mul", 3), ("aten::mul", 5)
    ]  # fmt: skip


def test_no_kernels_and_bad_arguments(tmp_path: Path) -> None:
    empty = traceviz.load(write_trace(tmp_path / "e.json", [op("x", 0, 1, cat="user_annotation")]))
    got = transfer_lines(empty, empty)
    assert (got.kernels, got.matched, got.coverage) == (0, 0, None) and got.lines.empty
    with pytest.raises(TypeError, match="measured"):
        transfer_lines("e.json", empty)  # type: ignore[arg-type]


def test_fusion_evidence_reads_the_lines_trace(tmp_path: Path) -> None:
    measured = trace_of(tmp_path, "m.json", [STEP], marks=False)
    marked = trace_of(tmp_path, "l.json", [STEP], marks=True, scale=3.0)
    assert fusion_evidence(measured, measured) == (None, None)  # no lines of its own
    _, record = fusion_evidence(measured, measured, eager_lines=marked)
    assert record is not None and record.transfer is not None
    assert record.transfer.coverage == 1.0
    assert sorted(record.eager["line"]) == [3, 4, 5, 6]
    _, own = fusion_evidence(marked, measured)  # two plain traces: a's own marks, as before
    assert own is not None and own.transfer is None


# ------------------------------------------------------------ real traces


SAMPLE_EAGER = sorted(SAMPLES.glob("**/eager.pt.trace.json.gz"))


@pytest.mark.parametrize(
    "path",
    [pytest.param(p, id=str(p.parent.relative_to(SAMPLES))) for p in SAMPLE_EAGER]
    + corpus_params(),
)
def test_a_real_trace_is_its_own_twin(path: Path) -> None:
    """Real traces (samples; GPU corpus traces with many streams, CUDA graphs, no steps in
    some): aligned with itself, every kernel is its own twin; a sample (marks in the eager
    trace, the old layout) gets exactly the lines the trace gives."""
    trace = load_trace(path)
    assert (twin_rows(trace, trace) == np.arange(len(trace.kernels))).all()
    if path in SAMPLE_EAGER:
        got = transfer_lines(trace, trace)
        assert got.coverage == 1.0
        pd.testing.assert_frame_equal(got.lines, eager_kernel_lines(trace))


# a run whose eager trace holds the marks (no separate lines trace)
OLD_RUN = Path(__file__).parent / "data" / "runs" / "h200-block-single-trace"


def test_an_old_run_dir_is_its_own_lines_trace() -> None:
    """A sample run made before the lines trace: its eager trace has the marks, so it is its
    own lines trace, and the pipeline takes the old single-trace path."""
    run = load_run(OLD_RUN)
    profiler = run.info.profiler
    assert run.info.traces.eager_lines is None
    assert profiler.eager_line_marks or profiler.eager_with_stack
    assert run.eager_lines_trace == run.eager_trace
    assert read_run_dir(OLD_RUN).eager_lines is None


def test_a_run_dir_with_a_lines_trace(tmp_path: Path) -> None:
    """A run directory whose eager trace has no marks and whose run.json names a lines trace
    (built from the block sample: its eager trace stripped of marks and Python frames): the
    pipeline gives the same by-line table as the old single-trace path, and the credits stay
    within what the measured eager trace holds."""
    import gzip
    import json
    import shutil

    source = OLD_RUN
    run = tmp_path / "block"
    shutil.copytree(source, run)
    (run / "eager.pt.trace.json.gz").rename(run / "eager_lines.pt.trace.json.gz")
    with gzip.open(run / "eager_lines.pt.trace.json.gz", "rt") as fh:
        doc = json.load(fh)
    doc["traceEvents"] = [  # the measured trace: no marks, no Python frames
        e
        for e in doc["traceEvents"]
        if not str(e.get("name", "")).startswith(LINE_MARK_PREFIX)
        and e.get("cat") != "python_function"
    ]
    with gzip.open(run / "eager.pt.trace.json.gz", "wt") as fh:
        json.dump(doc, fh)
    info = json.loads((run / "run.json").read_text())
    info["traces"]["eager_lines"] = "eager_lines.pt.trace.json.gz"
    (run / "run.json").write_text(json.dumps(info))

    assert read_run_dir(run).eager_lines == run / "eager_lines.pt.trace.json.gz"
    new = compare_run(run)
    old = compare_run(source)
    assert new.line_transfer is not None and new.line_transfer.coverage == 1.0
    assert old.line_transfer is None
    assert not new.fusion.by_line.empty
    assert_lines_conserve(new)
    pd.testing.assert_frame_equal(new.fusion.by_line, old.fusion.by_line)
    # without the lines trace, the same unmarked pair has no lines at all
    plain = compare(run / "eager.pt.trace.json.gz", run / "compiled.pt.trace.json.gz",
                    compile_log=run / "compile_log.jsonl.gz")  # fmt: skip
    assert plain.fusion.by_line.empty


@pytest.mark.parametrize("name", ["block", "pointwise", "gpt2", "attention-train"])
def test_a_real_cuda_run_with_a_lines_trace(name: str) -> None:
    """The runner's own CUDA runs (H200) with a separate lines trace: every eager kernel of the
    measured trace finds its twin in the lines trace, the by-line table is filled, and its
    credits stay within what the measured eager trace holds."""
    run = SAMPLES / "h200" / name
    assert read_run_dir(run).eager_lines == run / "eager_lines.pt.trace.json.gz"
    result = compare_run(run)
    assert result.line_transfer is not None
    assert result.line_transfer.coverage == 1.0
    assert not result.fusion.by_line.empty
    assert_lines_conserve(result)


@pytest.mark.parametrize("name", ["h200/gpt2", "h200/graph-break", "mlp"])
def test_twins_across_different_traces_pair_like_kernels_once(name: str) -> None:
    """GIVEN a run's eager and compiled traces (mostly different kernels), both ways THEN every
    twin is a kernel of the same name, stream and device, no kernel is twin to two, and the
    lines carried are exactly those of the twinned rows."""
    run = read_run_dir(SAMPLES / name)
    eager, compiled = load_trace(run.eager), load_trace(run.compiled)
    for a, b in ((eager, compiled), (compiled, eager)):
        twins = twin_rows(a, b)
        assert twins.dtype == np.int64 and len(twins) == len(a.kernels)
        mine = np.flatnonzero(twins >= 0)
        assert len(mine)  # library kernels run on both sides
        theirs = twins[mine]
        assert len(set(theirs.tolist())) == len(theirs)
        for column in (K.name, K.stream, K.device):
            left = a.kernels[column].astype(object).to_numpy()[mine]
            right = b.kernels[column].astype(object).to_numpy()[theirs]
            assert [str(v) for v in left] == [str(v) for v in right], column
        moved = transfer_lines(a, b)
        assert moved.matched == len(mine)
        assert set(moved.lines[KL.kernel_row]) <= set(mine.tolist())
