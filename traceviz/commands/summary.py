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

from rich.console import Console

import traceviz
from traceviz.analysis.summary import summarize
from traceviz.report.text import render_summary


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", help="trace file (.json / .json.gz) or trace cache directory")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    parser.add_argument("--top", type=int, default=10, metavar="N", help="kernels to list (10)")


def run(args: argparse.Namespace) -> int:
    if args.top < 0:
        raise traceviz.UsageError("--top must be 0 or more")
    summary = summarize(traceviz.load(args.trace), top=args.top)
    if args.format == "json":
        json.dump(summary.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        render_summary(summary, Console())
    return 0
