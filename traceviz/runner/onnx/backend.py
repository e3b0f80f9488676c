"""The runner's ONNX Runtime stage: export, every level, checks, profiles, latency.

Called by :mod:`traceviz.runner.profile` after the eager and compiled variants, with grad mode
already set. Writes ``onnx/`` in the run directory (``model.onnx``, ``ort_<level>.onnx``,
``ort_<level>.profile.json``) and returns run.json's ``backends`` and ``latency`` sections.
A failing export or level is recorded (``error``), never raised.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import torch

from traceviz.runner.models import one_line
from traceviz.runner.onnx import check, isolate, latency, sessions
from traceviz.runner.onnx.export import Exported, export_model
from traceviz.runner.onnx.extra import require
from traceviz.runner.progress import Reporter
from traceviz.runs.runinfo_backends import (
    ONNX_DIR,
    Backends,
    Latency,
    LevelCheck,
    OnnxRuntimeInfo,
    OrtLevel,
)


@dataclass(frozen=True)
class OrtJob:
    """What the ORT stage needs from the runner."""

    fn: Any  # the model, placed and in eval mode
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    eager_outputs: Any  # the reference for every check
    calls: dict[str, Callable[[], Any]]  # "eager" (and "compile") → one step, for latency
    sync: Callable[[], None]
    device_type: str
    warmup: int
    steps: int
    iters: int
    offline: str | None = None  # "transformers:<model_type>"


@dataclass(frozen=True)
class _Level:
    row: OrtLevel
    session: Any = None  # the timed session, for the latency rounds


def run_onnxruntime(job: OrtJob, directory: Path, reporter: Reporter) -> tuple[Backends, Latency]:
    """Export ``job.fn``, run it under every ORT level, time all backends round-robin."""
    ort = require("onnxruntime")
    require("onnx")
    out = directory / ONNX_DIR
    shutil.rmtree(out, ignore_errors=True)
    reporter.phase("onnx: export")
    exported = export_model(job.fn, job.args, job.kwargs, directory)
    threads = torch.get_num_threads()
    provider_list = sessions.providers(job.device_type)
    eager = check.eager_tensors(job.eager_outputs)
    levels: list[_Level] = []
    if exported.path is not None:
        offline = (
            [] if job.offline is None else [sessions.OFFLINE_PREFIX + job.offline.split(":", 1)[1]]
        )
        for name in sessions.levels() + offline:
            reporter.phase(f"onnxruntime: {name}", job.warmup + job.steps)
            level = _run_level(name, exported, job, eager, threads, provider_list, out)
            levels.append(level)
            reporter.advance(job.warmup + job.steps)
    calls = dict(job.calls)
    for level in levels:
        if level.session is not None:
            calls[f"onnxruntime:{level.row.name}"] = partial(
                level.session.run, None, exported.feeds
            )
    reporter.phase("latency: round-robin", job.iters)
    timed = latency.round_robin(
        calls, rounds=job.iters, warmup=job.warmup, threads=threads, sync=job.sync,
        reporter=reporter,
    )  # fmt: skip
    info = OnnxRuntimeInfo(
        export=exported.info,
        ort_version=str(ort.__version__),
        providers=provider_list,
        threads=threads,
        levels=[level.row for level in levels],
    )
    return Backends(onnxruntime=info), timed


def _run_level(
    name: str,
    exported: Exported,
    job: OrtJob,
    eager: list[torch.Tensor],
    threads: int,
    provider_list: list[str],
    out: Path,
) -> _Level:
    """One level: the timed session (writing the optimized graph), the output checks, the
    culprit of a failing check, the profiled session. An error ends the level's row there."""
    assert exported.path is not None
    graph = out / f"ort_{name}.onnx"
    profile = out / f"ort_{name}.profile.json"
    row: dict[str, Any] = {"name": name}
    try:
        with tempfile.TemporaryDirectory(prefix="traceviz-ort-") as tmp:
            source = exported.path
            if name.startswith(sessions.OFFLINE_PREFIX):
                source = Path(tmp) / "offline.onnx"
                sessions.offline_optimize(
                    name.removeprefix(sessions.OFFLINE_PREFIX), exported.path, source
                )
            session, seconds = sessions.timed_session(source, name, threads, provider_list, graph)
            row.update(
                graph=_rel(graph, out), session_seconds=seconds, nodes=sessions.node_count(graph)
            )
            outputs = session.run(None, exported.feeds)
            row["check"] = _checked(exported, graph, outputs, eager)
            sessions.profile_steps(
                source, name, threads, provider_list, exported.feeds,
                warmup=job.warmup, steps=job.steps, dest=profile,
            )  # fmt: skip
            row["profile"] = _rel(profile, out)
    except Exception as err:
        return _Level(OrtLevel(**row, error=one_line(err)))
    return _Level(OrtLevel(**row), session)


def _checked(
    exported: Exported, graph: Path, outputs: list[np.ndarray], eager: list[torch.Tensor]
) -> LevelCheck:
    """The output check, the reference evaluator's, and the culprit when the check failed."""
    assert exported.path is not None
    found = check.level_check(eager, outputs)
    reference = check.reference_check(graph, exported.feeds, eager)
    culprit = None
    if found.passed is False:
        try:
            culprit = isolate.find_culprit_in_files(exported.path, graph, exported.feeds)
        except Exception:  # isolation is a diagnosis aid: the check's verdict stands without it
            culprit = None
    return msgspec.structs.replace(found, reference=reference, culprit=culprit)


def _rel(path: Path, out: Path) -> str:
    """``onnx/<file>``: a path relative to the run directory."""
    return f"{out.name}/{path.name}"
