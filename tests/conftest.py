"""Shared fixtures: the real-trace corpus beside the repo, and tiny hand-made traces.

The corpus (real GPU traces, not part of the repo) is found at ``$TRACEVIZ_CORPUS``, else at
``../shared/corpus`` beside the checkout; the tests that need it skip, saying where they looked,
when it is absent. :func:`load_trace` parses each real trace once per test session.
"""

from __future__ import annotations

import atexit
import gzip
import json
import os
import shutil
import tempfile
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from traceviz.trace import Trace

REPO = Path(__file__).resolve().parents[1]
CORPUS_ENV = "TRACEVIZ_CORPUS"
CORPUS = Path(os.environ.get(CORPUS_ENV) or REPO.parent / "shared" / "corpus").expanduser()
SAMPLES = REPO / "sample_traces"

# An independent, plain count of a trace's JSON (the corpus MANIFEST's rules), for tests that
# check traceviz's figures against it.
KERNEL_CATS = {"kernel", "Kernel"}
MEMCPY_CATS = {"gpu_memcpy", "Memcpy"}
LAUNCH_NAMES = {
    "cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx",
    "cudaLaunchCooperativeKernel", "cudaGraphLaunch", "hipLaunchKernel", "hipModuleLaunchKernel",
    "hipExtModuleLaunchKernel", "hipExtLaunchKernel", "hipGraphLaunch",
}  # fmt: skip


@cache
def load_trace(path: Path) -> Trace:
    """``traceviz.load(path)``, parsed once per test session and shared: for the real traces
    (corpus, sample runs) that many tests read. Analyses are pure, so sharing is safe; a test
    that changes a trace's tables must load its own copy with ``traceviz.load``."""
    import traceviz

    return traceviz.load(path)


# traceviz.load's automatic parse cache writes into this session's temporary directory, never
# into the user's home; set on import, before any test module loads a trace (subprocesses
# inherit it), and removed at exit.
os.environ.pop("TRACEVIZ_NO_CACHE", None)
os.environ["TRACEVIZ_CACHE_DIR"] = tempfile.mkdtemp(prefix="traceviz-test-parse-cache-")
atexit.register(shutil.rmtree, os.environ["TRACEVIZ_CACHE_DIR"], ignore_errors=True)


@pytest.fixture(scope="session")
def corpus_trace():  # type: ignore[no-untyped-def]
    """Fixture form of :func:`load_trace`: ``corpus_trace(path)`` -> the shared parsed Trace."""
    return load_trace


def corpus_files() -> list[Path]:
    """Every trace in the corpus folder (empty when the folder is absent)."""
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.rglob("*") if p.name.endswith((".json", ".json.gz")))


def corpus_params() -> list[Any]:
    files = corpus_files()
    if not files:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"corpus not found at {CORPUS}"))]
    return [pytest.param(p, id=str(p.relative_to(CORPUS))) for p in files]


def read_json(path: Path) -> Any:
    """A trace file's JSON, the plain way (for independent counts in tests); a fresh copy on
    every call (some tests edit it)."""
    opener = gzip.open if path.read_bytes()[:2] == b"\x1f\x8b" else open
    with opener(path, "rt") as handle:  # type: ignore[operator]
        return json.load(handle)


def write_trace(path: Path, events: list[dict[str, Any]], **header: Any) -> Path:
    """Write a tiny trace document with ``events`` (and optional top-level keys)."""
    doc = {"schemaVersion": 1, **header, "traceEvents": events}
    path.write_text(json.dumps(doc))
    return path


def op(name: str, ts: float, dur: float, *, tid: int = 1, cat: str = "cpu_op", **args: Any) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur,
            "args": args}  # fmt: skip


def launch(
    name: str, ts: float, dur: float, correlation: int, *, tid: int = 1, **args: Any
) -> dict:
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 1, "tid": tid, "ts": ts,
            "dur": dur, "args": {"correlation": correlation, **args}}  # fmt: skip


def kernel(
    name: str, ts: float, dur: float, correlation: int, *, cat: str = "kernel", **args: Any
) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
            "args": {"device": 0, "stream": 7, "correlation": correlation, **args}}  # fmt: skip


@pytest.fixture
def tmp_trace(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Factory: ``tmp_trace(events, **header)`` writes a trace and returns its path."""
    counter = iter(range(1_000_000))

    def make(events: list[dict[str, Any]], **header: Any) -> Path:
        return write_trace(tmp_path / f"trace{next(counter)}.json", events, **header)

    return make


def tensors(*shapes: list[int]) -> dict[str, Any]:
    """``Input Dims``/``Input type`` op args of float tensors (an empty shape is a Scalar)."""
    return {"Input Dims": list(shapes), "Input type": ["float" if s else "Scalar" for s in shapes]}


def launched(
    name: str, ts: float, dur: float, ext: int, *, kernel_name: str = "", **op_args: Any
) -> list[dict]:
    """A CPU op launching one GPU kernel (``k_<ext>`` unless named), correlation and External
    id ``ext``, the kernel ``dur`` µs long."""
    ids = {"External id": ext}
    return [
        op(name, ts, 10, **ids, **op_args),
        launch("cudaLaunchKernel", ts + 1, 2, ext, **ids),
        kernel(kernel_name or f"k_{ext}", ts + 20, dur, ext, **ids),
    ]


def corpus_or_skip(relative: str) -> Trace:
    """The corpus trace at ``relative`` (parsed once), or a skip when it is absent."""
    path = CORPUS / relative
    if not path.is_file():
        pytest.skip(f"corpus trace {relative} not found under {CORPUS}")
    return load_trace(path)
