"""A run directory can be moved: the source paths it stores are relative to it, and a copy
elsewhere (another machine, a fresh clone) gives the same comparison, source text included.

GIVEN the sample runs (made by ``traceviz run`` in this checkout), or a run directory written
here, WHEN it is read where it is or from a copy outside the checkout, THEN nothing it stores
points into the machine that made it, and the results agree.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO, SAMPLES
from traceviz import source_files
from traceviz.analysis.fusion.lines import ByLine
from traceviz.pipeline import compare_run
from traceviz.report.json_report import comparison_json
from traceviz.runner.portable import make_portable

CPU_RUNS = sorted(p.parent.name for p in SAMPLES.glob("*/run.json"))
ABSOLUTE_SOURCE = re.compile(r'(?<![\w./-])(/[^"\s\\]+?\.py)\b')


def _texts(run_dir: Path) -> dict[str, str]:
    """Each text file of the run directory that can hold source paths, decompressed."""
    out = {}
    for path in sorted(run_dir.glob("*")):
        if path.name == "run.json" or path.name.endswith((".jsonl.gz", ".trace.json.gz")):
            raw = path.read_bytes()
            out[path.name] = (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode()
    return out


def _checkout_tail(path: str) -> Path | None:
    """The file of this checkout that an absolute path from another machine names, matched
    by its last two or more components (``/elsewhere/traceviz/runner/zoo.py``)."""
    parts = Path(path).parts[1:]
    for size in range(len(parts), 1, -1):
        candidate = REPO / Path(*parts[-size:])
        if candidate.is_file():
            return candidate
    return None


@pytest.mark.parametrize("name", CPU_RUNS)
def test_sample_runs_store_no_absolute_path_into_the_project(name: str) -> None:
    # a path into the project that made the run is stored relative to the run directory
    leaks = {
        (file, match)
        for file, text in _texts(SAMPLES / name).items()
        for match in ABSOLUTE_SOURCE.findall(text)
        if ".venv" not in match and _checkout_tail(match) is not None
    }
    assert not leaks, sorted(leaks)[:5]
    run = json.loads((SAMPLES / name / "run.json").read_text())
    assert all(not str(c["file"]).startswith("/") for c in run["dynamo"]["compiles"])


def _by_line(report: object) -> list[tuple[str, int, str]]:
    table = report.fusion.by_line  # type: ignore[attr-defined]
    return sorted(
        (Path(str(f)).name, int(n), str(c))
        for f, n, c in zip(table[ByLine.file], table[ByLine.line], table[ByLine.code], strict=True)
    )


@pytest.mark.parametrize("name", ["block", "graph-break"])
def test_a_copied_run_directory_gives_the_same_comparison(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "elsewhere" / name
    shutil.copytree(SAMPLES / name, copy)
    monkeypatch.chdir(tmp_path)  # not in the checkout: its relative paths name nothing here
    here, moved = compare_run(SAMPLES / name), compare_run(copy)
    assert _by_line(moved) == _by_line(here)
    assert _by_line(here), "the sample run has source lines"
    assert all(code for _, _, code in _by_line(moved)), "each line's text was found"
    a, b = (_names_only(comparison_json(r)) for r in (here, moved))
    assert json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def _names_only(data: object) -> object:
    """The JSON with each file path (``source``, ``file``) cut to its name: where the run was
    read from differs, nothing else may."""
    if isinstance(data, dict):
        return {
            k: Path(v).name if k in ("source", "file") and isinstance(v, str) else _names_only(v)
            for k, v in data.items()
        }
    if isinstance(data, list):
        return [_names_only(v) for v in data]
    return data


def test_make_portable_leaves_no_absolute_path_of_this_machine(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    run_dir = project / "runs" / "x"
    run_dir.mkdir(parents=True)
    library = tmp_path / "venv" / "site-packages" / "torch" / "nn"
    library.mkdir(parents=True)
    model = f"{project}/model.py"
    text = json.dumps(
        {
            "file": model,
            "detail": f'File "{model}", line 3, in forward',
            "library": f"{library}/linear.py",  # outside the project: relative too
            "elsewhere": "/gone-machine/proj/model.py",  # no such folder here: as recorded
            "longer": f"/mnt{project}/model.py",  # contains the project path, is another file
            "docs": "https://pytorch.org/docs/stable/torch.compiler.html",
        }
    )
    (run_dir / "run.json").write_text(text)
    log = run_dir / "compile_log.jsonl.gz"
    log.write_bytes(gzip.compress(f'{{"co_filename": "{model}"}}\n'.encode()))
    assert make_portable(run_dir, project) == 2
    data = json.loads((run_dir / "run.json").read_text())
    assert data["file"] == "../../model.py"
    assert data["detail"] == 'File "../../model.py", line 3, in forward'
    assert data["library"] == "../../../venv/site-packages/torch/nn/linear.py"
    assert (run_dir / data["library"]).resolve() == (library / "linear.py").resolve()
    assert data["elsewhere"] == "/gone-machine/proj/model.py"
    assert data["longer"] == f"/mnt{project}/model.py"
    assert data["docs"] == "https://pytorch.org/docs/stable/torch.compiler.html"
    assert json.loads(gzip.decompress(log.read_bytes()))["co_filename"] == "../../model.py"
    assert make_portable(run_dir, project) == 0  # nothing left to rewrite


def test_locate_finds_a_moved_source_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a run made at /gone/proj, then the whole project moved to tmp_path/proj
    model = tmp_path / "proj" / "pkg" / "model.py"
    model.parent.mkdir(parents=True)
    model.write_text("x = 1\n")
    run_dir = tmp_path / "proj" / "runs" / "r"
    run_dir.mkdir(parents=True)
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    monkeypatch.setattr(source_files, "_RUN_DIRS", [])
    source_files._locate.cache_clear()
    assert source_files.locate("/gone/proj/pkg/model.py") is None  # no run read yet
    source_files.remember(run_dir)
    assert source_files.locate("../../pkg/model.py") == model  # relative to the run directory
    assert source_files.locate("/gone/proj/pkg/model.py") == model  # re-rooted by its tail
    assert source_files.locate("/gone/proj/pkg/other.py") is None  # never a guess
    assert source_files.locate("/gone/model.py") is None  # one component is not enough
    source_files._locate.cache_clear()


def test_locate_finds_a_library_file_under_this_pythons_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # transformers recorded under the recording machine's venv, installed here elsewhere
    library = tmp_path / "here-site-packages"
    (library / "pkg").mkdir(parents=True)
    (library / "pkg" / "mod.py").write_text("y = 2\n")
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    monkeypatch.setattr(source_files, "_RUN_DIRS", [])
    monkeypatch.setattr("sys.path", [str(library)])
    source_files._locate.cache_clear()
    recorded = "/gone/.venv/lib/python3.11/site-packages/pkg/mod.py"
    assert source_files.locate(recorded) == library / "pkg" / "mod.py"
    # a project file is not looked for among the libraries: that would be a guess
    assert source_files.locate("/gone/proj/pkg/mod.py") is None
    source_files._locate.cache_clear()
