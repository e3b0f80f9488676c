"""The comparison: figures equal plain counts of the JSON, every pair compares, the CLI's
output formats are stable."""

from __future__ import annotations

import itertools
import json
import math
from functools import cache
from pathlib import Path

import pytest

import traceviz
from tests.conftest import CORPUS, SAMPLES, corpus_files, read_json
from traceviz.analysis.compare import Side, analyze, compare, compare_sides
from traceviz.cli import main


def sample_runs() -> list[Path]:
    return sorted(p for p in SAMPLES.glob("*") if (p / "run.json").is_file())


def all_traces() -> list[Path]:
    names = ("eager.pt.trace.json.gz", "compiled.pt.trace.json.gz")
    runs = [run / name for run in sample_runs() for name in names]
    return corpus_files() + runs


@cache
def side(path: Path) -> Side:
    return analyze(traceviz.load(path), name=path.name)


def test_every_pair_compares() -> None:
    traces = all_traces()
    if len(traces) < 2:
        pytest.skip(f"no traces found in {CORPUS} or {SAMPLES}")
    for a, b in itertools.combinations(traces, 2):
        comparison = compare_sides(side(a), side(b))
        assert len(comparison.metrics) > 20, (a, b)


def _plain_kernel_count(path: Path) -> int:
    doc = read_json(path)
    events = doc if isinstance(doc, list) else doc["traceEvents"]
    return sum(1 for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "Kernel"))


def test_gpu_pair_figures_equal_plain_counts() -> None:
    a = CORPUS / "nvidia" / "a100_eager_train_control.json.gz"
    b = CORPUS / "nvidia" / "v100_train_compiledfunction_cudagraph.json.gz"
    if not a.exists():
        pytest.skip(f"corpus not found at {CORPUS}")
    comparison = compare(a, b, names=("eager", "compiled"))
    kernels = comparison.metric("kernel_count")
    assert (kernels.a, kernels.b) == (_plain_kernel_count(a), _plain_kernel_count(b))
    assert kernels.delta == kernels.b - kernels.a
    assert math.isclose(kernels.ratio, kernels.b / kernels.a)
    assert comparison.metric("launch_count").a == 8568  # MANIFEST
    assert comparison.metric("memcpy_bytes").b == 28340638496  # MANIFEST


def _sample(name: str) -> Path:
    path = SAMPLES / name
    if not (path / "run.json").is_file():
        pytest.skip(f"sample run {path} not found")
    return path


def test_pointwise_run_fuses_the_chain() -> None:
    run = _sample("pointwise")
    comparison = compare(
        run / "eager.pt.trace.json.gz",
        run / "compiled.pt.trace.json.gz",
        names=("eager", "compiled"),
        run_info=json.loads((run / "run.json").read_text()),
    )
    assert comparison.metric("kernel_count").b < comparison.metric("kernel_count").a
    fused = comparison.fusion.kernels[comparison.fusion.kernels.is_fusion]
    assert len(fused) >= 1
    assert any("cos" in str(ops) for ops in fused.eager_ops)


def test_graph_break_run_shows_its_regions() -> None:
    comparison = compare(
        _sample("graph-break") / "eager.pt.trace.json.gz",
        _sample("graph-break") / "compiled.pt.trace.json.gz",
    )
    assert comparison.metric("graph_breaks").b >= 1
    assert comparison.metric("compiled_frames").b >= 2
    assert comparison.metric("compiled_regions").a == 0


@pytest.mark.parametrize("fmt", ["text", "json", "markdown"])
def test_cli_formats(fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _sample("pointwise")
    out = tmp_path / f"out.{fmt}"
    assert main(["compare", str(run), "--format", fmt, "-o", str(out), "--top", "3"]) == 0
    text = out.read_text()
    assert "kernel_count" in text
    if fmt == "json":
        doc = json.loads(text)
        assert doc["schema_version"] == 1 and doc["names"] == {"a": "eager", "b": "compiled"}
        assert {"metrics", "kinds", "regions", "fusion", "findings"} <= doc.keys()
        names = {m["name"] for m in doc["metrics"]}
        required = {"kernel_count", "kernel_time_us", "launch_count", "launch_api_time_us",
                    "est_bytes", "memcpy_bytes", "compiled_regions", "graph_breaks"}  # fmt: skip
        assert required <= names
    if fmt == "markdown":
        assert text.startswith("# traceviz: eager vs compiled")


def test_cli_rejects_a_single_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.json"
    path.write_text('{"traceEvents": []}')
    assert main(["compare", str(path)]) == 2
    assert "run directory" in capsys.readouterr().err
