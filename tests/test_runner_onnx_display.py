"""What `traceviz run` prints and returns for the ONNX Runtime backend, from run.json alone.

GIVEN run.json records with ORT levels (one failing its check, with a culprit; one failing
with an error) WHEN `traceviz run` prints them THEN every level, its check and its latency show,
and the exit status is 1 exactly when a level's outputs differ from eager's.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from tests.runinfo_builder import run_info
from traceviz.commands import run as run_command
from traceviz.runner import Run
from traceviz.runner.onnx.display import print_backends


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


SAMPLE = Path(__file__).resolve().parents[1] / "sample_traces" / "gpt2-ort"


@pytest.mark.skipif(not (SAMPLE / "run.json").is_file(), reason="no sample_traces/gpt2-ort yet")
def test_the_gpt2_ort_sample_is_whole_and_its_profiles_add_up() -> None:
    """Every level of the sample has its graph structure and profile; node time credited to a
    profiled step never exceeds the step; the directory stays small."""
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
    size = sum(p.stat().st_size for p in SAMPLE.rglob("*") if p.is_file())
    assert size < 3 * 2**20
