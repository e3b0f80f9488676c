"""A run directory (``traceviz run``'s output) as plain paths and its typed run.json, for
the front door (:mod:`traceviz.pipeline`) that compares its two traces. Reading and
validating run.json is the runner's job (:func:`traceviz.runner.load_run`, no torch needed,
malformed files raise TraceFormatError naming them); this only adapts its result.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from traceviz import source_files
from traceviz.errors import TraceFormatError
from traceviz.runs.run import load_run
from traceviz.runs.runinfo import RUN_JSON, RunInfo


@dataclass(frozen=True)
class RunDir:
    """Paths of a run directory's traces and its run.json (typed: :class:`RunInfo`)."""

    path: Path
    eager: Path
    compiled: Path
    info: RunInfo
    compile_log: Path | None = None  # structured compile log (Inductor provenance), when kept
    # the eager steps profiled again under the line marks (source lines only), when the run has
    # one; None for older runs, whose eager trace holds its own marks
    eager_lines: Path | None = None


def is_run_dir(path: Path) -> bool:
    return path.is_dir() and (path / RUN_JSON).is_file()


def read_run_dir(path: Path) -> RunDir:
    """Read ``path``; raises :class:`TraceFormatError` when it has no pair of traces to compare
    (a run whose compilation failed has only the eager trace: the error says why)."""
    run = load_run(path)
    source_files.remember(path)  # the sources it names are relative to it
    eager, compiled = run.eager_trace, run.compiled_trace
    if eager is None or compiled is None or not eager.is_file() or not compiled.is_file():
        why = "; ".join(run.problems()) or "a trace file is missing"
        raise TraceFormatError(path, f"run directory has no eager/compiled pair to compare ({why})")
    return RunDir(
        path=path,
        eager=eager,
        compiled=compiled,
        info=run.info,
        compile_log=run.compile_log,
        # the lines trace when it is its own file (older runs name the eager trace itself)
        eager_lines=run.eager_lines_trace if run.eager_lines_trace != eager else None,
    )


def default_names(a: str, b: str) -> tuple[str, str]:
    """Labels for two trace files from their names (``a``/``b`` when the names are the same)."""
    name_a, name_b = file_stem(a), file_stem(b)
    return (name_a, name_b) if name_a != name_b else ("a", "b")


def file_stem(path: str) -> str:
    """``runs/x/eager.pt.trace.json.gz`` → ``eager``."""
    name = Path(path).name
    for suffix in (".gz", ".json", ".pt.trace"):
        name = name.removesuffix(suffix)
    return name or path
