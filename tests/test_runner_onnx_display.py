"""What `traceviz run` prints and returns, from run.json alone.

GIVEN run.json records with ORT levels (one failing its check, with a culprit; one failing
with an error) WHEN `traceviz run` prints them THEN every level, its check and its latency show,
and the exit status is 1 exactly when a level's outputs differ from eager's.

Under the timing table's speedup (eager median / compiled median) the statistical verdict on
the same timed samples (:func:`traceviz.analysis.timing.speed.compare_samples`, as ``traceviz
compare`` gives it) says whether that ratio is more than noise: on sample_traces/h200/block the
table says 1.08× while the samples cannot tell eager and compiled apart.
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from tests.conftest import SAMPLES
from tests.runinfo_builder import run_info
from traceviz.analysis.timing.speed import SAME, compare_samples, ratio_words
from traceviz.commands import output
from traceviz.commands import run as run_command
from traceviz.commands.speed_line import speed_line
from traceviz.rundir import read_run_dir
from traceviz.runner import Run
from traceviz.runner.onnx.display import print_backends

RUNS = sorted(p.parent for p in SAMPLES.rglob("run.json"))


def _level(name: str, *, passed: bool | None = True, **fields: Any) -> dict[str, Any]:
    check = {"passed": passed, "max_abs_diff": 1e-7 if passed else 0.5, "atol": 1e-4, "rtol": 1e-3}
    if passed is False:
        check["culprit"] = {"node": "fused_gemm", "op_type": "Gemm", "error": "output lin: bad"}
    return {"name": name, "graph": f"onnx/ort_{name}.onnx", "nodes": 7, "check": check, **fields}


def _info(levels: list[dict[str, Any]]) -> Any:
    names = ["eager", "compile", *(f"onnxruntime:{lv['name']}" for lv in levels)]
    rows = [
        {"backend": n, "median_us": 100.0 * (i + 1), "iqr_us": 5.0, "samples_us": [1.0],
         "ratio_to_eager": float(i + 1)}
        for i, n in enumerate(names)
    ]  # fmt: skip
    return run_info(
        backends={
            "onnxruntime": {
                "export": {
                    "exporter": "dynamo",
                    "opset": 18,
                    "seconds": 1.5,
                    "path": "onnx/model.onnx",
                },
                "ort_version": "1.0",
                "providers": ["CPUExecutionProvider"],
                "threads": 1,
                "levels": levels,
            }
        },
        latency={"method": "round-robin", "threads": 1, "rows": rows},
    )


def _printed(info: Any) -> str:
    console = Console(width=200, record=True)
    print_backends(info, console)
    return console.export_text()


def test_every_level_its_check_and_latency_are_printed() -> None:
    text = _printed(
        _info([_level("all"), _level("transformers-x", passed=None, check=None, error="Boom: x")])
    )
    assert "dynamo exporter, opset 18, 1.5 s" in text
    assert "ort:all" in text and "PASS" in text and "300 µs" in text and "3.00×" in text
    assert "ort:transformers-x failed: Boom: x" in text


def test_a_failing_level_shows_its_culprit() -> None:
    text = _printed(_info([_level("all", passed=False)]))
    assert "FAIL" in text
    assert "ort:all outputs differ from eager; culprit fused_gemm (Gemm): output lin: bad" in text


def test_nothing_is_printed_without_the_backend() -> None:
    assert _printed(run_info()) == ""


@pytest.mark.parametrize(
    ("levels", "status"),
    [
        ([_level("all")], 0),
        ([_level("all"), _level("transformers-x", passed=None, check=None, error="E")], 0),
        ([_level("basic"), _level("all", passed=False)], 1),
    ],
)
def test_exit_status_is_1_when_a_level_differs(
    levels: list[dict[str, Any]], status: int, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    result = Run(directory=tmp_path, info=_info(levels))
    monkeypatch.setattr(run_command, "profile_from_args", lambda args: result)
    assert run_command.run(argparse.Namespace()) == status


SAMPLE = SAMPLES / "gpt2-ort"


@pytest.mark.skipif(not (SAMPLE / "run.json").is_file(), reason="no sample_traces/gpt2-ort yet")
def test_the_gpt2_ort_sample_is_whole_and_its_profiles_add_up() -> None:
    """Every level of the sample has its graph structure and profile; node time credited to a
    profiled step never exceeds the step (its size: test_sample_runs_stay_small)."""
    import json

    from traceviz.runner import load_run

    run = load_run(SAMPLE)
    ort = run.info.backends.onnxruntime
    assert ort is not None and ort.export.attention_mask and run.info.latency is not None
    assert [r.backend for r in run.info.latency.rows][2:] == [
        f"onnxruntime:{lv.name}" for lv in ort.levels if lv.error is None
    ]
    onnx = pytest.importorskip("onnx")
    for level in ort.levels:
        if level.error is not None:
            continue
        assert level.graph and level.profile and level.check and level.check.passed
        graph = onnx.load(str(SAMPLE / level.graph), load_external_data=False)
        assert len(graph.graph.node) == level.nodes
        events = json.loads((SAMPLE / level.profile).read_text())
        runs = [e for e in events if e.get("name") == "model_run"]
        assert len(runs) == run.info.options.steps
        for step in runs:
            inside = [
                e["dur"] for e in events
                if e.get("cat") == "Node" and step["ts"] <= e["ts"] <= step["ts"] + step["dur"]
            ]  # fmt: skip
            assert inside and sum(inside) <= step["dur"]


def _run_printed(directory: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    run = Run(directory, read_run_dir(directory).info)
    console = Console(file=io.StringIO(), width=200)
    monkeypatch.setattr(run_command, "profile_from_args", lambda args: run)
    monkeypatch.setattr(output, "console", lambda: console)
    run_command.run(argparse.Namespace())
    return console.file.getvalue()  # type: ignore[attr-defined]


@pytest.mark.parametrize("directory", RUNS, ids=[str(p.relative_to(SAMPLES)) for p in RUNS])
def test_run_prints_the_verdict_of_its_timed_samples(
    directory: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    timing = read_run_dir(directory).info.timing
    assert timing.compiled is not None
    verdict = compare_samples(timing.eager.samples_us, timing.compiled.samples_us)
    text = _run_printed(directory, monkeypatch)
    said = "no significant difference" if verdict.verdict == SAME else verdict.verdict
    line = next(x for x in text.splitlines() if x.startswith("speed verdict:"))
    assert said in line
    assert ratio_words(verdict.ratio) in line  # one way round: "1.28× faster", never 0.78×
    assert verdict.interval_text() in line
    assert text.index("speed verdict:") > text.index("step time,")
    if directory == SAMPLES / "h200" / "block":  # a speedup within the noise says so
        assert timing.speedup is not None and timing.speedup > 1.05
        assert "speed verdict: no significant difference" in line


def test_no_compiled_timing_no_verdict() -> None:
    info = read_run_dir(SAMPLES / "block").info
    failed = type(info.timing)(**{**_fields(info.timing), "compiled": None, "speedup": None})
    assert speed_line(type(info)(**{**_fields(info), "timing": failed})) is None


def _fields(value: object) -> dict[str, object]:
    return {name: getattr(value, name) for name in value.__struct_fields__}  # type: ignore[attr-defined]
