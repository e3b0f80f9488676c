"""The ``traceviz`` command: one thin module per subcommand in :mod:`traceviz.commands`.

Each command module exposes ``add_arguments(parser)`` and ``run(args) -> int``; its docstring
is its ``--help`` text. :data:`COMMANDS` names every subcommand with a one-sentence summary, so
``traceviz --help`` and ``traceviz --version`` import no command module (and so no pandas, rich
or torch): only the command being run is imported. Errors from the library
(:class:`~traceviz.errors.TraceVizError`) become one line on stderr and exit code 2; nothing the
user did wrong prints a traceback. When the reader of the output goes away
(``traceviz compare … | head -2``), the command stops quietly with exit code 141 (128 + SIGPIPE,
what a shell reports for a tool killed by a closed pipe): not 0, since the report was cut short,
and not 1, which ``--fail-on`` uses.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from traceviz._version import __version__
from traceviz.errors import TraceVizError, UsageError

if TYPE_CHECKING:
    from traceviz.settings import Settings


class Command(NamedTuple):
    """A subcommand: its module under :mod:`traceviz.commands`, the one-sentence summary that
    ``traceviz --help`` lists, whether it reads trace files (and so takes --max-bytes) and
    whether it reads them through the parse, report and output caches (and so takes
    --cache-dir and --no-cache; ``ingest`` keeps its own dataset instead).
    (A NamedTuple, not a dataclass: dataclasses imports inspect, a tenth of start-up.)"""

    module: str
    summary: str
    reads_traces: bool = False
    cached: bool = True


# Subcommand name -> Command, in the order `traceviz --help` lists them.
COMMANDS: dict[str, Command] = {
    "demo": Command("demo", "Profile the default model eagerly and compiled, then compare."),
    "run": Command("run", "Profile a model eagerly and compiled, into a run directory."),
    "models": Command("models", "List the built-in models and the fusion story each one tells."),
    "summary": Command("summary", "Summarise one trace, or with --ranks a ranks dataset.", True),
    "compare": Command("compare", "Compare two traces or a run directory, with findings.", True),
    "dashboard": Command(
        "dashboard", "Open a run, two traces or a ranks dataset in a web dashboard.", True
    ),
    "export": Command("export", "Write both traces and the analysis as one Perfetto trace.", True),
    "ingest": Command(
        "ingest", "Ingest many ranks' traces into one Parquet dataset.", True, cached=False
    ),
}
EXIT_PIPE_CLOSED = 141


def build_parser(load: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser. Subcommands named in ``load`` (default: all) get their full
    arguments, which imports their modules; the others are listed by name and summary only."""
    loaded = set(COMMANDS if load is None else load)
    parser = argparse.ArgumentParser(
        prog="traceviz",
        description="What did kernel fusion (torch.compile) do to my model, and why is it "
        "(or isn't it) faster?",
        epilog="`traceviz COMMAND --help` tells more about a command.",
    )
    parser.add_argument("--version", action="version", version=f"traceviz {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, command in COMMANDS.items():
        if name not in loaded:
            sub.add_parser(name, help=command.summary)
            continue
        module = importlib.import_module(f"traceviz.commands.{command.module}")
        cmd = sub.add_parser(
            name,
            help=command.summary,
            description=(module.__doc__ or command.summary).strip(),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(cmd)
        if command.reads_traces:
            cmd.add_argument(
                "--max-bytes",
                metavar="SIZE",
                help="refuse a trace whose JSON (after gzip) is larger than SIZE, e.g. 512M or "
                "8GiB (default: $TRACEVIZ_MAX_BYTES, else 4GiB); guards against gzip bombs",
            )
        if command.reads_traces and command.cached:
            cmd.add_argument(
                "--cache-dir",
                metavar="DIR",
                help="where parsed traces, compare's reports and what compare and summary "
                "printed are kept, so that the next look at unchanged traces skips the parse and "
                "the analysis, or prints the same output at once (default: $TRACEVIZ_CACHE_DIR, "
                "else ~/.cache/traceviz)",
            )
            cmd.add_argument(
                "--no-cache",
                action="store_true",
                help="neither read nor write the parse, report and output caches (also: "
                "TRACEVIZ_NO_CACHE=1)",
            )
        cmd.set_defaults(_module=module)
    return parser


def _command_in(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names: its first word that is not an option (the top-level
    options, --help and --version, take no value)."""
    for word in argv:
        if not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def _settings(args: argparse.Namespace) -> Settings:
    """The settings this command runs with: --cache-dir, --no-cache and --max-bytes over
    their environment variables (:mod:`traceviz.settings`), which give the rest."""
    from pathlib import Path

    from traceviz.settings import Settings, parse_size

    given: dict[str, Any] = {}
    if (value := getattr(args, "max_bytes", None)) is not None:
        try:
            given["max_bytes"] = parse_size(value)
        except UsageError as err:
            raise UsageError(f"--max-bytes: {err}") from None
    directory = str(getattr(args, "cache_dir", None) or "")
    if getattr(args, "no_cache", False):
        given.update(cache_dir=None, cache_origin="--no-cache")
    elif directory:
        if os.path.exists(directory) and not os.path.isdir(directory):
            raise UsageError(f"--cache-dir: {directory} is not a directory")
        given.update(cache_dir=Path(directory).expanduser(), cache_origin="--cache-dir")
    return Settings.from_environ(**given)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``traceviz`` console script; returns the exit code."""
    words = sys.argv[1:] if argv is None else list(argv)
    command = _command_in(words)
    if command is not None and argv is None:
        # The console script runs one command per process: its imports run with the collector
        # off, then what they made is frozen (later collections skip it).
        from traceviz.commands.collector import collector_off, one_command

        one_command()
        with collector_off():
            parser = build_parser(load=[command])
    else:  # --help, --version, or a call from Python: the collector stays as it is
        # a collector module a command has loaded is told so (not imported when not loaded:
        # ``traceviz --help`` imports no command module)
        if (collector := sys.modules.get("traceviz.commands.collector")) is not None:
            collector.one_command(False)
        parser = build_parser(load=[command] if command else [])
    args = parser.parse_args(words)
    if getattr(args, "_module", None) is None:
        parser.print_help()
        return 2
    try:
        from traceviz.settings import using

        with using(_settings(args)):
            code = int(args._module.run(args))
        if sys.stdout is not None:  # None: started with stdout closed (-o FILE wrote it all)
            sys.stdout.flush()  # a closed pipe shows here, not after main has returned
        return code
    except TraceVizError as err:
        message = " ".join(str(err).split("\n"))  # one line, whatever the file name holds
        print(f"traceviz {args.command}: error: {message}", file=sys.stderr)
        return 2
    except UnicodeEncodeError as err:
        encoding = str(getattr(sys.stdout, "encoding", None) or "")
        if encoding.lower().replace("-", "").replace("_", "") == "utf8":
            raise  # not the output's encoding: a bug, with its traceback
        print(
            f"traceviz {args.command}: error: standard output's encoding ({encoding}) cannot "
            f"write {err.object[err.start : err.end]!a}; set PYTHONIOENCODING=utf-8 or "
            "give -o FILE",
            file=sys.stderr,
        )
        return 2
    except BrokenPipeError:  # output piped into `head` and closed early
        # stdout to /dev/null, so that the interpreter's last flush cannot fail again
        with contextlib.suppress(OSError, ValueError, AttributeError):  # replaced, or closed
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_PIPE_CLOSED
    except KeyboardInterrupt:
        print("traceviz: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
