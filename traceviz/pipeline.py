"""The front door: any input becomes analysed sides, a comparison and its findings, one
:class:`~traceviz.report.bundle.Report`.

Inputs are trace paths, :class:`~traceviz.trace.Trace` objects, already analysed
:class:`~traceviz.analysis.compare.Side` values, a run directory (or a ``traceviz.Run``), a
ready comparison, plus a compile log and run.json facts. The stages, each one hand-off object::

    input --load--> Trace --analyze--> Side --compare_sides--> Comparison --diagnose--> Report

The CLI (``compare``, ``demo``), the dashboard, the widgets and the HTML report all get their
report here; renderers (:mod:`traceviz.report.formats`) take the report. ``load`` is the
parser by default; the dashboard passes its caching loader. The two sides of a pair of
files are loaded and analysed at once, side b on a worker thread (:func:`compare`); each
side's single-trace diagnosis rules run on the side's own thread as soon as it is analysed.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from traceviz import settings
from traceviz.analysis.backends import backends_view
from traceviz.analysis.compare import Comparison, Side, analyze
from traceviz.analysis.compare import compare_sides as compare_analysed
from traceviz.analysis.fusion.lines import read_log
from traceviz.concurrent_sides import side_by_side
from traceviz.diagnose import diagnose, diagnose_side, sort_findings
from traceviz.diagnose.backends import backend_findings
from traceviz.diagnose.rules.inductor_kernels import compile_log_without_provenance
from traceviz.errors import UsageError
from traceviz.parse import load_trace
from traceviz.report.bundle import Report
from traceviz.report_cache import cached, pair_entry, run_entry
from traceviz.rundir import default_names, is_run_dir, read_run_dir
from traceviz.runs.runinfo import DynamoFacts, RunInfo, run_info_of
from traceviz.trace import Trace

__all__ = ["Report", "compare", "compare_run", "compare_sides", "open_report", "report_of"]

#: Turns a trace path into a Trace (the parser, or a caching wrapper around it).
Loader = Callable[[Path], Trace]
#: One side of a pair as a caller may hold it.
SideInput = Trace | Side | str | Path

RUN_NAMES = ("eager", "compiled")
WORKER = "traceviz-side-b"
#: ``TRACEVIZ_CONCURRENT=0``: the two sides one after the other, on the calling thread
#: the sides run at once only when a file to load holds at least this many bytes of JSON
#: (below, a thread costs more than the little that overlaps)...
OVERLAP_MIN_BYTES = 16 * 2**20
#: ... and a's JSON with b's (or the lines trace's) at most this many: two loads at once hold
#: both files' bytes at once (the 1M-event pair: peak RSS 489 -> 743 MiB)
OVERLAP_MAX_BYTES = 2 * 2**30


def _parse(path: Path) -> Trace:
    return load_trace(path)


def report_of(comparison: Comparison) -> Report:
    """The comparison with its findings (every diagnosis rule run once)."""
    if isinstance(comparison, Report):
        return comparison
    return Report.of(comparison, diagnose(comparison))


def compare_sides(
    a: Side,
    b: Side,
    *,
    run_info: RunInfo | dict[str, Any] | None = None,
    compile_log: Any = None,
    force: bool = False,
    eager_lines: Trace | None = None,
) -> Report:
    """Compare two analysed sides and diagnose the pair (analyse each trace once for many
    pairs). ``run_info``, ``compile_log`` and ``eager_lines`` as in :func:`compare`."""
    log = read_log(compile_log)
    info = run_info_of(run_info)
    report = report_of(
        compare_analysed(a, b, run_info=info, compile_log=log, force=force, eager_lines=eager_lines)
    )
    unused = compile_log_without_provenance(log, b.name)  # never silently a name-match
    if not unused:
        return report
    return dataclasses.replace(report, findings=sort_findings([*report.findings, *unused]))


def compare(
    a: SideInput | Any,
    b: SideInput | None = None,
    *,
    names: Sequence[str] | None = None,
    run_info: RunInfo | dict[str, Any] | None = None,
    compile_log: Any = None,
    force: bool = False,
    load: Loader = _parse,
    eager_lines: Trace | str | Path | None = None,
) -> Report:
    """Compare two traces (paths, Trace objects or analysed sides) into a report; or, with
    ``a`` alone, a run directory made by ``traceviz run`` (a path or a ``traceviz.Run``:
    :func:`compare_run`, labels ``eager``/``compiled``, its run.json and compile log), or a
    ready comparison (its report: :func:`report_of`). The one front door: every front end's
    report is made here (:func:`open_report` only labels two files by their names).

    ``names`` labels the two sides (default ``("a", "b")`` for two traces).
    ``run_info`` is a runner's run.json (a :class:`RunInfo`, or its dict, validated: a bad
    one raises TraceFormatError), if any; ``compile_log`` the compiled side's
    compile log (a run directory's log file or a TORCH_TRACE directory, or a read log) for a
    fusion map on the compiler's record; ``force`` computes the fusion figures even when the
    traces are not the same workload. A side given as a :class:`Side` is not analysed again
    (it is relabelled when ``names`` say so). ``eager_lines`` is a's lines trace (a run's
    eager steps profiled again under the line marks; a path or Trace): a's kernels take their
    source lines from their twins there; without it, from a's own marks or frames.

    Paths given with the default loader go through the report cache
    (:mod:`traceviz.report_cache`): an unchanged pair is read back, not compared again.

    When a file is to be loaded (one of :data:`OVERLAP_MIN_BYTES` of JSON or more, while
    the two files together stay under :data:`OVERLAP_MAX_BYTES`) and neither side is
    analysed yet, side b (its load, its analysis, its single-trace rules) and then the lines
    trace run on a worker thread while the calling thread does side a, so ``load`` must be safe to
    call from two threads (the parser and the dashboard's cache are). The report is the same
    as one side after the other (``TRACEVIZ_CONCURRENT=0``); the errors too: a's first, else
    b's, else the lines trace's. On Ctrl-C the calling thread stops at once and the worker
    finishes in the background (:mod:`traceviz.concurrent_sides`).
    """
    if b is None:
        return _compare_one(a, names=names, run_info=run_info, compile_log=compile_log,
                            force=force, load=load, eager_lines=eager_lines)  # fmt: skip
    names = ("a", "b") if names is None else tuple(names)
    if len(names) != 2 or not all(isinstance(n, str) and n for n in names):
        raise UsageError("names must be two non-empty labels")
    entry = None
    if load is _parse:
        entry = pair_entry(a, b, names=names, run_info=run_info, compile_log=compile_log,
                           force=force, eager_lines=eager_lines)  # fmt: skip
    return cached(entry, lambda: _compare(a, b, names=names, run_info=run_info,
                                          compile_log=compile_log, force=force, load=load,
                                          eager_lines=eager_lines))  # fmt: skip


def _compare_one(
    a: Any,
    *,
    names: Sequence[str] | None,
    run_info: RunInfo | dict[str, Any] | None,
    compile_log: Any,
    force: bool,
    load: Loader,
    eager_lines: Trace | str | Path | None,
) -> Report:
    """:func:`compare` given one input: a comparison (its report), or a run directory (or a
    ``traceviz.Run``), whose run.json and lines trace are its own; anything else is a
    UsageError saying what to give (for a path, :func:`compare_run`'s)."""
    if isinstance(a, Comparison):
        return report_of(a)
    directory = getattr(a, "directory", a)  # a traceviz.Run, or a run directory path
    if not isinstance(directory, str | os.PathLike):
        raise UsageError(
            f"traceviz.compare({a!r}): give two traces, compare(eager, compiled), or a run "
            "directory made by `traceviz run`, compare(RUN_DIR)"
        )
    if (run_info is not None or eager_lines is not None) and is_run_dir(Path(directory)):
        raise UsageError(
            f"{directory}: a run directory brings its own run.json and lines trace; "
            "run_info= and eager_lines= are for two traces"
        )
    return compare_run(
        Path(directory), names=names, compile_log=compile_log, force=force, load=load
    )


def _compare(
    a: SideInput,
    b: SideInput,
    *,
    names: Sequence[str],
    run_info: RunInfo | dict[str, Any] | None,
    compile_log: Any,
    force: bool,
    load: Loader,
    eager_lines: Trace | str | Path | None,
) -> Report:
    info = run_info_of(run_info)
    dynamo = info.dynamo if info is not None else None
    log = read_log(compile_log)

    def side_a() -> Side:
        return _side(a, names[0], load, which="a", run_info=info)

    def side_b_then_lines() -> tuple[Side, Trace | None]:
        """Side b, then a's lines trace (loaded when given as a path)."""
        side = _side(b, names[1], load, which="b", run_info=info, dynamo=dynamo, compile_log=log)
        if eager_lines is None or isinstance(eager_lines, Trace):
            return side, eager_lines
        return side, load(Path(eager_lines))

    # with the overlap, b and then the lines trace on a worker thread while this thread does
    # a (side_by_side: a's error first, then b's, then the lines'; the same results)
    if _overlap(a, b, eager_lines):
        side_a_done, (side_b, lines) = side_by_side(side_a, side_b_then_lines, name=WORKER)
    else:
        side_a_done = side_a()
        side_b, lines = side_b_then_lines()
    return compare_sides(
        side_a_done, side_b, run_info=info, compile_log=log, force=force, eager_lines=lines
    )


def _overlap(a: SideInput, b: SideInput, eager_lines: Trace | str | Path | None) -> bool:
    """Whether side b's work runs on a worker beside side a's: both are still to analyse
    (an analysed side is done) and a file to load holds :data:`OVERLAP_MIN_BYTES` of JSON or
    more (what overlaps is mostly the loads: reading, inflating, the native scan release the
    GIL; analyses take turns), but not so much that two at once would hold more than
    :data:`OVERLAP_MAX_BYTES`. Not when a's file cannot be read (it fails at once, as one
    after the other, and b's load would run on in the background for nothing). Never for
    one input twice (a loader may hand back one Trace object for both; one object is not
    analysed from two threads), nor on one CPU, nor with ``TRACEVIZ_CONCURRENT=0``."""
    if isinstance(a, Side) or isinstance(b, Side):
        return False
    if not settings.current().concurrent or _cpus() < 2:
        return False
    if all(v is None or isinstance(v, Trace) for v in (a, b, eager_lines)):
        return False  # nothing to load
    json_a, json_b, json_lines = (_json_bytes(v) for v in (a, b, eager_lines))
    if json_a == 0 and not isinstance(a, Trace):
        return False  # a missing, unreadable or empty: its error comes at once, b's work wasted
    if max(json_a, json_b, json_lines) < OVERLAP_MIN_BYTES:
        return False
    if json_a + max(json_b, json_lines) > OVERLAP_MAX_BYTES:
        return False
    return not _same_input(a, b)


def _cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def _json_bytes(value: SideInput | None) -> int:
    """About how many bytes of JSON loading ``value`` reads: a file's size, a gzip file's
    inflated size (:func:`traceviz.gzip_size.inflated_size`: its trailer checked against its
    head, right past 4 GiB and for several members); a directory (a saved trace: no JSON,
    yet worth a thread) :data:`OVERLAP_MIN_BYTES`; a loaded trace or a file that cannot be
    read 0."""
    from traceviz.gzip_size import inflated_size

    if value is None or isinstance(value, Trace | Side):
        return 0
    try:
        if os.path.isdir(value):
            return OVERLAP_MIN_BYTES
        with open(value, "rb") as handle:
            inflated = inflated_size(handle)
            return os.fstat(handle.fileno()).st_size if inflated is None else inflated
    except (OSError, ValueError):
        return 0


def _same_input(a: Trace | str | Path, b: Trace | str | Path) -> bool:
    """``a`` and ``b`` are one Trace object or two spellings of one file."""
    if isinstance(a, Trace) or isinstance(b, Trace):
        return a is b
    try:
        return Path(a).resolve() == Path(b).resolve()
    except (OSError, RuntimeError):
        return str(a) == str(b)


def _side(
    value: SideInput,
    name: str,
    load: Loader,
    *,
    which: str,
    run_info: RunInfo | None,
    dynamo: DynamoFacts | None = None,
    compile_log: Any = None,
) -> Side:
    """Side ``which`` of the pair to come (loaded, analysed, labelled ``name``) with its share
    of the diagnosis done (:func:`~traceviz.diagnose.diagnose_side`: its single-trace rules in
    its role, kept with the side for :func:`report_of`), on the calling thread: with the
    sides at once, side b's share runs beside side a's analysis, not after both."""
    if isinstance(value, Side):
        side = value if value.name == name else dataclasses.replace(value, name=name)
    else:
        trace = value if isinstance(value, Trace) else load(Path(value))
        side = analyze(trace, name=name, dynamo=dynamo, compile_log=compile_log)
    diagnose_side(side, which, run_info=run_info)
    return side


def compare_run(
    directory: str | Path,
    *,
    names: Sequence[str] | None = None,
    compile_log: Any = None,
    force: bool = False,
    load: Loader = _parse,
) -> Report:
    """The report of a run directory (``traceviz run``'s output): its eager vs its compiled
    trace, with run.json's timings and Dynamo facts and its own compile log unless
    ``compile_log`` names another; the eager kernels' source lines come from the run's lines
    trace when it has one (``RunDir.eager_lines``). Cached like :func:`compare`, keyed by
    every file of the directory."""
    path = Path(directory)
    if not is_run_dir(path):
        raise UsageError(f"{directory}: give two traces, or a run directory made by `traceviz run`")
    entry = None
    if load is _parse:
        entry = run_entry(path, names=names, compile_log=compile_log, force=force)
    return cached(entry, lambda: _compare_run(path, names, compile_log, force, load))


def _compare_run(
    path: Path, names: Sequence[str] | None, compile_log: Any, force: bool, load: Loader
) -> Report:
    run = read_run_dir(path)
    report = _compare(
        run.eager,
        run.compiled,
        names=tuple(names or RUN_NAMES),
        run_info=run.info,
        compile_log=compile_log or run.compile_log,
        force=force,
        load=load,
        eager_lines=run.eager_lines,
    )
    backends = backends_view(path, report)  # ONNX Runtime levels beside eager and compiled
    if backends is None:
        return report
    findings = sort_findings([*report.findings, *backend_findings(backends)])
    return dataclasses.replace(report, backends=backends, findings=findings)


def open_report(
    a: Any,
    b: SideInput | None = None,
    *,
    names: Sequence[str] | None = None,
    run_info: RunInfo | dict[str, Any] | None = None,
    compile_log: Any = None,
    force: bool = False,
    load: Loader = _parse,
) -> Report:
    """:func:`compare` for the front ends, whose two trace files are labelled by their file
    names (:func:`~traceviz.rundir.default_names`; ``a``/``b`` for objects) unless ``names``
    say otherwise."""
    paths = b is not None and not isinstance(a, Trace | Side) and not isinstance(b, Trace | Side)
    if names is None and paths:
        names = default_names(str(a), str(b))
    return compare(
        a, b, names=names, run_info=run_info, compile_log=compile_log, force=force, load=load
    )
