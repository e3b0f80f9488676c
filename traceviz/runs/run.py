"""``Run``: a run directory (two traces and run.json) as one object; ``load_run`` reads one back.

Needs no torch: a run made on a GPU machine can be read and analysed anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from traceviz.errors import TraceFormatError
from traceviz.runs.runinfo import RUN_JSON, Correctness, RunInfo, decode
from traceviz.runs.runinfo_backends import LevelCheck

if TYPE_CHECKING:
    from traceviz.trace import Trace


@dataclass(frozen=True)
class Run:
    """One ``traceviz run``: ``directory`` holds the traces, ``info`` is its run.json."""

    directory: Path
    info: RunInfo

    @property
    def name(self) -> str:
        return self.info.model.name

    @property
    def eager_trace(self) -> Path | None:
        """Path of the eager trace (None if the run wrote none)."""
        name = self.info.traces.eager
        return self.directory / name if name else None

    @property
    def compiled_trace(self) -> Path | None:
        """Path of the compiled trace (None when compilation failed)."""
        name = self.info.traces.compiled
        return self.directory / name if name else None

    @property
    def eager_lines_trace(self) -> Path | None:
        """Path of the trace whose ``traceviz line`` marks give the eager kernels' source lines:
        the separate lines trace (``traces.eager_lines``); in runs made before it existed whose
        eager trace has the marks or Python frames itself (``profiler.eager_line_marks`` /
        ``eager_with_stack``), the eager trace. None when the run has neither or the file is
        not there."""
        name = self.info.traces.eager_lines
        if name:
            path = self.directory / name
            return path if path.is_file() else None
        profiler = self.info.profiler
        return self.eager_trace if profiler.eager_line_marks or profiler.eager_with_stack else None

    @property
    def compile_log(self) -> Path | None:
        """Path of the structured compile log (None when the run has none, e.g. older runs)."""
        name = self.info.traces.compile_log
        path = self.directory / name if name else None
        return path if path is not None and path.is_file() else None

    @property
    def speedup(self) -> float | None:
        """Eager median step time / compiled median step time (None without a compiled run)."""
        return self.info.timing.speedup

    @property
    def compile_ok(self) -> bool:
        return self.info.compile.ok

    @property
    def outputs_match(self) -> bool | None:
        """True/False when the outputs were compared, None when they could not be."""
        return self.info.correctness.passed

    @property
    def ok(self) -> bool:
        """Compiled without error and the compiled outputs match the eager ones."""
        return self.compile_ok and self.outputs_match is not False

    def problems(self) -> list[str]:
        """One sentence per thing that went wrong (empty for a clean run)."""
        found = []
        error = self.info.compile.error
        if error is not None:
            what = f"{error.type}: {error.message}" if error.message else error.type
            found.append(f"compiled model failed during {error.phase}: {what}")
        if self.outputs_match is False:
            found.append(f"compiled outputs differ from eager: {_mismatch(self.info.correctness)}")
        return found + ort_problems(self.info)

    def load_eager(self) -> Trace:
        """Parse the eager trace (see :func:`traceviz.load`)."""
        return self._load(self.eager_trace, "eager")

    def load_compiled(self) -> Trace:
        """Parse the compiled trace (see :func:`traceviz.load`)."""
        return self._load(self.compiled_trace, "compiled")

    def _load(self, path: Path | None, label: str) -> Trace:
        from traceviz.parse import load_trace  # pandas only when a trace is read

        if path is None:
            raise TraceFormatError(self.directory, f"this run has no {label} trace")
        return load_trace(path)

    def __repr__(self) -> str:
        speedup = f"{self.speedup:.2f}x" if self.speedup is not None else "n/a"
        return (
            f"Run({str(self.directory)!r}, model={self.name!r}, device="
            f"{self.info.environment.device!r}, speedup={speedup}, ok={self.ok})"
        )


def ort_problems(info: RunInfo) -> list[str]:
    """One sentence per ONNX Runtime failure in run.json (``backends.onnxruntime``): the export,
    each level that errored, whose outputs differ from eager's, or that the reference
    evaluator disagrees with. Empty without the backend."""
    ort = info.backends.onnxruntime
    if ort is None:
        return []
    found = []
    if ort.export.error is not None:
        found.append(f"ONNX export failed: {ort.export.error}")
    for level in ort.levels:
        where = f"ONNX Runtime level {level.name}"
        if level.error is not None:
            found.append(f"{where} failed: {level.error}")
        check = level.check
        if check is None:
            continue
        if check.passed is False:
            found.append(f"{where}: outputs differ from eager{_check_text(check)}")
        elif check.reference is not None and check.reference.passed is False:
            found.append(
                f"{where}: the reference evaluator (onnx.reference) disagrees with eager "
                f"(max abs diff {check.reference.max_abs_diff:.3g}) although ORT's outputs match"
                if check.reference.max_abs_diff is not None
                else f"{where}: the reference evaluator (onnx.reference) disagrees with eager"
            )
    return found


def _mismatch(c: Correctness) -> str:
    """The figures of a failed output check, or why there are none (structures differ)."""
    if c.max_abs_error is None or c.max_rel_error is None:
        return c.note or "no figures were kept"
    return (
        f"max abs error {c.max_abs_error:.3g}, max rel error {c.max_rel_error:.3g} "
        f"({c.tolerance_text()}) in {', '.join(c.mismatched)}"
    )


def _check_text(check: LevelCheck) -> str:
    """A failed check's figures for a sentence (``": max abs diff 0.5 (rtol 0.001, atol
    0.0001); culprit com.microsoft:FastGelu node n: ..."``)."""
    text = ""
    if check.max_abs_diff is not None:
        text += f": max abs diff {check.max_abs_diff:.3g}"
        if check.rtol is not None and check.atol is not None:
            text += f" (rtol {check.rtol:g}, atol {check.atol:g})"
    culprit = check.culprit
    if culprit is not None:
        text += f"; culprit {culprit.op_type} node {culprit.node}: {culprit.error}"
    return text


def load_run(path: str | Path) -> Run:
    """Read a run directory (or its run.json) written by ``traceviz run``/``profile_model``.

    Raises :class:`~traceviz.errors.TraceFormatError` when there is no readable run.json.
    """
    target = Path(path)
    run_json = target if target.is_file() else target / RUN_JSON
    try:
        data = run_json.read_bytes()
    except OSError as err:
        reason = "no run.json: not a traceviz run directory" if not run_json.exists() else str(err)
        raise TraceFormatError(target, reason) from err
    return Run(directory=run_json.parent, info=decode(data, source=run_json))
