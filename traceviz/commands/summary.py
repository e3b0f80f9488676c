"""Summarise one trace: device, steps, kernels, launches, compiled regions, memory.

TRACE is a Chrome/Kineto trace (.json, .json.gz), an ONNX Runtime profile (written with
SessionOptions.enable_profiling: its nodes are the kernels, each session.run a step; see
docs/onnxruntime-profile.md) or a cache directory written by Trace.save. The JSON form is
documented in docs/summary-json.md. A short roofline follows the tables: the device peaks
used (the peak table's row for the trace's device, the CPU peaks its run measured when the
trace lies in a run directory whose run.json has them, or --peaks FILE's figures), device time
per bound, and the top kernels' TB/s, TFLOP/s and % of roof (docs/roofline.md).

With --ranks, TRACE is a ranks dataset made by `traceviz ingest`: one job's ranks —
stragglers, waiting inside collectives, step and kernel spread, failed ranks, findings
(text, json or markdown; the JSON form is documented in docs/ranks.md). Reading a dataset
needs pyarrow, the ranks extra: pip install 'traceviz[ranks]'.

examples:
  traceviz summary eager.pt.trace.json.gz
  traceviz summary trace.json.gz --format json --top 5 > summary.json
  traceviz summary onnxruntime_profile_2026-11-30_16-16-16.json
  traceviz summary compiled.pt.trace.json.gz --peaks my-gpu.json  # your own peaks
  traceviz summary ranks-dataset/ --ranks --format json > ranks.json
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

import traceviz
from traceviz.commands import output_cache
from traceviz.commands.collector import collector_off
from traceviz.commands.compare import add_peaks_argument, read_peaks
from traceviz.report.formats import SUMMARY, names, renderer

if TYPE_CHECKING:
    from traceviz.runs.runinfo import HostPeaks

RANKS_FORMATS = ("text", "json", "markdown")  # traceviz.ranks.render.FORMATS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "trace",
        help="trace file (.json / .json.gz, Kineto or ONNX Runtime) or trace cache directory",
    )
    parser.add_argument(
        "--format",
        choices=sorted({*names(SUMMARY), *RANKS_FORMATS}),
        default="text",
        help="output format (markdown: with --ranks)",
    )
    parser.add_argument("--top", type=int, default=10, metavar="N", help="kernels to list (10)")
    add_peaks_argument(parser)
    parser.add_argument(
        "--ranks",
        action="store_true",
        help="TRACE is a ranks dataset (traceviz ingest): summarise the job across its ranks "
        "(--top: ranks listed)",
    )


def run(args: argparse.Namespace) -> int:
    if getattr(args, "ranks", False):
        if args.peaks is not None:
            raise traceviz.UsageError("--peaks is for one trace's roofline, not --ranks")
        from traceviz.commands import ranks

        return ranks.summary(args)
    if args.format not in names(SUMMARY):
        raise traceviz.UsageError(
            f"--format {args.format} is for --ranks; a trace's summary renders "
            + ", ".join(names(SUMMARY))
        )
    if args.top < 0:
        raise traceviz.UsageError("--top must be 0 or more")
    peaks = read_peaks(args)  # a bad --peaks file fails before any work
    # An unchanged trace with the same options: the stored output, without pandas (not with
    # --peaks: the entry's key does not hold the file)
    entry = output_cache.summary_entry(args) if peaks is None else None
    if entry is not None and (hit := entry.read()) is not None:
        output_cache.write(hit, None)
        return 0
    with collector_off():  # heavy (pandas, the analyses): made after the collector's freeze
        from traceviz.analysis.roofline.per_kernel import trace_roofline
        from traceviz.analysis.summary import summarize
        from traceviz.diagnose import diagnose_trace
        from traceviz.parse import load_trace  # noqa: F401  (traceviz.load's parser, imported here)

    trace = traceviz.load(args.trace)
    summary = summarize(trace, top=args.top)
    host = None if peaks is not None else host_peaks_beside(args.trace)  # --peaks wins
    roofline = trace_roofline(trace, override=peaks, host=host)
    rendered = renderer(args.format).summary(summary, diagnose_trace(trace), roofline)
    output_cache.emit_cached(rendered, None, entry)
    return 0


def host_peaks_beside(trace: str) -> HostPeaks | None:
    """The CPU peaks measured by the run whose directory holds ``trace`` (run.json
    ``host_peaks``), or None: not in a run directory, or a run that measured none. A run.json
    that is not a valid traceviz run.json raises :class:`traceviz.TraceFormatError` naming it."""
    from traceviz.runs.runinfo import RUN_JSON, decode

    run_json = Path(trace).parent / RUN_JSON
    if not run_json.is_file():
        return None
    return decode(run_json.read_bytes(), source=run_json).host_peaks
