"""Export both traces of a comparison as one annotated trace for ui.perfetto.dev.

The file is a Chrome trace: chrome://tracing opens it too.

A and B are two trace files (.json / .json.gz), or A alone is a run directory made by
`traceviz run`; the comparison is built exactly as `traceviz compare` builds it. The file holds
both sides as separate processes aligned per profiler step, every input event once, and
traceviz's analysis on top: each compiled kernel's args.traceviz lists the eager ops, kernels
and source lines credited to it and its estimated bytes saved; every kernel of both sides
carries its own roofline figures (args.traceviz.roofline: FLOPs, bytes, TB/s, TFLOP/s, % of
roof, bound); flow arrows link each eager kernel to the compiled kernel it was fused into;
a "traceviz" process marks blocking calls and graph-break gaps and holds the findings as
instants. docs/perfetto-export.md describes it.

-o names the output: FILE.json, FILE.json.gz (gzipped), or - for stdout.
Exit status: 0; 2 for bad input (an unwritable or wrongly named -o included).

examples:
  traceviz export runs/pointwise --perfetto -o pointwise.json.gz
  traceviz export eager.json.gz compiled.json.gz --perfetto -o annotated.json.gz
  traceviz export a100.json.gz mi300x.json.gz --perfetto --force -o odd-pair.json
  traceviz export runs/mlp --perfetto -o - | gzip > mlp.json.gz
"""

from __future__ import annotations

import argparse
from pathlib import Path

from traceviz.commands.compare import add_pair_arguments
from traceviz.errors import UsageError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_pair_arguments(
        parser, force_help="overlay the fusion map even when A and B do not look like one workload"
    )
    parser.add_argument(
        "--perfetto",
        action="store_true",
        help="write the annotated Chrome trace (Perfetto / chrome://tracing); the only format",
    )
    parser.add_argument(
        "-o", "--output", metavar="FILE", help="FILE.json, FILE.json.gz, or - for stdout"
    )


def run(args: argparse.Namespace) -> int:
    if not args.perfetto:
        raise UsageError("choose the export format: --perfetto")
    if not args.output:
        raise UsageError("give the output file: -o FILE.json, -o FILE.json.gz or -o -")
    if args.output != "-":  # before any work: writable, and named .json or .json.gz
        from traceviz.commands.output import check_output

        check_output(args.output)
        if not args.output.endswith((".json", ".json.gz")):
            raise UsageError(
                f"-o {args.output}: the name must end in .json or .json.gz (or be - for stdout)"
            )
    from traceviz.commands import compare
    from traceviz.report.perfetto import perfetto_trace, write_perfetto

    comparison = compare.build(argparse.Namespace(**vars(args), top=0))
    if args.output != "-":  # never over one of the traces being exported
        target = Path(args.output).resolve()
        for side in (comparison.a, comparison.b):
            if Path(side.trace.meta.source).resolve() == target:
                raise UsageError(f"-o {args.output}: is an input trace; give another file name")
    write_perfetto(perfetto_trace(comparison), args.output)
    return 0
