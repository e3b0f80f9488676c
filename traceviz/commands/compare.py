"""Compare two traces or a run directory side by side, then the findings.

Kernels, launch overhead, memory traffic, compiled regions, and which eager ops were fused
into which compiled kernel.

A and B are two trace files (.json / .json.gz, or trace cache directories), or A alone is a
run directory made by `traceviz run` (eager vs compiled, with run.json's timings and Dynamo
facts). Findings (the diagnosis: what slows the compiled model, with evidence and next steps)
come last, most severe first. The JSON form is documented in docs/compare-json.md.

With --ranks, A and B are ranks datasets made by `traceviz ingest` (e.g. the eager and the
compiled run of one job): per-rank kernel counts and speedups, ranks whose compiled regions,
graph breaks or recompiles differ from the others, each side's stragglers (text, json or
markdown; the JSON form is documented in docs/ranks.md). Datasets need pyarrow, the ranks
extra: pip install 'traceviz[ranks]'. --format html needs plotly, the dashboard extra.

Exit status: 0; 1 with --fail-on when a finding of that severity or worse exists (the report is
printed first); 2 for bad input (an unwritable -o included); 141, quietly, when the reader of
the output closes the pipe early (`| head`).

examples:
  traceviz compare runs/pointwise
  traceviz compare eager.json.gz compiled.json.gz --names eager compiled
  traceviz compare before.json.gz after.json.gz -o report.html   # format by suffix
  traceviz compare runs/mlp --format json --top 50 > mlp.json
  traceviz compare runs/mlp --fail-on error     # exit 1 when a finding is an error
  traceviz compare eager.json.gz compiled.json.gz --compile-log /tmp/torch_trace  # TORCH_TRACE
  traceviz compare a100.json.gz mi300x.json.gz --force   # fusion figures for an odd pair
  traceviz compare eager-ranks/ compiled-ranks/ --ranks --names eager compiled
  traceviz compare runs/mlp --no-cache          # parse and analyse again, keep nothing
  traceviz compare runs/mlp --cache-dir /tmp/traceviz-cache
  traceviz compare runs/mlp --peaks my-gpu.json  # roofline against your own peaks
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING

import traceviz
from traceviz import report_cache
from traceviz.commands import output_cache
from traceviz.commands.collector import collector_off
from traceviz.commands.output import check_output, output_format
from traceviz.report.formats import COMPARISON, names, renderer

if TYPE_CHECKING:
    from traceviz.analysis.roofline.peaks import DevicePeaks
    from traceviz.pipeline import Report

FORMATS = names(COMPARISON)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_pair_arguments(
        parser,
        force_help="compute the fusion figures even when A and B do not look like one workload "
        "eager vs compiled (the finding traces-not-comparable still says so)",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        help="output format (default: by -o FILE's suffix, .html/.md/.json; else text)",
    )
    parser.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    parser.add_argument("--top", type=int, default=10, metavar="N", help="rows in long tables (10)")
    parser.add_argument(
        "--fail-on",
        choices=("warning", "error"),
        help="exit 1 (after printing the report) when a finding of this severity or worse "
        "exists, to guard CI",
    )
    parser.add_argument(
        "--ranks",
        action="store_true",
        help="A and B are ranks datasets (traceviz ingest): compare the two runs rank by rank",
    )
    add_peaks_argument(parser)


def add_peaks_argument(parser: argparse.ArgumentParser) -> None:
    """``--peaks FILE`` (read by :func:`read_peaks`), shared with ``traceviz summary``."""
    parser.add_argument(
        "--peaks",
        metavar="FILE",
        help="device peaks for the roofline, JSON or TOML (hbm_tbps, fp32_tflops ... fp8_tflops; "
        "docs/roofline.md), instead of the table's row for the trace's device (or the CPU "
        "peaks a CPU run measured)",
    )


def add_pair_arguments(parser: argparse.ArgumentParser, *, force_help: str) -> None:
    """The inputs of a comparison, shared by every command that builds one with :func:`build`:
    A and B (or a run directory), --names, --compile-log and --force."""
    parser.add_argument("a", metavar="A", help="trace file, or a run directory")
    parser.add_argument("b", metavar="B", nargs="?", help="second trace file")
    parser.add_argument(
        "--names", nargs=2, metavar=("A_NAME", "B_NAME"), help="labels (default: eager compiled "
        "for a run directory, else the file names)"
    )  # fmt: skip
    parser.add_argument(
        "--compile-log",
        metavar="DIR",
        help="the compiled side's compile log: a TORCH_TRACE / tlparse log directory (or "
        "file); the fusion map then follows Inductor's provenance (basis `compiler`), which "
        "the log holds when compiled with torch._inductor.config.trace."
        "provenance_tracking_level=1 (else the finding compile-log-without-provenance). A run "
        "directory's own log is used without it",
    )
    parser.add_argument("--force", action="store_true", help=force_help)


def build(args: argparse.Namespace) -> Report:
    """The report the arguments ask for (:mod:`traceviz.pipeline` builds it)."""
    with collector_off():  # heavy (pandas, the analysis): made after the collector's freeze
        from traceviz.pipeline import open_report  # not needed by a cached output

    if args.top < 0:
        raise traceviz.UsageError("--top must be 0 or more")
    names = tuple(args.names) if args.names else None
    return open_report(args.a, args.b, names=names, compile_log=args.compile_log, force=args.force)


def run(args: argparse.Namespace) -> int:
    check_output(args.output)
    args.format = output_format(args.format, args.output, FORMATS)
    if getattr(args, "ranks", False):
        from traceviz.commands import ranks

        return ranks.compare(args)
    if args.format == "html":  # before any work: without plotly, a UsageError naming the extra
        from traceviz.report.formats import check_html_extra

        check_html_extra("--format html")
    # An unchanged input with the same options: the stored output, without pandas.
    peaks = read_peaks(args)  # a bad --peaks file fails before any work
    # (with --peaks: no stored output, its key does not hold the file)
    entry = output_cache.compare_entry(args) if args.top >= 0 and peaks is None else None
    if entry is not None and (hit := entry.read()) is not None:
        output_cache.write(hit, args.output)
        return output_cache.exit_code(hit.reached, args.fail_on)
    report = build(args)
    if peaks is not None:
        report = dataclasses.replace(report, peaks=peaks)
    reached = severities_reached(report)
    rendered = renderer(args.format).comparison(report, top=args.top)
    sources = report_cache.source_files(report)  # user files whose lines' text it shows
    output_cache.emit_cached(rendered, args.output, entry, reached, sources)
    return output_cache.exit_code(reached, args.fail_on)


def severities_reached(report: Report) -> tuple[str, ...]:
    """The ``--fail-on`` severities that a finding of the report reaches (or passes)."""
    from traceviz.diagnose import at_least

    return tuple(level for level in output_cache.SEVERITIES if at_least(report.findings, level))


def read_peaks(args: argparse.Namespace) -> DevicePeaks | None:
    """The ``--peaks`` file's figures (UsageError naming the file when it is bad), or None."""
    path = getattr(args, "peaks", None)
    if path is None:
        return None
    from traceviz.analysis.roofline.peaks import read_peaks_file

    return read_peaks_file(path)
