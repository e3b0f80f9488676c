"""Summarise one trace: device, steps, kernels, launches, compiled regions, memory.

TRACE is a Chrome/Kineto trace (.json, .json.gz) or a cache directory written by
Trace.save. The JSON form is documented in docs/summary-json.md.

examples:
  traceviz summary eager.pt.trace.json.gz
  traceviz summary trace.json.gz --format json --top 5 > summary.json
"""

from __future__ import annotations

import argparse

import traceviz
from traceviz.analysis.summary import summarize
from traceviz.commands.output import emit
from traceviz.diagnose import diagnose_trace
from traceviz.report.formats import SUMMARY, names, renderer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", help="trace file (.json / .json.gz) or trace cache directory")
    parser.add_argument("--format", choices=names(SUMMARY), default="text", help="output format")
    parser.add_argument("--top", type=int, default=10, metavar="N", help="kernels to list (10)")


def run(args: argparse.Namespace) -> int:
    if args.top < 0:
        raise traceviz.UsageError("--top must be 0 or more")
    trace = traceviz.load(args.trace)
    summary = summarize(trace, top=args.top)
    emit(renderer(args.format).summary(summary, diagnose_trace(trace)), None)
    return 0
