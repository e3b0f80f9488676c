"""Summarise one trace: device, steps, kernels, launches, compiled regions, memory.

TRACE is a Chrome/Kineto trace (.json, .json.gz) or a cache directory written by
Trace.save. The JSON form is documented in docs/summary-json.md.

examples:
  traceviz summary eager.pt.trace.json.gz
  traceviz summary trace.json.gz --format json --top 5 > summary.json
"""

from __future__ import annotations

import argparse
import json
import sys

import traceviz
from traceviz.analysis.summary import summarize
from traceviz.commands.output import console as make_console
from traceviz.diagnose import diagnose_trace
from traceviz.report.json_numbers import whole_counts
from traceviz.report.text import render_findings, render_summary


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", help="trace file (.json / .json.gz) or trace cache directory")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    parser.add_argument("--top", type=int, default=10, metavar="N", help="kernels to list (10)")


def run(args: argparse.Namespace) -> int:
    if args.top < 0:
        raise traceviz.UsageError("--top must be 0 or more")
    trace = traceviz.load(args.trace)
    summary = summarize(trace, top=args.top)
    findings = diagnose_trace(trace)
    if args.format == "json":
        data = whole_counts({**summary.to_json(), "findings": [f.to_json() for f in findings]})
        json.dump(data, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        console = make_console()
        render_summary(summary, console)
        render_findings(findings, console)
    return 0
