"""The notebooks in notebooks/ run from a clean kernel, top to bottom, without an error, from a
working directory that is not notebooks/ (a kernel started elsewhere), with no data from
outside the repository; they are saved small, without outputs, absolute paths or unpinned
(``@latest``) URLs."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, SAMPLES

nbformat = pytest.importorskip("nbformat", reason="pip install nbformat")
nbclient = pytest.importorskip("nbclient", reason="pip install nbclient")
pytest.importorskip("ipykernel", reason="pip install ipykernel")
pytest.importorskip("panel", reason="panel not installed (dashboard extra)")

NOTEBOOKS = REPO / "notebooks"
TIMEOUT_S = 240  # per cell; the quickstart compiles a model with torch.compile


SAVED_MAX_BYTES = 32_000  # a notebook as committed: code and prose only
# what ties a notebook to one machine: a home, a temp or a work folder, a Windows drive, the
# corpus beside the repository (outside it), a path relative to the notebook's folder (it
# breaks when the kernel starts elsewhere)
NOT_PORTABLE = re.compile(
    r"/(?:home|Users|tmp|work|root)/|[A-Za-z]:\\|shared/corpus|TRACEVIZ_CORPUS|\.\./"
)


def ran(name: str, cwd: Path) -> list[dict]:
    """The outputs of notebook ``name`` run top to bottom in a fresh kernel whose working
    directory is ``cwd``, none of them an error."""
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        timeout=TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(cwd)}},
    )
    start = time.monotonic()
    client.execute()  # raises CellExecutionError naming the cell on the first error
    print(f"{name} ran in {time.monotonic() - start:.1f} s")
    found = outputs(notebook)
    assert not [o for o in found if o.get("output_type") == "error"]
    return found


def outputs(notebook: object) -> list[dict]:
    return [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]  # type: ignore[attr-defined]


def test_quickstart(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="the quickstart runs a model: needs the runner extra")
    text = str(ran("quickstart.ipynb", tmp_path))
    assert ("speedup" in text and "application/vnd.plotly" in text) or "plotly" in text


def test_diagnose_gpu_trace(tmp_path: Path) -> None:
    import traceviz
    from traceviz.report.views import headline

    found = ran("diagnose_gpu_trace.ipynb", tmp_path)
    # the headline the notebook printed is the sample run's, as traceviz.compare gives it
    want = headline(traceviz.compare(SAMPLES / "h200" / "gpt2-reduce-overhead"))
    printed = "".join(o.get("text", "") for o in found if o.get("output_type") == "stream")
    assert want and all(line in printed for line in want)


def test_custom_fusion(tmp_path: Path) -> None:
    pytest.importorskip("onnx", reason="the ONNX extra: pip install 'traceviz[onnx]'")
    pytest.importorskip("onnxruntime", reason="the ONNX extra: pip install 'traceviz[onnx]'")
    text = str(ran("custom_fusion.ipynb", tmp_path))
    # the notebook asserts its checks; these say the cells that print them ran
    assert "fused vs unfused: max abs diff 0" in text
    assert "UnsupportedOpError: example.fusions:AddEye" in text
    assert "com.microsoft" in text and "FusedMatMul" in text


def test_ranks(tmp_path: Path) -> None:
    text = str(ran("ranks.ipynb", tmp_path))
    assert "Ranks('" in text and "ranks=4, failed=0" in text  # the dataset was ingested
    assert "kernel-spread" in text  # the slow rank's kernels were found (the cell asserts which)
    assert "application/vnd.holoviews_exec.v0+json" in text  # the widget was displayed


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.name)
def test_notebooks_are_small_and_portable(path: Path) -> None:
    """Saved valid, without outputs and small; no path of one machine, no data from outside
    the repository, no path relative to the notebook's folder, no unpinned URL."""
    assert path.stat().st_size <= SAVED_MAX_BYTES, f"{path.name}: {path.stat().st_size:,} bytes"
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    assert not outputs(notebook), f"{path.name}: clear its outputs before committing"
    for cell in notebook.cells:
        found = NOT_PORTABLE.search(cell.source)
        assert found is None, f"{path.name}: {found.group(0)!r} in {cell.source[:80]!r}"
        assert "@latest" not in cell.source, f"{path.name}: an unpinned URL"
