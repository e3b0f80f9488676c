"""The notebooks in notebooks/ run from a clean kernel, top to bottom, without an error."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.conftest import CORPUS, REPO

nbformat = pytest.importorskip("nbformat", reason="pip install nbformat")
nbclient = pytest.importorskip("nbclient", reason="pip install nbclient")
pytest.importorskip("ipykernel", reason="pip install ipykernel")
pytest.importorskip("panel", reason="panel not installed (dashboard extra)")

NOTEBOOKS = REPO / "notebooks"
TIMEOUT_S = 240  # per cell; the quickstart compiles a model with torch.compile


def execute(path: Path) -> tuple[object, float]:
    notebook = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        timeout=TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    start = time.monotonic()
    client.execute()  # raises CellExecutionError naming the cell on the first error
    return notebook, time.monotonic() - start


def outputs(notebook: object) -> list[dict]:
    return [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]  # type: ignore[attr-defined]


def test_quickstart() -> None:
    pytest.importorskip("torch", reason="the quickstart runs a model: needs the runner extra")
    notebook, seconds = execute(NOTEBOOKS / "quickstart.ipynb")
    found = outputs(notebook)
    assert not [o for o in found if o.get("output_type") == "error"]
    text = str(found)
    assert ("speedup" in text and "application/vnd.plotly" in text) or "plotly" in text
    print(f"quickstart ran in {seconds:.1f} s")


def test_diagnose_gpu_trace() -> None:
    if not (CORPUS / "nvidia" / "a100_eager_train_control.json.gz").is_file():
        pytest.skip(f"GPU traces not found in {CORPUS}")
    notebook, seconds = execute(NOTEBOOKS / "diagnose_gpu_trace.ipynb")
    found = outputs(notebook)
    assert not [o for o in found if o.get("output_type") == "error"]
    assert "kernels 8,568 → 6,080" in str(found)  # the headline of the pair
    print(f"diagnose_gpu_trace ran in {seconds:.1f} s")


def test_custom_fusion() -> None:
    pytest.importorskip("onnx", reason="the ONNX extra: pip install 'traceviz[onnx]'")
    pytest.importorskip("onnxruntime", reason="the ONNX extra: pip install 'traceviz[onnx]'")
    notebook, seconds = execute(NOTEBOOKS / "custom_fusion.ipynb")
    found = outputs(notebook)
    assert not [o for o in found if o.get("output_type") == "error"]
    text = str(found)
    # the notebook asserts its checks; these say the cells that print them ran
    assert "fused vs unfused: max abs diff 0" in text
    assert "UnsupportedOpError: example.fusions:AddEye" in text
    assert "com.microsoft" in text and "FusedMatMul" in text
    print(f"custom_fusion ran in {seconds:.1f} s")


def test_ranks() -> None:
    notebook, seconds = execute(NOTEBOOKS / "ranks.ipynb")
    found = outputs(notebook)
    assert not [o for o in found if o.get("output_type") == "error"]
    text = str(found)
    assert "Ranks('" in text and "ranks=4, failed=0" in text  # the dataset was ingested
    assert "kernel-spread" in text  # the slow rank's kernels were found (the cell asserts which)
    assert "application/vnd.holoviews_exec.v0+json" in text  # the widget was displayed
    print(f"ranks ran in {seconds:.1f} s")


def test_notebooks_are_saved_without_outputs() -> None:
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        nbformat.validate(notebook)
        assert not outputs(notebook), f"{path.name}: clear its outputs before committing"
